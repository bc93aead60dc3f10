"""One-page PNG report: the verdict first, then the evidence over time.

Layout (14 x 10 in at 100 dpi, 1400 x 1000 px, fixed so the page reads at 100% zoom):

    +---------------------------------------------------------------+
    | VERDICT (big, coloured) / severity + summary / key figures     |
    +--------------------------------------+------------------------+
    | train steps (wait vs compute share,  | pipeline stages with   |
    |   phase verdicts)  ) steps' own time | T and A marked, or the |
    | GPU utilization    ) axis            | P/T/A rates            |
    | host CPU: the whole run, its phases  | input cost: one step's |
    |   shaded (own time axis)             | time split by cause    |
    +--------------------------------------+------------------------+
    | top suggestions                                               |
    +---------------------------------------------------------------+

The steps get their own time axis (issue 12): the pipeline-alone benchmark runs before
training and used to take most of a shared axis, leaving the steps a thin strip at its edge.
The host CPU panel keeps the whole run, where the phases' CPU use can be compared.

matplotlib is imported lazily (importing this module must stay cheap and work without it), and
only through `Figure` + `FigureCanvasAgg`: pyplot's global state and backend switching are
never touched, so rendering is safe inside any host process.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pipediag.renderers import words
from pipediag.report.io import write_atomically
from pipediag.report.model import (
    BALANCED,
    COMPUTE_BOUND,
    COST_CONTENTION,
    COST_FETCH,
    COST_WAIT,
    INPUT_BOUND,
    UNKNOWN,
    WARMUP,
    PhaseVerdict,
    Report,
    StageStats,
    StepRecord,
    Suggestion,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.text import Text

# Page geometry: a fixed pixel size, so the report looks the same everywhere.
FIGURE_SIZE_IN = (14.0, 10.0)
PHASE_SHADE_COLOR = "#dfe8d8"  # the pipeline-alone benchmark, behind the time panels
COMPUTE_ALONE_SHADE_COLOR = "#d0ebff"  # the train step run alone on a cached batch
DPI = 100
FIGURE_SIZE_PX = (int(FIGURE_SIZE_IN[0] * DPI), int(FIGURE_SIZE_IN[1] * DPI))

# Panel rectangles in figure fractions: (left, bottom, width, height).
LEFT_X, LEFT_W = 0.065, 0.55
RIGHT_X, RIGHT_W = 0.76, 0.215
TIMELINE_RECT = (LEFT_X, 0.545, LEFT_W, 0.18)
GPU_RECT = (LEFT_X, 0.40, LEFT_W, 0.10)  # shares the steps' time axis, labels it below
CPU_RECT = (LEFT_X, 0.215, LEFT_W, 0.10)  # the whole run
PIPELINE_RECT = (RIGHT_X, 0.485, RIGHT_W, 0.24)
COST_RECT = (RIGHT_X, 0.33, RIGHT_W, 0.04)
RUN_LINE_Y = 0.802
SUMMARY_Y = 0.918
SUMMARY_LINE_STEP = 0.022
RIGHT_EDGE = 0.98  # no text runs past this (figure fraction)
TEXT_GAP = 0.015  # between two texts on one line (figure fraction)
KEY_FIGURE_GAP = 0.006  # between a key figure and the next
KEY_FIGURES_X = 0.02
KEY_FIGURES_W = 0.96
KEY_LABEL_Y = 0.862
KEY_VALUE_Y = 0.842
SUGGESTIONS_TOP_Y = 0.145
SUGGESTION_FIRST_Y = 0.118
SUGGESTION_LINE_STEP = 0.023
TIME_AXIS_LABEL = "time since the diagnosis started (s)"

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
# The parts of input cost: shades of the input colour, darkest for the plain wait.
COST_COLOURS = {
    COST_WAIT: INPUT_COLOUR,
    COST_CONTENTION: "#ff922b",
    COST_FETCH: "#ffc078",
}
TRAINING_RATE_COLOUR = "#495057"  # A, the training rate, as a line over other rates
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
HEADLINE_MIN_FONT = 17  # a long headline shrinks to this before it is clipped
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
RATE_NOTE_WRAP_CHARS = 46
RATE_DECIMALS_BELOW = 100.0  # rates below this keep one decimal
LOG_SCALE_RATIO = 20.0  # rates spanning more than this use a log axis

# The step timeline's y axis: share of step time (%), with a label strip above 100%.
SHARE_MAX_PCT = 100.0
LABEL_STRIP_BOTTOM_PCT = 104.0
LABEL_STRIP_HEIGHT_PCT = 10.0
TIMELINE_YMAX_PCT = 116.0
PHASE_STRIP_Y_PCT = 124.0  # phase verdicts, above the label strip, when there are phases
TIMELINE_YMAX_PHASES_PCT = 132.0
PHASE_LABEL_Y_PCT = {False: 50.0, True: 80.0}  # steps panel, whole-run CPU panel
TIME_MARGIN = 0.01  # of the shown span, either side of the steps' own axis
# The caption goes under the legend's rows, in the cost bar's data units (bar: -0.5 to 0.5).
COST_CAPTION_TOP_Y = -1.0
COST_LEGEND_ROW_H = 0.6
COST_LABEL_MIN_PX = 34.0  # a cost segment narrower than this carries no percentage
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
    cpu = figure.add_axes(CPU_RECT, label="cpu")
    _draw_timeline(timeline, report)
    _draw_gpu(gpu, report)
    _draw_cpu(cpu, report)
    timeline.set_xlim(*steps_time_range(report))
    cpu.set_xlim(*run_time_range(report))
    for axes in (timeline, gpu, cpu):
        # Phases are named on the steps panel, and on the CPU panel where it has data.
        label = axes is timeline or (axes is cpu and bool(report.host.samples))
        _shade_phases(axes, report, label=label, whole_run=axes is cpu)
    _draw_phase_verdicts(timeline, report)
    timeline.tick_params(labelbottom=False)
    gpu.set_xlabel(TIME_AXIS_LABEL, fontsize=9)
    cpu.set_xlabel(f"{TIME_AXIS_LABEL}: the whole run", fontsize=9)
    if report.watch is not None:  # watch mode: no pipeline-alone phase; the run over time
        from pipediag.renderers.watch_view import draw_watch_panel

        draw_watch_panel(figure.add_axes(PIPELINE_RECT, label="watch"), report)
    else:
        _draw_pipeline(figure.add_axes(PIPELINE_RECT, label="pipeline"), report)
    _draw_cost(figure.add_axes(COST_RECT, label="cost"), report)
    _draw_suggestions(figure, report)
    return figure


# ---------------------------------------------------------------------------- header


def _draw_header(figure: Figure, report: Report) -> None:
    verdict = report.verdict
    colour = VERDICT_COLOURS.get(verdict.label, UNKNOWN_COLOUR)
    head, subhead = header_lines(report)
    headline = figure.text(
        0.02,
        0.965,
        head,
        fontsize=HEADLINE_FONT,
        fontweight="bold",
        color=colour,
        va="top",
        gid="headline",
    )
    _fit_font(figure, headline, RIGHT_EDGE, HEADLINE_MIN_FONT)
    wrapped = textwrap.wrap(subhead, SUMMARY_WRAP_CHARS)
    for i, line in enumerate(_truncate_lines(wrapped, SUMMARY_MAX_LINES)):
        summary = figure.text(
            0.02,
            SUMMARY_Y - i * SUMMARY_LINE_STEP,
            line,
            fontsize=SUBHEAD_FONT,
            va="top",
            gid="subhead",
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


def headline_text(report: Report) -> str:
    """The analysis's own headline (the text summary leads with the same line); for reports
    written before it existed, the verdict in plain words, e.g. "INPUT-BOUND: 71% of step
    time spent waiting for input"."""
    verdict = report.verdict
    if verdict.headline:
        return verdict.headline
    title = words.verdict_title(verdict.label)
    fraction = verdict.input_wait_fraction
    if fraction is None:
        return f"{title}: {HEADLINES_WITHOUT_SHARE.get(verdict.label, NOT_ENOUGH_MEASURED)}"
    share = f"{words.percent(fraction)} of step time spent waiting for input"
    if verdict.label == COMPUTE_BOUND:
        share = f"only {share}"
    return f"{title}: {share}"


