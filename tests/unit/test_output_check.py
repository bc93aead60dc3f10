"""The output's check before a cost under 5% skips the deep analysis: where the first
verdict's interval reaches the edge, the whole pipeline held in memory is read into the verdict
again, and only a cost that then reaches 5% goes on to the stages and fixes."""

from __future__ import annotations

from typing import Any

import pytest
from synthetic_reports import FakeClock

from pipediag import phases
from pipediag.config import RunConfig
from pipediag.report.model import PipelineBenchmark, Verdict
from pipediag.report.stages import StageStats


class _Say:
    def note(self, reason: Any) -> None: ...
    def note_once(self, reason: Any) -> None: ...
    def log(self, message: str) -> None: ...
    def phase(self, step: Any, budget_s: float | None = None, *, redraw: bool = True) -> None: ...
    def add_phase(self, name: Any, start: float, end: float) -> None: ...


HELD = PipelineBenchmark(
    measured=True,
    batches_per_s=500.0,
    stages=[StageStats(index=0, kind="prefetch", training_speedup_if_free=1.09)],
)


def _deep(
    monkeypatch: pytest.MonkeyPatch,
    interval: list[float],
    rejudged: Verdict,
) -> tuple[phases.DeepAnalysis, list[Any], list[Any]]:
    """The deep analysis after a compute-bound 3% with `interval`, the check and the full
    examination faked; the verdict read again is `rejudged`."""
    checks: list[Any] = []
    examined: list[Any] = []

    def check(dataset: Any, pipeline: PipelineBenchmark, verdict: Any, **_: Any) -> Any:
        checks.append(verdict)
        held_output_s = phases._hold_output_s(verdict, pipeline, on_training)
        return HELD if held_output_s else None

    def examine(dataset: Any, pipeline: PipelineBenchmark, **kwargs: Any) -> Any:
        examined.append((pipeline, kwargs["hold_output_s"]))
        return phases.DeepAnalysis(pipeline)

    monkeypatch.setattr(phases, "_output_check", check)
    monkeypatch.setattr(phases, "_examine_stages", examine)
    verdict = Verdict(label="compute-bound", input_cost_fraction=0.03, input_cost_interval=interval)
    seen = phases.Seen(style="keras-fit", dataset=object(), model=object(), batch=None)
    diagnosis = phases.Diagnosis(PipelineBenchmark(measured=True, batches_per_s=500.0))
    diagnosis.verdict = verdict
    on_training = phases.OnTraining(0.005, trainer=object())
    deep = phases.deep_analysis(
        seen,
        diagnosis,
        config=RunConfig(),
        clock=FakeClock(),
        say=_Say(),
        on_training=on_training,
        rejudge=lambda pipeline: rejudged,
    )
    return deep, checks, examined


def test_a_cost_the_held_output_lifts_to_5_percent_goes_on_to_the_stages_and_fixes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rejudged = Verdict(label="balanced", input_cost_fraction=0.08, held_output_cost=0.09)
    deep, checks, examined = _deep(monkeypatch, [0.0, 0.12], rejudged)
    # THEN the check ran once, and the examination starts from its stages, the output held
    assert len(checks) == 1
    assert examined == [(HELD, 0.0)]
    assert deep.pipeline.deep_skipped_reason is None


def test_a_cost_still_under_5_percent_keeps_the_check_s_stages_and_says_why_no_fixes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pooled = Verdict(label="compute-bound", input_cost_fraction=0.02, held_output_cost=0.01)
    deep, _, examined = _deep(monkeypatch, [0.0, 0.12], pooled)
    reason = deep.pipeline.deep_skipped_reason
    assert examined == [] and deep.pipeline.stages == HELD.stages
    assert reason is not None and (reason.code, reason.value) == ("fixes-skipped", 0.02)
    # AND where the held output was not pooled (it timed another training), it is not named
    alone = Verdict(label="compute-bound", input_cost_fraction=0.02)
    reason = _deep(monkeypatch, [0.0, 0.12], alone)[0].pipeline.deep_skipped_reason
    assert reason is not None and reason.code == "deep-skipped"


def test_a_settled_cost_under_5_percent_runs_no_check(monkeypatch: pytest.MonkeyPatch) -> None:
    never = Verdict(label="balanced", input_cost_fraction=0.5)
    deep, checks, examined = _deep(monkeypatch, [0.01, 0.04], never)
    reason = deep.pipeline.deep_skipped_reason
    assert len(checks) == 1 and examined == [] and deep.pipeline.stages == []
    assert reason is not None and (reason.code, reason.value) == ("deep-skipped", 0.03)
