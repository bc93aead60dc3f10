"""One-page PNG report: the verdict first, then the evidence on one shared time axis.

Layout (14 x 10 in at 100 dpi, 1400 x 1000 px, fixed so the page reads at 100% zoom):

    +---------------------------------------------------------------+
    | VERDICT (big, coloured) / severity + summary / key figures     |
    +--------------------------------------+------------------------+
    | step timeline (wait vs compute share) | pipeline stages, or    |
    | GPU utilization      (shared x axis)  | pipeline/train/compute |
    | host CPU             (shared x axis)  | rates; step time split |
    +--------------------------------------+------------------------+
    | top suggestions                                               |
    +---------------------------------------------------------------+

matplotlib is imported lazily (importing this module must stay cheap and work without it), and
only through `Figure` + `FigureCanvasAgg`: pyplot's global state and backend switching are
never touched, so rendering is safe inside any host process.
"""

from __future__ import annotations

import io
import textwrap
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pipediag.report.io import write_atomically
from pipediag.report.model import (
    BALANCED,
    COMPUTE_BOUND,
    INPUT_BOUND,
    UNKNOWN,
    WARMUP,
    Report,
    StageStats,
    StepRecord,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.text import Text

# Page geometry: a fixed pixel size, so the report looks the same everywhere.
FIGURE_SIZE_IN = (14.0, 10.0)
PHASE_SHADE_COLOR = "#dfe8d8"  # the pipeline-alone benchmark, behind the time panels
DPI = 100
FIGURE_SIZE_PX = (int(FIGURE_SIZE_IN[0] * DPI), int(FIGURE_SIZE_IN[1] * DPI))

# Panel rectangles in figure fractions: (left, bottom, width, height).
LEFT_X, LEFT_W = 0.065, 0.55
RIGHT_X, RIGHT_W = 0.76, 0.215
TIMELINE_RECT = (LEFT_X, 0.53, LEFT_W, 0.195)
GPU_RECT = (LEFT_X, 0.37, LEFT_W, 0.11)
CPU_RECT = (LEFT_X, 0.215, LEFT_W, 0.11)
PIPELINE_RECT = (RIGHT_X, 0.43, RIGHT_W, 0.295)
SPLIT_RECT = (RIGHT_X, 0.235, RIGHT_W, 0.065)
RUN_LINE_Y = 0.802
SUMMARY_Y = 0.918
SUMMARY_LINE_STEP = 0.022
RIGHT_EDGE = 0.98  # no text runs past this (figure fraction)
TEXT_GAP = 0.015  # between two texts on one line (figure fraction)
SUGGESTIONS_TOP_Y = 0.145
SUGGESTION_FIRST_Y = 0.118
SUGGESTION_LINE_STEP = 0.023

# Colours: orange means "input", blue means "compute", everywhere on the page.
INPUT_COLOUR = "#d9480f"
COMPUTE_COLOUR = "#1864ab"
BALANCED_COLOUR = "#e67700"
UNKNOWN_COLOUR = "#868e96"
WARMUP_COLOUR = "#ced4da"
WARMUP_EDGE_COLOUR = "#868e96"
NO_SPLIT_COLOUR = "#a5b4c4"  # a step whose input wait was not measured
MUTED_TEXT_COLOUR = "#495057"
NOTE_TEXT_COLOUR = "#868e96"
WARNING_COLOUR = "#c92a2a"
STAGE_COLOUR = "#adb5bd"
SYSTEM_CPU_COLOUR = "#868e96"
PROCESS_CPU_COLOUR = "#2b8a3e"
GPU_COLOURS = ("#1864ab", "#5f3dc4", "#0b7285", "#a61e4d", "#5c940d", "#862e9c")
VERDICT_COLOURS = {
    INPUT_BOUND: INPUT_COLOUR,
    COMPUTE_BOUND: COMPUTE_COLOUR,
    BALANCED: BALANCED_COLOUR,
    UNKNOWN: UNKNOWN_COLOUR,
}
LABEL_COLOURS = {**VERDICT_COLOURS, WARMUP: WARMUP_COLOUR}

# Font sizes (points).
HEADLINE_FONT = 24
SUBHEAD_FONT = 13
FIGURE_VALUE_FONT = 17
FIGURE_LABEL_FONT = 10
PANEL_TITLE_FONT = 12
BODY_FONT = 10.5
NOTE_FONT = 11

# Limits that keep the page legible for any run length.
MAX_STEP_BARS = 300  # above this many steps, aggregate into time bins
TIME_BINS = 150  # bins used when aggregating
MAX_SUGGESTIONS = 5
MAX_STAGES = 12  # the slowest stages are kept when a pipeline has more
SUMMARY_WRAP_CHARS = 125
SUMMARY_MAX_LINES = 2
SUGGESTION_MAX_CHARS = 150
INCOMPLETE_REASON_MAX_CHARS = 40
STAGE_LABEL_MAX_CHARS = 21
RATE_DECIMALS_BELOW = 100.0  # rates below this keep one decimal
LOG_SCALE_RATIO = 20.0  # rates spanning more than this use a log axis

# The step timeline's y axis: share of step time (%), with a label strip above 100%.
SHARE_MAX_PCT = 100.0
LABEL_STRIP_BOTTOM_PCT = 104.0
LABEL_STRIP_HEIGHT_PCT = 10.0
TIMELINE_YMAX_PCT = 116.0
UTIL_YMAX_PCT = 105.0
TIMELINE_TITLE_PAD_PT = 20.0  # room for the legend row between title and axes


def render_png(report: Report, path: Path) -> Path:
    """Draw the report as one PNG page and write it atomically to `path`.

    Args:
        report: the report to draw; it is only read.
        path: where to write the PNG (parent folders are created).

    Returns:
        The path written.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    figure = build_figure(report)
    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer)
    target = Path(path)
    write_atomically(target, buffer.getvalue())
    return target


def build_figure(report: Report) -> Figure:
    """Build the report page as a matplotlib `Figure` (kept separate so tests can inspect it)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=FIGURE_SIZE_IN, dpi=DPI, facecolor="white")
    FigureCanvasAgg(figure)  # attaches itself: text is measured to keep lines on the page
    _draw_header(figure, report)
    timeline = figure.add_axes(TIMELINE_RECT, label="timeline")
    gpu = figure.add_axes(GPU_RECT, sharex=timeline, label="gpu")
    cpu = figure.add_axes(CPU_RECT, sharex=timeline, label="cpu")
    _draw_timeline(timeline, report)
    _draw_gpu(gpu, report)
    _draw_cpu(cpu, report)
    _set_time_range(timeline, report)
    for axes in (timeline, gpu, cpu):
        _shade_phases(axes, report, label=axes is timeline)
    for axes in (timeline, gpu):
        axes.tick_params(labelbottom=False)
    cpu.set_xlabel("time since the diagnosis started (s)")
    _draw_pipeline(figure.add_axes(PIPELINE_RECT, label="pipeline"), report)
    _draw_step_split(figure.add_axes(SPLIT_RECT, label="split"), report)
    _draw_suggestions(figure, report)
    return figure


