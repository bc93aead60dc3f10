"""The host-to-device copy's trial, driven by a fake device whose copy costs 20 ms on a fake
clock, and its words in the report (docs/design.md, "The host-to-device copy")."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from synthetic_reports import FakeClock, synthetic_cost_report

from pipediag.renderers.model_words import change_lines
from pipediag.renderers.reason_words import reason_words
from pipediag.renderers.text import render_text
from pipediag.report import io
from pipediag.report.model import ComputeAlone, Report
from pipediag.report.model_side import ModelTrial
from pipediag.report.reasons import Reason
from pipediag.training.device_copy import (
    DEVICE_COPY_CODE,
    copy_share,
    device_copy_trial,
    no_gpu_trial,
)
from pipediag.training.model_side import guarded
from pipediag.training.step_rounds import FitFacts

STEP_S = 0.02
COPY_S = 0.02


class FakeDevice:
    """A device the step reads a batch from: a host batch costs the step `COPY_S` more."""

    name = "/gpu:0"

    def __init__(self) -> None:
        self.placed: list[str] = []

    def on_host(self, batch: Any) -> Any:
        self.placed.append("host")
        return ("host", batch)

    def on_device(self, batch: Any) -> Any:
        self.placed.append("device")
        return ("device", batch)


def _step(clock: FakeClock) -> Any:
    def step(fed: Any) -> None:
        where, _ = fed
        clock.sleep(STEP_S + (COPY_S if where == "host" else 0.0))

    return step


def _facts(fit_per_s: float | None = None) -> FitFacts:
    return FitFacts(STEP_S, fit_per_s, gpu=True, policy="mixed_float16")


def test_a_copy_of_20_ms_is_half_of_a_40_ms_step() -> None:
    # GIVEN a 20 ms step that a host batch makes 40 ms (its copy), on a fake clock
    clock, device = FakeClock(), FakeDevice()
    # WHEN the trial times the host batch against the device batch
    trial = device_copy_trial(_step(clock), "batch", device, _facts(), clock=clock, share_s=3.0)
    # THEN the copy is half of the host-fed step, and keeping the batch on the device is 2x
    assert device.placed == ["host", "device"]  # each placed once, before the rounds
    assert trial.change == "device_copy"
    assert trial.baseline_steps_per_s == pytest.approx(25.0)
    assert trial.variant_steps_per_s == pytest.approx(50.0)
    assert trial.speedup == pytest.approx(2.0)
    assert trial.share == pytest.approx(0.5)
    assert trial.stopped == "clear gain" and trial.rounds == 5
    assert trial.code == DEVICE_COPY_CODE.format(device="/gpu:0")
    assert 'prefetch_to_device("/gpu:0")' in trial.code
    assert trial.setting == "/gpu:0"


def test_fit_s_own_time_stays_on_both_sides_of_the_copy() -> None:
    # fit at 20 steps/s: 10 ms around a 40 ms host-fed train function
    clock = FakeClock()
    trial = device_copy_trial(
        _step(clock), "batch", FakeDevice(), _facts(20.0), clock=clock, share_s=3.0
    )
    assert trial.speedup == pytest.approx(0.05 / 0.03)
    assert trial.share == pytest.approx(0.5)  # of the step alone


def test_a_free_copy_has_no_share() -> None:
    clock = FakeClock()

    def step(fed: Any) -> None:
        clock.sleep(STEP_S)

    trial = device_copy_trial(step, "batch", FakeDevice(), _facts(), clock=clock, share_s=3.0)
    assert trial.speedup == pytest.approx(1.0)
    assert trial.share == pytest.approx(0.0)
    assert trial.stopped == "clear no gain"
    assert trial.reason is None


def test_a_device_measured_slower_is_not_a_negative_copy() -> None:
    trial = ModelTrial("device_copy", baseline_steps_per_s=50.0, variant_steps_per_s=40.0)
    assert copy_share(trial) == 0.0
    assert copy_share(ModelTrial("device_copy")) is None


def test_a_device_that_cannot_place_the_batch_is_one_line() -> None:
    class Broken(FakeDevice):
        def on_device(self, batch: Any) -> Any:
            raise RuntimeError("out of memory\non /gpu:0")

    clock = FakeClock()
    trial = guarded(
        "device_copy",
        lambda share: device_copy_trial(
            _step(clock), "batch", Broken(), _facts(), clock=clock, share_s=share
        ),
        3.0,
        STEP_S,
    )
    assert trial.reason == Reason("failed", detail="RuntimeError: out of memory on /gpu:0")


def test_without_a_gpu_the_copy_is_plainly_not_measured() -> None:
    trial = no_gpu_trial()
    assert trial.change == "device_copy" and not trial.measured
    assert trial.reason == Reason("no-gpu-copy")
    assert reason_words(trial.reason).startswith("not measured: no GPU")


# --- the report and its words ----------------------------------------------------------------


def _measured() -> ModelTrial:
    clock = FakeClock()
    return device_copy_trial(
        _step(clock), "batch", FakeDevice(), _facts(), clock=clock, share_s=3.0
    )


def _report(trial: ModelTrial) -> Report:
    report = synthetic_cost_report(wait=0.0, contention=0.01)
    alone = report.compute_alone or ComputeAlone(measured=True)
    verdict = dataclasses.replace(report.verdict, label="compute-bound")
    return dataclasses.replace(
        report, compute_alone=dataclasses.replace(alone, trials=[trial]), verdict=verdict
    )


def test_the_measured_copy_is_a_change_to_make_with_its_share_and_code() -> None:
    lines = change_lines(ComputeAlone(measured=True, trials=[_measured()]))
    assert lines[1].startswith(" 1. host-to-device copy: 2.00x (90% interval 2.00-2.00x)")
    assert "the copy is 50% of the step fed from the host" in lines[1]
    assert 'prefetch_to_device("/gpu:0")' in lines[2]
    assert lines[3] == f"      ({reason_words(Reason('copy-at-most'))})"
    assert lines[3].startswith("      (at most: prefetch_to_device overlaps the copy")
    assert 'prefetch_to_device("/gpu:0")' in render_text(_report(_measured()))


def test_without_a_gpu_the_words_say_not_measured() -> None:
    lines = change_lines(ComputeAlone(measured=True, trials=[no_gpu_trial()]))
    assert f"  host-to-device copy: {reason_words(Reason('no-gpu-copy'))}" in lines


def test_the_copy_s_share_round_trips() -> None:
    report = _report(_measured())
    loaded = io.from_dict(io.to_dict(report))
    assert loaded == report
    assert loaded.compute_alone is not None
    assert loaded.compute_alone.trials[0].share == pytest.approx(0.5)


def test_a_trial_written_before_the_share_reads_as_none() -> None:
    data = io.to_dict(_report(no_gpu_trial()))
    for trial in data["compute_alone"]["trials"]:
        trial.pop("share", None)
    loaded = io.from_dict(data)
    assert loaded.compute_alone is not None
    assert loaded.compute_alone.trials[0].share is None