def header_lines(report: Report) -> tuple[str, str]:
    """(headline, subhead): the analysis's headline is cut after its claim, which is drawn
    big, and its explanation leads the line under it, then the summary; reports without a
    headline give the verdict in plain words, then the severity and the summary."""
    verdict = report.verdict
    sep = "  \N{MIDDLE DOT}  "
    if verdict.headline:
        head, explanation = words.headline_parts(verdict.headline)
        parts = [explanation[:1].upper() + explanation[1:], verdict.summary]
        return head, sep.join(p for p in parts if p)
    subhead = f"Severity: {verdict.severity}"
    if verdict.summary:
        subhead += f"{sep}{verdict.summary}"
    return headline_text(report), subhead


NOT_ENOUGH_MEASURED = "not enough was measured to tell"
HEADLINES_WITHOUT_SHARE = {
    INPUT_BOUND: "training waits for its input pipeline",
    COMPUTE_BOUND: "the model, not the input, sets the pace",
    BALANCED: "input pipeline and model both limit training",
}


def _draw_key_figures(figure: Figure, report: Report) -> None:
    cards = key_figures(report)
    width = KEY_FIGURES_W / max(1, len(cards))
    for i, (label, value) in enumerate(cards):
        x = KEY_FIGURES_X + i * width
        right = RIGHT_EDGE if i == len(cards) - 1 else x + width - KEY_FIGURE_GAP
        label_text = figure.text(
            x, KEY_LABEL_Y, label, fontsize=FIGURE_LABEL_FONT, color=MUTED_TEXT_COLOUR, va="top"
        )
        _fit_width(figure, label_text, right)
        value_text = figure.text(
            x,
            KEY_VALUE_Y,
            value,
            fontsize=FIGURE_VALUE_FONT,
            fontweight="bold",
            color="black",
            va="top",
            gid="key-figure",
        )
        _fit_font(figure, value_text, right, FIGURE_LABEL_FONT + 1)


