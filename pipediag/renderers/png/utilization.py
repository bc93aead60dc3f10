"""The panels of shares over time: GPU utilization, host CPU, watch mode's windows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipediag.renderers.png.style import (
    GPU_COLOURS,
    LEFT_X,
    LEGEND,
    NO_GPU_LINE_Y,
    NOTE_TEXT_COLOUR,
    PANEL_TITLE_FONT,
    PROCESS_CPU_COLOUR,
    SYSTEM_CPU_COLOUR,
    TRAINING_RATE_COLOUR,
    VERDICT_COLOURS,
    WARNING_COLOUR,
)
from pipediag.renderers.png.text_fit import caption, clip, note
from pipediag.renderers.run_words import no_gpu_text, why_text
from pipediag.renderers.verdict_words import sentence
from pipediag.renderers.watch_view import group_label, group_rate, group_share, group_windows
from pipediag.report.model import Report

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

UTIL_YMAX_PCT = 105.0
# The no-GPU line runs under the steps panel, as wide as it (10-pt characters).
NO_GPU_LINE_CHARS = 110
MAX_PANEL_BARS = 200  # above this many windows, the watch panel groups them


def draw_no_gpu_line(figure: Figure, report: Report) -> None:
    why = clip(sentence(no_gpu_text(report.gpu.reason)), NO_GPU_LINE_CHARS)
    figure.text(LEFT_X, NO_GPU_LINE_Y, why, fontsize=10, color=NOTE_TEXT_COLOUR, gid="no-gpu")


def percent_panel(axes: Axes, title: str, ylabel: str) -> None:
    axes.set_title(title, loc="left", fontsize=PANEL_TITLE_FONT)
    axes.set(ylim=(0, UTIL_YMAX_PCT), ylabel=ylabel)
    axes.grid(axis="y", alpha=0.3)


def _legend_over(axes: Axes, columns: int) -> None:
    axes.legend(
        loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=columns, **LEGEND, borderaxespad=0.2
    )


def draw_gpu(axes: Axes, report: Report) -> None:
    gpu = report.gpu
    percent_panel(axes, "GPU utilization", "util %")
    names = {d.index: d.name for d in gpu.devices}
    if not (indices := sorted({s.device_index for s in gpu.samples})):
        note(axes, "GPU found, but no utilization samples were recorded")
        return
    for k, index in enumerate(indices):
        # The driver's own sample time, when known.
        points = [
            (s.gpu_util_t_s if s.gpu_util_t_s is not None else s.t_s, s.gpu_util_pct)
            for s in gpu.samples
            if s.device_index == index and s.gpu_util_pct is not None
        ]
        if not points:
            continue
        xs, ys = zip(*points, strict=True)
        mean = sum(ys) / len(ys)
        label = f"GPU {index} {names.get(index, '')} (mean {mean:.0f}%)".replace("  ", " ")
        axes.plot(xs, ys, color=GPU_COLOURS[k % len(GPU_COLOURS)], linewidth=1.3, label=label)
    _legend_over(axes, min(3, len(indices)))


def draw_cpu(axes: Axes, report: Report) -> None:
    host = report.host
    percent_panel(axes, "Host CPU", "CPU %")
    if not host.available:
        note(axes, f"Host CPU not sampled: {why_text(host.reason)}")
        return
    if not host.samples:
        note(axes, "Host sampler ran, but recorded no samples")
        return
    xs = [s.t_s for s in host.samples]
    cores = host.cpu_count if host.cpu_count > 0 else 1
    core_note = f"/ {host.cpu_count} cores" if host.cpu_count > 0 else "(core count unknown)"
    process = [s.process_cpu_pct / cores for s in host.samples]
    axes.plot(
        xs, process, color=PROCESS_CPU_COLOUR, linewidth=1.3, label=f"this process {core_note}"
    )
    system = [s.system_cpu_pct for s in host.samples]
    axes.plot(
        xs, system, color=SYSTEM_CPU_COLOUR, linewidth=1.0, linestyle="--", label="whole system"
    )
    _legend_over(axes, 2)


def draw_watch(axes: Axes, report: Report) -> None:
    """Watch mode's windows, in the pipeline panel's place."""
    watch = report.watch
    percent_panel(axes, "Over time", "input wait, % of step (bars)")
    axes.set_xlabel("train step", fontsize=9)
    if watch is None or not watch.windows:
        axes.text(0.5, 0.5, "No window closed", transform=axes.transAxes, ha="center", gid="note")
        return
    groups = group_windows(watch.windows, MAX_PANEL_BARS)
    lefts = [g[0].first_step for g in groups]
    widths = [g[-1].last_step + 1 - g[0].first_step for g in groups]
    axes.bar(
        lefts,
        [100 * (group_share(g) or 0.0) for g in groups],
        width=widths,
        align="edge",
        color=[VERDICT_COLOURS[group_label(g)] for g in groups],
        edgecolor="white",
        linewidth=0.5,
        gid="watch-wait-bars",
    )
    if watch.alert_input_share is not None:
        threshold = 100 * watch.alert_input_share
        axes.axhline(threshold, color=WARNING_COLOUR, ls="--", lw=1, gid="watch-threshold")
    for alert in watch.alerts:
        axes.plot([alert.last_step], [102], marker="v", color=WARNING_COLOUR, gid="watch-alert")
    rate_axes = axes.twinx()
    middles = [left + width / 2 for left, width in zip(lefts, widths, strict=True)]
    rates = [group_rate(g) for g in groups]
    rate_axes.plot(
        [m for m, r in zip(middles, rates, strict=True) if r is not None],
        [r for r in rates if r is not None],
        color=TRAINING_RATE_COLOUR,
        marker="." if len(groups) <= 50 else None,
        linewidth=1.2,
        gid="watch-rate",
    )
    rate_axes.set_ylim(bottom=0)
    rate_axes.tick_params(labelsize=8, colors=TRAINING_RATE_COLOUR)
    # Above the right axis, not beside it: a label there would run off the page.
    style = {"ha": "right", "va": "bottom", "fontsize": 8, "color": TRAINING_RATE_COLOUR}
    caption(rate_axes, 1.0, 1.01, "steps/s (line)", **style)
