"""Batch stamps under fit, settled in groups: the fit tracker driven with a fake clock. The
stamps taken on real tf.data pipelines: tests/integration/test_batch_stamps_tf.py.
"""

from __future__ import annotations

import pytest
from synthetic_reports import FakeClock

from pipediag.config import RunConfig
from pipediag.hooks.batch_stamps import BatchStamps
from pipediag.hooks.keras_fit import SETTLE_EVERY_S, FitTracker
from pipediag.session import DiagnosticSession


def test_batches_of_a_dropped_iterator_are_not_taken_for_the_next_ones() -> None:
    clock = FakeClock()
    stamps = BatchStamps(clock)
    for index in range(4):  # the first iterator made 4 batches; training used 2
        stamps.push(index)
        clock.advance(1.0)
    assert stamps.take([1, 1]) == [[1000.0], [1001.0]]
    restart = clock.now()
    stamps.push(0)  # a new iterator
    stamps.push(1)
    assert stamps.take([2]) == [[restart, restart]]


def test_fit_epochs_on_new_iterators_match_each_step_with_its_own_batch() -> None:
    clock = FakeClock()
    session, tracker = _fit_tracker(clock, measured_steps=None)
    expected = []
    for epoch in range(3):  # each epoch a new iterator, two batches prefetched and dropped
        tracker.on_epoch_begin(epoch)
        for index in range(5):
            _step(clock, tracker, index, wait_s=0.001 * (epoch + 1))
            expected.append(0.001 * (epoch + 1))
        assert tracker.stamps is not None
        tracker.stamps.push(5)
        tracker.stamps.push(6)
    tracker.finish()
    assert [s.input_wait_s for s in session.timeline.steps] == pytest.approx(expected)


def _fit_tracker(
    clock: FakeClock, measured_steps: int | None
) -> tuple[DiagnosticSession, FitTracker]:
    config = RunConfig(
        measured_steps=measured_steps, warmup_steps=0, sample_host=False, sample_gpu=False
    )
    session = DiagnosticSession("x", [], config, clock=clock, log=None, install_hooks=False)
    tracker = FitTracker(session)
    tracker.stamps = BatchStamps(clock)
    return session, tracker


def _step(clock: FakeClock, tracker: FitTracker, index: int, wait_s: float) -> None:
    """One fit step whose batch leaves the pipeline `wait_s` after the step starts."""
    tracker.on_batch_begin(index)
    clock.advance(wait_s)
    assert tracker.stamps is not None
    tracker.stamps.push(index)
    clock.advance(0.010)
    tracker.on_batch_end(index)


def test_fit_steps_get_their_waits_every_few_seconds_and_the_rest_when_fit_returns() -> None:
    clock = FakeClock()
    session, tracker = _fit_tracker(clock, measured_steps=None)
    # (fewer than the 100 steps at which `--steps all` runs the step alone, which settles too)
    expected = [0.001 * (i % 7) for i in range(90)]  # steps of 10-16 ms: 1.2 s
    for index, wait in enumerate(expected):
        _step(clock, tracker, index, wait_s=wait)
    assert all(s.input_wait_s is None for s in session.timeline.steps)

    clock.advance(SETTLE_EVERY_S)
    _step(clock, tracker, 90, wait_s=0.003)
    expected.append(0.003)
    assert [s.input_wait_s for s in session.timeline.steps] == pytest.approx(expected)

    _step(clock, tracker, 91, wait_s=0.004)
    assert session.timeline.steps[-1].input_wait_s is None  # not yet: read with the next group
    tracker.finish()
    assert session.timeline.steps[-1].input_wait_s == pytest.approx(0.004)


def test_fast_fit_steps_are_settled_before_the_timeline_could_merge_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pipediag.hooks import keras_fit

    monkeypatch.setattr(keras_fit, "SETTLE_MAX_STEPS", 8)
    clock = FakeClock()
    session, tracker = _fit_tracker(clock, measured_steps=None)
    for index in range(8):
        _step(clock, tracker, index, wait_s=0.0001)
    assert [s.input_wait_s for s in session.timeline.steps] == pytest.approx([0.0001] * 8)


def test_the_step_budget_settles_waits_before_ending_the_script() -> None:
    from pipediag.timeline import StepBudgetReached

    clock = FakeClock()
    session, tracker = _fit_tracker(clock, measured_steps=5)
    for index in range(4):
        _step(clock, tracker, index, wait_s=0.02)
    with pytest.raises(StepBudgetReached):
        _step(clock, tracker, 4, wait_s=0.02)
    assert [s.input_wait_s for s in session.timeline.steps] == pytest.approx([0.02] * 5)


def test_with_steps_all_the_verdict_comes_after_100_measured_steps_with_their_waits() -> None:
    # GIVEN fit under --steps all (no budget), steps far shorter than the settling interval
    clock = FakeClock()
    session, tracker = _fit_tracker(clock, measured_steps=None)
    for index in range(99):
        _step(clock, tracker, index, wait_s=0.002)
    diagnosis = session.conclusion.diagnosis
    assert diagnosis.compute_alone is None and diagnosis.first_verdict_s is None
    # WHEN the 100th measured step ends
    _step(clock, tracker, 99, wait_s=0.002)
    # THEN the waits are settled and the verdict said, mid-run, and training goes on
    assert all(s.input_wait_s == pytest.approx(0.002) for s in session.timeline.steps)
    assert diagnosis.first_verdict_s is not None
    assert diagnosis.compute_alone is not None and not diagnosis.compute_alone.measured
    _step(clock, tracker, 100, wait_s=0.002)
    assert len(session.timeline) == 101