def key_figures(report: Report) -> list[tuple[str, str]]:
    """The header's figures, (label, value): input cost, the three rates P, T and A, the
    best fix and the steps measured. Old reports show the input-wait share first instead."""
    verdict, train = report.verdict, report.train
    if verdict.input_cost_fraction is not None:
        first = ("Input cost (of training time)", words.percent(verdict.input_cost_fraction))
    else:
        fraction = verdict.input_wait_fraction
        first = ("Input-wait share", words.percent(fraction) if fraction is not None else DASH)
    compute = verdict.compute_alone_steps_per_s
    estimated = compute is not None and words.compute_alone_estimated(verdict)
    fix_label, fix_value = best_fix_figure(report)
    warmup = f" (+{train.warmup_steps} warm-up)" if train.warmup_steps else ""
    return [
        first,
        ("Pipeline alone P (batches/s)", _rate(report.pipeline.batches_per_s)),
        (
            f"Compute alone T ({words.ESTIMATED_WORD if estimated else 'steps/s'})",
            ("~" if estimated else "") + _rate(compute),
        ),
        ("Training A (steps/s)", _rate(words.training_rate(verdict, train.steps_per_s))),
        (fix_label, fix_value),
        (f"Steps measured{warmup}", f"{train.measured_steps:,}"),
    ]


DASH = "\N{EM DASH}"


