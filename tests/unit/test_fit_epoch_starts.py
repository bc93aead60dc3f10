"""An epoch's start under fit counts only the iterator Keras makes for it: the rest of the
boundary (Keras's own work, the last iterator's tear-down) a cached batch pays too
(docs/design.md, "Epoch starts"). The fit tracker driven with a fake clock."""

from __future__ import annotations

import pytest
from synthetic_reports import FakeClock

from pipediag.config import RunConfig
from pipediag.hooks.batch_stamps import BatchStamps
from pipediag.hooks.keras_fit import FitTracker
from pipediag.session import DiagnosticSession


def _tracker(clock: FakeClock) -> tuple[DiagnosticSession, FitTracker]:
    config = RunConfig(measured_steps=None, warmup_steps=0, sample_host=False, sample_gpu=False)
    session = DiagnosticSession("x", [], config, clock=clock, log=None, install_hooks=False)
    tracker = FitTracker(session)
    tracker.stamps = BatchStamps(clock)  # waits from stamps: no profiler to start
    return session, tracker


def test_a_slow_tear_down_at_the_boundary_is_not_the_epoch_s_start() -> None:
    clock = FakeClock()
    session, tracker = _tracker(clock)
    tracker.on_epoch_begin(1, steps=32)
    clock.advance(2.0)  # the last iterator's tear-down waits for autotune's thread
    clock.advance(0.004)  # Keras makes the epoch's iterator in 4 ms
    session.timeline.last_iterator_made = (clock.now(), 0.004)
    clock.advance(0.001)
    tracker.on_batch_begin(0)
    assert session.timeline.epoch_starts == [(1, pytest.approx(0.004), 32)]


def test_an_epoch_on_the_iterator_kept_from_the_last_starts_at_no_cost() -> None:
    clock = FakeClock()
    session, tracker = _tracker(clock)
    session.timeline.last_iterator_made = (clock.now(), 0.5)  # epoch 0's iterator
    clock.advance(10.0)
    tracker.on_epoch_begin(1, steps=32)  # steps_per_epoch on a repeated dataset: no new one
    clock.advance(0.3)
    tracker.on_batch_begin(0)
    assert session.timeline.epoch_starts == [(1, 0.0, 32)]


def test_each_epoch_s_start_is_marked_once_at_its_first_step() -> None:
    clock = FakeClock()
    session, tracker = _tracker(clock)
    for epoch, made_s in enumerate((0.002, 0.003)):
        tracker.on_epoch_begin(epoch, steps=140)
        clock.advance(1.5)  # Keras's own work and the last iterator's tear-down
        session.timeline.last_iterator_made = (clock.now(), made_s)
        for index in range(3):  # later steps mark nothing
            tracker.on_batch_begin(index)
            clock.advance(0.01)
            tracker.on_batch_end(index)
    starts = session.timeline.epoch_starts
    assert [(e, round(d, 6), n) for e, d, n in starts] == [(0, 0.002, 140), (1, 0.003, 140)]
