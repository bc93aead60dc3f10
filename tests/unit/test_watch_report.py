"""A watched run's report: its watch section round-trips, older reports still load, and the
text summary and PNG show the run over time."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from matplotlib.axes import Axes
from synthetic_reports import synthetic_report

from pipediag.renderers.png import build_figure, render_png
from pipediag.renderers.text import render_text
from pipediag.renderers.watch_view import STRIP_WIDTH, group_windows, over_time_text
from pipediag.report.io import from_dict, load_report, save_report, to_dict
from pipediag.report.model import Report
from pipediag.report.watch import WatchAlert, WatchSection, WatchWindow
from pipediag.watch.windows import label_by_wait_share


def _windows(shares: list[float | None], steps: int = 100) -> list[WatchWindow]:
    windows = []
    for index, share in enumerate(shares):
        step_time = steps * 0.02
        windows.append(
            WatchWindow(
                index=index,
                first_step=5 + index * steps,
                last_step=4 + (index + 1) * steps,
                start_s=1.0 + index * step_time,
                end_s=1.0 + (index + 1) * step_time,
                steps=steps,
                step_time_s=step_time,
                steps_per_s=steps / step_time,
                input_wait_s=None if share is None else share * step_time,
                input_wait_fraction=share,
                label=label_by_wait_share(share),
                epoch=index,
            )
        )
    return windows


def _alert(window: WatchWindow) -> WatchAlert:
    return WatchAlert(
        t_s=window.end_s,
        window_index=window.index,
        first_step=window.first_step - 200,
        last_step=window.last_step,
        windows=3,
        threshold=0.2,
        input_wait_fraction=0.5,
        steps_per_s=50.0,
        epoch=window.epoch,
    )


def _watched(shares: list[float | None], every_steps: int | None = None) -> Report:
    windows = _windows(shares)
    alerts = [_alert(windows[4])] if len(windows) > 4 else []
    watch = WatchSection(
        every_steps=every_steps,
        windows=windows,
        alerts=alerts,
        alert_input_share=0.2,
        alert_windows=3,
        alert_command="notify.sh",
        tensorboard_logdir="logs/pipediag",
    )
    return dataclasses.replace(synthetic_report(steps=20), watch=watch)


def test_the_watch_section_round_trips_and_old_reports_load_without_it(tmp_path: Path) -> None:
    report = _watched([0.0, 0.1, 0.5, 0.6, 0.7, None])
    path = save_report(report, tmp_path / "report.json")
    assert load_report(path) == report
    old = to_dict(synthetic_report(steps=5))
    del old["watch"]
    assert from_dict(json.loads(json.dumps(old))).watch is None


def test_an_older_alert_stored_with_its_words_shows_the_same_words() -> None:
    # GIVEN a report written when an alert kept its words beside its figures
    report = _watched([0.01, 0.1, 0.5, 0.6, 0.7])
    words = (
        "input wait 50% of step time for 3 windows in a row (steps 205-504), at or over the "
        "20% alert threshold"
    )
    old = to_dict(report)
    old["watch"]["alerts"][0]["message"] = words
    # WHEN it is read
    read = from_dict(json.loads(json.dumps(old)))
    # THEN the stored words are dropped, and the figures word the alert as they did
    assert read == report
    assert f"  at 11.0 s: {words}\n" in over_time_text(read)


def test_few_windows_get_a_row_each_with_the_alert_marked() -> None:
    text = over_time_text(_watched([0.01, 0.1, 0.5, 0.6, 0.7]))
    lines = text.splitlines()
    assert lines[0] == "5 windows, one per epoch: 3 input-bound, 1 balanced, 1 compute-bound"
    assert lines[1].startswith("epoch 1, steps 5-104") and lines[1].endswith("compute-bound")
    assert "50.0 steps/s" in lines[1] and "wait 1%" in lines[1]
    assert lines[5].endswith("input-bound  ALERT")
    assert "1 alert(s) (input wait at or over 20% for 3 windows in a row):" in text
    assert "labelled by input wait share" in text
    assert text.endswith("TensorBoard scalars: logs/pipediag")


def test_many_windows_are_drawn_as_a_strip_of_wait_shares() -> None:
    shares = [0.0] * 100 + [1.0] * 100 + [None] * 100
    text = over_time_text(_watched(shares, every_steps=100))
    strip = next(line for line in text.splitlines() if line.startswith("wait share"))
    marks = strip.split("|")[1]
    assert len(marks) == STRIP_WIDTH
    assert marks == " " * 20 + "█" * 20 + "?" * 20
    assert "one mark per ~5.0 windows" in strip
    assert "300 windows, 100 steps each" in text


def test_groups_of_windows_cover_them_all_in_order() -> None:
    windows = _windows([0.1] * 7)
    groups = group_windows(windows, 3)
    assert [len(g) for g in groups] == [2, 3, 2]
    assert [w for g in groups for w in g] == windows


def test_the_summary_shows_the_run_over_time_only_when_watched() -> None:
    assert "Over time" not in render_text(synthetic_report(steps=20))
    assert "\n  Over time       5 windows, one per epoch" in render_text(
        _watched([0.0, 0.0, 0.3, 0.3, 0.3])
    )


def _axes(report: Report, label: str) -> Axes:
    return next(a for a in build_figure(report).axes if a.get_label() == label)


def test_the_png_draws_the_windows_where_the_pipeline_panel_would_be(tmp_path: Path) -> None:
    report = _watched([0.0, 0.1, 0.5, 0.6, 0.7])
    panel = _axes(report, "watch")
    bars = [p for p in panel.patches if p.get_gid() == "watch-wait-bars"]
    assert [round(b.get_height()) for b in bars] == [0, 10, 50, 60, 70]
    assert [b.get_x() for b in bars] == [5, 105, 205, 305, 405]
    assert any(line.get_gid() == "watch-alert" for line in panel.lines)
    assert any(line.get_gid() == "watch-threshold" for line in panel.lines)
    assert render_png(report, tmp_path / "report.png").stat().st_size > 0


def test_the_png_of_a_watched_run_without_windows_says_so() -> None:
    report = dataclasses.replace(synthetic_report(steps=5), watch=WatchSection())
    panel = _axes(report, "watch")
    assert [t.get_text() for t in panel.texts if t.get_gid() == "note"] == ["No window closed"]