def best_fix(report: Report) -> tuple[Suggestion, float] | None:
    """The fix that promises most, and its gain: end to end where predicted, else measured,
    else estimated. Notes (fixes measured without gain) and warnings promise nothing."""
    best: tuple[Suggestion, float] | None = None
    for s in report.suggestions:
        if s.kind != "fix":
            continue
        gain = next(
            (
                g
                for g in (
                    s.training_speedup,
                    s.predicted_speedup,
                    s.verified_speedup,
                    s.estimated_speedup,
                )
                if g
            ),
            None,
        )
        if gain is not None and gain > 1.0 and (best is None or gain > best[1]):
            best = (s, gain)
    return best


def best_predicted_gain(report: Report) -> float | None:
    """The largest speedup a fix promises (see `best_fix`)."""
    found = best_fix(report)
    return found[1] if found is not None else None


def best_fix_figure(report: Report) -> tuple[str, str]:
    """The best fix's key figure, (label, value): "×1.40" when its pipeline gain was measured
    in this run; "~×1.40" under "Best fix (estimated)" when it rests on stage timings alone."""
    found = best_fix(report)
    if found is None:
        fixes = [s for s in report.suggestions if s.kind == "fix"]
        if not fixes:
            return ("Best fix (predicted)", DASH)
        if any(s.predicted_speedup or s.verified_speedup or s.estimated_speedup for s in fixes):
            return ("Best fix (predicted)", "no gain")
        return ("Best fix (no estimate)", DASH)
    fix, gain = found
    if fix.training_speedup is not None:
        return ("Best fix (on your training)", f"\N{MULTIPLICATION SIGN}{gain:.2f}")
    if fix.verified_speedup is None:
        return (f"Best fix ({words.ESTIMATED_WORD})", f"~\N{MULTIPLICATION SIGN}{gain:.2f}")
    return ("Best fix (predicted)", f"\N{MULTIPLICATION SIGN}{gain:.2f}")


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


def _shade_phases(axes: Axes, report: Report, *, label: bool, whole_run: bool = False) -> None:
    """Mark the pipeline-alone benchmark and the compute-alone run, so the time outside
    training is explained; `label` names them where they are shown. On the whole run's axis
    the training steps are named too, so the CPU of the three phases reads side by side."""
    spans: list[tuple[float, float, str | None, str, str]] = [
        (p.start_s, p.start_s + p.duration_s, PHASE_SHADE_COLOR, "pipeline\nalone", "phase")
        for p in report.phases
        if p.name == "pipeline_benchmark"
    ]
    alone = report.compute_alone
    if alone is not None and alone.start_s is not None:
        end = alone.start_s + alone.duration_s
        spans.append(
            (alone.start_s, end, COMPUTE_ALONE_SHADE_COLOR, "compute\nalone", "compute-alone")
        )
    steps = report.train.steps
    if whole_run and steps:
        start = min(s.start_s for s in steps)
        end = max(s.start_s + s.duration_s for s in steps)
        spans.append((start, end, None, "training", "training"))
    low, high = axes.get_xlim()
    for start, end, colour, text, gid in spans:
        if end <= start:
            continue
        if colour is not None:
            axes.axvspan(start, end, color=colour, alpha=0.6, lw=0, zorder=0, gid=f"{gid}-span")
        middle = (start + end) / 2
        if label and low <= middle <= high:
            axes.text(
                middle,
                PHASE_LABEL_Y_PCT[whole_run],
                text,
                ha="center",
                va="center",
                fontsize=8,
                color="#555555",
                clip_on=True,
                gid=f"{gid}-label",
                bbox={"facecolor": "white", "alpha": 0.7, "edgecolor": "none", "pad": 1.0}
                if whole_run
                else None,
            )


def steps_time_range(report: Report) -> tuple[float, float]:
    """The steps panel's own x range: the recorded steps and the compute-alone run, with a
    small margin; the whole run when neither was recorded."""
    starts = [s.start_s for s in report.train.steps]
    ends = [s.start_s + s.duration_s for s in report.train.steps]
    alone = report.compute_alone
    if alone is not None and alone.start_s is not None:
        starts.append(alone.start_s)
        ends.append(alone.start_s + alone.duration_s)
    if not starts or max(ends) <= min(starts):
        return run_time_range(report)
    low, high = min(starts), max(ends)
    margin = (high - low) * TIME_MARGIN
    return max(0.0, low - margin), high + margin


