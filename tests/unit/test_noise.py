"""The noise of one run's figures: block bootstrap of the steps, summary errors, intervals."""

from __future__ import annotations

import math
import random

import pytest

from pipediag.analysis import noise
from pipediag.analysis.noise import Estimate, NoiseRules
from pipediag.report.model import StepRecord
from pipediag.report.stages import LatencyStats


def _steps(durations: list[float], wait_share: float = 0.5, warmup: int = 0) -> list[StepRecord]:
    steps = []
    start = 0.0
    for i, duration in enumerate(durations):
        label = "warmup" if i < warmup else "compute-bound"
        steps.append(StepRecord(i, start, duration, duration * wait_share, label))
        start += duration
    return steps


def test_the_rate_is_steps_over_time_and_skips_the_warmup() -> None:
    # GIVEN two slow warm-up steps and 50 steps of 10 ms
    steps = _steps([1.0, 1.0] + [0.01] * 50, warmup=2)
    # WHEN their spread is measured
    spread = noise.step_spread(steps)
    # THEN the warm-up is left out: 100 steps/s, no spread at all, half the time waiting
    assert spread.steps == 50
    assert spread.rate is not None and spread.rate.value == pytest.approx(100.0)
    assert spread.rate.se == pytest.approx(0.0, abs=1e-12)
    assert spread.wait_share is not None and spread.wait_share.value == pytest.approx(0.5)


def test_a_merged_record_counts_as_the_steps_it_stands_for() -> None:
    # GIVEN 10 steps of 10 ms, then one record merging 30 steps of 20 ms
    steps = _steps([0.01] * 10)
    steps.append(StepRecord(10, 0.1, 0.6, 0.3, "compute-bound", count=30))
    # THEN the rate is 40 steps over 0.7 s
    spread = noise.step_spread(steps)
    assert spread.steps == 40
    assert spread.rate is not None and spread.rate.value == pytest.approx(40 / 0.7)


def test_a_drift_within_the_run_widens_the_error() -> None:
    # GIVEN the same step times, once drifting (a slow first half) and once shuffled
    values = [0.015] * 50 + [0.010] * 50
    shuffled = values[:]
    random.Random(1).shuffle(shuffled)
    drifting = noise.step_spread(_steps(values)).rate
    mixed = noise.step_spread(_steps(shuffled)).rate
    # THEN the block bootstrap sees the drift: the drifting run is known less well
    assert drifting is not None and mixed is not None
    assert drifting.se is not None and mixed.se is not None
    assert drifting.se > 1.5 * mixed.se


def test_the_bootstrap_is_deterministic() -> None:
    values = [0.01 + 0.001 * (i % 7) for i in range(80)]
    first = noise.step_spread(_steps(values))
    again = noise.step_spread(_steps(values))
    assert first == again


def test_too_few_steps_have_no_spread() -> None:
    spread = noise.step_spread(_steps([0.01]))
    assert spread.rate is None and spread.wait_share is None


def test_steps_without_waits_have_no_wait_share() -> None:
    steps = [StepRecord(i, i * 0.01, 0.01, None, "unknown") for i in range(20)]
    spread = noise.step_spread(steps)
    assert spread.rate is not None and spread.wait_share is None


def test_a_summary_rate_takes_its_error_from_median_and_p90() -> None:
    # GIVEN 100 batches of mean 10 ms whose p90 lies 1.28 ms over the median (sigma 1 ms)
    stats = LatencyStats(100, 0.010, 0.010, 0.010 + 0.001281552, 0.008, 0.014)
    estimate = noise.summary_rate(100.0, stats, NoiseRules(summary_drift=1.0))
    # THEN its relative error is sigma / mean / sqrt(n) = 1%
    assert estimate is not None and estimate.se == pytest.approx(0.01)
    widened = noise.summary_rate(100.0, stats, NoiseRules(summary_drift=2.0))
    assert widened is not None and widened.se == pytest.approx(0.02)
    assert noise.summary_rate(100.0, None) == Estimate(100.0, None, True, noise.NO_SPREAD_HOW)
    assert noise.summary_rate(None, stats) is None


def test_intervals_hold_both_errors_and_the_run_to_run_term() -> None:
    base = Estimate(100.0, 0.03, log_scale=True, how="")
    new = Estimate(120.0, 0.04, log_scale=True, how="")
    quiet = NoiseRules(run_to_run=0.0)
    change = noise.interval(base, new, quiet)
    half = quiet.z * 0.05
    assert change.change == pytest.approx(1.2)
    assert change.low == pytest.approx(1.2 * math.exp(-half))
    assert change.high == pytest.approx(1.2 * math.exp(half))
    assert not noise.is_noise(change)
    # The run-to-run term of each run widens it until 1.2x is noise.
    busy = noise.interval(base, new, NoiseRules(run_to_run=0.08))
    assert busy.low < 1.0 < busy.high and noise.is_noise(busy)


def test_share_intervals_are_in_points() -> None:
    base = Estimate(0.30, 0.01, log_scale=False, how="")
    new = Estimate(0.10, 0.01, log_scale=False, how="")
    change = noise.interval(base, new, NoiseRules(run_to_run_points=0.0))
    assert change.change == pytest.approx(-0.2) and not change.ratio
    assert change.high == pytest.approx(-0.2 + 1.959964 * math.sqrt(2) * 0.01)


def test_without_an_interval_the_input_cost_takes_the_error_of_both_rates() -> None:
    training = Estimate(50.0, 0.02, log_scale=True, how="a")
    compute = Estimate(100.0, 0.02, log_scale=True, how="a")
    plain = noise.input_cost_estimate(0.5, training, compute)
    assert plain is not None and plain.se == pytest.approx(0.5 * math.hypot(0.02, 0.02))
    missing = noise.input_cost_estimate(0.5, training, None)
    assert missing is not None and missing.se is None


def test_an_interval_from_alternation_gives_the_input_cost_its_error() -> None:
    # GIVEN rates whose errors would give a narrow cost, and the pairs' 90% interval 40-48%
    training = Estimate(50.0, 0.001, log_scale=True, how="a")
    compute = Estimate(100.0, 0.001, log_scale=True, how="a")
    # WHEN the cost's error is taken
    paired = noise.input_cost_estimate(0.44, training, compute, [0.40, 0.48])
    # THEN it is the interval's half-width over the 90% normal quantile, whatever A and T say
    assert paired is not None and paired.se == pytest.approx(0.04 / 1.644854)
    assert paired.how == noise.ALTERNATION_HOW
    # a cost clipped at zero keeps the reach to the far end, not the clipped half-width
    clipped = noise.input_cost_estimate(0.0, training, compute, [0.0, 0.03])
    assert clipped is not None and clipped.se == pytest.approx(0.03 / 1.644854)
