"""Input cost: what the input pipeline costs training, from three measured rates.

DS-Analyzer's differential reading (VLDB 2021): the pipeline alone P (batches/s), the train
step alone on a cached batch T (steps/s) and training as it ran A (steps/s). Input costs
`1 - A/T` of training time: T/A is the speedup if input were free. The wait share (XProf's
figure) is one part of that cost; the others are invisible to it::

    training step, as it ran     |<- wait ->|<- contention ->|<------ compute alone ------>|
    train step on a cached batch                             |<------ compute alone ------>|

- wait: the step waited for a batch that was not ready (measured per step);
- fetch: the per-pull overhead of a batch that was ready: where the pipeline alone is far
  faster than training, a pull cannot be waiting on the pipeline's work;
- contention: the rest of the gap: the pipeline's threads took cores the step needed, so
  nothing waited and everything ran slower. Its evidence is in the host samples: the
  pipeline's extra cores busy while training, and how few cores were left free.

The parts add up to the cost. Where the measured wait (and fetch) exceeds `1 - A/T` (noise
in a short compute-alone run), the measured parts stand and the cost is their sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipediag.report.model import (
    BALANCED,
    COMPUTE_BOUND,
    COST_CONTENTION,
    COST_FETCH,
    COST_WAIT,
    ESTIMATED,
    INPUT_BOUND,
    MEASURED,
    UNKNOWN,
    ComputeAlone,
    ComputeAloneSource,
    CostPart,
    CostSplit,
    HostSection,
    PhaseVerdict,
    PipelineBenchmark,
    StepRecord,
    VerdictLabel,
)
from pipediag.report.vocabulary import (
    WAIT_ITERATOR_TIMING,
)

# The pipeline alone at least this many times faster than training cannot have kept the
# step waiting through a prefetch buffer: what the step spent in next() is the pull itself
# (docs/design.md, "Input cost": 5,100 batches/s alone against 700 steps/s, 25% of each
# step spent in next()).
FETCH_PIPELINE_MARGIN = 5.0
# Two epochs whose input costs differ by more than this are two phases (a cache filling in
# epoch 1); smaller differences are run-to-run noise on a shared 2-core host.
PHASE_COST_GAP = 0.15
# An epoch needs this many measured steps for its own rate.
PHASE_MIN_STEPS = 10
# Iterator timing includes the pull in the wait; batch stamps under fit do not.
WAIT_INCLUDES_PULL = frozenset({WAIT_ITERATOR_TIMING})


@dataclass(frozen=True)
class Rates:
    """The three rates and where T came from."""

    pipeline: float | None  # P, batches/s
    compute: float | None  # T, steps/s
    training: float | None  # A, steps/s
    source: ComputeAloneSource  # "" without T
    reason: str | None = None  # why T is estimated


def rates_of(
    steps: Sequence[StepRecord],
    training_rate: float | None,
    pipeline: PipelineBenchmark,
    compute_alone: ComputeAlone | None,
) -> Rates:
    """P, T and A; T measured where the compute-alone phase ran, else step time minus wait."""
    if compute_alone is not None and compute_alone.measured and compute_alone.steps_per_s:
        return Rates(pipeline.batches_per_s, compute_alone.steps_per_s, training_rate, MEASURED)
    computes = [s.compute_s / s.count for s in steps if s.compute_s is not None]
    median = float(np.median(computes)) if computes else 0.0
    estimate = 1.0 / median if median > 0 else None
    reason = compute_alone.reason if compute_alone is not None else None
    return Rates(
        pipeline.batches_per_s,
        estimate,
        training_rate,
        ESTIMATED if estimate is not None else "",
        reason or "the train step was not run alone",
    )


def dominant_part(wait: float, contention: float, fetch: float) -> CostPart | None:
    """The largest part of an input cost, or None when the cost is too small to name one
    (under 5% of training time, the compute-bound band)."""
    parts: dict[CostPart, float] = {
        COST_WAIT: wait,
        COST_CONTENTION: contention,
        COST_FETCH: fetch,
    }
    largest = max(parts, key=parts.__getitem__)
    return largest if wait + contention + fetch >= 0.05 else None


def split_cost(
    rates: Rates,
    wait_fraction: float,
    *,
    wait_source: str,
    steps_cpu: StepsCpu | None = None,
    contention_cap: float | None = None,
) -> tuple[float, CostSplit]:
    """Input cost as a share of training time, and its parts (wait, contention, fetch).

    `contention_cap` is the most contention the pipeline's CPU can explain
    (`contention_bound`); the rest of the gap is left out of the cost as noise.
    """
    gap = 1.0 - rates.training / rates.compute if rates.compute and rates.training else 0.0
    pull_s = None
    fetch = 0.0
    wait = wait_fraction
    pipeline, training = rates.pipeline, rates.training
    if pipeline and training and pipeline >= FETCH_PIPELINE_MARGIN * training:
        pull_s = 1.0 / pipeline
        if wait_source in WAIT_INCLUDES_PULL:
            fetch, wait = wait, 0.0  # the measured wait is the pull itself
        else:
            # A pull inside the step, at the pipeline-alone cost of a batch: an estimate,
            # so it never claims more than the gap leaves.
            fetch = min(pull_s * training, max(0.0, gap - wait))
    if rates.source == ESTIMATED:
        gap = min(gap, wait + fetch)  # step time minus wait: contention cannot be seen
    contention = max(0.0, gap - wait - fetch)
    if contention_cap is not None and contention > contention_cap:
        contention = contention_cap
    cost = wait + fetch + contention
    return cost, CostSplit(
        wait=wait,
        contention=contention,
        fetch=fetch,
        dominant=dominant_part(wait, contention, fetch),
        pipeline_cores_busy=steps_cpu.pipeline_cores if steps_cpu else None,
        free_cores=steps_cpu.free_cores if steps_cpu else None,
        pull_s=pull_s,
    )


# How far real contention exceeds the simple share-of-the-cores model below: thread switching,
# shared caches and memory bandwidth. Measured on the contention case (contention_fit: a parallel
# decode map beside a small CNN on 2 cores): 43-46% measured where the model gives ~33%.
CONTENTION_SLACK = 2.0
# Contention under this share is believed whatever the CPU figures say (they are rough: the
# pipeline's CPU is measured alone, at full speed): well under XProf's 5% band.
CONTENTION_FLOOR = 0.02


def contention_bound(
    cores: int | None, step_cores: float | None, pipeline_cores: float | None
) -> float | None:
    """The most contention the pipeline's CPU can explain, as a share of training time.

    With the step alone keeping `step_cores` busy and the pipeline `pipeline_cores` while it
    feeds training, an oversubscribed host gives the step about cores / demand of the CPU it
    wants, so it slows by 1 - cores / demand. A gap between training and the step alone far
    beyond that (a cheap pipeline on a heavily shared host) is noise, not input cost. None
    when a figure is missing: then the whole gap stands.
    """
    if not cores or step_cores is None or pipeline_cores is None:
        return None
    demand = step_cores + pipeline_cores
    oversubscribed = max(0.0, 1.0 - cores / demand) if demand > 0 else 0.0
    return min(1.0, CONTENTION_SLACK * oversubscribed + CONTENTION_FLOOR)


def step_cores_of(compute_alone: ComputeAlone | None) -> float | None:
    """Cores the train step keeps busy on its own (process CPU over its wall time)."""
    if compute_alone is None or not compute_alone.measured:
        return None
    stats = compute_alone.step_time
    if compute_alone.cpu_s_per_step is None or stats is None or stats.median_s <= 0:
        return None
    return compute_alone.cpu_s_per_step / stats.median_s


@dataclass(frozen=True)
class StepsCpu:
    """Cores busy while training, from the host samples, against the step alone's own."""

    training_cores: float  # this process, while the measured steps ran
    alone_cores: float | None  # this process, while the step ran alone
    free_cores: float | None  # the host's idle cores while training

    @property
    def pipeline_cores(self) -> float | None:
        if self.alone_cores is None:
            return None
        return max(0.0, self.training_cores - self.alone_cores)