def run_time_range(report: Report) -> tuple[float, float]:
    """The whole run on one axis, from the diagnosis's start."""
    ends = [s.start_s + s.duration_s for s in report.train.steps]
    ends += [s.t_s for s in report.gpu.samples]
    ends += [s.t_s for s in report.host.samples]
    ends += [p.start_s + p.duration_s for p in report.phases]
    alone = report.compute_alone
    if alone is not None and alone.start_s is not None:
        ends.append(alone.start_s + alone.duration_s)
    return 0.0, max(ends) if ends and max(ends) > 0 else 1.0


def _draw_phase_verdicts(axes: Axes, report: Report) -> None:
    """Above the steps: each phase of training (e.g. epoch 1 filling a cache, the epochs
    after reading it) with its own verdict, between dashed lines at the phase boundaries."""
    spans = phase_spans(report)
    if not spans:
        return
    axes.set_ylim(0, TIMELINE_YMAX_PHASES_PCT)
    axes.set_yticks(
        [0, 50, 100, LABEL_STRIP_BOTTOM_PCT + LABEL_STRIP_HEIGHT_PCT / 2, PHASE_STRIP_Y_PCT],
        ["0%", "50%", "100%", "label", "phase"],
    )
    figure = axes.get_figure()
    renderer = figure.canvas.get_renderer()  # type: ignore[union-attr]
    for i, (phase, start, end) in enumerate(spans):
        if i > 0:
            axes.axvline(
                start, color=MUTED_TEXT_COLOUR, linestyle="--", linewidth=1.0, gid="phase-boundary"
            )
        left = axes.transData.transform((start, 0))[0]
        right = axes.transData.transform((end, 0))[0]
        candidates = [words.phase_text(phase), words.phase_text(phase, first=False)]
        if phase.input_cost_fraction is not None:
            candidates.append(words.percent(phase.input_cost_fraction))
        text = axes.text(
            (start + end) / 2,
            PHASE_STRIP_Y_PCT,
            candidates[0],
            ha="center",
            va="center",
            fontsize=9,
            fontweight="bold",
            color=VERDICT_COLOURS.get(phase.label, UNKNOWN_COLOUR),
            clip_on=True,
            gid="phase-verdict",
        )
        for candidate in candidates:  # the longest wording that fits the phase's width
            text.set_text(candidate)
            if text.get_window_extent(renderer).width <= right - left - 4:
                break


def phase_spans(report: Report) -> list[tuple[PhaseVerdict, float, float]]:
    """Each phase verdict with the time its steps span. Phases and steps count epochs alike,
    from 0 (the analysis names epoch 0 "epoch 1"); a phase with no steps here is left out."""
    steps = report.train.steps
    spans = []
    for phase in report.verdict.phases:
        chosen = [s for s in steps if phase.first_epoch <= s.epoch <= phase.last_epoch]
        if chosen:
            start = min(s.start_s for s in chosen)
            end = max(s.start_s + s.duration_s for s in chosen)
            spans.append((phase, start, end))
    return spans


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
    axes.set_yticks(
        positions, [_clip(words.stage_name(s), STAGE_LABEL_MAX_CHARS) for s in stages], fontsize=9
    )
    axes.invert_yaxis()  # source at the top, as the pipeline reads
    # The two rates the stages are read against: training (A) and the step alone (T).
    verdict = report.verdict
    training = words.training_rate(verdict, report.train.steps_per_s)
    compute = verdict.compute_alone_steps_per_s
    estimated = "~" if compute is not None and words.compute_alone_estimated(verdict) else ""
    lines = [
        (training, TRAINING_RATE_COLOUR, "--", f"A training: {_rate(training)} steps/s"),
        (
            compute,
            COMPUTE_COLOUR,
            ":",
            f"T compute alone: {estimated}{_rate(compute)} steps/s",
        ),
    ]
    for rate, colour, style, label in lines:
        if rate:
            axes.axvline(rate, color=colour, linestyle=style, linewidth=1.4, label=label)
    if training or compute:
        axes.legend(
            loc="upper left",
            bbox_to_anchor=(0.0, -0.08),
            fontsize=9,
            frameon=False,
            borderaxespad=0.0,
        )
    _scale_rate_axis(axes, [*rates, training or 0.0, compute or 0.0])
    mark = " bottleneck" if input_problem else " slowest stage"
    marks = [mark if s.bottleneck else "" for s in stages]
    _label_bars(axes, positions, [s.batches_per_s for s in stages], marks)