# ---------------------------------------------------------------------------- header


def _draw_header(figure: Figure, report: Report) -> None:
    verdict = report.verdict
    colour = VERDICT_COLOURS.get(verdict.label, UNKNOWN_COLOUR)
    figure.text(
        0.02,
        0.965,
        _headline(report),
        fontsize=HEADLINE_FONT,
        fontweight="bold",
        color=colour,
        va="top",
        gid="headline",
    )
    lines = [f"Severity: {verdict.severity}"]
    if verdict.summary:
        lines[0] += f"  \N{MIDDLE DOT}  {verdict.summary}"
    wrapped = textwrap.wrap(" ".join(lines), SUMMARY_WRAP_CHARS)
    for i, line in enumerate(_truncate_lines(wrapped, SUMMARY_MAX_LINES)):
        summary = figure.text(
            0.02, SUMMARY_Y - i * SUMMARY_LINE_STEP, line, fontsize=SUBHEAD_FONT, va="top"
        )
        _fit_width(figure, summary, RIGHT_EDGE)
    _draw_key_figures(figure, report)
    run_right = RIGHT_EDGE
    if not report.complete:
        banner = figure.text(
            RIGHT_EDGE,
            RUN_LINE_Y,
            _incomplete_line(report),
            fontsize=BODY_FONT + 1.5,
            fontweight="bold",
            color=WARNING_COLOUR,
            ha="right",
            va="top",
            gid="incomplete",
        )
        run_right = _left_edge(figure, banner) - TEXT_GAP
    run_line = figure.text(
        0.02, RUN_LINE_Y, _run_line(report), fontsize=BODY_FONT, color=MUTED_TEXT_COLOUR, va="top"
    )
    _fit_width(figure, run_line, run_right)


