"""Input cost from three rates, and its split, on hand-built timelines (no TensorFlow)."""

from __future__ import annotations

import pytest

from pipediag.analysis.classifier import build_train_section, judge
from pipediag.renderers.summary import verdict_line
from pipediag.report.model import (
    BALANCED,
    COMPUTE_BOUND,
    COST_CONTENTION,
    COST_FETCH,
    COST_WAIT,
    ESTIMATED,
    INPUT_BOUND,
    MEASURED,
    ComputeAlone,
    HostSample,
    HostSection,
    LatencyStats,
    PipelineBenchmark,
    TrainSection,
)
from pipediag.timeline import RawStep

ORIGIN = 100.0


def _train(
    steps: list[tuple[float, float, int]], *, source: str = "iterator-timing", warmup: int = 0
) -> TrainSection:
    """Steps of (duration, wait, epoch), back to back."""
    raw, t = [], ORIGIN
    for duration, wait, epoch in steps:
        raw.append(RawStep(t, t + duration, wait, epoch))
        t += duration
    return build_train_section(
        raw, origin=ORIGIN, warmup_steps=warmup, style="custom-loop", input_wait_source=source
    )


def _alone(step_s: float, cpu_s_per_step: float | None = None) -> ComputeAlone:
    stats = LatencyStats(50, step_s, step_s, step_s, step_s, step_s)
    return ComputeAlone(
        measured=True,
        method="cached-batch-loop",
        steps=50,
        steps_per_s=1 / step_s,
        step_time=stats,
        cpu_s_per_step=cpu_s_per_step,
    )


def test_contention_is_the_gap_that_waiting_does_not_explain() -> None:
    # GIVEN steps of 20 ms that wait 1 ms, a step alone of 11 ms, a pipeline barely faster
    train = _train([(0.020, 0.001, 0)] * 50, source="batch-stamps")
    host = HostSection(
        available=True,
        cpu_count=2,
        samples=[HostSample(t / 10, 190.0, 97.0, 0.0, [97.0, 97.0], 0, 50.0) for t in range(11)],
    )
    # WHEN judged with the measured compute-alone rate and the host samples
    verdict = judge(
        train,
        PipelineBenchmark(measured=True, batches_per_s=60.0),
        compute_alone=_alone(0.011, cpu_s_per_step=0.011),
        host=host,
    )
    # THEN input costs 1 - A/T = 45%, mostly contention, and the label follows the cost
    assert verdict.input_cost_fraction == pytest.approx(1 - 50 / (1 / 0.011))
    assert verdict.input_wait_fraction == pytest.approx(0.05)
    split = verdict.cost_split
    assert split is not None and split.dominant == COST_CONTENTION
    assert split.wait == pytest.approx(0.05)
    assert split.wait + split.contention + split.fetch == pytest.approx(verdict.input_cost_fraction)
    assert verdict.label == INPUT_BOUND and verdict.compute_alone_source == MEASURED
    # the process kept 1.9 cores busy while training, the step alone 1.0: 0.9 for the pipeline
    assert split.pipeline_cores_busy == pytest.approx(0.9)
    assert split.free_cores == pytest.approx(0.06)
    # and the headline worded from these facts says so
    line = verdict_line(verdict, 60.0)
    assert line.startswith("INPUT-BOUND: input costs 45% of training time, mostly CPU contention")


def test_a_pull_from_a_far_faster_pipeline_is_fetch_not_wait() -> None:
    # GIVEN a 1.4 ms step that spends 0.34 ms in next(), a pipeline 7x faster than training
    train = _train([(0.0014, 0.00034, 0)] * 100)
    verdict = judge(
        train,
        PipelineBenchmark(measured=True, batches_per_s=5100.0),
        compute_alone=_alone(0.00106),
    )
    split = verdict.cost_split
    assert split is not None
    # THEN the measured wait is the per-pull overhead, and it dominates
    assert split.dominant == COST_FETCH and split.wait == 0.0
    assert split.fetch == pytest.approx(0.34 / 1.4)
    assert verdict.label == INPUT_BOUND
    assert "mostly the per-pull overhead of next()" in verdict_line(verdict, 5100.0)