def _draw_rate_comparison(axes: Axes, report: Report) -> None:
    """No per-stage timing: compare the three rates (DS-Analyzer's differential view)."""
    axes.set_title("Pipeline vs model rates", loc="left", fontsize=PANEL_TITLE_FONT)
    pipeline = report.pipeline.batches_per_s
    verdict = report.verdict
    compute = verdict.compute_alone_steps_per_s
    estimated = compute is not None and words.compute_alone_estimated(verdict)
    rows = [
        ("P pipeline alone\n(batches/s)", pipeline, INPUT_COLOUR),
        (
            "A training\n(steps/s)",
            words.training_rate(verdict, report.train.steps_per_s),
            TRAINING_RATE_COLOUR,
        ),
        (
            f"T compute alone\n(steps/s{', estimated' if estimated else ''})",
            compute,
            COMPUTE_COLOUR,
        ),
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
    if verdict.input_cost_fraction is None and limit is not None:
        # Old reports: the slower of the two rates measured alone was taken as the limit.
        marks[0 if limit == pipeline else 2] = " \N{LEFTWARDS ARROW} limit"
    _scale_rate_axis(axes, [r for r in rates if r is not None])
    _label_bars(axes, positions, rates, marks)
    if verdict.input_cost_fraction is None:
        reading = "the slower of pipeline alone and compute alone limits training."
    else:
        reading = "training (A) would run at T if input cost nothing."
    skipped = report.pipeline.deep_skipped_reason
    why = f"Stages/fixes {words.deep_skipped_text(skipped)}" if skipped else "No per-stage timing"
    axes.text(
        0.0,
        -0.1,
        "\n".join(textwrap.wrap(f"{why}; {reading}", RATE_NOTE_WRAP_CHARS)),
        transform=axes.transAxes,
        ha="left",
        va="top",
        fontsize=9,
        color=MUTED_TEXT_COLOUR,
        gid="rate-note",
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


class CostSegment:
    """One part of a training step's time in the input-cost bar."""

    def __init__(self, part: str, share: float, colour: str) -> None:
        self.part = part
        self.share = share
        self.colour = colour

    @property
    def text(self) -> str:
        return f"{self.part} {words.percent(self.share)}"


def cost_segments(report: Report) -> tuple[list[CostSegment], str, str]:
    """The input-cost bar: (segments left to right, title, caption).

    Compute first (1 - input cost), then wait, contention and fetch, as shares of training
    time. Without a split, the input cost is one segment; reports that predate input cost
    split the mean measured step into its input wait and the rest.
    """
    verdict = report.verdict
    cost = verdict.input_cost_fraction
    if cost is not None:
        segments = [CostSegment(words.COMPUTE_PART_NAME, max(0.0, 1.0 - cost), COMPUTE_COLOUR)]
        split = verdict.cost_split
        if split is None:
            segments.append(CostSegment(words.UNSPLIT_PART_NAME, cost, INPUT_COLOUR))
        else:
            segments += [
                CostSegment(words.COST_PART_NAMES[part], share, COST_COLOURS[part])
                for part, share in words.cost_parts(split)
            ]
        training = words.training_rate(verdict, report.train.steps_per_s)
        free = words.speedup_if_input_free(verdict, training)
        caption = f"{words.speedup(free)} faster if input were free" if free else ""
        return segments, f"Input cost: {words.percent(cost)} of training time", caption
    measured = [s for s in report.train.steps if s.label != WARMUP and s.input_wait_s is not None]
    total_s = sum(s.duration_s for s in measured)
    if total_s <= 0:
        return [], "Input cost", ""
    wait_s = min(total_s, sum(s.input_wait_s or 0.0 for s in measured))
    count = len(measured)
    caption = (
        f"wait {1e3 * wait_s / count:.1f} + compute {1e3 * (total_s - wait_s) / count:.1f}"
        f" = {1e3 * total_s / count:.1f} ms"
    )
    segments = [
        CostSegment(words.COMPUTE_PART_NAME, 1.0 - wait_s / total_s, COMPUTE_COLOUR),
        CostSegment(words.COST_PART_NAMES[COST_WAIT], wait_s / total_s, INPUT_COLOUR),
    ]
    return segments, "Mean step time", caption


def _draw_cost(axes: Axes, report: Report) -> None:
    """One training step's time as a stacked bar: compute, then each part of input cost."""
    segments, title, caption = cost_segments(report)
    axes.set_title(title, loc="left", fontsize=PANEL_TITLE_FONT)
    axes.set_yticks([])
    axes.set_xticks([])
    for side in ("top", "right", "left", "bottom"):
        axes.spines[side].set_visible(False)
    axes.set_xlim(0, 1)
    axes.set_ylim(-0.5, 0.5)
    if not segments:
        _note(axes, "No input-cost or input-wait timings")
        return
    from matplotlib.patches import Patch

    figure = axes.get_figure()
    renderer = figure.canvas.get_renderer()  # type: ignore[union-attr]
    px_per_share = axes.get_window_extent(renderer).width
    left = 0.0
    for segment in segments:
        axes.barh(
            [0],
            [segment.share],
            left=[left],
            color=segment.colour,
            height=1.0,
            gid=f"cost-{segment.part}",
        )
        if segment.share * px_per_share >= COST_LABEL_MIN_PX:
            axes.text(
                left + segment.share / 2,
                0,
                words.percent(segment.share),
                ha="center",
                va="center",
                fontsize=9,
                fontweight="bold",
                color="white" if segment.colour in (COMPUTE_COLOUR, INPUT_COLOUR) else "black",
                gid="cost-share",
            )
        left += segment.share
    axes.legend(
        handles=[Patch(color=s.colour, label=s.text) for s in segments],
        loc="upper left",
        bbox_to_anchor=(0.0, -0.1),
        ncol=2,
        fontsize=9,
        frameon=False,
        borderaxespad=0.0,
        handlelength=1.2,
        columnspacing=1.0,
    )
    if caption:
        axes.text(
            0.0,
            COST_CAPTION_TOP_Y - COST_LEGEND_ROW_H * math.ceil(len(segments) / 2),
            caption,
            ha="left",
            va="top",
            fontsize=9,
            color=MUTED_TEXT_COLOUR,
            gid="cost-caption",
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
        if s.training_speedup is not None:
            gains.append(f"on your training \N{MULTIPLICATION SIGN}{s.training_speedup:.2f}")
        elif s.predicted_speedup is not None:
            # The text summary's "end to end": the training speedup, not the pipeline's.
            gains.append(f"end to end ~\N{MULTIPLICATION SIGN}{s.predicted_speedup:.2f}")
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


def _fit_font(figure: Figure, artist: Text, right: float, min_size: float) -> None:
    """Shrink a one-line text's font, down to `min_size`, until it ends left of `right`; then
    shorten it (`_fit_width`). A long headline stays whole where a smaller font allows."""
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    limit_px = right * figure.bbox.width
    size = float(artist.get_fontsize())
    while artist.get_window_extent(renderer).x1 > limit_px and size > min_size:
        size = max(min_size, size - 1.0)
        artist.set_fontsize(size)
    _fit_width(figure, artist, right)


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
