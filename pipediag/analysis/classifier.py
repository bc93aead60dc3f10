"""Label each step and the whole run: input-bound, compute-bound or balanced.

Part of `analysis/`: the verdict is one aggregate, input cost 1 - A/T
(`analysis/input_cost.py`), in the bands of XProf's Input Pipeline Analyzer, with XProf's
own wait share kept beside it; a step is labelled by its own wait share. The step as
recorded and the rule: (docs/design.md, "Input cost").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pipediag.analysis.host_contention import other_processes_cores
from pipediag.analysis.input_cost import (
    InputCost,
    Rates,
    contention_evidence,
    input_cost,
    label_of,
    phases_of,
    rates_of,
    unspread_epoch_start,
)
from pipediag.analysis.stats import latency_stats
from pipediag.report.model import (
    BALANCED,
    COMPUTE_BOUND,
    ESTIMATED,
    INPUT_BOUND,
    MEASURED,
    UNCERTAIN,
    UNKNOWN,
    WARMUP,
    ComputeAlone,
    CostSplit,
    DataPass,
    EpochStart,
    HostSection,
    PipelineBenchmark,
    StepLabel,
    StepRecord,
    TrainSection,
    TrainStyle,
    Verdict,
    timed_steps,
)
from pipediag.report.vocabulary import (
    CONTENDS_FOR_CORES,
    CONTENDS_FOR_GIL,
    SEVERITY_HIGH,
    SEVERITY_MODERATE,
    SEVERITY_NONE,
    SEVERITY_UNKNOWN,
    UNCERTAIN_BUSY_HOST,
    UNCERTAIN_TOO_NOISY,
    WAIT_UNAVAILABLE,
    InputWaitSource,
    Severity,
    UncertainReason,
)
from pipediag.timeline import RawStep


@dataclass(frozen=True)
class Thresholds:
    """Input-wait shares that decide the wording.

    From XProf (openxla/xprof, convert/op_stats_to_input_pipeline_analysis.cc):
    kHighlyInfeedBoundThresholdInPercent = 20 and kModeratelyInfeedBoundThresholdInPercent = 5.
    At 20% or more, input is the first thing to fix (input-bound); from 5% to 20% both
    input and compute need work (balanced); under 5% the model limits the rate.
    """

    highly_input_bound: float = 0.20
    moderately_input_bound: float = 0.05


DEFAULT_THRESHOLDS = Thresholds()

# Without measured waits, training at 80% or more of the pipeline-alone rate suggests the
# pipeline limits it (DS-Analyzer's differential reading); said as a suggestion only.
PIPELINE_LIMITED_SHARE = 0.8

# Other processes keeping this share of the host's cores busy while A and T were measured
# make a measurable difference: the pipeline's threads and theirs take turns on the cores,
# so contention read on a busy host may be theirs (docs/design.md, "A busy host"). A quiet
# 2-core host shows 1-3% (the kernel's own threads).
BUSY_HOST_SHARE = 0.10
# The low end a busy host's share lowers an interval to, at least: an interval reaching zero
# says training ran as fast as the step alone within the pairs' noise, which this is not.
BUSY_LOW_FLOOR = 0.001
# A measured cost whose 90% interval is wider than this either side and reaches across a
# band's edge is given no band: two runs of the script would read two (docs/design.md,
# "Too noisy to tell"). The steps suggested aim at `TARGET_HALF_WIDTH` instead.
LABEL_MAX_HALF_WIDTH = 0.05
TARGET_HALF_WIDTH = 0.04
# `--steps` suggested: a multiple of this, at most `MOST_STEPS_SUGGESTED`.
STEPS_UNIT = 100
MOST_STEPS_SUGGESTED = 2000

# Training cannot outrun the pipeline that feeds it: a pipeline-alone rate this far below the
# training rate was measured while something else took the cores (or the files were cold).
PIPELINE_BELOW_TRAINING = 1.2


def label_step(
    raw: RawStep, *, warmup: bool, thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> StepLabel:
    if warmup:
        return WARMUP
    if raw.input_wait_s is None or raw.duration_s <= 0:
        return UNKNOWN
    share = raw.input_wait_s / raw.duration_s
    return INPUT_BOUND if share >= thresholds.highly_input_bound else COMPUTE_BOUND


def build_train_section(
    raw_steps: Sequence[RawStep],
    *,
    origin: float,
    warmup_steps: int,
    style: TrainStyle,
    input_wait_source: InputWaitSource,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    skipped_passes: Sequence[DataPass] = (),
    epoch_starts: Sequence[tuple[int, float, int | None]] = (),
) -> TrainSection:
    """Steps on the report's time axis (seconds since `origin`), labelled, with rates.

    A record may stand for several merged steps (`count`); its index is that of its first
    step, and per-step statistics use its mean step.
    """
    steps: list[StepRecord] = []
    index = 0
    for raw in raw_steps:
        steps.append(
            StepRecord(
                index=index,
                start_s=raw.start - origin,
                duration_s=raw.duration_s,
                input_wait_s=raw.input_wait_s,
                label=label_step(raw, warmup=index < warmup_steps, thresholds=thresholds),
                epoch=raw.epoch,
                count=raw.count,
            )
        )
        index += raw.count
    measured = timed_steps(steps)
    count = sum(s.count for s in measured)
    durations = [s.duration_s / s.count for s in measured]
    waits = [s.input_wait_s / s.count for s in measured if s.input_wait_s is not None]
    total = sum(s.duration_s for s in measured)
    return TrainSection(
        style=style,
        input_wait_source=input_wait_source if waits else WAIT_UNAVAILABLE,
        warmup_steps=min(warmup_steps, index),
        measured_steps=count,
        merged_records=sum(s.count > 1 for s in steps),
        steps_per_s=count / total if total > 0 else None,
        step_time=latency_stats(durations),
        input_wait=latency_stats(waits),
        steps=steps,
        skipped_passes=list(skipped_passes),
        epoch_starts=[EpochStart(e, d, n) for e, d, n in epoch_starts],
    )


def judge(
    train: TrainSection,
    pipeline: PipelineBenchmark,
    *,
    compute_alone: ComputeAlone | None = None,
    host: HostSection | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    why_unknown: str | None = None,
) -> Verdict:
    """The overall verdict, with the figures behind it and one sentence that says why.

    The label follows input cost (`analysis/input_cost.py`): 1 - A/T, from the training
    rate A and the compute-alone rate T (taken in alternation where the blocks ran, else T
    measured on a cached batch in one piece, else estimated as step time minus wait), with
    each epoch's start-up, in XProf's bands.
    """
    timed = [s for s in train.steps if s.label in (INPUT_BOUND, COMPUTE_BOUND)]
    if not timed and _in_alternation(train, compute_alone):
        # Waits not timed (the pulls run inside a tf.function): the cost is read from the
        # alternation's rates alone.
        timed = [s for s in train.steps if s.label == UNKNOWN]
    if not timed:
        return Verdict(summary=why_unknown or _why_no_verdict(train, pipeline))
    total = sum(s.duration_s for s in timed)
    wait = sum(s.input_wait_s or 0.0 for s in timed)
    fraction = wait / total if total > 0 else 0.0
    steps_rate = sum(s.count for s in timed) / total if total > 0 else None
    rates = rates_of(
        timed, steps_rate, pipeline, compute_alone, around_s=train.fit_overhead_s or 0.0
    )
    found = input_cost(
        rates,
        fraction,
        wait_source=train.input_wait_source,
        epoch_starts=train.epoch_starts,
        stages=pipeline.stages,
        cpu=contention_evidence(host, timed, compute_alone),
    )
    high, moderate = thresholds.highly_input_bound, thresholds.moderately_input_bound
    label = label_of(found.cost, high=high, moderate=moderate)
    others = _other_processes_cores(host, timed, compute_alone)
    busy = _busy_share(others, host)
    interval = found.interval
    if busy is not None and label != COMPUTE_BOUND:
        # Their share of the host may be that much of the cost: the interval's low end
        # widens by it, and a label the cost less their share no longer holds is not given
        # (the interval's own noise is judged apart: "Too noisy to tell").
        low, top = interval if interval is not None else (found.cost, found.cost)
        interval = [low if low <= 0.0 else max(BUSY_LOW_FLOOR, low - busy), top]
        if label_of(max(0.0, found.cost - busy), high=high, moderate=moderate) != label:
            label = UNCERTAIN
    because: UncertainReason = UNCERTAIN_BUSY_HOST if label == UNCERTAIN else ""
    steps_to_tell = None
    measured = found.interval  # the pairs' own, before any widening for a busy host
    if (
        label != UNCERTAIN
        and measured is not None
        and _too_noisy(measured, high=high, moderate=moderate)
    ):
        label, because = UNCERTAIN, UNCERTAIN_TOO_NOISY
        steps_to_tell = _steps_to_tell(measured, train.measured_steps)
    found = InputCost(found.cost, found.split, interval)
    severities: dict[str, Severity] = {
        INPUT_BOUND: SEVERITY_HIGH,
        BALANCED: SEVERITY_MODERATE,
        COMPUTE_BOUND: SEVERITY_NONE,
        UNCERTAIN: SEVERITY_UNKNOWN,
    }
    compute_rate = rates.compute
    headroom = (
        pipeline.batches_per_s / compute_rate
        if pipeline.batches_per_s is not None and compute_rate
        else None
    )
    return Verdict(
        label=label,
        input_wait_fraction=fraction if found.split.waits_timed else None,
        severity=severities[label],
        summary=_summary(label, because, fraction, found, pipeline, rates, headroom, others),
        input_bound_steps=sum(s.count for s in timed if s.label == INPUT_BOUND),
        compute_bound_steps=sum(s.count for s in timed if s.label == COMPUTE_BOUND),
        compute_alone_steps_per_s=compute_rate,
        pipeline_headroom=headroom,
        input_cost_fraction=found.cost,
        training_steps_per_s=rates.training,
        compute_alone_source=rates.source,
        compute_alone_reason=rates.reason if rates.source == ESTIMATED else None,
        cost_split=found.split,
        phases=phases_of(timed, compute_rate, high=high, moderate=moderate),
        input_cost_interval=found.interval,
        busy_host_cores=others if busy is not None else None,
        uncertain_because=because,
        steps_to_tell=steps_to_tell,
    )


def _in_alternation(train: TrainSection, compute_alone: ComputeAlone | None) -> bool:
    """Steps whose waits were never timed, measured in alternation with the step alone."""
    return (
        train.input_wait_source == WAIT_UNAVAILABLE
        and compute_alone is not None
        and bool(compute_alone.blocks)
    )


def _too_noisy(interval: list[float] | None, *, high: float, moderate: float) -> bool:
    """A measured cost (its interval above zero) whose interval is wider than
    `LABEL_MAX_HALF_WIDTH` either side and reaches across a band's edge."""
    if interval is None or interval[0] <= 0.0:
        return False
    low, top = interval
    if (top - low) / 2 <= LABEL_MAX_HALF_WIDTH:
        return False
    return label_of(low, high=high, moderate=moderate) != label_of(
        top, high=high, moderate=moderate
    )