def _incomplete_line(report: Report) -> str:
    reason = _clip(report.stop_reason or "no reason recorded", INCOMPLETE_REASON_MAX_CHARS)
    exit_info = report.exit
    status = "" if exit_info.status == "ok" else f", exit: {exit_info.status} ({exit_info.code})"
    return f"\N{WARNING SIGN} INCOMPLETE RUN: {reason}{status}"


def _headline(report: Report) -> str:
    """The verdict in plain words, e.g. "INPUT-BOUND: 71% of step time spent waiting for input"."""
    label = report.verdict.label
    fraction = report.verdict.input_wait_fraction
    if fraction is None:
        return HEADLINES_WITHOUT_SHARE.get(label, HEADLINES_WITHOUT_SHARE[UNKNOWN])
    share = f"{fraction:.0%} of step time spent waiting for input"
    if label == COMPUTE_BOUND:
        share = f"only {share}"
    prefix = HEADLINE_PREFIXES.get(label, "NO CLEAR VERDICT")
    return f"{prefix}: {share}"


HEADLINE_PREFIXES = {
    INPUT_BOUND: "INPUT-BOUND",
    COMPUTE_BOUND: "COMPUTE-BOUND",
    BALANCED: "BALANCED",
}
HEADLINES_WITHOUT_SHARE = {
    INPUT_BOUND: "INPUT-BOUND: training waits for its input pipeline",
    COMPUTE_BOUND: "COMPUTE-BOUND: the model, not the input, sets the pace",
    BALANCED: "BALANCED: input pipeline and model both limit training",
    UNKNOWN: "NO VERDICT: not enough was measured to tell",
}


def _draw_key_figures(figure: Figure, report: Report) -> None:
    cards = _key_figures(report)
    width = 0.96 / max(1, len(cards))
    for i, (label, value) in enumerate(cards):
        x = 0.02 + i * width
        figure.text(x, 0.868, label, fontsize=FIGURE_LABEL_FONT, color=MUTED_TEXT_COLOUR, va="top")
        figure.text(
            x, 0.848, value, fontsize=FIGURE_VALUE_FONT, fontweight="bold", color="black", va="top"
        )


def _key_figures(report: Report) -> list[tuple[str, str]]:
    verdict, train = report.verdict, report.train
    fraction = verdict.input_wait_fraction
    gain = best_predicted_gain(report)
    warmup = f" (+{train.warmup_steps} warm-up)" if train.warmup_steps else ""
    return [
        ("Input-wait share", f"{fraction:.0%}" if fraction is not None else "\N{EM DASH}"),
        ("Pipeline alone (batches/s)", _rate(report.pipeline.batches_per_s)),
        ("Training (steps/s)", _rate(train.steps_per_s)),
        ("Compute alone (steps/s)", _rate(verdict.compute_alone_steps_per_s)),
        ("Best fix (predicted)", f"\N{MULTIPLICATION SIGN}{gain:.2f}" if gain else "\N{EM DASH}"),
        (f"Steps measured{warmup}", f"{train.measured_steps:,}"),
    ]


def best_predicted_gain(report: Report) -> float | None:
    """The largest speedup a fix promises: end to end where predicted, else measured, else
    estimated. Notes (fixes measured without gain) and warnings promise nothing."""
    gains = [
        next(
            (g for g in (s.predicted_speedup, s.verified_speedup, s.estimated_speedup) if g),
            None,
        )
        for s in report.suggestions
        if s.kind == "fix"
    ]
    known = [g for g in gains if g is not None and g > 1.0]
    return max(known) if known else None


