"""Watch mode's windows and alert rule, on synthetic steps: exact figures, no clock, no TF."""

from __future__ import annotations

import json

import pytest

from pipediag.renderers.watch_view import alert_text
from pipediag.report.watch import WatchWindow
from pipediag.timeline import RawStep
from pipediag.watch.alerts import AlertRule, alert_environment, alert_json
from pipediag.watch.windows import WindowAccumulator, WindowList, label_by_wait_share, merge_windows

ORIGIN = 100.0


def _steps(waits: list[float | None], step_s: float = 0.01, epoch: int = 0, t0: float = ORIGIN):
    """Back-to-back steps of `step_s` each, with these waits."""
    return [
        RawStep(t0 + i * step_s, t0 + (i + 1) * step_s, wait, epoch) for i, wait in enumerate(waits)
    ]


def _feed(accumulator: WindowAccumulator, steps: list[RawStep], first: int = 0):
    closed = [accumulator.add(first + i, step) for i, step in enumerate(steps)]
    return [w for w in closed if w is not None]


def _window(index: int, share: float | None, steps: int = 10) -> WatchWindow:
    step_time = 0.01 * steps
    wait = None if share is None else share * step_time
    return WatchWindow(
        index=index,
        first_step=index * steps,
        last_step=(index + 1) * steps - 1,
        start_s=index * step_time,
        end_s=(index + 1) * step_time,
        steps=steps,
        step_time_s=step_time,
        steps_per_s=steps / step_time,
        input_wait_s=wait,
        input_wait_fraction=share,
        label=label_by_wait_share(share),
    )


@pytest.mark.parametrize(
    ("share", "label"),
    [
        (None, "unknown"),
        (0.0, "compute-bound"),
        (0.049, "compute-bound"),
        (0.05, "balanced"),
        (0.199, "balanced"),
        (0.20, "input-bound"),
        (1.0, "input-bound"),
    ],
)
def test_windows_are_labelled_by_xprofs_wait_share_bands(share: float | None, label: str) -> None:
    assert label_by_wait_share(share) == label


def test_windows_of_n_steps_with_their_rate_and_wait_share() -> None:
    # GIVEN 2 warm-up steps, then 10 steps waiting 5 ms of 10 and 10 steps waiting 0.5 ms
    acc = WindowAccumulator(10, origin=ORIGIN, warmup_steps=2)
    steps = _steps([0.0, 0.0] + [0.005] * 10 + [0.0005] * 10)
    # WHEN they are fed in order
    closed = _feed(acc, steps)
    # THEN two windows closed, the warm-up in neither, each with exact figures
    assert [(w.index, w.first_step, w.last_step, w.steps) for w in closed] == [
        (0, 2, 11, 10),
        (1, 12, 21, 10),
    ]
    first, second = closed
    assert first.steps_per_s == pytest.approx(100.0)
    assert first.input_wait_fraction == pytest.approx(0.5)
    assert first.label == "input-bound"
    assert second.input_wait_fraction == pytest.approx(0.05)
    assert second.label == "balanced"
    assert first.start_s == pytest.approx(0.02) and first.end_s == pytest.approx(0.12)
    assert acc.close() is None  # nothing left open


def test_a_window_per_epoch_closes_when_the_next_epoch_starts_and_at_the_end() -> None:
    acc = WindowAccumulator(None, origin=ORIGIN, warmup_steps=0)
    epoch0 = _steps([0.0] * 5, epoch=0)
    epoch1 = _steps([0.009] * 3, epoch=1, t0=ORIGIN + 1.0)
    closed = _feed(acc, epoch0 + epoch1)
    assert [(w.epoch, w.steps, w.label) for w in closed] == [(0, 5, "compute-bound")]
    last = acc.close()
    assert last is not None and (last.epoch, last.steps, last.first_step) == (1, 3, 5)
    assert last.input_wait_fraction == pytest.approx(0.9)


def test_unknown_waits_leave_the_share_to_the_known_steps() -> None:
    acc = WindowAccumulator(4, origin=ORIGIN, warmup_steps=0)
    (window,) = _feed(acc, _steps([0.002, None, 0.004, None]))
    assert window.steps == 4 and window.steps_per_s == pytest.approx(100.0)
    assert window.input_wait_s == pytest.approx(0.006)
    assert window.input_wait_fraction == pytest.approx(0.3)  # 6 ms of the 20 ms known
    (blind,) = _feed(acc, _steps([None] * 4), first=4)
    assert blind.input_wait_fraction is None and blind.label == "unknown"


