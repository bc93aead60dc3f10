"""Input cost 1 - A/T from DS-Analyzer's rates P, T and A, split into parts that add up:
wait, fetch, contention, epoch start (docs/design.md, "Input cost")."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from pipediag.analysis.alternation import PairedCost, log_cost, paired_cost, pipeline_cores
from pipediag.analysis.paired import pooled
from pipediag.report.model import (
    ComputeAlone,
    CostSplit,
    EpochStart,
    PhaseVerdict,
    PipelineBenchmark,
    StepRecord,
)
from pipediag.report.names import stage_name
from pipediag.report.reasons import Reason
from pipediag.report.samples import HostSample, HostSection
from pipediag.report.stage_facts import SHUFFLE_KINDS, output_stage
from pipediag.report.stages import StageStats
from pipediag.report.vocabulary import ComputeAloneSource, ContentionKind, CostPart, VerdictLabel


@dataclass(frozen=True)
class Thresholds:
    """XProf's bands (openxla/xprof's kHighlyInfeedBoundThresholdInPercent = 20,
    kModeratelyInfeedBoundThresholdInPercent = 5): at 20% or more input is the first thing to
    fix; from 5% to 20% both input and compute need work; under 5% the model limits the rate
    (docs/design.md, "Methods it builds on")."""

    highly_input_bound: float = 0.20
    moderately_input_bound: float = 0.05


DEFAULT_THRESHOLDS = Thresholds()

# P this many times A: time in next() is the pull itself, not a wait (docs/design.md, "Input cost").
FETCH_PIPELINE_MARGIN = 5.0
# The most a ready pull costs, where estimated from P (docs/design.md, "Rates in alternation").
MAX_PULL_S = 1e-3
# Epochs whose costs differ by more are two phases (a cache filling in epoch 1); less is
# noise (docs/design.md, "Input cost").
PHASE_COST_GAP = 0.25
PHASE_MIN_STEPS = 10
# Fewer idle cores than this while training: the host is saturated (a busy host still shows
# a little idle time between its few samples a second).
SATURATED_FREE_CORES = 0.5
# The first epoch's start is the run's own start-up: only later epochs' (counted from 0)
# are input cost (docs/design.md, "Epoch starts").
FIRST_COUNTED_EPOCH = 1
# An epoch start that cannot be spread is worth a word when it lasts this many steps (5%
# of an epoch of up to 190 steps).
UNSPREAD_START_STEPS = 10.0


@dataclass(frozen=True)
class Rates:
    """The three rates, where T came from, and the pairs where A and T alternated."""

    pipeline: float | None  # P, batches/s
    compute: float | None  # T, steps/s
    training: float | None  # A, steps/s
    source: ComputeAloneSource  # "" without T
    reason: Reason | None = None  # why T is estimated
    paired: PairedCost | None = None

    @property
    def gap(self) -> float:
        if self.paired is not None:
            return self.paired.cost
        if self.compute and self.training:
            return 1.0 - self.training / self.compute
        return 0.0


def rates_of(
    steps: Sequence[StepRecord],
    training_rate: float | None,
    pipeline: PipelineBenchmark,
    compute_alone: ComputeAlone | None,
    *,
    around_s: float = 0.0,
) -> Rates:
    """From the alternation's blocks where they ran, else T measured in one piece, else T
    estimated as step time minus wait. `around_s`: what fit adds around each step."""
    rate = pipeline.batches_per_s
    if compute_alone is not None and compute_alone.measured:
        blocks = compute_alone.blocks
        paired = paired_cost(blocks, around_s=around_s) if blocks else None
        if paired is not None:
            paired = with_held_output(paired, pipeline.stages, around_s=around_s)
        if paired is not None and paired.training > 0 and paired.compute > 0:
            # T as the pairs read it, so that 1 - A/T is the cost the report states (the
            # pooled step-alone rate can differ by the blocks' drift).
            compute = paired.training / (1.0 - paired.cost) if paired.cost < 1.0 else None
            return Rates(
                rate, compute or paired.compute, paired.training, "measured", paired=paired
            )
        if compute_alone.steps_per_s:
            return Rates(rate, compute_alone.steps_per_s, training_rate, "measured")
    computes = [s.compute_s / s.count for s in steps if s.compute_s is not None]
    median = float(np.median(computes)) if computes else 0.0
    estimate = 1.0 / median if median > 0 else None
    reason = compute_alone.reason if compute_alone is not None else None
    source: ComputeAloneSource = "estimated" if estimate is not None else ""
    return Rates(rate, estimate, training_rate, source, reason or Reason("step-not-run-alone"))


def with_held_output(
    paired: PairedCost, stages: Sequence[StageStats], *, around_s: float = 0.0
) -> PairedCost:
    """The pairs' cost pooled with what training read with the pipeline's whole output held in
    memory, FastFlow's T in this process, where both have an interval (docs/design.md, "The
    held output")."""
    held = held_output_log(stages, around_s=around_s, training=paired.training)
    if held is None or paired.low is None or paired.high is None:
        return paired
    ends = [-math.log(1.0 - min(end, MAX_POOLED_COST)) for end in (paired.low, paired.high)]
    mean, half = pooled([((ends[0] + ends[1]) / 2, (ends[1] - ends[0]) / 2), held])
    low, high = log_cost(mean - half), log_cost(mean + half)
    return dataclasses.replace(
        paired, cost=log_cost(mean), low=low, high=high, held=log_cost(held[0])
    )