def _run_line(report: Report) -> str:
    command = " ".join([report.script, *report.args]) or "(no script)"
    parts = [f"$ pipediag run {command}"]
    if report.train.style != "none":
        parts.append(f"{report.train.style}, input wait from {report.train.input_wait_source}")
    if report.created_utc:
        parts.append(report.created_utc)
    return "   \N{MIDDLE DOT}   ".join(parts)


# ---------------------------------------------------------------------------- timeline


def _draw_timeline(axes: Axes, report: Report) -> None:
    steps = report.train.steps
    axes.set_title(
        "Train steps: share of each step spent waiting for input",
        loc="left",
        fontsize=PANEL_TITLE_FONT,
        pad=TIMELINE_TITLE_PAD_PT,
    )
    axes.set_ylim(0, TIMELINE_YMAX_PCT)
    axes.set_yticks(
        [0, 50, 100, LABEL_STRIP_BOTTOM_PCT + LABEL_STRIP_HEIGHT_PCT / 2],
        ["0%", "50%", "100%", "label"],
    )
    axes.set_ylabel("% of step")
    axes.grid(axis="y", alpha=0.3)
    if not steps:
        _note(axes, "No train steps recorded")
        return
    if len(steps) > MAX_STEP_BARS:
        _draw_binned_steps(axes, steps)
    else:
        _draw_each_step(axes, steps)
    _timeline_legend(axes)


def _draw_each_step(axes: Axes, steps: Sequence[StepRecord]) -> None:
    starts = [s.start_s for s in steps]
    widths = [s.duration_s for s in steps]
    wait_pct, compute_pct, wait_colours, compute_colours = [], [], [], []
    for step in steps:
        warm = step.label == WARMUP
        if step.input_wait_s is None or step.duration_s <= 0:
            wait_pct.append(0.0)
            compute_pct.append(SHARE_MAX_PCT)
            compute_colours.append(WARMUP_COLOUR if warm else NO_SPLIT_COLOUR)
        else:
            wait = min(1.0, step.input_wait_s / step.duration_s) * SHARE_MAX_PCT
            wait_pct.append(wait)
            compute_pct.append(SHARE_MAX_PCT - wait)
            compute_colours.append(WARMUP_COLOUR if warm else COMPUTE_COLOUR)
        wait_colours.append(WARMUP_EDGE_COLOUR if warm else INPUT_COLOUR)
    edge = "white" if len(steps) <= MAX_STEP_BARS // 3 else "none"
    axes.bar(
        starts,
        wait_pct,
        width=widths,
        align="edge",
        color=wait_colours,
        edgecolor=edge,
        linewidth=0.4,
        gid="step-wait",
    )
    axes.bar(
        starts,
        compute_pct,
        width=widths,
        bottom=wait_pct,
        align="edge",
        color=compute_colours,
        edgecolor=edge,
        linewidth=0.4,
        gid="step-compute",
    )
    strip = [LABEL_COLOURS.get(s.label, UNKNOWN_COLOUR) for s in steps]
    axes.bar(
        starts,
        [LABEL_STRIP_HEIGHT_PCT] * len(steps),
        width=widths,
        bottom=LABEL_STRIP_BOTTOM_PCT,
        align="edge",
        color=strip,
        edgecolor="none",
        gid="step-label",
    )


def _draw_binned_steps(axes: Axes, steps: Sequence[StepRecord]) -> None:
    """Aggregate steps into time bins: stacked wait/compute share, majority label per bin."""
    bins = bin_steps(steps, TIME_BINS)
    starts = [b.start_s for b in bins]
    width = bins[0].width_s if bins else 0.0
    wait_pct = [b.wait_share * SHARE_MAX_PCT for b in bins]
    compute_pct = [SHARE_MAX_PCT - w for w in wait_pct]
    warm = [b.label == WARMUP for b in bins]
    axes.bar(
        starts,
        wait_pct,
        width=width,
        align="edge",
        edgecolor="none",
        color=[WARMUP_EDGE_COLOUR if w else INPUT_COLOUR for w in warm],
        gid="bin-wait",
    )
    axes.bar(
        starts,
        compute_pct,
        width=width,
        bottom=wait_pct,
        align="edge",
        edgecolor="none",
        color=[WARMUP_COLOUR if w else COMPUTE_COLOUR for w in warm],
        gid="bin-compute",
    )
    axes.bar(
        starts,
        [LABEL_STRIP_HEIGHT_PCT] * len(bins),
        width=width,
        bottom=LABEL_STRIP_BOTTOM_PCT,
        align="edge",
        edgecolor="none",
        color=[LABEL_COLOURS.get(b.label, UNKNOWN_COLOUR) for b in bins],
        gid="bin-label",
    )
    axes.text(
        0.995,
        0.03,
        f"{len(steps):,} steps shown in {len(bins)} time bins",
        transform=axes.transAxes,
        ha="right",
        va="bottom",
        fontsize=9,
        color=MUTED_TEXT_COLOUR,
        bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none"},
    )


