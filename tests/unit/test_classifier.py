"""Step labels and the run's verdict, on hand-built timelines (no TensorFlow, no clock)."""

from __future__ import annotations

import pytest

from pipediag.analysis.classifier import build_train_section, judge, label_step
from pipediag.report.model import ComputeAlone, DataPass, PipelineBenchmark
from pipediag.timeline import RawStep


def _steps(n: int, wait: float, compute: float, *, start: float = 100.0) -> list[RawStep]:
    steps, t = [], start
    for _ in range(n):
        steps.append(RawStep(t, t + wait + compute, wait))
        t += wait + compute
    return steps


def _train(raw: list[RawStep], warmup: int = 2, skipped: list[DataPass] | None = None):  # type: ignore[no-untyped-def]
    return build_train_section(
        raw,
        origin=100.0,
        warmup_steps=warmup,
        style="custom-loop",
        input_wait_source="iterator-timing",
        skipped_passes=skipped or [],
    )


PIPELINE = PipelineBenchmark(measured=True, batches_per_s=40.0)


def test_steps_are_put_on_the_report_axis_and_warmup_is_kept_out() -> None:
    train = _train(_steps(10, 0.02, 0.01))
    assert [s.label for s in train.steps[:2]] == ["warmup", "warmup"]
    assert train.steps[0].start_s == pytest.approx(0.0)
    assert train.steps[3].start_s == pytest.approx(0.09)
    assert train.measured_steps == 8 and train.warmup_steps == 2
    assert train.steps_per_s == pytest.approx(1 / 0.03)
    assert train.input_wait is not None and train.input_wait.median_s == pytest.approx(0.02)


@pytest.mark.parametrize(
    ("wait", "compute", "label", "severity"),
    [
        (0.020, 0.010, "input-bound", "highly input-bound"),
        (0.001, 0.099, "compute-bound", "not input-bound"),
        (0.010, 0.090, "balanced", "moderately input-bound"),
    ],
)
def test_verdict_follows_the_xprof_thresholds(
    wait: float, compute: float, label: str, severity: str
) -> None:
    verdict = judge(_train(_steps(20, wait, compute)), PIPELINE)
    assert verdict.label == label
    assert verdict.severity == severity
    assert verdict.input_wait_fraction == pytest.approx(wait / (wait + compute))
    assert verdict.compute_alone_steps_per_s == pytest.approx(1 / compute)
    assert verdict.pipeline_headroom == pytest.approx(40.0 * compute)
    assert verdict.no_verdict_because == ""


def test_the_warmup_does_not_sway_the_verdict() -> None:
    # GIVEN a first step that waited 10 s (buffers filling) and then compute-bound steps
    raw = [RawStep(100.0, 110.0, 10.0), *_steps(20, 0.0001, 0.05, start=110.0)]
    verdict = judge(_train(raw, warmup=1), PIPELINE)
    assert verdict.label == "compute-bound"


def test_each_step_gets_its_own_label() -> None:
    raw = _steps(3, 0.001, 0.05) + _steps(3, 0.05, 0.001, start=200.0)
    train = _train(raw, warmup=0)
    assert [s.label for s in train.steps] == ["compute-bound"] * 3 + ["input-bound"] * 3
    verdict = judge(train, PIPELINE)
    assert (verdict.input_bound_steps, verdict.compute_bound_steps) == (3, 3)


def test_unmeasured_waits_give_no_verdict_and_say_why() -> None:
    raw = [RawStep(100.0 + i, 100.5 + i, None) for i in range(5)]
    assert label_step(raw[0], warmup=False) == "unknown"
    verdict = judge(_train(raw, warmup=1), PIPELINE)
    assert verdict.label == "unknown"
    assert verdict.no_verdict_because == "wait-not-measured"


def test_untimed_waits_with_the_step_alone_timed_in_one_piece_are_judged_from_the_rates() -> None:
    # GIVEN steps whose pulls ran inside a tf.function (no wait timed), at 2 steps/s, and the
    # function alone on a cached batch timed once after the script, in one piece
    raw = [RawStep(100.0 + 0.5 * i, 100.5 + 0.5 * i, None) for i in range(12)]
    train = build_train_section(
        raw,
        origin=100.0,
        warmup_steps=2,
        style="custom-loop",
        input_wait_source="unavailable",
        skipped_passes=[],
    )
    for step_alone_per_s, label in ((2.02, "compute-bound"), (8.0, "input-bound")):
        alone = ComputeAlone(measured=True, steps_per_s=step_alone_per_s)
        # WHEN judged
        verdict = judge(train, PIPELINE, compute_alone=alone)
        # THEN the cost is 1 - A/T, a verdict rather than "no verdict"
        assert verdict.no_verdict_because == "", verdict
        assert verdict.input_cost_fraction == pytest.approx(1 - 2.0 / step_alone_per_s, abs=0.01)
        assert verdict.label == label


def test_no_steps_no_training_and_only_warmup_are_told_apart() -> None:
    assert judge(_train([]), PIPELINE).no_verdict_because == "no-steps"
    warm = judge(_train(_steps(2, 0.01, 0.01), warmup=5), PIPELINE)
    assert (warm.label, warm.no_verdict_because) == ("unknown", "warmup-only")
    # passes over the data, none of them training: no training found, rather than no steps
    passes = [DataPass(batches=10, reason="no-train-step", passes=2)]
    skipped = judge(_train([], skipped=passes), PIPELINE)
    assert skipped.no_verdict_because == "no-training"