# A cost this close to 1 is read as it for pooling: its log ratio is unbounded.
MAX_POOLED_COST = 0.99
# The held output's unchanged side within this factor of A, or it timed another training: a
# base 10% off shifts the held reading by about as much, twice the balanced band's floor.
HELD_BASE_OFF = 1.10


def held_output_log(
    stages: Sequence[StageStats], *, around_s: float = 0.0, training: float | None = None
) -> tuple[float, float] | None:
    """log(held / unchanged) on training for the pipeline's output held in memory, and its
    90% half-width, with `around_s` (fit's own work a step, outside the trial's train function)
    added to both sides' steps. None where that hold gave no interval or was disturbed, or
    where its unchanged side ran off `training` (A, steps/s) by more than `HELD_BASE_OFF`: it
    then timed another training (a cache its copy starts empty, its slices' iterator starts,
    a host that changed speed)."""
    output = output_stage(stages)
    if output is None or output.training_speedup_if_free_unused is not None:
        return None
    speedup, held_rate = output.training_speedup_if_free, output.training_held_steps_per_s
    low, high = output.training_speedup_if_free_low, output.training_speedup_if_free_high
    if speedup is None or low is None or high is None or not held_rate:
        return None
    base_s = speedup / held_rate + around_s
    if training and abs(math.log(base_s * training)) > math.log(HELD_BASE_OFF):
        return None

    def log_with_fit(ratio: float) -> float:
        return math.log((ratio / held_rate + around_s) / (1.0 / held_rate + around_s))

    return log_with_fit(speedup), (log_with_fit(high) - log_with_fit(low)) / 2


def not_measurable(paired: PairedCost) -> bool:
    """A >= T within the pairs' noise (or, with one pair, at all): the cost is zero."""
    return paired.cost <= 0.0 or (paired.low is not None and paired.low <= 0.0)


def dominant_part(
    wait: float, contention: float, fetch: float, epoch_start: float = 0.0
) -> CostPart | None:
    """None under 5% of training time (the compute-bound band)."""
    parts: dict[CostPart, float] = {
        "wait": wait,
        "contention": contention,
        "fetch": fetch,
        "epoch-start": epoch_start,
    }
    largest = max(parts, key=parts.__getitem__)
    return largest if sum(parts.values()) >= 0.05 else None