def test_merged_windows_weight_their_share_by_step_time_and_the_list_stays_bounded() -> None:
    merged = merge_windows(_window(0, 0.5, steps=10), _window(1, 0.0, steps=30))
    assert (merged.first_step, merged.last_step, merged.steps, merged.windows) == (0, 59, 40, 2)
    assert merged.input_wait_fraction == pytest.approx(0.125)  # 0.05 s of 0.4 s
    assert merged.label == "balanced"
    windows = WindowList(max_windows=8)
    for index in range(100):
        windows.append(_window(index, 0.1))
    kept = windows.items()
    assert len(kept) <= 8 and windows.merges > 0
    assert sum(w.steps for w in kept) == 1000  # totals exact
    assert kept[0].first_step == 0 and kept[-1].last_step == 999


def test_an_alert_fires_on_the_kth_window_in_a_row_once_per_streak() -> None:
    # GIVEN a rule: 3 windows in a row at or over 20%
    rule = AlertRule(0.20, 3)
    shares = [0.3, 0.3, 0.1, 0.2, 0.25, 0.5, 0.9, 0.9, 0.0, 0.3, 0.3, 0.3]
    # WHEN the windows close one by one
    fired = [rule.observe(_window(i, share)) for i, share in enumerate(shares)]
    # THEN it fires at the 3rd of each streak (windows 5 and 11), not on the 4th and 5th
    alerts = [a for a in fired if a is not None]
    assert [a.window_index for a in alerts] == [5, 11]
    first = alerts[0]
    assert (first.first_step, first.last_step, first.windows) == (30, 59, 3)
    assert first.input_wait_fraction == pytest.approx((0.2 + 0.25 + 0.5) / 3)
    assert first.threshold == 0.20 and first.t_s == pytest.approx(0.6)
    words = alert_text(first)
    assert words == (
        "input wait 32% of step time for 3 windows in a row (steps 30-59), at or over the 20% "
        "alert threshold"
    )
    # AND an alert command gets the same words, beside the figures
    assert alert_environment(first, "train.py")["PIPEDIAG_ALERT"] == words
    sent = json.loads(alert_json(first, "train.py"))
    assert sent["message"] == words and sent["windows"] == 3 and sent["script"] == "train.py"


def test_an_alert_reads_the_share_of_the_steps_whose_wait_is_known_as_its_windows_do() -> None:
    # GIVEN windows where only half the steps' waits are known, each 40% over those steps
    acc = WindowAccumulator(4, origin=ORIGIN, warmup_steps=0)
    windows = _feed(acc, _steps([0.004, None, 0.004, None] * 2))
    assert [w.input_wait_fraction for w in windows] == pytest.approx([0.4, 0.4])
    assert windows[0].waited_time_s == pytest.approx(0.02)
    # WHEN a rule at 30% sees one window, and another sees both in a row
    (one,) = [AlertRule(0.30, 1).observe(windows[0])]
    two = AlertRule(0.30, 2)
    fired = [two.observe(w) for w in windows]
    # THEN each alert says 40%, the windows' share, not the wait over all the steps' time (20%)
    assert one is not None and one.input_wait_fraction == pytest.approx(0.4)
    assert fired[1] is not None and fired[1].input_wait_fraction == pytest.approx(0.4)
    assert "input wait 40%" in alert_text(one) and fired[1].steps_per_s == pytest.approx(100.0)
    # AND merged windows keep that share too
    assert merge_windows(*windows).input_wait_fraction == pytest.approx(0.4)


def test_a_window_without_a_known_wait_ends_a_streak() -> None:
    rule = AlertRule(0.5, 2)
    shares = [0.9, None, 0.9, 0.9]
    fired = [rule.observe(_window(i, share)) for i, share in enumerate(shares)]
    assert [a.window_index for a in fired if a is not None] == [3]


def test_k_of_one_alerts_on_every_window_that_comes_back_over() -> None:
    rule = AlertRule(0.5, 1)
    fired = [rule.observe(_window(i, s)) for i, s in enumerate([0.6, 0.7, 0.1, 0.6])]
    assert [a.window_index for a in fired if a is not None] == [0, 3]


@pytest.mark.parametrize(("threshold", "windows"), [(1.5, 3), (-0.1, 3), (0.2, 0)])
def test_a_rule_with_bad_settings_is_refused(threshold: float, windows: int) -> None:
    with pytest.raises(ValueError):
        AlertRule(threshold, windows)