def test_a_slow_pipeline_makes_the_step_wait() -> None:
    train = _train([(0.030, 0.020, 0)] * 40)
    verdict = judge(
        train, PipelineBenchmark(measured=True, batches_per_s=35.0), compute_alone=_alone(0.010)
    )
    split = verdict.cost_split
    assert split is not None and split.dominant == COST_WAIT
    assert verdict.input_cost_fraction == pytest.approx(2 / 3)
    assert verdict.label == INPUT_BOUND


def test_measured_wait_stands_when_the_short_compute_alone_run_was_slower() -> None:
    # GIVEN a compute-alone run that came out slower than the steps minus their waits (noise)
    train = _train([(0.020, 0.004, 0)] * 40)
    verdict = judge(
        train, PipelineBenchmark(measured=True, batches_per_s=60.0), compute_alone=_alone(0.019)
    )
    # THEN the cost is at least the measured wait, and the parts still add up
    split = verdict.cost_split
    assert split is not None
    assert verdict.input_cost_fraction == pytest.approx(0.2)
    assert split.contention == 0.0 and split.wait == pytest.approx(0.2)


def test_without_a_compute_alone_run_the_rate_is_estimated_and_says_why() -> None:
    train = _train([(0.020, 0.002, 0)] * 40)
    verdict = judge(
        train,
        PipelineBenchmark(measured=True, batches_per_s=100.0),
        compute_alone=ComputeAlone(measured=False, reason="--steps all: no safe point"),
    )
    assert verdict.compute_alone_source == ESTIMATED
    assert verdict.compute_alone_reason == "--steps all: no safe point"
    assert verdict.compute_alone_steps_per_s == pytest.approx(1 / 0.018)
    # step minus wait cannot see contention: the cost is the wait
    assert verdict.input_cost_fraction == pytest.approx(0.1)
    assert verdict.label == BALANCED
    assert "(compute alone estimated: contention not measured)" in verdict_line(verdict, 100.0)


def test_a_cache_filling_in_epoch_one_gives_two_phases() -> None:
    # GIVEN epoch 1 input-bound (30 ms steps, 20 ms waits), epochs 2-3 near the step alone
    train = _train([(0.030, 0.020, 0)] * 30 + [(0.0102, 0.0001, 1)] * 30 + [(0.0101, 0.0, 2)] * 30)
    verdict = judge(
        train, PipelineBenchmark(measured=True, batches_per_s=40.0), compute_alone=_alone(0.010)
    )
    # THEN one verdict per phase; the headline says which dominates and what comes after
    assert [p.name for p in verdict.phases] == ["epoch 1", "epochs 2-3"]
    first, after = verdict.phases
    assert first.label == INPUT_BOUND and first.input_cost_fraction == pytest.approx(2 / 3)
    assert after.label == COMPUTE_BOUND and after.steps == 60
    line = verdict_line(verdict, 40.0)
    assert "epoch 1 dominates" in line
    assert "after it (epochs 2-3) compute-bound" in line


def test_steady_epochs_are_one_phase() -> None:
    train = _train([(0.012, 0.001, 0)] * 30 + [(0.0125, 0.001, 1)] * 30)
    verdict = judge(
        train, PipelineBenchmark(measured=True, batches_per_s=200.0), compute_alone=_alone(0.010)
    )
    assert verdict.phases == []


def test_a_pipeline_alone_slower_than_training_is_called_disturbed() -> None:
    # GIVEN training at 68 steps/s fed by a pipeline read alone at 34 batches/s
    train = _train([(0.0147, 0.011, 0)] * 40, source="batch-stamps")
    verdict = judge(
        train, PipelineBenchmark(measured=True, batches_per_s=34.0), compute_alone=_alone(0.005)
    )
    # THEN the summary says the pipeline-alone reading cannot be right
    assert "training ran faster than the pipeline alone (68.0 against 34.0)" in verdict.summary
