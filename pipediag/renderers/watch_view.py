"""Watch mode's windows as text, and grouped for the PNG (docs/design.md, "Watching a long run")."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pipediag.renderers.numbers import percent
from pipediag.report.model import Report
from pipediag.report.vocabulary import VerdictLabel
from pipediag.report.watch import WatchAlert, WatchSection, WatchWindow

MAX_TABLE_ROWS = 10  # up to this many windows get a row each
STRIP_WIDTH = 60  # characters in the strip of wait shares
SHARE_BLOCKS = " ▁▂▃▄▅▆▇█"  # 0% .. 100% of step time spent waiting
MAX_ALERT_LINES = 3
LABEL_ORDER: tuple[VerdictLabel, ...] = ("input-bound", "balanced", "compute-bound", "unknown")
LABEL_BASIS = (
    "windows are labelled by input wait share (XProf's bands: 20%, 5%); input cost needs "
    "the train step run alone, which watch mode does not do"
)


def over_time_text(report: Report, indent: str = "") -> str:
    if (watch := report.watch) is None:
        return ""
    windows, lines = watch.windows, [_heading(watch)]
    if len(windows) <= MAX_TABLE_ROWS:
        alerted = {alert.window_index for alert in watch.alerts}
        lines += [_row(w, watch.every_steps, alerted) for w in windows]
    else:
        per = len(windows) / min(STRIP_WIDTH, len(windows))
        per_mark = "window" if per == 1 else f"~{per:.1f} windows"
        lines.append(f"wait share {_strip(windows)}  (one mark per {per_mark})")
        lines.append(_run_course(windows, watch.every_steps))
    lines += _alert_lines(watch)
    if windows:
        lines.append(LABEL_BASIS)
    if watch.tensorboard_logdir:
        lines.append(f"TensorBoard scalars: {watch.tensorboard_logdir}")
    return f"\n{indent}".join(lines)


def _heading(watch: WatchSection) -> str:
    if not (windows := watch.windows):
        return "watch mode: no window closed (no step past the warm-up)"
    size = "one per epoch" if watch.every_steps is None else f"{watch.every_steps} steps each"
    counts = Counter(w.label for w in windows)
    labels = ", ".join(f"{counts[label]} {label}" for label in LABEL_ORDER if counts[label])
    merged = f" (older ones merged: {watch.merged_windows})" if watch.merged_windows else ""
    return f"{len(windows)} windows, {size}{merged}: {labels}"


def _where(window: WatchWindow, every_steps: int | None) -> str:
    steps = f"steps {window.first_step}-{window.last_step}"
    if every_steps is None and window.windows == 1:
        return f"epoch {window.epoch + 1}, {steps}"
    return steps


def _share(window: WatchWindow) -> str:
    share = window.input_wait_fraction
    return "wait -" if share is None else f"wait {percent(share)}"


def _rate(window: WatchWindow) -> str:
    return "-" if window.steps_per_s is None else f"{window.steps_per_s:.1f}"


def window_line(window: WatchWindow, every_steps: int | None) -> str:
    """`epoch 3 (steps 905-1204): 81.2 steps/s, input wait 4% of step time: compute-bound`."""
    where = f"steps {window.first_step}-{window.last_step}"
    if every_steps is None:
        where = f"epoch {window.epoch + 1} ({where})"
    share = window.input_wait_fraction
    wait = "input wait not measured" if share is None else f"input wait {share:.0%} of step time"
    return f"{where}: {_rate(window)} steps/s, {wait}: {window.label}"


def _row(window: WatchWindow, every_steps: int | None, alerted: set[int]) -> str:
    return (
        f"{_where(window, every_steps):<26}{_rate(window):>9} steps/s  {_share(window):<10}"
        f"{window.label}{'  ALERT' if window.index in alerted else ''}"
    )


def group_windows(windows: Sequence[WatchWindow], groups: int) -> list[list[WatchWindow]]:
    if not windows:
        return []
    count = min(groups, len(windows))
    bounds = [round(i * len(windows) / count) for i in range(count + 1)]
    return [list(windows[a:b]) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def group_share(group: Sequence[WatchWindow]) -> float | None:
    """Weighted by the windows' step time."""
    known = [w for w in group if w.input_wait_s is not None]
    time = sum(w.step_time_s for w in known)
    return sum(w.input_wait_s or 0.0 for w in known) / time if time > 0 else None


def _strip(windows: Sequence[WatchWindow]) -> str:
    top = len(SHARE_BLOCKS) - 1
    shares = [group_share(group) for group in group_windows(windows, STRIP_WIDTH)]
    marks = ["?" if s is None else SHARE_BLOCKS[min(top, round(s * top))] for s in shares]
    return "|" + "".join(marks) + "|"


def _run_course(windows: Sequence[WatchWindow], every_steps: int | None) -> str:
    first, last = windows[0], windows[-1]
    rates = [w.steps_per_s for w in windows if w.steps_per_s is not None]
    extremes = f" (min {min(rates):.1f}, max {max(rates):.1f})" if rates else ""
    return (
        f"steps/s {_rate(first)} -> {_rate(last)}{extremes}; {_share(first)} -> {_share(last)}; "
        f"first {_where(first, every_steps)}, last {_where(last, every_steps)}"
    )


def _alert_lines(watch: WatchSection) -> list[str]:
    if watch.alert_input_share is None:
        return []
    rule = (
        f"input wait at or over {percent(watch.alert_input_share)} for {watch.alert_windows} "
        "windows in a row"
    )
    if not watch.alerts:
        return [f"no alert ({rule})"]
    lines = [f"{len(watch.alerts)} alert(s) ({rule}):"]
    lines += [f"  at {a.t_s:.1f} s: {alert_text(a)}" for a in watch.alerts[:MAX_ALERT_LINES]]
    if len(watch.alerts) > MAX_ALERT_LINES:
        lines.append(f"  ... and {len(watch.alerts) - MAX_ALERT_LINES} more in report.json")
    return lines


def alert_text(alert: WatchAlert) -> str:
    """The alert in words, the same in the run's log, the text view and alert commands."""
    return (
        f"input wait {alert.input_wait_fraction:.0%} of step time for {alert.windows} windows "
        f"in a row (steps {alert.first_step}-{alert.last_step}), at or over the "
        f"{alert.threshold:.0%} alert threshold"
    )


def group_label(group: Sequence[WatchWindow]) -> str:
    """The worst label in a group (input-bound first): the panel must not hide one."""
    labels = {w.label for w in group}
    return next((label for label in LABEL_ORDER if label in labels), "unknown")


def group_rate(group: Sequence[WatchWindow]) -> float | None:
    time = sum(w.step_time_s for w in group)
    return sum(w.steps for w in group) / time if time > 0 else None