@dataclass(frozen=True)
class InEpochCost:
    wait: float
    fetch: float
    contention: float
    pull_s: float | None = None  # the per-pull overhead behind `fetch`, seconds per step

    @property
    def cost(self) -> float:
        return self.wait + self.fetch + self.contention


def split_cost(rates: Rates, wait_fraction: float, *, wait_source: str) -> InEpochCost:
    """The gap 1 - A/T split into wait, fetch and contention (docs/design.md, "Input cost")."""
    gap = rates.gap
    wait, fetch, pull_s = wait_fraction, 0.0, None
    pipeline, training = rates.pipeline, rates.training
    if pipeline and training and pipeline >= FETCH_PIPELINE_MARGIN * training:
        pull_s = 1.0 / pipeline
        if wait_source == "iterator-timing":  # its wait holds the pull; fit's stamps do not
            fetch, wait = wait, 0.0  # the measured wait is the pull itself
            if rates.paired is not None:
                fetch = min(fetch, max(0.0, gap))
        else:
            pull_s = min(pull_s, MAX_PULL_S)
            fetch = min(pull_s * training, max(0.0, gap - wait))
    if rates.paired is not None and not_measurable(rates.paired):
        # The gap is within noise: nothing is read from it; a wait measured step by step stands.
        return InEpochCost(wait, 0.0, 0.0, None)
    if rates.source == "estimated":
        gap = min(gap, wait + fetch)  # step time minus wait: contention cannot be seen
    if wait_source == "unavailable":
        # The pulls run inside a tf.function: the gap is read whole.
        return InEpochCost(max(0.0, gap), 0.0, 0.0, None)
    return InEpochCost(wait, fetch, max(0.0, gap - wait - fetch), pull_s)


@dataclass(frozen=True)
class EpochStartPart:
    """`share`: start / (steps / A + start); 0, `steps` None, where the length is unknown."""

    share: float
    start_s: float  # the median start-up of the epochs counted
    steps: int | None  # the epoch's length it is spread over


def counted_epoch_starts(starts: Sequence[EpochStart]) -> list[EpochStart]:
    return [e for e in starts if e.epoch >= FIRST_COUNTED_EPOCH]


def epoch_start_part(
    starts: Sequence[EpochStart], training_rate: float | None
) -> EpochStartPart | None:
    """None where no later epoch started."""
    if not (counted := counted_epoch_starts(starts)):
        return None
    start_s = float(statistics.median(e.duration_s for e in counted))
    lengths = [e.steps_per_epoch for e in counted if e.steps_per_epoch]
    if not lengths or not training_rate or training_rate <= 0:
        return EpochStartPart(0.0, start_s, None)
    steps = int(statistics.median_low(lengths))
    return EpochStartPart(start_s / (steps / training_rate + start_s), start_s, steps)


def unspread_epoch_start(split: CostSplit, training_rate: float | None) -> float | None:
    """The median epoch start where long but not spread over an epoch of unknown length."""
    start = split.epoch_start_s
    if start is None or split.epoch_steps is not None or not training_rate:
        return None
    return start if start * training_rate >= UNSPREAD_START_STEPS else None


def with_epoch_start(in_epoch: float, epoch_start: float) -> float:
    return epoch_start + in_epoch * (1.0 - epoch_start)


def epoch_start_stage(stages: Sequence[StageStats]) -> str:
    """The stage that likely makes each epoch's start-up (docs/design.md, "Input cost")."""
    buffers = [
        buffer
        for stage in stages
        if stage.kind in SHUFFLE_KINDS
        and (buffer := stage.settings.buffer_size) is not None
        and buffer > 1
    ]
    if buffers:
        return f"shuffle({max(buffers)})"
    interleave = next((s for s in stages if s.kind in ("interleave", "parallel-interleave")), None)
    if interleave is not None:
        return stage_name(interleave)
    files = [s.settings.filename for s in stages if s.kind == "cache" and s.settings.filename]
    return f"cache({files[0]})" if files else ""  # a cache() of "" is in memory