def _steps_to_tell(interval: list[float], measured_steps: int) -> int:
    """The `--steps` likely to narrow the interval to `TARGET_HALF_WIDTH`: the alternation
    runs longer in proportion (`conclusion.py::alternation_scale`), and an interval
    narrows with the square root of its pairs."""
    half_width = (interval[1] - interval[0]) / 2
    wanted = STEPS_UNIT * (half_width / TARGET_HALF_WIDTH) ** 2
    steps = max(wanted, 2 * measured_steps)
    return int(min(MOST_STEPS_SUGGESTED, math.ceil(steps / STEPS_UNIT) * STEPS_UNIT))


def _other_processes_cores(
    host: HostSection | None, timed: Sequence[StepRecord], compute_alone: ComputeAlone | None
) -> float | None:
    """The cores other processes kept busy while the measured steps and the step alone ran."""
    if host is None or not timed:
        return None
    begin = timed[0].start_s
    end = timed[-1].start_s + timed[-1].duration_s
    if compute_alone is not None and compute_alone.start_s is not None:
        begin = min(begin, compute_alone.start_s)
        end = max(end, compute_alone.start_s + compute_alone.duration_s)
    return other_processes_cores(host, begin, end)


def _busy_share(others: float | None, host: HostSection | None) -> float | None:
    """Other processes' share of the host's cores where it is large enough to matter."""
    cores = host.cpu_count if host is not None else None
    if others is None or not cores:
        return None
    share = others / cores
    return share if share >= BUSY_HOST_SHARE else None


