"""The paired engine: the one interval, and the one home of the knobs, of every comparison
run as alternating blocks (docs/design.md, "The paired engine")."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

# Two-sided 90% quantiles of Student's t, by degrees of freedom (1 to 10). Every interval is
# at 90%: it stops a clear 2-core trial in its fewest rounds.
_T90 = (6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812)
# Off the median of its kind by this factor and this many spreads: disturbed, left out.
DISTURBED_FACTOR = 1.25
DISTURBED_SPREADS = 4.0
_MAD_TO_SD = 1.4826

# --- the trials of a change (bench/interleaved.py): rounds of two slices, order alternating
# A trial may stop on its interval from this many rounds on, and plans its slices for them
# (docs/design.md, "The paired engine").
TRIAL_MIN_ROUNDS = 5
OVERRUN = 1.3  # rounds may overrun a trial's share of the budget by this before none starts
# Slices planned in a trial's share: `TRIAL_MIN_ROUNDS` rounds of two, with their untimed
# first steps and the checks between them.
SLICES_PER_SHARE = 12
# The pipeline alone plans this share of a trial's time as timed reads; iterators and first
# batches take the rest.
PIPELINE_SLICE_SHARE = 0.8
# A read of the pipeline alone stops here: fast pipelines reach a stable rate long before it.
PIPELINE_SLICE_MAX_BATCHES = 2000
# A fix's trial on training where the caller gives no time: five rounds of two ~0.25 s slices.
TRAINING_TRIAL_S = 3.0
# Steps a slice of training plans for: enough for the scheduler's noise to average out,
# bounded by the share.
TRAINING_SLICE_STEPS = 8


@dataclass(frozen=True)
class SliceBounds:
    shortest_s: float
    longest_s: float

    def clamp(self, seconds: float) -> float:
        return max(self.shortest_s, min(self.longest_s, seconds))


# The pipeline alone (slice lengths: docs/design.md, "The paired engine").
PIPELINE_SLICES = SliceBounds(0.15, 0.4)
# Training (fix trials, stage holds), from a fresh iterator whose first step is timed apart.
TRAINING_SLICES = SliceBounds(0.1, 0.5)
# The step alone on a held batch: no iterator to start, so shorter.
STEP_SLICES = SliceBounds(0.05, 0.5)
# A fix's trial on training starts only with this many shortest slices left in its share
# (two rounds); with less, its budget is spent.
TRIAL_MIN_SHARE_SLICES = 4
# A stage hold's trial (training/stage_cost.py): with less time than this it cannot run its
# five rounds, and is not started.
HOLD_MIN_SHARE_S = 6 * TRAINING_SLICES.shortest_s
# A stage hold's trial is given at least this (five rounds of two shortest slices, with untimed
# first steps) where left: a short budget still measures the output stage, worth searching or not.
HOLD_MIN_TRIAL_S = SLICES_PER_SHARE * TRAINING_SLICES.shortest_s

# --- stage timing (bench/stages.py): rounds per prefix (docs/design.md, "Stage timing").
STAGE_ROUNDS = 3

# --- training against the step alone (training/alternation.py): A0 T1 A1 T2 A2 ...
# Three rounds cost about one 2 s run of the step alone (docs/design.md, "The paired engine").
BLOCK_S = 0.4
# Steps in a block; where the steps left are unknown, 64 (docs/design.md, "Rates in alternation").
MIN_BLOCK_STEPS = 4
MAX_BLOCK_STEPS = 1024
MAX_BLOCK_STEPS_UNBOUNDED = 64
# Where nothing bounds a block, steps shorter than this over 64 still fill a block this long
# (docs/design.md, "Rates in alternation").
UNBOUNDED_BLOCK_S = 0.1
# The fewest rounds: the three blocks of each kind that `BLOCK_S` is sized for.
ALTERNATION_MIN_ROUNDS = 3
MAX_ROUNDS = 6
# A multi-worker job's rounds: exactly this many: every worker must run as many steps
# (docs/design.md, "Multi-worker jobs").
LOCKSTEP_ROUNDS = 3
# Rounds go on while the cost's interval is wider than this either side, or holds an edge.
TARGET_HALF_WIDTH = 0.03
# Rounds go on up to this many times `MAX_ROUNDS` and `MAX_SECONDS`, within the steps left,
# where the interval spans a band's edge too widely (docs/design.md, "Rates in alternation").
EDGE_EXTENSION = 2
# The verdict is due within 10 s of the first step (docs/design.md, "The paired engine").
MAX_SECONDS = 6.0
# The observer check's own pairs after the cost's rounds: up to this many quiet blocks, each
# between two watched ones, adjacent, started within this long (docs/design.md, "What
# pipediag costs a step"). Two pairs a run in the rounds bound no script's 3% on this host.
OBSERVER_PAIRS = 6
OBSERVER_S = 6.0


def planned_slice_s(
    share_s: float,
    *,
    slices: int,
    bounds: SliceBounds,
    at_most_s: float | None = None,
    at_least_s: float | None = None,
) -> float:
    """A slice of a trial (docs/design.md, "The paired engine"); `at_most_s`: enough steps' time."""
    planned_s = share_s / slices
    if at_most_s is not None:
        planned_s = min(at_most_s, planned_s)
    bounded_s = bounds.clamp(planned_s)
    return bounded_s if at_least_s is None else max(at_least_s, bounded_s)


