"""Long runs keep pipediag's memory bounded, and their reports still render."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pipediag.analysis.classifier import build_train_section, judge
from pipediag.renderers import write_outputs
from pipediag.report.model import PipelineBenchmark, Report
from pipediag.timeline import StepTimeline


def test_timeline_merges_old_steps_and_keeps_totals_exact() -> None:
    # GIVEN 100,000 steps of 10 ms that each wait 6 ms, and room for 2,000 records
    timeline = StepTimeline(warmup_steps=5, measured_steps=None, max_records=2_000)
    t = 0.0
    for _ in range(100_000):
        timeline.add(t, t + 0.010, 0.006)
        t += 0.010
    # THEN memory is bounded, and no step or second is lost
    records = timeline.steps
    assert len(records) <= 2_000 and timeline.merges > 0
    assert len(timeline) == 100_000 == sum(r.count for r in records)
    assert sum(r.duration_s for r in records) == pytest.approx(1000.0)
    # the newest steps keep their own record
    assert records[-1].count == 1 and records[5].count > 1
    train = build_train_section(
        records, origin=0.0, warmup_steps=5, style="custom-loop", input_wait_source="x"
    )
    assert train.measured_steps == 99_995
    assert train.steps_per_s == pytest.approx(100.0)
    assert train.step_time is not None and train.step_time.median_s == pytest.approx(0.010)
    verdict = judge(train, PipelineBenchmark(measured=False))
    assert verdict.input_wait_fraction == pytest.approx(0.6)
    assert verdict.input_bound_steps == 99_995


def test_a_report_of_a_long_run_renders(tmp_path: Path) -> None:
    timeline = StepTimeline(warmup_steps=5, measured_steps=None)
    for i in range(100_000):
        timeline.add(i * 0.01, i * 0.01 + 0.01, 0.002 if i % 2 else 0.008)
    train = build_train_section(
        timeline.steps, origin=0.0, warmup_steps=5, style="custom-loop", input_wait_source="x"
    )
    report = Report(script="t.py", train=train, verdict=judge(train, PipelineBenchmark(False)))
    began = time.perf_counter()
    written, failures = write_outputs(report, tmp_path)
    assert failures == [] and len(written) == 4
    assert time.perf_counter() - began < 60  # a generous bound: it takes a few seconds
    assert (tmp_path / "report.json").stat().st_size < 10 * 2**20