def steps_cpu(
    host: HostSection | None,
    steps: Sequence[StepRecord],
    compute_alone: ComputeAlone | None,
) -> StepsCpu | None:
    """Cores busy during the measured steps, and during the compute-alone run."""
    if host is None or not host.samples or not steps:
        return None
    begin = steps[0].start_s
    end = steps[-1].start_s + steps[-1].duration_s
    during = [s for s in host.samples if begin <= s.t_s <= end]
    if not during:
        return None
    training = float(np.mean([s.process_cpu_pct for s in during])) / 100.0
    cores = host.cpu_count or 0
    free = None
    if cores:
        busy = float(np.mean([s.system_cpu_pct for s in during])) / 100.0 * cores
        free = max(0.0, cores - busy)
    return StepsCpu(training, step_cores_of(compute_alone), free)


def label_of(cost: float, *, high: float, moderate: float) -> VerdictLabel:
    if cost >= high:
        return INPUT_BOUND
    if cost >= moderate:
        return BALANCED
    return COMPUTE_BOUND


def phases_of(
    steps: Sequence[StepRecord],
    compute_rate: float | None,
    *,
    high: float,
    moderate: float,
    contention_cap: float | None = None,
) -> list[PhaseVerdict]:
    """One verdict per run of epochs whose input cost is alike; empty when there is one.

    An epoch's cost is its own 1 - A/T, with contention capped as for the whole run.
    """
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
    figures = [
        (epoch, *_epoch_figures(group, compute_rate, contention_cap)) for epoch, group in epochs
    ]
    runs: list[list[tuple[int, int, float, float, float | None]]] = [[figures[0]]]
    for item in figures[1:]:
        if abs(item[3] - runs[-1][-1][3]) > PHASE_COST_GAP:
            runs.append([item])
        else:
            runs[-1].append(item)
    if len(runs) < 2:
        return []
    return [_phase(run, high=high, moderate=moderate) for run in runs]


