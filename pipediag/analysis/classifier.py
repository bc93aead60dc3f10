"""Label each step (by its wait share) and the whole run (by input cost 1 - A/T) in the
bands of XProf's Input Pipeline Analyzer (docs/design.md, "Input cost")."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pipediag.analysis.alternation import observer_effect, widened_for_looks
from pipediag.analysis.host_contention import other_processes_cores
from pipediag.analysis.input_cost import (
    DEFAULT_THRESHOLDS,
    InputCost,
    Rates,
    contention_evidence,
    input_cost,
    label_of,
    not_measurable,
    phases_of,
    rates_of,
)
from pipediag.analysis.stats import latency_stats
from pipediag.report import model
from pipediag.report.samples import HostSection
from pipediag.report.vocabulary import (
    InputWaitSource,
    Severity,
    StepLabel,
    TrainStyle,
    UncertainReason,
)
from pipediag.timeline import RawStep

# Without measured waits, training at 80% or more of P suggests the pipeline limits it.
PIPELINE_LIMITED_SHARE = 0.8

# Other processes' share of the cores that may be the contention (docs/design.md, "A busy host").
BUSY_HOST_SHARE = 0.10
# A busy host lowers an interval's low end to no less (zero would mean "no cost above noise").
BUSY_LOW_FLOOR = 0.001
# An interval wider than this either side across a band's edge gets no band; the steps
# suggested aim at `SUGGESTED_HALF_WIDTH` (docs/design.md, "Too noisy to tell").
LABEL_MAX_HALF_WIDTH = 0.05
SUGGESTED_HALF_WIDTH = 0.04
# How far a cost from A and T taken once each may stray (docs/design.md, "Too short to tell").
ONE_PIECE_NOISE = 0.20
STEPS_UNIT = 100  # `--steps` suggested: a multiple of this, at most `MOST_STEPS_SUGGESTED`
MOST_STEPS_SUGGESTED = 2000
# Training cannot outrun the pipeline that feeds it: a pipeline-alone rate this far below the
# training rate was measured while something else took the cores (or the files were cold).
PIPELINE_BELOW_TRAINING = 1.2


def label_step(raw: RawStep, *, warmup: bool) -> StepLabel:
    if warmup:
        return "warmup"
    if raw.input_wait_s is None or raw.duration_s <= 0:
        return "unknown"
    share = raw.input_wait_s / raw.duration_s
    return "input-bound" if share >= DEFAULT_THRESHOLDS.highly_input_bound else "compute-bound"


def build_train_section(
    raw_steps: Sequence[RawStep],
    *,
    origin: float,
    warmup_steps: int,
    style: TrainStyle,
    input_wait_source: InputWaitSource,
    skipped_passes: Sequence[model.DataPass] = (),
    epoch_starts: Sequence[tuple[int, float, int | None]] = (),
) -> model.TrainSection:
    """Steps on the report's time axis, labelled, with rates. A merged record's index is
    its first step's; per-step statistics use its mean step."""
    steps: list[model.StepRecord] = []
    index = 0
    for raw in raw_steps:
        steps.append(
            model.StepRecord(
                index=index,
                start_s=raw.start - origin,
                duration_s=raw.duration_s,
                input_wait_s=raw.input_wait_s,
                label=label_step(raw, warmup=index < warmup_steps),
                epoch=raw.epoch,
                count=raw.count,
            )
        )
        index += raw.count
    measured = model.timed_steps(steps)
    count, durations = sum(s.count for s in measured), [s.duration_s / s.count for s in measured]
    waits = [s.input_wait_s / s.count for s in measured if s.input_wait_s is not None]
    total = sum(s.duration_s for s in measured)
    return model.TrainSection(
        style=style,
        input_wait_source=input_wait_source if waits else "unavailable",
        warmup_steps=min(warmup_steps, index),
        measured_steps=count,
        merged_records=sum(s.count > 1 for s in steps),
        steps_per_s=count / total if total > 0 else None,
        step_time=latency_stats(durations),
        input_wait=latency_stats(waits),
        steps=steps,
        skipped_passes=list(skipped_passes),
        epoch_starts=[model.EpochStart(e, d, n) for e, d, n in epoch_starts],
    )


