"""Batch stamps under fit: taken in the graph, read back on the session clock, settled in groups.

The stamp tests iterate real tf.data pipelines and compare each stamp with the moments the
batch was asked for and received, with a margin of milliseconds for a clock conversion
that is good to microseconds. The settling tests drive the fit tracker with a fake clock.
"""

from __future__ import annotations

import time

import pytest

from pipediag.clock import MONOTONIC
from pipediag.config import RunConfig
from pipediag.hooks.batch_stamps import IN_GRAPH, PYTHON, BatchStamps
from pipediag.hooks.keras_fit import SETTLE_EVERY_S, FitTracker
from pipediag.session import DiagnosticSession
from pipediag.testing import FakeClock

MARGIN_S = 0.005


def _iterate(dataset: object, stamps: BatchStamps) -> list[tuple[float, float, list[int]]]:
    """(asked, received, values) for each batch of the stamped dataset."""
    seen = []
    it = iter(stamps.attach(dataset))
    while True:
        asked = time.perf_counter()
        try:
            batch = next(it)
        except StopIteration:
            return seen
        seen.append((asked, time.perf_counter(), batch.numpy().tolist()))


@pytest.mark.tensorflow
def test_in_graph_stamps_fall_between_asking_for_a_batch_and_getting_it() -> None:
    import tensorflow as tf

    def slow(i: int) -> int:
        time.sleep(0.02)
        return i

    dataset = (
        tf.data.Dataset.range(12)
        .map(lambda i: tf.numpy_function(slow, [i], tf.int64, stateful=True))
        .batch(3)
    )
    stamps = BatchStamps(MONOTONIC)
    seen = _iterate(dataset, stamps)

    assert stamps.method == IN_GRAPH
    assert [values for _, _, values in seen] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    stamps.collect()
    for asked, received, _ in seen:
        (stamp,) = stamps.take([1])[0] or [float("nan")]
        # Each batch took 60 ms to make: its stamp is at the end of that wait, not the start.
        assert asked + 0.05 < stamp < received + MARGIN_S
    assert stamps.take([1]) == [None]


@pytest.mark.tensorflow
def test_a_final_prefetch_stays_last_and_batches_are_stamped_as_they_enter_it() -> None:
    import tensorflow as tf
    from tensorflow.python.data.ops import prefetch_op

    dataset = tf.data.Dataset.range(8).batch(2).prefetch(3)
    stamps = BatchStamps(MONOTONIC)
    stamped = stamps.attach(dataset)
    assert isinstance(stamped, prefetch_op._PrefetchDataset)
    assert int(stamped._buffer_size) == 3

    it = iter(stamped)
    first = next(it)  # starts the prefetch thread, which fills its buffer during the sleep
    time.sleep(0.2)
    asked = time.perf_counter()
    rest = [b.numpy().tolist() for b in it]
    assert [first.numpy().tolist(), *rest] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    stamps.collect()
    second = stamps.take([1, 1])[1]
    # the second batch was in the buffer before training asked for it: it waited for nothing
    assert second is not None and second[0] < asked


@pytest.mark.tensorflow
def test_op_determinism_forbids_tf_timestamp_so_stamps_come_from_python() -> None:
    import tensorflow as tf
    from tensorflow.python.framework import config

    tf.config.experimental.enable_op_determinism()
    try:
        stamps = BatchStamps(MONOTONIC)
        seen = _iterate(tf.data.Dataset.range(6).batch(2), stamps)
    finally:
        config.disable_op_determinism()

    assert stamps.method == PYTHON
    assert [values for _, _, values in seen] == [[0, 1], [2, 3], [4, 5]]
    stamps.collect()  # nothing to read: Python stamps are pending already
    for asked, received, _ in seen:
        (stamp,) = stamps.take([1])[0] or [float("nan")]
        assert asked - MARGIN_S < stamp < received + MARGIN_S


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
    assert session.compute_alone is None and session.first_verdict_s is None
    # WHEN the 100th measured step ends
    _step(clock, tracker, 99, wait_s=0.002)
    # THEN the waits are settled and the verdict said, mid-run, and training goes on
    assert all(s.input_wait_s == pytest.approx(0.002) for s in session.timeline.steps)
    assert session.first_verdict_s is not None
    assert session.compute_alone is not None and not session.compute_alone.measured
    _step(clock, tracker, 100, wait_s=0.002)
    assert len(session.timeline) == 101