def python_stages(stages: Sequence[StageStats]) -> list[StageStats]:
    """from_generator runs Python for every element too (built on py_function: the GIL)."""
    return [s for s in stages if s.uses_py_function or s.name == "from_generator"]


def contention_kind(
    contention: float, free_cores: float | None, stages: Sequence[StageStats]
) -> ContentionKind:
    """What the pipeline contends for, "" where unknown (docs/design.md, "Input cost")."""
    if contention <= 0.0 or free_cores is None:
        return ""
    if free_cores < SATURATED_FREE_CORES:
        return "cores"
    return "gil" if python_stages(stages) else ""


@dataclass(frozen=True)
class ContentionEvidence:
    pipeline_cores: float | None  # busy while training
    free_cores: float | None  # the host's idle cores


def contention_evidence(
    host: HostSection | None, steps: Sequence[StepRecord], compute_alone: ComputeAlone | None
) -> ContentionEvidence:
    """The pipeline's cores and the host's free ones (docs/design.md, "Input cost")."""
    blocks = compute_alone.blocks if compute_alone is not None else []
    busy = pipeline_cores(blocks) if blocks else None
    during = samples_during(host.samples, steps) if host and host.samples and steps else []
    if host is None or not during:
        return ContentionEvidence(busy, None)
    alone = step_cores_of(compute_alone)
    if busy is None and alone is not None:
        busy = max(0.0, float(np.mean([s.process_cpu_pct for s in during])) / 100.0 - alone)
    if not (cores := host.cpu_count):
        return ContentionEvidence(busy, None)
    busy_cores = float(np.mean([s.system_cpu_pct for s in during])) / 100.0 * cores
    return ContentionEvidence(busy, max(0.0, cores - busy_cores))


def step_cores_of(compute_alone: ComputeAlone | None) -> float | None:
    if compute_alone is None or not compute_alone.measured:
        return None
    stats = compute_alone.step_time
    if compute_alone.cpu_s_per_step is None or stats is None or stats.median_s <= 0:
        return None
    return compute_alone.cpu_s_per_step / stats.median_s


def samples_during(samples: Sequence[HostSample], steps: Sequence[StepRecord]) -> list[HostSample]:
    begin, end = steps[0].start_s, steps[-1].start_s + steps[-1].duration_s
    return [s for s in samples if begin <= s.t_s <= end]


@dataclass(frozen=True)
class InputCost:
    """`interval`: 90%, None where A and T were not taken in alternation."""

    cost: float
    split: CostSplit
    interval: list[float] | None


def input_cost(
    rates: Rates,
    wait_fraction: float,
    *,
    wait_source: str,
    epoch_starts: Sequence[EpochStart],
    stages: Sequence[StageStats],
    cpu: ContentionEvidence,
) -> InputCost:
    """The split, each epoch's start-up added, and its interval (docs/design.md, "Input cost")."""
    steps = split_cost(rates, wait_fraction, wait_source=wait_source)
    start = epoch_start_part(epoch_starts, rates.training)
    share = start.share if start is not None else 0.0
    rest, cost = 1.0 - share, with_epoch_start(steps.cost, share)
    waits_timed = wait_source != "unavailable"
    wait, contention, fetch = (part * rest for part in (steps.wait, steps.contention, steps.fetch))
    split = CostSplit(
        wait=wait,
        contention=contention,
        fetch=fetch,
        # Waits not timed: the wait part holds waiting and contention, so neither leads.
        dominant=dominant_part(wait, contention, fetch, share) if waits_timed else None,
        pipeline_cores_busy=cpu.pipeline_cores,
        free_cores=cpu.free_cores,
        pull_s=steps.pull_s,
        contention_kind=contention_kind(steps.contention, cpu.free_cores, stages),
        epoch_start=share,
        epoch_start_s=start.start_s if start is not None else None,
        epoch_steps=start.steps if start is not None else None,
        epoch_start_stage=epoch_start_stage(stages) if start is not None else "",
        waits_timed=waits_timed,
    )
    floor = split.wait if split.wait >= MATERIAL_WAIT and split.waits_timed else 0.0
    return InputCost(cost, split, cost_interval(rates.paired, share, cost, floor=floor))


