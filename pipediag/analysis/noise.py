"""Each figure of a run as an `Estimate` (a value and a standard error), so that a change
between runs is judged against both runs' spread (docs/design.md, "Comparing runs")."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipediag.report.model import StepRecord, timed_steps
from pipediag.report.stages import LatencyStats

# Two-sided 95% and 90% normal quantiles.
Z_95 = 1.959964
Z_90 = 1.644854
# The p90 lies this many standard deviations above the median of a normal distribution.
P90_SIGMAS = 1.281552


@dataclass(frozen=True)
class NoiseRules:
    """When a change counts as one (docs/design.md, "Comparing runs")."""

    run_to_run: float = 0.04  # sd of log(rate) between runs beyond each run's own steps
    run_to_run_points: float = 0.03  # the same for shares, in points
    stage_floor: float = 0.15  # a stage's change counts over this share of its own time...
    stage_floor_of_batch: float = 0.05  # ...and of the pipeline's time per batch
    # Summaries (P, T) hide drift: block-bootstrap error ran 1.5x (0.85-2.05x) that of iid steps.
    summary_drift: float = 2.0
    z: float = Z_95
    resamples: int = 2000
    seed: int = 0  # fixed: the same reports always give the same interval


DEFAULT_RULES = NoiseRules()


@dataclass(frozen=True)
class Estimate:
    """`se` is of log(value) when `log_scale`; None where the report holds no spread."""

    value: float
    se: float | None
    log_scale: bool
    how: str  # where the error comes from, for the reader: "steps, block bootstrap"


@dataclass(frozen=True)
class Interval:
    change: float  # new/base for rates and times, new - base for shares
    low: float
    high: float
    ratio: bool


@dataclass(frozen=True)
class StepSpread:
    steps: int
    rate: Estimate | None
    wait_share: Estimate | None


BOOTSTRAP_HOW = "steps, block bootstrap"
SUMMARY_HOW = "median and p90"
NO_SPREAD_HOW = "no spread recorded"
ALTERNATION_HOW = "alternation pairs, 90% interval"


def measured_steps(steps: Sequence[StepRecord]) -> list[StepRecord]:
    return [s for s in timed_steps(steps) if s.count > 0 and s.duration_s > 0]


def step_spread(steps: Sequence[StepRecord], rules: NoiseRules = DEFAULT_RULES) -> StepSpread:
    records = measured_steps(steps)
    count = sum(s.count for s in records)
    if len(records) < 2:
        return StepSpread(count, None, None)
    durations = np.array([s.duration_s for s in records])
    counts = np.array([s.count for s in records], dtype=float)
    blocks = math.ceil(len(records) / _block_length(len(records)))  # circular, per resample
    rng = np.random.default_rng(rules.seed)
    picks = rng.integers(0, len(records), size=(rules.resamples, blocks))
    time_sums = _resampled_sums(durations, picks)
    rates = _resampled_sums(counts, picks) / time_sums
    mean_rate = float(counts.sum() / durations.sum())
    rate = Estimate(mean_rate, float(np.std(np.log(rates))), log_scale=True, how=BOOTSTRAP_HOW)
    wait_share = None
    if all(s.input_wait_s is not None for s in records):
        waits = np.array([s.input_wait_s or 0.0 for s in records])
        shares = _resampled_sums(waits, picks) / time_sums
        mean_share = float(waits.sum() / durations.sum())
        wait_share = Estimate(mean_share, float(np.std(shares)), log_scale=False, how=BOOTSTRAP_HOW)
    return StepSpread(count, rate, wait_share)


def _block_length(records: int) -> int:
    return max(1, round(math.sqrt(records)))


def _resampled_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """From prefix sums: no copy of the steps per resample, so long runs stay cheap."""
    records = values.size
    block = _block_length(records)
    wrapped = np.concatenate((values, values[:block]))
    prefix, firsts = np.concatenate(([0.0], np.cumsum(wrapped))), np.arange(records)
    block_sums = prefix[firsts + block] - prefix[firsts]
    sums: np.ndarray = block_sums[starts].sum(axis=1)
    return sums


def summary_rate(
    rate: float | None, stats: LatencyStats | None, rules: NoiseRules = DEFAULT_RULES
) -> Estimate | None:
    if rate is None or rate <= 0 or stats is None or stats.count < 2 or stats.mean_s <= 0:
        return bare(rate, log_scale=True)
    sigma = max(0.0, stats.p90_s - stats.median_s) / P90_SIGMAS
    se = rules.summary_drift * sigma / stats.mean_s / math.sqrt(stats.count)
    return Estimate(rate, se, log_scale=True, how=SUMMARY_HOW)


def bare(value: float | None, *, log_scale: bool) -> Estimate | None:
    if value is None or (log_scale and value <= 0):
        return None
    return Estimate(value, None, log_scale=log_scale, how=NO_SPREAD_HOW)


def input_cost_estimate(
    cost: float | None,
    training: Estimate | None,
    compute: Estimate | None,
    interval: Sequence[float] | None = None,
) -> Estimate | None:
    """The error from the alternation's 90% interval (its far end from the cost, so a
    clipped interval does not look narrower), else A's and T's by the delta method."""
    if cost is None:
        return None
    if interval is not None:
        reach = max(interval[1] - cost, cost - interval[0])
        return Estimate(cost, reach / Z_90, log_scale=False, how=ALTERNATION_HOW)
    if training is None or compute is None or training.se is None or compute.se is None:
        return Estimate(cost, None, log_scale=False, how=NO_SPREAD_HOW)
    se = training.value / compute.value * math.hypot(training.se, compute.se)
    how = training.how if training.how == compute.how else f"{training.how}; {compute.how}"
    return Estimate(cost, se, log_scale=False, how=how)


def interval(base: Estimate, new: Estimate, rules: NoiseRules = DEFAULT_RULES) -> Interval:
    """Both runs' own errors and the run-to-run term of each."""
    between = rules.run_to_run if base.log_scale else rules.run_to_run_points
    half = rules.z * math.sqrt((base.se or 0.0) ** 2 + (new.se or 0.0) ** 2 + 2 * between**2)
    if base.log_scale:
        change = new.value / base.value
        return Interval(change, change * math.exp(-half), change * math.exp(half), ratio=True)
    change = new.value - base.value
    return Interval(change, change - half, change + half, ratio=False)


def is_noise(change: Interval) -> bool:
    return change.low <= (1.0 if change.ratio else 0.0) <= change.high