def judge(
    train: model.TrainSection,
    pipeline: model.PipelineBenchmark,
    *,
    compute_alone: model.ComputeAlone | None = None,
    host: HostSection | None = None,
) -> model.Verdict:
    """The verdict from input cost, with the figures behind it; where none, the code of why."""
    timed = [s for s in train.steps if s.label in ("input-bound", "compute-bound")]
    untimed = train.input_wait_source == "unavailable"
    if not timed and untimed and compute_alone is not None and compute_alone.measured:
        # Waits not timed (pulls inside a tf.function): the cost is read from A and T alone.
        timed = [s for s in train.steps if s.label == "unknown"]
    if not timed:
        return model.Verdict(no_verdict_because=model.no_verdict_reason(train))
    total = sum(s.duration_s for s in timed)
    fraction = sum(s.input_wait_s or 0.0 for s in timed) / total if total > 0 else 0.0
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
    label, others = label_of(found.cost), _other_processes_cores(host, timed, compute_alone)
    cores = host.cpu_count if host is not None else None
    busy = others / cores if others is not None and cores else None
    if busy is not None and busy < BUSY_HOST_SHARE:
        busy = None
    interval = found.interval
    if busy is not None and label != "compute-bound":
        # Their share of the host may be that much of the cost: the low end widens by it,
        # and a label the cost less their share no longer holds is not given.
        low, top = interval if interval is not None else (found.cost, found.cost)
        interval = [low if low <= 0.0 else max(BUSY_LOW_FLOOR, low - busy), top]
        if label_of(max(0.0, found.cost - busy)) != label:
            label = "uncertain"
    because: UncertainReason = "busy-host" if label == "uncertain" else ""
    steps_to_tell = None
    measured = found.interval  # the pairs' own, before any widening for a busy host
    if (
        label != "uncertain"
        and measured is not None
        and not (rates.paired is not None and not_measurable(rates.paired))
        and _too_noisy(measured)
    ):
        label, because = "uncertain", "too-noisy"
        steps_to_tell = _steps_to_tell(measured, train.measured_steps)
    elif label != "uncertain" and _too_short(found, compute_alone):
        label, because = "uncertain", "too-short"
    elif label in ("balanced", "input-bound") and measured is not None:
        # An interval across a band's lower edge claims only its low end's band; from pairs
        # alone read on past the bound, its low end lowered for those looks.
        widened = _widened_for_looks(rates, compute_alone)
        if widened and interval:
            interval = [max(0.0, interval[0] - widened), interval[1]]
        label = label_of(measured[0] - widened)
    severities: dict[str, Severity] = {
        "input-bound": "highly input-bound",
        "balanced": "moderately input-bound",
        "compute-bound": "not input-bound",
        "uncertain": "unknown",
    }
    batches = pipeline.batches_per_s
    headroom = batches / rates.compute if batches is not None and rates.compute else None
    return model.Verdict(
        label=label,
        input_wait_fraction=fraction if found.split.waits_timed else None,
        severity=severities[label],
        input_bound_steps=sum(s.count for s in timed if s.label == "input-bound"),
        compute_bound_steps=sum(s.count for s in timed if s.label == "compute-bound"),
        compute_alone_steps_per_s=rates.compute,
        pipeline_headroom=headroom,
        input_cost_fraction=found.cost,
        training_steps_per_s=rates.training,
        compute_alone_source=rates.source,
        compute_alone_reason=rates.reason if rates.source == "estimated" else None,
        cost_split=found.split,
        phases=phases_of(timed, rates.compute),
        input_cost_interval=interval,
        busy_host_cores=others if busy is not None else None,
        uncertain_because=because,
        steps_to_tell=steps_to_tell,
        alternation_pairs=rates.paired.pairs if rates.paired is not None else None,
        held_output_cost=rates.paired.held if rates.paired is not None else None,
        observer_effect=(
            observer_effect(compute_alone.blocks, compute_alone.observer_blocks)
            if compute_alone
            else None
        ),
    )


def _widened_for_looks(rates: Rates, compute_alone: model.ComputeAlone | None) -> float:
    """The pairs' low end lowered for the rounds read on past the bound, where the cost is the
    pairs' alone (a held output pooled in was read once, not at each round)."""
    if compute_alone is None or (paired := rates.paired) is None or paired.held is not None:
        return 0.0
    return widened_for_looks(paired, sum(b.kind == "step-alone" for b in compute_alone.blocks))


def _too_noisy(interval: list[float]) -> bool:
    """Wider than `LABEL_MAX_HALF_WIDTH` either side and across a band's edge. The caller
    leaves out pairs that reached zero (then the parts measured step by step label it)."""
    if interval[0] <= 0.0 or (interval[1] - interval[0]) / 2 <= LABEL_MAX_HALF_WIDTH:
        return False
    return label_of(interval[0]) != label_of(interval[1])


def _too_short(found: InputCost, compute_alone: model.ComputeAlone | None) -> bool:
    """A cost on T timed in one piece whose band neither the parts measured step by step carry
    alone nor holds `ONE_PIECE_NOISE` lower (docs/design.md, "Too short to tell")."""
    if found.interval is not None or compute_alone is None or not compute_alone.measured:
        return False
    if (label := label_of(found.cost)) == "compute-bound":
        return False
    split = found.split
    stepwise = split.epoch_start + (split.wait + split.fetch if split.waits_timed else 0.0)
    return label_of(stepwise) != label and label_of(max(0.0, found.cost - ONE_PIECE_NOISE)) != label


def _steps_to_tell(interval: list[float], measured_steps: int) -> int:
    """The `--steps` likely to narrow the interval (docs/design.md, "Too noisy to tell")."""
    half_width = (interval[1] - interval[0]) / 2
    steps = max(STEPS_UNIT * (half_width / SUGGESTED_HALF_WIDTH) ** 2, 2 * measured_steps)
    return int(min(MOST_STEPS_SUGGESTED, math.ceil(steps / STEPS_UNIT) * STEPS_UNIT))


def _other_processes_cores(
    host: HostSection | None,
    timed: Sequence[model.StepRecord],
    compute_alone: model.ComputeAlone | None,
) -> float | None:
    if host is None or not timed:
        return None
    begin, end = timed[0].start_s, timed[-1].start_s + timed[-1].duration_s
    if compute_alone is not None and compute_alone.start_s is not None:
        begin = min(begin, compute_alone.start_s)
        end = max(end, compute_alone.start_s + compute_alone.duration_s)
    return other_processes_cores(host, begin, end)


def pipeline_reading_disturbed(training: float, pipeline: float) -> bool:
    """A above P: the pipeline-alone reading was disturbed (another process, a cold cache)."""
    return training > PIPELINE_BELOW_TRAINING * pipeline


def pipeline_seems_limiting(training: float, pipeline: float) -> bool:
    return pipeline > 0 and training / pipeline >= PIPELINE_LIMITED_SHARE