def t90(degrees: int) -> float:
    if degrees < 1:
        raise ValueError("an interval needs at least two pairs")
    return _T90[degrees - 1] if degrees <= len(_T90) else 1.645 + 2.4 / degrees


def disturbed(logs: Mapping[int, float]) -> set[int]:
    """The keys of log values far off their median. A stall is rare: where more than a third
    (and more than one) would go, they are the host's noise and none is left out
    (docs/design.md, "The paired engine", "Rates in alternation")."""
    if len(logs) < 3:
        return set()
    middle = statistics.median(logs.values())
    limit = max(math.log(DISTURBED_FACTOR), DISTURBED_SPREADS * robust_sd(logs.values()))
    found = {key for key, value in logs.items() if abs(value - middle) > limit}
    return found if len(found) <= max(1, len(logs) // 3) else set()


def robust_sd(values: Iterable[float]) -> float:
    """The median absolute deviation, scaled to a normal distribution's standard deviation."""
    found = list(values)
    middle = statistics.median(found)
    return _MAD_TO_SD * statistics.median(abs(value - middle) for value in found)


@dataclass(frozen=True)
class LogInterval:
    mean: float
    low: float | None
    high: float | None
    pairs: int

    def ends(self, to: Callable[[float], float]) -> tuple[float | None, float | None]:
        if self.low is None or self.high is None:
            return None, None
        return to(self.low), to(self.high)


def log_interval(logs: Sequence[float]) -> LogInterval | None:
    if not logs:
        return None
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return LogInterval(mean, None, None, len(logs))
    spread = t90(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return LogInterval(mean, mean - spread, mean + spread, len(logs))


def pooled(estimates: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """One log ratio from independent estimates of it, each a mean and its 90% half-width:
    the precision-weighted mean, and a half-width that reaches at least half-way to the
    farthest estimate where they disagree (docs/design.md, "The held output")."""
    if not estimates:
        raise ValueError("nothing to pool")
    weights = [1.0 / max(half, MIN_POOLED_HALF_WIDTH) ** 2 for _, half in estimates]
    total = sum(weights)
    mean = sum(w * m for w, (m, _) in zip(weights, estimates, strict=True)) / total
    half = math.sqrt(1.0 / total)
    return mean, max(half, *(abs(m - mean) / 2 for m, _ in estimates))


# A 90% half-width is never read narrower than this in pooling: a trial's few rounds can agree
# by chance, and one estimate must not outweigh the other without bound.
MIN_POOLED_HALF_WIDTH = 0.005


@dataclass(frozen=True)
class RatioFigure:
    """The kept rounds' geometric mean ratio and its 90% interval."""

    speedup: float
    low: float | None
    high: float | None


def ratio_figure(ratios: Sequence[float]) -> RatioFigure | None:
    """From rounds' ratios (variant over baseline), disturbed rounds left out."""
    logs = {i: math.log(r) for i, r in enumerate(ratios) if r > 0}
    left_out = disturbed(logs)
    if (found := log_interval([value for i, value in logs.items() if i not in left_out])) is None:
        return None
    return RatioFigure(math.exp(found.mean), *found.ends(math.exp))
