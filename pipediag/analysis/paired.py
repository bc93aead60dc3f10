"""The paired engine: the one interval, and the one home of the knobs, of every comparison.

Every comparison runs its two sides in alternating blocks on one host at one time: training
(A) against the train step alone (T), and a change against the original, on the pipeline
alone, on training or on the step alone. Each pair of blocks gives one log ratio. Pairs a
host stall disturbed are left out (`disturbed`), and the mean log ratio's 90% Student-t
interval is the figure's interval (docs/design.md, "The paired engine").
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Two-sided 90% quantiles of Student's t, by degrees of freedom (1 to 10); 1.645 beyond. Every
# interval is at 90%: it stops a clear 2-core trial in its fewest rounds.
_T90 = (6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812)
# A value off the median of its kind by more than this factor, and by more than
# DISTURBED_SPREADS times their spread, was disturbed by the host and is left out.
DISTURBED_FACTOR = 1.25
DISTURBED_SPREADS = 4.0
# The median absolute deviation times this estimates a normal spread's standard deviation.
_MAD_TO_SD = 1.4826

# --- the trials of a change (bench/interleaved.py): rounds of two slices, order alternating
# The fewest rounds a trial may stop after.
TRIAL_MIN_ROUNDS = 5
# A trial's rounds may overrun its share of the budget by this factor before none is started.
OVERRUN = 1.3
# Slices planned in a trial's share: `TRIAL_MIN_ROUNDS` rounds of two, with their untimed
# first steps and the checks between them.
SLICES_PER_SHARE = 12


@dataclass(frozen=True)
class SliceBounds:
    """The shortest and longest timed slice of one kind of comparison."""

    shortest_s: float
    longest_s: float

    def clamp(self, seconds: float) -> float:
        return max(self.shortest_s, min(self.longest_s, seconds))


# The pipeline read alone (the what-if trials): under 0.15 s a slice is mostly its first
# batch (threads starting, buffers filling); over 0.4 s (~30 batches of the input-bound
# example) slices only delay a clear result, which 5 rounds reach in about 4.5 s.
PIPELINE_SLICES = SliceBounds(0.15, 0.4)
# Training (fix trials and stage holds on the train step): a slice of a few steps, from a
# fresh iterator whose first step is timed apart.
TRAINING_SLICES = SliceBounds(0.1, 0.5)
# The step alone on a held batch (the model-side trials): no iterator to start, so shorter.
STEP_SLICES = SliceBounds(0.05, 0.5)

# --- training against the step alone (training/alternation.py): A0 T1 A1 T2 A2 ...
# A block lasts about this long at the measured step (0.4 s: three of each kind cost about
# what one 2 s compute-alone run did, and sub-second drifts still fall on both kinds).
BLOCK_S = 0.4
# Fewest steps in a block: its transition may take up to half of them. The most, where the
# steps left bound the blocks (fit's plan): blocks of 64 steps (0.19 s at 3 ms) left
# short-step scripts "too noisy to tell". Where nothing says how many steps are left (a
# loop), 64: a script with short steps may end soon after the budget, and larger blocks
# left a JAX loop one pair (docs/design.md, "Rates in alternation").
MIN_BLOCK_STEPS = 4
MAX_BLOCK_STEPS = 1024
MAX_BLOCK_STEPS_UNBOUNDED = 64
ALTERNATION_MIN_ROUNDS = 3
MAX_ROUNDS = 6
# A multi-worker job's alternation: exactly this many rounds (docs/design.md, "Multi-worker
# jobs": every worker must run as many steps).
LOCKSTEP_ROUNDS = 3
# Rounds go on while the cost's interval is wider than this either side.
TARGET_HALF_WIDTH = 0.03
# Where the steps left are known (fit), and the interval at `MAX_ROUNDS` or `MAX_SECONDS`
# still spans a band's edge too widely for a label, rounds go on up to this many times
# both, within those steps: spent only where it decides the label (docs/design.md, "Rates
# in alternation": the time series LSTM read "uncertain" 24% (17-31%) in 2 of 3 runs at 6
# pairs, against a truth of 29%).
EDGE_EXTENSION = 2
# No new round starts once the alternation has run this long: the verdict is due within
# 10 s of the first step (benchmarks/time_to_verdict.py: a custom loop's alternation took
# 7.8 s of its 11.7 s with a 15 s bound).
MAX_SECONDS = 6.0


def t90(degrees: int) -> float:
    """The two-sided 90% quantile of Student's t with `degrees` degrees of freedom."""
    if degrees < 1:
        raise ValueError("an interval needs at least two pairs")
    return _T90[degrees - 1] if degrees <= len(_T90) else 1.645 + 2.4 / degrees


def disturbed(logs: Mapping[int, float]) -> set[int]:
    """The keys of log values far off the median of them all (`DISTURBED_FACTOR`, and
    `DISTURBED_SPREADS` times their median absolute deviation), either way alike.

    A stall is rare: where more than a third of the values (and more than one) would go,
    they are a mode of the host's noise, not stalls, and none is left out. Fewer than 3
    values have no median to be far from."""
    if len(logs) < 3:
        return set()
    middle = statistics.median(logs.values())
    spread = statistics.median(abs(value - middle) for value in logs.values())
    limit = max(math.log(DISTURBED_FACTOR), DISTURBED_SPREADS * _MAD_TO_SD * spread)
    found = {key for key, value in logs.items() if abs(value - middle) > limit}
    return found if len(found) <= max(1, len(logs) // 3) else set()


@dataclass(frozen=True)
class LogInterval:
    """The pairs' mean log ratio and its 90% interval (None under two pairs)."""

    mean: float
    low: float | None
    high: float | None
    pairs: int


def log_interval(logs: Sequence[float]) -> LogInterval | None:
    """The mean of the pairs' log ratios with its Student-t interval; None without a pair."""
    if not logs:
        return None
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return LogInterval(mean, None, None, len(logs))
    spread = t90(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return LogInterval(mean, mean - spread, mean + spread, len(logs))


@dataclass(frozen=True)
class RatioFigure:
    """A change's speedup from its rounds (the kept ratios' geometric mean) and its 90%
    interval (None under two rounds kept)."""

    speedup: float
    low: float | None
    high: float | None


def ratio_figure(ratios: Sequence[float]) -> RatioFigure | None:
    """A change's speedup from its rounds' ratios (variant over baseline), rounds the host
    disturbed left out; None without a ratio."""
    logs = {i: math.log(r) for i, r in enumerate(ratios) if r > 0}
    left_out = disturbed(logs)
    found = log_interval([value for i, value in logs.items() if i not in left_out])
    if found is None:
        return None
    if found.low is None or found.high is None:
        return RatioFigure(math.exp(found.mean), None, None)
    return RatioFigure(math.exp(found.mean), math.exp(found.low), math.exp(found.high))