class StepBin:
    """Steps that started within one time bin, summed."""

    def __init__(self, start_s: float, width_s: float) -> None:
        self.start_s = start_s
        self.width_s = width_s
        self.wait_s = 0.0
        self.total_s = 0.0
        self.labels: Counter[str] = Counter()

    @property
    def wait_share(self) -> float:
        return min(1.0, self.wait_s / self.total_s) if self.total_s > 0 else 0.0

    @property
    def label(self) -> str:
        """The label that covers most step time in the bin."""
        return self.labels.most_common(1)[0][0] if self.labels else UNKNOWN


def bin_steps(steps: Sequence[StepRecord], count: int) -> list[StepBin]:
    """Sum steps into `count` equal time bins by start time; empty bins are dropped."""
    if not steps:
        return []
    first = min(s.start_s for s in steps)
    last = max(s.start_s + s.duration_s for s in steps)
    width = max(last - first, 1e-9) / count
    bins = [StepBin(first + i * width, width) for i in range(count)]
    for step in steps:
        target = bins[min(count - 1, int((step.start_s - first) / width))]
        target.total_s += step.duration_s
        target.wait_s += step.input_wait_s or 0.0
        target.labels[step.label] += step.duration_s
    return [b for b in bins if b.total_s > 0]


def _timeline_legend(axes: Axes) -> None:
    from matplotlib.patches import Patch

    handles = [
        Patch(color=INPUT_COLOUR, label="input wait / input-bound step"),
        Patch(color=COMPUTE_COLOUR, label="compute / compute-bound step"),
        Patch(facecolor=WARMUP_COLOUR, edgecolor=WARMUP_EDGE_COLOUR, label="warm-up step"),
    ]
    axes.legend(
        handles=handles,
        loc="lower left",
        bbox_to_anchor=(0.0, 1.0),
        ncol=3,
        fontsize=9,
        frameon=False,
        borderaxespad=0.1,
        borderpad=0.1,
    )


def _shade_phases(axes: Axes, report: Report, *, label: bool) -> None:
    """Mark the pipeline-alone benchmark, so the time before training is explained."""
    for phase in report.phases:
        if phase.name != "pipeline_benchmark" or phase.duration_s <= 0:
            continue
        end = phase.start_s + phase.duration_s
        axes.axvspan(phase.start_s, end, color=PHASE_SHADE_COLOR, alpha=0.5, lw=0, zorder=0)
        if label:
            axes.text(
                (phase.start_s + end) / 2,
                50,
                "pipeline\nalone",
                ha="center",
                va="center",
                fontsize=8,
                color="#555555",
                gid="phase-label",
            )


def _set_time_range(axes: Axes, report: Report) -> None:
    ends = [s.start_s + s.duration_s for s in report.train.steps]
    ends += [s.t_s for s in report.gpu.samples]
    ends += [s.t_s for s in report.host.samples]
    axes.set_xlim(0.0, max(ends) if ends and max(ends) > 0 else 1.0)


# ---------------------------------------------------------------------------- GPU and CPU


def _draw_gpu(axes: Axes, report: Report) -> None:
    gpu = report.gpu
    axes.set_title("GPU utilization", loc="left", fontsize=PANEL_TITLE_FONT)
    axes.set_ylim(0, UTIL_YMAX_PCT)
    axes.set_ylabel("util %")
    axes.grid(axis="y", alpha=0.3)
    if not gpu.available:
        _note(axes, f"No GPU found: {gpu.reason or 'no reason recorded'}", gid="no-gpu")
        return
    names = {d.index: d.name for d in gpu.devices}
    indices = sorted({s.device_index for s in gpu.samples})
    if not indices:
        _note(axes, "GPU found, but no utilization samples were recorded")
        return
    for k, index in enumerate(indices):
        # The driver's own sample time, when known, places the reading where it was measured.
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
    axes.legend(
        loc="lower right",
        bbox_to_anchor=(1.0, 1.0),
        fontsize=9,
        frameon=False,
        ncol=min(3, len(indices)),
        borderaxespad=0.2,
    )


