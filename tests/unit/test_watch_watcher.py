"""The watcher over a real step timeline, on a fake clock: windows, deferred waits, alerts
to a callable and to a real shell command, and TensorBoard scalars read back."""

from __future__ import annotations

import pytest
from synthetic_reports import FakeClock
from watch_helpers import Said, make_watcher, train_steps

from pipediag.config import WatchConfig
from pipediag.renderers.reason_words import reason_words
from pipediag.report.reasons import Reason
from pipediag.report.watch import WatchAlert
from pipediag.timeline import StepTimeline
from pipediag.watch.watcher import PENDING_MAX_S, Watcher


def test_windows_close_as_steps_come_and_an_alert_reaches_the_callable() -> None:
    # GIVEN a watcher of 10-step windows that alerts at 50% for 2 windows in a row
    clock, said, alerts = FakeClock(), Said(), []
    config = WatchConfig(
        every_steps=10, alert_input_share=0.5, alert_windows=2, alert_hook=alerts.append
    )
    watcher, timeline = make_watcher(config, clock, said, warmup=2)
    # WHEN 2 warm-up steps, 10 fast steps and 25 steps that wait 8 ms of 10 are recorded
    train_steps(timeline, clock, [0.0] * 12)
    assert [w.label for w in watcher.poll()] == ["compute-bound"]
    train_steps(timeline, clock, [0.008] * 25)
    closed = watcher.poll()
    # THEN two more windows closed (the last 5 steps wait for the end), and the second of
    # the two input-bound ones fired the alert, once
    assert [(w.first_step, w.last_step, w.label) for w in closed] == [
        (12, 21, "input-bound"),
        (22, 31, "input-bound"),
    ]
    assert [a.window_index for a in alerts] == [2]
    assert isinstance(alerts[0], WatchAlert) and alerts[0].input_wait_fraction == pytest.approx(0.8)
    # a hook is given the alert's words too, as the log line says them
    assert alerts[0].message.startswith("input wait 80% of step time for 2 windows in a row")
    section = watcher.finish()
    assert [w.steps for w in section.windows] == [10, 10, 10, 5]
    assert [a.first_step for a in section.alerts] == [12]
    assert section.alert_input_share == 0.5 and section.alert_windows == 2
    assert section.alert_hook is not None and "append" in section.alert_hook
    assert any(line.startswith("ALERT: input wait 80%") for line in said.lines)
    assert "steps 2-11: 100.0 steps/s, input wait 0% of step time: compute-bound" in said.lines
    assert said.notes == []


def test_waits_filled_in_later_hold_a_window_back_until_they_come() -> None:
    # GIVEN fit with batch stamps: steps are recorded without their wait
    clock, said = FakeClock(), Said()
    watcher, timeline = make_watcher(WatchConfig(every_steps=4), clock, said)
    watcher.waits_deferred = lambda: True
    train_steps(timeline, clock, [None] * 4)
    # WHEN the watcher reads before the waits are settled
    assert watcher.poll() == []
    # THEN the window closes once they are, with them
    timeline.fill_waits(lambda start, end: 0.5 * (end - start))
    (window,) = watcher.poll()
    assert window.input_wait_fraction == pytest.approx(0.5)
    # AND steps whose wait never comes are read as unknown once they are old enough
    train_steps(timeline, clock, [None] * 4)
    assert watcher.poll() == []
    clock.advance(PENDING_MAX_S + 1)
    (late,) = watcher.poll()
    assert late.label == "unknown"
    watcher.finish()


def test_a_window_per_epoch_and_a_cleared_timeline() -> None:
    clock, said = FakeClock(), Said()
    watcher, timeline = make_watcher(WatchConfig(), clock, said)
    train_steps(timeline, clock, [0.0] * 3, epoch=0)
    watcher.poll()
    timeline.clear()  # a one-batch peek turned out not to be the training data
    train_steps(timeline, clock, [0.0] * 6, epoch=0)
    train_steps(timeline, clock, [0.009] * 6, epoch=1)
    assert [(w.epoch, w.steps) for w in watcher.poll()] == [(0, 6)]
    section = watcher.finish()
    assert [(w.epoch, w.steps, w.label) for w in section.windows] == [
        (0, 6, "compute-bound"),
        (1, 6, "input-bound"),
    ]
    assert said.lines[-1].startswith("epoch 2 (steps 6-11)")


def test_a_callable_that_raises_is_reported_once_and_still_called() -> None:
    clock, said, calls = FakeClock(), Said(), []

    def broken(alert: WatchAlert) -> None:
        calls.append(alert)
        raise RuntimeError("pager is down")

    config = WatchConfig(every_steps=2, alert_input_share=0.5, alert_windows=1, alert_hook=broken)
    watcher, timeline = make_watcher(config, clock, said)
    for _ in range(3):  # three streaks: over, under, over, under, over
        train_steps(timeline, clock, [0.009] * 2 + [0.0] * 2)
    section = watcher.finish()
    assert len(calls) == 3 and len(section.alerts) == 3
    assert len(said.notes) == 1
    assert said.notes[0] == Reason("alert-hook-raised", detail="RuntimeError: pager is down")
    assert "once" in reason_words(said.notes[0])


def test_a_thread_reads_the_timeline_until_finish() -> None:
    clock, said = FakeClock(), Said()
    timeline = StepTimeline(warmup_steps=0, measured_steps=None)
    watcher = Watcher(
        WatchConfig(every_steps=5),
        timeline,
        clock=clock,
        warmup_steps=0,
        script="train.py",
        log=said.lines.append,
        note=said.notes.append,
    )
    watcher.start(clock.now())
    train_steps(timeline, clock, [0.0] * 12)
    section = watcher.finish()  # the thread is joined (the autouse fixture checks it)
    assert [w.steps for w in section.windows] == [5, 5, 2]