def _summary(
    label: str,
    because: UncertainReason,
    fraction: float,
    found: InputCost,
    pipeline: PipelineBenchmark,
    rates: Rates,
    headroom: float | None,
    others: float | None,
) -> str:
    cost, split = found.cost, found.split
    if because == UNCERTAIN_BUSY_HOST:
        return _busy_host_text(found, others)
    if because == UNCERTAIN_TOO_NOISY:
        return _too_noisy_text(found, rates)
    if found.interval is not None and found.interval[0] <= 0.0:
        return _not_measurable(_waited_text(fraction, split), found.interval[1], rates)
    interval = _interval_text(found.interval)
    if label == COMPUTE_BOUND:
        text = (
            f"Input costs only {cost:.0%} of training time ({interval}"
            f"{_waited_text(fraction, split)}): the model's train step sets the rate"
        )
        if headroom is not None and pipeline.batches_per_s is not None:
            text += f"; the pipeline alone delivers {headroom:.1f}x what the train step needs"
        return text + "." + _unspread_text(split, rates)
    text = f"Input costs {cost:.0%} of training time ({interval}{_parts_text(split)})"
    if label == BALANCED:
        text += ": both input and compute limit the rate"
    figure_text = "; ".join(_figures(pipeline, rates))
    return text + (f": {figure_text}." if figure_text else ".") + _unspread_text(split, rates)


