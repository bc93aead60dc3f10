"""The one-page PNG report; matplotlib is imported lazily (docs/design.md, "The PNG page")."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from pipediag.renderers.png.cost import COST_TITLE_ROOM, draw_cost
from pipediag.renderers.png.header import draw_header
from pipediag.renderers.png.rates import draw_pipeline
from pipediag.renderers.png.step_time import draw_step_time, step_time_rect, step_time_shown
from pipediag.renderers.png.style import (
    COST_RECT,
    CPU_RECT,
    DPI,
    FIGURE_SIZE_IN,
    GPU_RECT,
    PIPELINE_RECT,
    TIME_AXIS_LABEL,
    TIMELINE_NO_GPU_RECT,
    TIMELINE_RECT,
)
from pipediag.renderers.png.suggestions import draw_suggestions
from pipediag.renderers.png.text_fit import under
from pipediag.renderers.png.timeline import (
    draw_phase_verdicts,
    draw_timeline,
    run_time_range,
    shade_phases,
    steps_time_range,
)
from pipediag.renderers.png.utilization import draw_cpu, draw_gpu, draw_no_gpu_line, draw_watch
from pipediag.report.io import write_atomically
from pipediag.report.model import Report

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["build_figure", "new_figure", "render_png", "write_png"]


def render_png(report: Report, path: Path) -> Path:
    """Draw the report as one PNG page and write it atomically to `path` (parents made)."""
    return write_png(build_figure(report), path)


def new_figure(size_in: tuple[float, float]) -> Figure:
    """A white page, its Agg canvas attached: every page's text is measured to fit."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=size_in, dpi=DPI, facecolor="white")
    FigureCanvasAgg(figure)  # attaches itself
    return figure


def write_png(figure: Figure, path: Path) -> Path:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")  # through the Agg canvas new_figure attached
    target = Path(path)
    write_atomically(target, buffer.getvalue())
    return target


def build_figure(report: Report) -> Figure:
    """The report page as a matplotlib `Figure` (tests inspect it)."""
    figure = new_figure(FIGURE_SIZE_IN)
    draw_header(figure, report)
    with_gpu = report.gpu.available
    timeline = figure.add_axes(
        TIMELINE_RECT if with_gpu else TIMELINE_NO_GPU_RECT, label="timeline"
    )
    gpu = figure.add_axes(GPU_RECT, sharex=timeline, label="gpu") if with_gpu else None
    cpu = figure.add_axes(CPU_RECT, label="cpu")
    draw_timeline(timeline, report)
    if gpu is not None:
        draw_gpu(gpu, report)
        shade_phases(gpu, report, label=False)  # unlabelled: needs no final time axis
        timeline.tick_params(labelbottom=False)
    else:
        draw_no_gpu_line(figure, report)
    (timeline if gpu is None else gpu).set_xlabel(TIME_AXIS_LABEL, fontsize=9)
    draw_cpu(cpu, report)
    cpu.set_xlabel(f"{TIME_AXIS_LABEL}: the whole run", fontsize=9)
    timeline.set_xlim(*steps_time_range(report))
    cpu.set_xlim(*run_time_range(report))
    shade_phases(timeline, report, label=True)
    shade_phases(cpu, report, label=bool(report.host.samples), whole_run=True)
    draw_phase_verdicts(timeline, report)
    watch = report.watch is not None  # watch mode: no pipeline-alone phase; the run over time
    side = figure.add_axes(PIPELINE_RECT, label="watch" if watch else "pipeline")
    if watch:
        draw_watch(side, report)
    else:
        draw_pipeline(side, report)
    if step_time_shown(report):
        draw_step_time(figure.add_axes(step_time_rect(figure, side), label="step-time"), report)
    else:
        cost_rect = under(figure, side, COST_RECT, COST_TITLE_ROOM)
        draw_cost(figure.add_axes(cost_rect, label="cost"), report)
    draw_suggestions(figure, report)
    return figure
