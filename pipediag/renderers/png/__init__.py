"""One-page PNG report: the verdict first, then the evidence over time.

A renderer: it reads a Report and never measures. One fixed 1400 x 1000 px page: the header
(header.py) over the steps, GPU and host CPU panels on the left, the pipeline's rates or
stages and the input cost (or, where the model sets the rate, where the step's time goes)
on the right, and the suggestions and change lists across the foot. The words and figures
come from the renderers' word modules (`renderers/*_words.py`); these modules only place,
colour and fit them (style.py, text_fit.py). matplotlib is imported lazily, through `Figure` and
`FigureCanvasAgg` only. Layout and rationale: (docs/design.md, "The PNG page").
"""

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
from pipediag.renderers.png.utilization import draw_cpu, draw_gpu, draw_no_gpu_line
from pipediag.report.io import write_atomically
from pipediag.report.model import Report

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["build_figure", "new_figure", "render_png", "write_png"]


def render_png(report: Report, path: Path) -> Path:
    """Draw the report as one PNG page and write it atomically to `path`.

    Args:
        report: the report to draw; it is only read.
        path: where to write the PNG (parent folders are created).

    Returns:
        The path written.
    """
    return write_png(build_figure(report), path)


def new_figure(size_in: tuple[float, float]) -> Figure:
    """A white page of `size_in` inches at the page's DPI, its Agg canvas attached: every
    page's text is measured to keep lines on it (the report, comparison and history pages)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=size_in, dpi=DPI, facecolor="white")
    FigureCanvasAgg(figure)  # attaches itself
    return figure


def write_png(figure: Figure, path: Path) -> Path:
    """Write a page built by `new_figure` atomically to `path` as a PNG; returns the path."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")  # through the Agg canvas new_figure attached
    target = Path(path)
    write_atomically(target, buffer.getvalue())
    return target


def build_figure(report: Report) -> Figure:
    """Build the report page as a matplotlib `Figure` (kept separate so tests can inspect it)."""
    figure = new_figure(FIGURE_SIZE_IN)
    draw_header(figure, report)
    # A GPU panel only where there is a GPU; otherwise one line says why.
    with_gpu = report.gpu.available
    timeline = figure.add_axes(
        TIMELINE_RECT if with_gpu else TIMELINE_NO_GPU_RECT, label="timeline"
    )
    gpu = figure.add_axes(GPU_RECT, sharex=timeline, label="gpu") if with_gpu else None
    cpu = figure.add_axes(CPU_RECT, label="cpu")
    draw_timeline(timeline, report)
    if gpu is not None:
        draw_gpu(gpu, report)
    else:
        draw_no_gpu_line(figure, report)
    draw_cpu(cpu, report)
    timeline.set_xlim(*steps_time_range(report))
    cpu.set_xlim(*run_time_range(report))
    for axes in (timeline, gpu, cpu):
        if axes is None:
            continue
        # Phases are named on the steps panel, and on the CPU panel where it has data.
        label = axes is timeline or (axes is cpu and bool(report.host.samples))
        shade_phases(axes, report, label=label, whole_run=axes is cpu)
    draw_phase_verdicts(timeline, report)
    if gpu is not None:
        timeline.tick_params(labelbottom=False)
        gpu.set_xlabel(TIME_AXIS_LABEL, fontsize=9)
    else:
        timeline.set_xlabel(TIME_AXIS_LABEL, fontsize=9)
    cpu.set_xlabel(f"{TIME_AXIS_LABEL}: the whole run", fontsize=9)
    if report.watch is not None:  # watch mode: no pipeline-alone phase; the run over time
        from pipediag.renderers.watch_view import draw_watch_panel

        side = figure.add_axes(PIPELINE_RECT, label="watch")
        draw_watch_panel(side, report)
    else:
        side = figure.add_axes(PIPELINE_RECT, label="pipeline")
        draw_pipeline(side, report)
    if step_time_shown(report):  # the model sets the rate: see the layout above
        draw_step_time(figure.add_axes(step_time_rect(figure, side), label="step-time"), report)
    else:
        cost_rect = under(figure, side, COST_RECT, COST_TITLE_ROOM)
        draw_cost(figure.add_axes(cost_rect, label="cost"), report)
    draw_suggestions(figure, report)
    return figure