def _busy_host_text(found: InputCost, others: float | None) -> str:
    interval = found.interval or [found.cost, found.cost]
    return (
        f"The host was busy: other processes kept {others or 0.0:.1f} cores busy while "
        f"training and the train step alone were measured, so part of the {found.cost:.0%} "
        f"input cost (90% interval {interval[0] * 100:.0f}-{interval[1]:.0%}; "
        f"{_parts_text(found.split)}) may be theirs. Run again on a quiet host to tell."
    )


def _too_noisy_text(found: InputCost, rates: Rates) -> str:
    low, top = found.interval or [found.cost, found.cost]
    pairs = rates.paired.pairs if rates.paired is not None else 0
    return (
        f"Input costs {found.cost:.0%} of training time, but its 90% interval, "
        f"{low * 100:.0f}-{top:.0%} over {pairs} alternating pairs, reaches across a band's "
        f"edge ({_parts_text(found.split)}): too noisy to tell which band. Measure more steps "
        "to narrow it; the alternation runs longer with them."
    )


def _unspread_text(split: CostSplit, rates: Rates) -> str:
    """ " Each epoch after the first started 2.10 s late; ..." where that start-up is long
    but the epoch's length is unknown, so the cost above leaves it out."""
    start = unspread_epoch_start(split, rates.training)
    if start is None:
        return ""
    return (
        f" Each epoch after the first started {start:.2f} s late; the epoch's length is "
        "unknown, so that start-up is not in the cost above."
    )


def _interval_text(interval: list[float] | None) -> str:
    """ "90% interval 40-48%; ", or "" without one."""
    if interval is None or round(interval[0] * 100) == round(interval[1] * 100):
        return ""  # none, or both ends pinned to a measured wait above the pairs' interval
    return f"90% interval {interval[0] * 100:.0f}-{interval[1]:.0%}; "