def _epoch_figures(
    group: Sequence[StepRecord], compute_rate: float, contention_cap: float | None
) -> tuple[int, float, float, float | None]:
    """(steps, seconds, cost, wait share) of one epoch's measured steps."""
    count = sum(s.count for s in group)
    seconds = sum(s.duration_s for s in group)
    rate = count / seconds if seconds > 0 else 0.0
    waits = [s for s in group if s.input_wait_s is not None]
    wait = sum(s.input_wait_s or 0.0 for s in waits) / seconds if waits and seconds > 0 else None
    cost = max(0.0, 1.0 - rate / compute_rate)
    if contention_cap is not None:
        cost = min(cost, (wait or 0.0) + contention_cap)
    return count, seconds, max(cost, wait or 0.0), wait


def _phase(
    run: Sequence[tuple[int, int, float, float, float | None]],
    *,
    high: float,
    moderate: float,
) -> PhaseVerdict:
    first, last = run[0][0], run[-1][0]
    count = sum(item[1] for item in run)
    seconds = sum(item[2] for item in run)
    rate = count / seconds if seconds > 0 else None
    cost = sum(item[3] * item[2] for item in run) / seconds if seconds > 0 else None
    known = [item for item in run if item[4] is not None]
    wait = (
        sum((item[4] or 0.0) * item[2] for item in known) / sum(item[2] for item in known)
        if known
        else None
    )
    name = f"epoch {first + 1}" if first == last else f"epochs {first + 1}-{last + 1}"
    label = UNKNOWN if cost is None else label_of(cost, high=high, moderate=moderate)
    return PhaseVerdict(name, first, last, count, rate, wait, cost, label)