def _draw_cpu(axes: Axes, report: Report) -> None:
    host = report.host
    axes.set_title("Host CPU", loc="left", fontsize=PANEL_TITLE_FONT)
    axes.set_ylim(0, UTIL_YMAX_PCT)
    axes.set_ylabel("CPU %")
    axes.grid(axis="y", alpha=0.3)
    if not host.available:
        _note(axes, f"Host CPU not sampled: {host.reason or 'no reason recorded'}")
        return
    if not host.samples:
        _note(axes, "Host sampler ran, but recorded no samples")
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
    axes.legend(
        loc="lower right",
        bbox_to_anchor=(1.0, 1.0),
        ncol=2,
        fontsize=9,
        frameon=False,
        borderaxespad=0.2,
    )


# ---------------------------------------------------------------------------- pipeline


def _draw_pipeline(axes: Axes, report: Report) -> None:
    stages = [s for s in report.pipeline.stages if s.batches_per_s is not None]
    if stages:
        _draw_stages(axes, report, stages)
    else:
        _draw_rate_comparison(axes, report)


def _draw_stages(axes: Axes, report: Report, stages: list[StageStats]) -> None:
    axes.set_title("Pipeline stages (batches/s)", loc="left", fontsize=PANEL_TITLE_FONT)
    if len(stages) > MAX_STAGES:
        slowest = sorted(stages, key=lambda s: s.batches_per_s or 0.0)[:MAX_STAGES]
        stages = sorted(slowest, key=lambda s: s.index)
    rates = [s.batches_per_s or 0.0 for s in stages]
    # When the model sets the pace, the pipeline's slowest stage is not the run's
    # bottleneck (and on a cached pipeline its rate is the first, filling pass): it is
    # named, not painted as the input problem.
    input_problem = report.verdict.label != COMPUTE_BOUND
    colours = [INPUT_COLOUR if s.bottleneck and input_problem else STAGE_COLOUR for s in stages]
    positions = list(range(len(stages)))
    axes.barh(positions, rates, color=colours, height=0.65, gid="stage-bars")
    axes.set_yticks(positions, [_stage_label(s) for s in stages], fontsize=9)
    axes.invert_yaxis()  # source at the top, as the pipeline reads
    train_rate = report.train.steps_per_s
    if train_rate:
        axes.axvline(
            train_rate,
            color=COMPUTE_COLOUR,
            linestyle="--",
            linewidth=1.2,
            label=f"training: {_rate(train_rate)} steps/s",
        )
        axes.legend(
            loc="upper left",
            bbox_to_anchor=(0.0, -0.08),
            fontsize=9,
            frameon=False,
            borderaxespad=0.0,
        )
    _scale_rate_axis(axes, [*rates, train_rate or 0.0])
    mark = " bottleneck" if input_problem else " slowest stage"
    marks = [mark if s.bottleneck else "" for s in stages]
    _label_bars(axes, positions, [s.batches_per_s for s in stages], marks)


def _stage_label(stage: StageStats) -> str:
    """ "map(parse)" for a stage with a user function; else its kind and op name."""
    if stage.function:
        return _clip(f"{stage.kind}({stage.function})", STAGE_LABEL_MAX_CHARS)
    name = stage.name.removesuffix("Dataset").removesuffix("V2").removesuffix("V3")
    if not name or name.lower() == stage.kind.replace("-", "").lower():
        text = stage.kind
    elif name.lower().startswith(stage.kind.lower()):
        text = name
    else:
        text = f"{stage.kind}: {name}"
    return _clip(text, STAGE_LABEL_MAX_CHARS)


