"""What fit adds around its train function, timed on fit's own steps, and the correction of
a gain on training that it bounds (docs/design.md, "Fixes tried on training")."""

from __future__ import annotations

import dataclasses

import pytest
from synthetic_reports import FakeClock, synthetic_report

from pipediag.analysis.advice_context import build_context
from pipediag.analysis.run_terms import gain_in_run_terms
from pipediag.hooks.fit_overhead import TrainFunctionTimer
from pipediag.report.prescription import GainOnTraining


class _Model:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

        def train_function(iterator: object) -> str:
            clock.sleep(0.010)  # the step: 10 ms
            return "logs"

        self.train_function = train_function


def test_each_step_s_time_beyond_its_train_function_is_measured_and_the_patch_undone() -> None:
    # GIVEN fit's steps of 12 ms around a 10-ms train function
    clock = FakeClock()
    model = _Model(clock)
    original = model.train_function
    timer = TrainFunctionTimer(model, clock)
    for _ in range(5):
        start = clock.now()
        assert model.train_function(None) == "logs"  # what fit computes is unchanged
        clock.sleep(0.002)  # callbacks, the progress bar
        timer.step_ended(clock.now() - start)
    # THEN fit adds 2 ms a step, and the train function is the model's own again
    assert timer.overhead_s() == pytest.approx(0.002)
    timer.remove()
    assert model.train_function is original


def test_the_fit_correction_adds_what_fit_was_measured_to_add_to_both_sides() -> None:
    # GIVEN fit's steps at 36 steps/s, a trial's baseline at 50 and its fixed side at 550:
    # the gap (7.8 ms a step) is not all fit's own work, which was measured at 0.5 ms
    report = synthetic_report(steps=60, wait_s=0.02, compute_s=0.0078)
    train = dataclasses.replace(report.train, style="keras-fit", steps_per_s=36.0)
    trial = GainOnTraining(
        baseline_steps_per_s=50.0, variant_steps_per_s=550.0, training_speedup=11.0
    )
    unmeasured = build_context(dataclasses.replace(report, train=train))
    measured = build_context(
        dataclasses.replace(report, train=dataclasses.replace(train, fit_overhead_s=0.0005))
    )
    rate = unmeasured.train_rate
    assert rate is not None
    # THEN with the measure both sides of the trial get fit's 0.5 ms: the gain keeps most of
    # the trial's, and the gap between A and the trial's baseline (read at other times) is
    # no part of it
    assert gain_in_run_terms(measured.report, trial)[0] == pytest.approx(
        (1 / 50 + 0.0005) / (1 / 550 + 0.0005)
    )
    # without it, a report from before the measure reads the gap as fit's time
    gap = 1 / rate - 1 / 50
    assert gain_in_run_terms(unmeasured.report, trial)[0] == pytest.approx(
        (1 / 50 + gap) / (1 / 550 + gap)
    )


def test_a_trial_that_did_not_gain_does_not_gain_through_a_drift_between_reads() -> None:
    # GIVEN fit's steps read at 150 steps/s, and later a trial whose both sides ran 250
    # (the host freer then): fit measured 0.1 ms around its train function
    report = synthetic_report(steps=60, wait_s=0.0, compute_s=0.0066)
    train = dataclasses.replace(
        report.train, style="keras-fit", steps_per_s=150.0, fit_overhead_s=0.0001
    )
    trial = GainOnTraining(
        baseline_steps_per_s=250.0, variant_steps_per_s=246.5, training_speedup=0.986
    )
    gain, _ = gain_in_run_terms(dataclasses.replace(report, train=train), trial)
    # THEN it is still under 1 (it read 1.65x when the numerator was fit's own rate)
    assert gain is not None and gain < 1.0


def test_a_train_function_that_only_dispatches_is_timed_to_its_result() -> None:
    # GIVEN Keras's JAX trainer: the call returns at once (0.1 ms of dispatch), and the
    # 10-ms step is waited for after it, when Keras reads the step's logs for the callbacks
    clock = FakeClock()
    pending: list[float] = []

    def dispatch(iterator: object) -> str:
        clock.sleep(0.0001)
        pending.append(0.010)
        return "logs"

    def wait(result: object) -> object:
        while pending:
            clock.sleep(pending.pop())
        return result

    def steps(timer: TrainFunctionTimer, model: object) -> None:
        for _ in range(5):
            start = clock.now()
            assert model.train_function(None) == "logs"  # type: ignore[attr-defined]
            wait(None)  # Keras turns the logs into numbers
            clock.sleep(0.002)  # callbacks, the progress bar
            timer.step_ended(clock.now() - start)

    model = _Model(clock)
    model.train_function = dispatch
    unsynced = TrainFunctionTimer(model, clock)
    steps(unsynced, model)
    unsynced.remove()
    synced = TrainFunctionTimer(model, clock, sync=wait)
    steps(synced, model)

    # THEN unsynced, the step's own 10 ms read as fit's time around it; synced, only the 2 ms
    assert unsynced.overhead_s() == pytest.approx(0.012)
    assert synced.overhead_s() == pytest.approx(0.002)