# A wait this large, measured step by step, holds the interval's low end up whatever the
# pairs' noise (the XProf band where input starts to matter).
MATERIAL_WAIT = 0.05


def cost_interval(
    paired: PairedCost | None, epoch_start: float, cost: float, *, floor: float = 0.0
) -> list[float] | None:
    """The pairs' 90% interval clamped at zero, with the epoch starts added; widened to hold
    the cost (a measured wait above the gap), and raised to `floor` (a material wait)."""
    if paired is None or paired.low is None or paired.high is None:
        return None
    low, high = (
        with_epoch_start(max(0.0, bound), epoch_start) for bound in (paired.low, paired.high)
    )
    return [max(min(low, cost), floor), max(high, cost)]


def label_of(
    cost: float,
    *,
    high: float = DEFAULT_THRESHOLDS.highly_input_bound,
    moderate: float = DEFAULT_THRESHOLDS.moderately_input_bound,
) -> VerdictLabel:
    if cost >= high:
        return "input-bound"
    if cost >= moderate:
        return "balanced"
    return "compute-bound"


def interval_labels(interval: Sequence[float]) -> tuple[VerdictLabel, VerdictLabel]:
    return label_of(interval[0]), label_of(interval[-1])


class _EpochFigures(NamedTuple):
    epoch: int
    steps: int
    seconds: float
    cost: float  # its own 1 - A/T against the run's T, at least its measured wait
    wait: float | None


def phases_of(steps: Sequence[StepRecord], compute_rate: float | None) -> list[PhaseVerdict]:
    """One verdict per run of epochs whose input cost is alike; empty when there is one."""
    by_epoch: dict[int, list[StepRecord]] = {}
    for step in steps:
        by_epoch.setdefault(step.epoch, []).append(step)
    epochs = [
        (epoch, group)
        for epoch, group in sorted(by_epoch.items())
        if sum(s.count for s in group) >= PHASE_MIN_STEPS
    ]
    if len(epochs) < 2 or not compute_rate:
        return []
    runs: list[list[_EpochFigures]] = []
    for epoch, group in epochs:
        figures = _epoch_figures(epoch, group, compute_rate)
        if not runs or abs(figures.cost - runs[-1][-1].cost) > PHASE_COST_GAP:
            runs.append([figures])
        else:
            runs[-1].append(figures)
    if len(runs) < 2:
        return []
    return [_phase(run) for run in runs]


def _epoch_figures(epoch: int, group: Sequence[StepRecord], compute_rate: float) -> _EpochFigures:
    count, seconds = sum(s.count for s in group), sum(s.duration_s for s in group)
    rate = count / seconds if seconds > 0 else 0.0
    waits = [s for s in group if s.input_wait_s is not None]
    wait = sum(s.input_wait_s or 0.0 for s in waits) / seconds if waits and seconds > 0 else None
    cost = max(0.0, 1.0 - rate / compute_rate)
    return _EpochFigures(epoch, count, seconds, max(cost, wait or 0.0), wait)


def _phase(run: Sequence[_EpochFigures]) -> PhaseVerdict:
    count, seconds = sum(e.steps for e in run), sum(e.seconds for e in run)
    cost = sum(e.cost * e.seconds for e in run) / seconds if seconds > 0 else None
    known = [e for e in run if e.wait is not None]
    known_s = sum(e.seconds for e in known)
    wait = sum((e.wait or 0.0) * e.seconds for e in known) / known_s if known else None
    return PhaseVerdict(
        first_epoch=run[0].epoch,
        last_epoch=run[-1].epoch,
        steps=count,
        steps_per_s=count / seconds if seconds > 0 else None,
        input_wait_fraction=wait,
        input_cost_fraction=cost,
        label="unknown" if cost is None else label_of(cost),
    )