def _draw_rate_comparison(axes: Axes, report: Report) -> None:
    """No per-stage timing: compare the three rates (DS-Analyzer's differential view)."""
    axes.set_title("Pipeline vs model rates", loc="left", fontsize=PANEL_TITLE_FONT)
    pipeline = report.pipeline.batches_per_s
    compute = report.verdict.compute_alone_steps_per_s
    rows = [
        ("pipeline alone\n(batches/s)", pipeline, INPUT_COLOUR),
        ("training\n(steps/s)", report.train.steps_per_s, UNKNOWN_COLOUR),
        ("compute alone\n(steps/s)", compute, COMPUTE_COLOUR),
    ]
    rates = [rate for _, rate, _ in rows]
    if all(rate is None for rate in rates):
        _note(axes, "No rates measured")
        axes.set_xticks([])
        axes.set_yticks([])
        return
    # Training runs at best at the slower of the two rates measured alone: that one limits.
    alone = [r for r in (pipeline, compute) if r is not None]
    limit = min(alone) if alone else None
    positions = list(range(len(rows)))
    axes.barh(
        positions,
        [r or 0.0 for r in rates],
        height=0.6,
        color=[colour for _, _, colour in rows],
        gid="rate-bars",
    )
    axes.set_yticks(positions, [label for label, _, _ in rows], fontsize=9)
    axes.invert_yaxis()
    marks = ["", "", ""]
    if limit is not None:
        marks[0 if limit == pipeline else 2] = " \N{LEFTWARDS ARROW} limit"
    _scale_rate_axis(axes, [r for r in rates if r is not None])
    _label_bars(axes, positions, rates, marks)
    axes.text(
        0.0,
        -0.1,
        "No per-stage timing: the slower of pipeline\nalone and compute alone limits training.",
        transform=axes.transAxes,
        ha="left",
        va="top",
        fontsize=9,
        color=MUTED_TEXT_COLOUR,
    )


def _scale_rate_axis(axes: Axes, rates: list[float]) -> None:
    """Linear axis with room for labels; log when rates span orders of magnitude."""
    positive = [r for r in rates if r > 0]
    if not positive:
        axes.set_xlim(0, 1)
        return
    low, high = min(positive), max(positive)
    if high / low > LOG_SCALE_RATIO:
        axes.set_xscale("log")
        axes.set_xlim(low / 2, high * 12)
    else:
        axes.set_xlim(0, high * 1.6)


def _label_bars(
    axes: Axes, positions: list[int], rates: Sequence[float | None], marks: list[str]
) -> None:
    left = axes.get_xlim()[0] if axes.get_xscale() == "log" else 0.0
    for y, rate, mark in zip(positions, rates, marks, strict=True):
        if rate is None:
            axes.text(
                left, y, " not measured", va="center", ha="left", fontsize=9, color=NOTE_TEXT_COLOUR
            )
            continue
        axes.text(
            rate,
            y,
            f" {_rate(rate)}{mark}",
            va="center",
            ha="left",
            fontsize=9,
            fontweight="bold" if mark else "normal",
        )


def _draw_step_split(axes: Axes, report: Report) -> None:
    """Where the mean measured step's time goes: input wait vs compute."""
    axes.set_title("Mean step time", loc="left", fontsize=PANEL_TITLE_FONT)
    axes.set_yticks([])
    for side in ("top", "right", "left"):
        axes.spines[side].set_visible(False)
    measured = [s for s in report.train.steps if s.label != WARMUP and s.input_wait_s is not None]
    if not measured:
        axes.set_xticks([])
        axes.spines["bottom"].set_visible(False)
        _note(axes, "No input-wait timings")
        return
    wait_ms = 1000 * sum(s.input_wait_s or 0.0 for s in measured) / len(measured)
    total_ms = 1000 * sum(s.duration_s for s in measured) / len(measured)
    compute_ms = max(0.0, total_ms - wait_ms)
    axes.barh([0], [wait_ms], color=INPUT_COLOUR, height=0.8, gid="split-wait")
    axes.barh(
        [0], [compute_ms], left=[wait_ms], color=COMPUTE_COLOUR, height=0.8, gid="split-compute"
    )
    axes.set_xlim(0, max(total_ms, 1e-6))
    axes.set_xlabel(
        f"ms  (wait {wait_ms:.1f} + compute {compute_ms:.1f} = {total_ms:.1f} ms)", fontsize=9
    )


