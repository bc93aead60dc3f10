"""The framework-neutral API: steps marked by any loop give pipediag's usual report.

Most tests use a FakeClock (exact numbers, no sleeping); a few use real sleeps with large
margins (20 ms of input wait against 0.1 ms of work) and the real samplers, with the fake NVML
standing in for pynvml. conftest.py checks that no sampler thread outlives a test.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from benchmark_files import load_device_check
from fake_nvml import FakeGpu, FakeNvml, constant
from pipelines import input_bound_or_host_busy
from synthetic_reports import FakeClock

from pipediag.analysis.gpu_causes import CAUSE_INPUT
from pipediag.config import RunConfig
from pipediag.monitor import Monitor, monitor
from pipediag.renderers import REPORT_JSON, REPORT_PNG, REPORT_TEXT, TRACE_JSON
from pipediag.renderers.hardware_words import gpu_idle_text
from pipediag.report import load_report
from pipediag.report.reasons import Reason

NO_SAMPLERS = RunConfig(warmup_steps=2, measured_steps=None, sample_host=False, sample_gpu=False)

SLOW_S = 0.02
"""A slow loader's or a slow step's time: 200x the fast side, a margin no scheduler erases."""
FAST_S = 0.0001


def loader(clock: FakeClock | None, n: int, delay_s: float) -> Iterator[int]:
    """A data loader that takes `delay_s` per batch (on the fake clock, or really)."""
    for i in range(n):
        if clock is None:
            time.sleep(delay_s)
        else:
            clock.sleep(delay_s)
        yield i


def fake_monitor(config: RunConfig = NO_SAMPLERS) -> tuple[Monitor, FakeClock]:
    clock = FakeClock()
    return monitor(out=None, config=config, clock=clock, log=None), clock


# -- verdicts on a fake clock -----------------------------------------------------------------


def test_sleeping_loader_is_input_bound() -> None:
    # GIVEN a loader that takes 20 ms per batch and a step that takes 0.1 ms
    mon, clock = fake_monitor()
    # WHEN the loop runs under the monitor
    with mon:
        for _batch in mon.iterate(loader(clock, 12, SLOW_S)):
            clock.sleep(FAST_S)
    report = mon.report
    # THEN 12 steps closed (the final, exhausted next() ends the last one), 2 in the warm-up
    assert len(report.train.steps) == 12
    assert [s.label for s in report.train.steps[:2]] == ["warmup", "warmup"]
    assert report.train.measured_steps == 10
    assert report.train.steps[0].duration_s == pytest.approx(SLOW_S + FAST_S)
    assert report.train.steps[0].input_wait_s == pytest.approx(SLOW_S)
    # AND the same classifier as `pipediag run` says input-bound, from iterator timing
    assert report.verdict.label == "input-bound"
    assert report.verdict.input_wait_fraction == pytest.approx(SLOW_S / (SLOW_S + FAST_S))
    assert report.train.style == "custom-loop"
    assert report.train.input_wait_source == "iterator-timing"
    assert report.pipeline.reason == Reason("no-pipeline-benchmark")
    assert report.complete and report.stop_reason == "script-finished"
    assert report.exit.status == "ok"
    # AND the GPU analysis says why it is absent
    assert report.gpu_analysis is not None and not report.gpu_analysis.available


def test_sleeping_step_is_compute_bound() -> None:
    mon, clock = fake_monitor()
    with mon:
        for _batch in mon.iterate(loader(clock, 12, FAST_S)):
            clock.sleep(SLOW_S)
    assert mon.report.verdict.label == "compute-bound"
    assert mon.report.verdict.input_wait_fraction == pytest.approx(FAST_S / (SLOW_S + FAST_S))


def test_each_iterate_is_an_epoch_and_a_broken_loop_drops_its_open_step() -> None:
    mon, clock = fake_monitor()
    with mon:
        for i in mon.iterate(loader(clock, 10, SLOW_S)):
            clock.sleep(FAST_S)
            if i == 4:
                break  # the step of batch 4 never closes: its end is unknown
        clock.sleep(1.0)  # e.g. evaluation between epochs: in no step
        for _ in mon.iterate(loader(clock, 3, SLOW_S)):
            clock.sleep(FAST_S)
    steps = mon.report.train.steps
    assert [s.epoch for s in steps] == [0, 0, 0, 0, 1, 1, 1]
    assert max(s.duration_s for s in steps) == pytest.approx(SLOW_S + FAST_S)


def test_step_budget_stops_recording_without_ending_the_loop() -> None:
    # GIVEN a budget of 2 warm-up + 3 measured steps, and real samplers
    config = RunConfig(warmup_steps=2, measured_steps=3, sample_gpu=False)
    clock = FakeClock()
    mon = monitor(out=None, config=config, clock=clock, log=None)
    seen = []
    with mon:
        for batch in mon.iterate(loader(clock, 20, SLOW_S)):
            clock.sleep(FAST_S)
            seen.append(batch)
            if len(seen) == 8:
                # THEN once the budget is reached, recording and sampling have stopped ...
                assert not mon.recording and mon.budget_reached
                assert not any(t.name.startswith("pipediag") for t in threading.enumerate())
    # ... but the loop ran to its end, and the report holds the budgeted steps only
    assert seen == list(range(20))
    report = mon.report
    assert len(report.train.steps) == 5
    assert report.stop_reason == "step-budget" and report.complete
    assert report.exit.status == "ok"
    assert Reason("step-budget-reached", value=2, limit=3) in report.notes


# -- explicit marks ---------------------------------------------------------------------------


def test_step_and_input_wait_marks() -> None:
    mon, clock = fake_monitor(RunConfig(warmup_steps=0, sample_host=False, sample_gpu=False))
    with mon:
        # a wait inside the step
        with mon.step():
            with mon.input_wait():
                clock.sleep(0.03)
            clock.sleep(0.01)
        # a wait just before the step opens it
        with mon.input_wait():
            clock.sleep(0.02)
        with mon.step():
            clock.sleep(0.02)
        # a step measured by the caller
        start = clock.now()
        mon.mark_step(start, start + 0.1, 0.5)  # a wait longer than the step is clipped
    steps = mon.report.train.steps
    assert [s.duration_s for s in steps] == pytest.approx([0.04, 0.04, 0.1])
    assert [s.input_wait_s for s in steps] == pytest.approx([0.03, 0.02, 0.1])
    with pytest.raises(ValueError, match="before it starts"):
        mon.mark_step(2.0, 1.0)


def test_a_failing_step_is_dropped_and_the_exception_recorded(tmp_path: Path) -> None:
    clock = FakeClock()
    mon = monitor(out=tmp_path / "out", config=NO_SAMPLERS, clock=clock, log=None)
    with pytest.raises(ZeroDivisionError), mon:
        with mon.step():
            clock.sleep(0.01)
        with mon.step():
            clock.sleep(0.01)
            _ = 1 / 0
    report = mon.report
    assert len(report.train.steps) == 1
    assert report.exit.status == "exception" and report.exit.code == 1
    assert report.exit.error == "ZeroDivisionError: division by zero"
    assert report.stop_reason == "script-error" and not report.complete
    assert (tmp_path / "out" / REPORT_JSON).exists()


def test_mixing_iterate_and_marks_keeps_the_first_and_notes_it() -> None:
    mon, clock = fake_monitor()
    with mon:
        for _ in mon.iterate(loader(clock, 4, SLOW_S)):
            with mon.step():
                clock.sleep(FAST_S)
    assert len(mon.report.train.steps) == 4
    assert Reason("marks-ignored") in mon.report.notes


def test_misuse_is_explained() -> None:
    mon, _clock = fake_monitor()
    with pytest.raises(RuntimeError, match="start the monitor first"):
        next(iter(mon.iterate([1])))
    with pytest.raises(RuntimeError, match="when the monitor stops"):
        _ = mon.report


def test_nested_step_is_ignored_with_a_note() -> None:
    mon, clock = fake_monitor(RunConfig(warmup_steps=0, sample_host=False, sample_gpu=False))
    with mon, mon.step(), mon.step():
        clock.sleep(0.01)
    assert len(mon.report.train.steps) == 1
    assert Reason("nested-step") in mon.report.notes


# -- real time, real samplers, outputs --------------------------------------------------------


def test_real_loop_with_samplers_writes_outputs_and_sees_the_idle_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a fake NVML (as `pynvml`) whose GPU is nearly idle, and a loader sleeping 20 ms
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    fake = FakeNvml([FakeGpu(utilization=constant(5.0))])
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    out = tmp_path / "out"
    config = RunConfig(warmup_steps=2, measured_steps=None)
    # WHEN a real loop runs under the monitor for about 1.5 s
    with monitor(out=out, config=config, name="train_torch.py", log=None) as mon:
        for _batch in mon.iterate(loader(None, 75, SLOW_S)):
            time.sleep(FAST_S)
    report = mon.report
    # THEN the verdict is input-bound (or, where other processes kept the host busy, the
    # honest uncertain: the real host sampler sees them), and both samplers reported
    assert report.script == "train_torch.py"
    verdict = report.verdict
    assert input_bound_or_host_busy(verdict.label, verdict.uncertain_because), verdict
    assert report.host.available and report.host.samples
    assert report.gpu.available and report.gpu.samples
    # AND the GPU analysis puts the idle time on the input waits, and the verdict uses it
    analysis = report.gpu_analysis
    assert analysis is not None and analysis.available, analysis
    assert analysis.attribution is not None and analysis.attribution.dominant == CAUSE_INPUT
    assert report.verdict.gpu_idle_cause == CAUSE_INPUT
    assert gpu_idle_text(analysis).startswith("The GPU was busy 5%")
    assert report.host_contention is not None and report.host_contention.available
    assert report.host_contention.bears_on_verdict  # input-bound: contention is worth naming
    # AND the same four files as `pipediag run` were written; the JSON reloads equal
    assert sorted(p.name for p in mon.written) == sorted(
        [REPORT_JSON, REPORT_TEXT, REPORT_PNG, TRACE_JSON]
    )
    assert load_report(out / REPORT_JSON) == report
    assert json.loads((out / REPORT_JSON).read_text())["gpu_analysis"]["available"] is True
    assert fake.calls["nvmlShutdown"] == 1


# -- the device check's CPU-side parts (the GPU run needs CUDA: none on CI) -------------------


def test_device_check_parses_arguments_and_refuses_without_cuda(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    dc = load_device_check()
    args = dc.parse_args(["--steps", "20", "--scenarios", "slow-loader,fast-loader"])
    assert args.steps == 20 and args.scenarios == ["slow-loader", "fast-loader"]
    with pytest.raises(SystemExit):
        dc.parse_args(["--scenarios", "warp-drive"])
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    assert dc.main(["--steps", "5"]) == dc.EXIT_CANNOT_RUN
    assert "cannot run here: PyTorch is not installed" in capsys.readouterr().err