def _not_measurable(waited: str, high: float, rates: Rates) -> str:
    pairs = rates.paired.pairs if rates.paired is not None else 0
    return (
        f"Input cost is not measurable above noise (at most {high:.0%} of training time): "
        f"training ran as fast as the train step alone within the 90% interval of {pairs} "
        f"alternating pairs ({waited}); the model's train step sets the rate."
    )


def _waited_text(fraction: float, split: CostSplit) -> str:
    if not split.waits_timed:
        return "its waits, inside a tf.function, not timed"
    return f"{fraction:.0%} of step time spent waiting"


def _parts_text(split: CostSplit) -> str:
    """ "waiting 4%, contention 40% (for the host's cores), per-pull overhead 0%"."""
    kinds = {CONTENDS_FOR_CORES: " (for the host's cores)", CONTENDS_FOR_GIL: " (for the GIL)"}
    if not split.waits_timed:
        text = (
            f"waiting and contention {split.wait:.0%}, not told apart: the pulls run inside "
            "a tf.function"
        )
    else:
        text = (
            f"waiting {split.wait:.0%}, contention {split.contention:.0%}"
            f"{kinds.get(split.contention_kind, '')}, per-pull overhead {split.fetch:.0%}"
        )
    if split.epoch_start > 0:
        text += f", epoch starts {split.epoch_start:.0%}"
    return text


def _figures(pipeline: PipelineBenchmark, rates: Rates) -> list[str]:
    """The rates behind the cost, and a pipeline-alone reading that cannot be right."""
    figures = []
    if rates.compute is not None and rates.training is not None:
        how = "estimated"
        if rates.paired is not None:
            how = f"in alternation, {rates.paired.pairs} pairs"
        elif rates.source == MEASURED:
            how = "measured on a cached batch"
        figures.append(
            f"training ran {rates.training:.1f} steps/s against {rates.compute:.1f} for the "
            f"train step alone ({how})"
        )
    if pipeline.batches_per_s is not None:
        figures.append(f"the pipeline alone delivers {pipeline.batches_per_s:.1f} batches/s")
    if (
        pipeline.batches_per_s is not None
        and rates.training is not None
        and rates.training > PIPELINE_BELOW_TRAINING * pipeline.batches_per_s
    ):
        figures.append(
            f"training ran faster than the pipeline alone ({rates.training:.1f} against "
            f"{pipeline.batches_per_s:.1f}), so that reading was disturbed (another process, "
            "a cold file cache): read its stage figures with care"
        )
    return figures


def _why_no_verdict(train: TrainSection, pipeline: PipelineBenchmark) -> str:
    if not train.steps and train.skipped_passes:
        passes = sum(p.passes for p in train.skipped_passes)
        return (
            f"No training was found: the script made {passes} pass(es) over its data, none "
            "of them training (no train step between their pulls, or made by Keras), so "
            "there is no verdict."
        )
    if not train.steps:
        return (
            "No training steps were seen: the script did not call Keras fit, pull a tf.data "
            "dataset eagerly, or call a tf.function given an iterator that stepped an "
            "optimizer. For any other loop, mark its steps with pipediag.monitor() "
            "(README, 'Python API')."
        )
    if train.measured_steps == 0:
        return (
            f"Only {len(train.steps)} step(s) ran, all in the warm-up: run more steps "
            "or lower --warmup."
        )
    text = "The input wait of the measured steps could not be measured"
    if train.steps_per_s is not None and pipeline.batches_per_s is not None:
        share = train.steps_per_s / pipeline.batches_per_s
        text += (
            f". Training ran at {train.steps_per_s:.1f} steps/s, {share:.0%} of the "
            f"{pipeline.batches_per_s:.1f} batches/s the pipeline delivers alone"
        )
        if share >= PIPELINE_LIMITED_SHARE:
            text += ", which suggests the input pipeline limits it"
    return text + "."