# ---------------------------------------------------------------------------- suggestions


def _draw_suggestions(figure: Figure, report: Report) -> None:
    figure.text(
        0.02,
        SUGGESTIONS_TOP_Y,
        "What to change",
        fontsize=PANEL_TITLE_FONT + 1,
        fontweight="bold",
        va="top",
    )
    lines = suggestion_lines(report)
    if not lines:
        figure.text(
            0.02,
            SUGGESTION_FIRST_Y,
            "No suggestions",
            fontsize=BODY_FONT + 0.5,
            color=MUTED_TEXT_COLOUR,
            va="top",
            gid="no-suggestions",
        )
        return
    for i, (text, warning) in enumerate(lines):
        line = figure.text(
            0.02,
            SUGGESTION_FIRST_Y - i * SUGGESTION_LINE_STEP,
            text,
            fontsize=BODY_FONT + 0.5,
            color=WARNING_COLOUR if warning else "black",
            va="top",
            gid="suggestion",
        )
        _fit_width(figure, line, RIGHT_EDGE)


def suggestion_lines(report: Report) -> list[tuple[str, bool]]:
    """One line per top fix or warning, and whether it carries a correctness warning.

    Notes (a check that found a fix not worth making) are not things to change: the text
    summary lists them apart, and the image leaves them out.
    """
    lines = []
    actionable = [s for s in report.suggestions if s.kind != "note"]
    for rank, s in enumerate(actionable[:MAX_SUGGESTIONS], start=1):
        gains = []
        if s.estimated_speedup is not None:
            gains.append(f"estimated \N{MULTIPLICATION SIGN}{s.estimated_speedup:.2f}")
        if s.verified_speedup is not None:
            gains.append(f"verified \N{MULTIPLICATION SIGN}{s.verified_speedup:.2f}")
        gain = f"[{', '.join(gains)}]  " if gains else ""
        stage = f" (stage: {s.stage})" if s.stage else ""
        # The warning goes before the title so that clipping a long line never hides it.
        warning = "\N{WARNING SIGN} may change results: " if s.correctness_warning else ""
        text = f"{rank}. {gain}{warning}{s.title}{stage}   {s.id}"
        lines.append((_clip(text, SUGGESTION_MAX_CHARS), s.correctness_warning))
    return lines


# ---------------------------------------------------------------------------- helpers


def _note(axes: Axes, text: str, gid: str = "note") -> None:
    axes.text(
        0.5,
        0.5,
        text,
        transform=axes.transAxes,
        ha="center",
        va="center",
        fontsize=NOTE_FONT,
        color=NOTE_TEXT_COLOUR,
        wrap=True,
        gid=gid,
    )


def _rate(value: float | None) -> str:
    if value is None:
        return "\N{EM DASH}"
    return f"{value:,.0f}" if value >= RATE_DECIMALS_BELOW else f"{value:,.1f}"


def _fit_width(figure: Figure, artist: Text, right: float) -> None:
    """Shorten a one-line text, with an ellipsis, until it ends left of `right` (figure fraction).

    Character counts cannot tell how wide a text is drawn, so it is measured.
    """
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    limit_px = right * figure.bbox.width
    full = artist.get_text()
    if artist.get_window_extent(renderer).x1 <= limit_px:
        return
    low, high = 0, len(full)  # longest prefix that fits lies in [low, high)
    while low < high - 1:
        middle = (low + high) // 2
        artist.set_text(full[:middle] + "\N{HORIZONTAL ELLIPSIS}")
        if artist.get_window_extent(renderer).x1 <= limit_px:
            low = middle
        else:
            high = middle
    artist.set_text(full[:low].rstrip() + "\N{HORIZONTAL ELLIPSIS}")


def _left_edge(figure: Figure, artist: Text) -> float:
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    return float(artist.get_window_extent(renderer).x0 / figure.bbox.width)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\N{HORIZONTAL ELLIPSIS}"


def _truncate_lines(lines: list[str], limit: int) -> list[str]:
    if len(lines) <= limit:
        return lines
    kept = lines[:limit]
    kept[-1] = kept[-1][:-1] + "\N{HORIZONTAL ELLIPSIS}"
    return kept
