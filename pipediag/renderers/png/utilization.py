"""The utilization panels: GPU on the steps' time axis, host CPU over the whole run."""

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
)
from pipediag.renderers.png.text_fit import clip, note
from pipediag.renderers.run_words import no_gpu_text, why_text
from pipediag.renderers.verdict_words import sentence
from pipediag.report.model import Report

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

UTIL_YMAX_PCT = 105.0
# The no-GPU line runs under the steps panel, as wide as it (10-pt characters).
NO_GPU_LINE_CHARS = 110


def draw_no_gpu_line(figure: Figure, report: Report) -> None:
    figure.text(
        LEFT_X,
        NO_GPU_LINE_Y,
        clip(sentence(no_gpu_text(report.gpu.reason)), NO_GPU_LINE_CHARS),
        fontsize=10,
        color=NOTE_TEXT_COLOUR,
        gid="no-gpu",
    )


def percent_panel(axes: Axes, title: str, ylabel: str) -> None:
    """The frame of every panel of shares over time (these two, watch mode's)."""
    axes.set_title(title, loc="left", fontsize=PANEL_TITLE_FONT)
    axes.set_ylim(0, UTIL_YMAX_PCT)
    axes.set_ylabel(ylabel)
    axes.grid(axis="y", alpha=0.3)


def _legend_over(axes: Axes, columns: int) -> None:
    axes.legend(
        loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=columns, **LEGEND, borderaxespad=0.2
    )


def draw_gpu(axes: Axes, report: Report) -> None:
    gpu = report.gpu
    percent_panel(axes, "GPU utilization", "util %")
    names = {d.index: d.name for d in gpu.devices}
    indices = sorted({s.device_index for s in gpu.samples})
    if not indices:
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
    axes.plot(
        xs,
        [s.process_cpu_pct / cores for s in host.samples],
        color=PROCESS_CPU_COLOUR,
        linewidth=1.3,
        label=f"this process {core_note}",
    )
    axes.plot(
        xs,
        [s.system_cpu_pct for s in host.samples],
        color=SYSTEM_CPU_COLOUR,
        linewidth=1.0,
        linestyle="--",
        label="whole system",
    )
    _legend_over(axes, 2)
