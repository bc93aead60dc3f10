"""The steps panel, the phases shaded behind the time panels, and the time axes: the steps
get their own, as the pipeline-alone benchmark would leave them a thin strip."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pipediag.renderers.numbers import percent
from pipediag.renderers.png.style import (
    COMPUTE_ALONE_SHADE_COLOR,
    COMPUTE_COLOUR,
    INPUT_COLOUR,
    LABEL_COLOURS,
    LEGEND,
    MUTED_TEXT_COLOUR,
    NO_SPLIT_COLOUR,
    PANEL_TITLE_FONT,
    PHASE_SHADE_COLOR,
    UNKNOWN_COLOUR,
    VERDICT_COLOURS,
    WARMUP_COLOUR,
    WARMUP_EDGE_COLOUR,
)
from pipediag.renderers.png.text_fit import ClearLabels, caption, centred_label, note
from pipediag.renderers.verdict_words import phase_text
from pipediag.report.model import PhaseVerdict, Report, StepRecord

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.text import Text

MAX_STEP_BARS = 300  # above this many steps, aggregate into time bins
TIME_BINS = 150
# The y axis: share of step time (%), with a label strip above 100%.
SHARE_MAX_PCT = 100.0
LABEL_STRIP_BOTTOM_PCT = 104.0
LABEL_STRIP_HEIGHT_PCT = 10.0
TIMELINE_YMAX_PCT = 116.0
SHARE_TICKS = (
    [0, 50, 100, LABEL_STRIP_BOTTOM_PCT + LABEL_STRIP_HEIGHT_PCT / 2],
    ["0%", "50%", "100%", "label"],
)
PHASE_STRIP_Y_PCT = 124.0  # phase verdicts, above the label strip, when there are phases
TIMELINE_YMAX_PHASES_PCT = 132.0
# Phases after the verdict, named on the whole run's CPU panel (`PhaseSpan.name`).
LATE_PHASE_LABELS = {
    "deep_analysis": "stages and\nfix trials",
    "training_trial": "fixes on\ntraining",
    "stage_holds": "stages held\non training",
}
PHASE_LABEL_Y_PCT = {False: 50.0, True: 80.0}  # steps panel, whole-run CPU panel
TIME_MARGIN = 0.01  # of the shown span, either side of the steps' own axis
TIMELINE_TITLE = "Train steps: share of each step spent waiting for input"
TIMELINE_TITLE_PAD_PT = 20.0  # room for the legend row between title and axes
# A shaded or named stretch of time: start, end, shade (None: named only), name, gid.
Span = tuple[float, float, str | None, str, str]


def draw_timeline(axes: Axes, report: Report) -> None:
    steps = report.train.steps
    axes.set_title(TIMELINE_TITLE, loc="left", fontsize=PANEL_TITLE_FONT, pad=TIMELINE_TITLE_PAD_PT)
    # The scale is set before any label is placed (docs/design.md, "The PNG page").
    ticks, labels = SHARE_TICKS
    if phase_spans(report):
        axes.set_ylim(0, TIMELINE_YMAX_PHASES_PCT)
        axes.set_yticks([*ticks, PHASE_STRIP_Y_PCT], [*labels, "phase"])
    else:
        axes.set_ylim(0, TIMELINE_YMAX_PCT)
        axes.set_yticks(ticks, labels)
    axes.set_ylabel("% of step")
    axes.grid(axis="y", alpha=0.3)
    if not steps:
        note(axes, "No train steps recorded")
        return
    if len(steps) > MAX_STEP_BARS:
        bins = bin_steps(steps, TIME_BINS)
        _draw_share_bars(axes, bins, "bin", edgecolor="none")
        shown = f"{len(steps):,} steps shown in {len(bins)} time bins"
        box = {"facecolor": "white", "alpha": 0.8, "edgecolor": "none"}
        caption(axes, 0.995, 0.03, shown, ha="right", va="bottom", bbox=box)
    else:  # few enough bars to tell apart: a thin white edge between them
        edge = "white" if len(steps) <= MAX_STEP_BARS // 3 else "none"
        bars = [ShareBar.of_step(step) for step in steps]
        _draw_share_bars(axes, bars, "step", edgecolor=edge, linewidth=0.4)
    _timeline_legend(axes)


@dataclass
class ShareBar:
    """A step, or the steps that started in one time bin summed (`bin_steps`)."""

    start_s: float
    width_s: float
    wait_s: float = 0.0
    total_s: float = 0.0
    labels: dict[str, float] = field(default_factory=dict)  # step time by step label
    wait_measured: bool = True

    @classmethod
    def of_step(cls, step: StepRecord) -> ShareBar:
        duration, wait = step.duration_s, step.input_wait_s
        return cls(
            step.start_s,
            duration,
            wait_s=wait or 0.0,
            total_s=duration,
            labels={step.label: duration},
            wait_measured=wait is not None,
        )

    @property
    def wait_share(self) -> float | None:
        if not self.wait_measured or self.total_s <= 0:
            return None
        return min(1.0, self.wait_s / self.total_s)

    @property
    def label(self) -> str:
        return max(self.labels, key=lambda label: self.labels[label])

    @property
    def colours(self) -> tuple[str, str]:
        """The wait's colour and the compute's (one colour for a step whose wait is unknown)."""
        if self.label == "warmup":
            return WARMUP_EDGE_COLOUR, WARMUP_COLOUR
        return INPUT_COLOUR, (COMPUTE_COLOUR if self.wait_share is not None else NO_SPLIT_COLOUR)


def _draw_share_bars(
    axes: Axes, bars: list[ShareBar], gid: str, *, edgecolor: str, linewidth: float | None = None
) -> None:
    """The wait and compute bars with `edgecolor`, the label strip without; gids: `gid` and part."""
    starts, widths = [bar.start_s for bar in bars], [bar.width_s for bar in bars]
    wait_pct = [(bar.wait_share or 0.0) * SHARE_MAX_PCT for bar in bars]
    compute_pct = [SHARE_MAX_PCT - wait for wait in wait_pct]
    labels = [LABEL_COLOURS.get(bar.label, UNKNOWN_COLOUR) for bar in bars]
    parts: list[tuple[str, list[float], list[float] | float | None, list[str], str]] = [
        ("wait", wait_pct, None, [bar.colours[0] for bar in bars], edgecolor),
        ("compute", compute_pct, wait_pct, [bar.colours[1] for bar in bars], edgecolor),
        ("label", [LABEL_STRIP_HEIGHT_PCT] * len(bars), LABEL_STRIP_BOTTOM_PCT, labels, "none"),
    ]
    for part, heights, bottom, colours, edge in parts:
        axes.bar(
            starts,
            heights,
            width=widths,
            bottom=bottom,
            align="edge",
            color=colours,
            edgecolor=edge,
            linewidth=linewidth,
            gid=f"{gid}-{part}",
        )


def bin_steps(steps: Sequence[StepRecord], count: int) -> list[ShareBar]:
    """Sum steps into `count` equal time bins by start time; empty bins are dropped."""
    if not steps:
        return []
    first, last = steps_span(steps)
    width = max(last - first, 1e-9) / count
    bins = [ShareBar(first + i * width, width) for i in range(count)]
    for step in steps:
        target = bins[min(count - 1, int((step.start_s - first) / width))]
        target.total_s += step.duration_s
        target.wait_s += step.input_wait_s or 0.0
        target.labels[step.label] = target.labels.get(step.label, 0.0) + step.duration_s
    return [b for b in bins if b.total_s > 0]


def _timeline_legend(axes: Axes) -> None:
    from matplotlib.patches import Patch

    axes.legend(
        handles=[
            Patch(color=INPUT_COLOUR, label="input wait / input-bound step"),
            Patch(color=COMPUTE_COLOUR, label="compute / compute-bound step"),
            Patch(facecolor=WARMUP_COLOUR, edgecolor=WARMUP_EDGE_COLOUR, label="warm-up step"),
        ],
        loc="lower left",
        bbox_to_anchor=(0.0, 1.0),
        ncol=3,
        **LEGEND,
        borderaxespad=0.1,
        borderpad=0.1,
    )


def shade_phases(axes: Axes, report: Report, *, label: bool, whole_run: bool = False) -> None:
    """Shade the phases run alone (`label`: and name them); on the whole run's axis name the
    others too, so their CPU is not read as training's."""
    spans: list[Span] = [
        (p.start_s, p.start_s + p.duration_s, PHASE_SHADE_COLOR, "pipeline\nalone", "phase")
        for p in report.phases
        if p.name == "pipeline_benchmark"
    ]
    spans.extend(compute_alone_spans(report))
    if whole_run and report.train.steps:
        spans.append((*steps_span(report.train.steps), None, "training", "training"))
    if whole_run:
        spans.extend(
            (p.start_s, p.start_s + p.duration_s, None, LATE_PHASE_LABELS[p.name], "late-phase")
            for p in report.phases
            if p.name in LATE_PHASE_LABELS
        )
    low, high = axes.get_xlim()
    box = {"facecolor": "white", "alpha": 0.7, "edgecolor": "none", "pad": 1.0}
    plain = {"fontsize": 8, "color": "#555555", "clip_on": True, "bbox": box if whole_run else None}
    label_y = PHASE_LABEL_Y_PCT[whole_run]
    labels = ClearLabels(axes)  # a label that would overlap another moves up or down
    drawn: list[Text] = []
    for start, end, colour, text, gid in spans:
        if end <= start:
            continue
        if colour is not None:
            axes.axvspan(start, end, color=colour, alpha=0.6, lw=0, zorder=0, gid=f"{gid}-span")
        middle = (start + end) / 2
        if not (label and text and low <= middle <= high):
            continue
        drawn.append(
            centred_label(axes, middle, label_y, text, bold=False, gid=f"{gid}-label", **plain)
        )
    labels.place_tallest_first(drawn)
    labels.caption()


def compute_alone_spans(report: Report) -> list[Span]:
    """One shaded span, or each step-alone block shaded and the alternation named once."""
    if (alone := report.compute_alone) is None or alone.start_s is None:
        return []
    end = alone.start_s + alone.duration_s
    if not alone.blocks:
        return [(alone.start_s, end, COMPUTE_ALONE_SHADE_COLOR, "compute\nalone", "compute-alone")]
    ends = [*(block.start_s for block in alone.blocks[1:]), end]  # each ends as the next starts
    spans: list[Span] = [
        (block.start_s, block_end, COMPUTE_ALONE_SHADE_COLOR, "", "compute-alone")
        for block, block_end in zip(alone.blocks, ends, strict=True)
        if block.kind == "step-alone"
    ]
    spans.append((alone.start_s, end, None, "training and\nstep alone\nin turn", "alternation"))
    return spans


def steps_time_range(report: Report) -> tuple[float, float]:
    """The steps and the compute-alone run with a margin; else the whole run."""
    starts = [s.start_s for s in report.train.steps]
    ends = [s.start_s + s.duration_s for s in report.train.steps]
    if (alone := report.compute_alone) is not None and alone.start_s is not None:
        starts.append(alone.start_s)
        ends.append(alone.start_s + alone.duration_s)
    if not starts or max(ends) <= min(starts):
        return run_time_range(report)
    low, high = min(starts), max(ends)
    margin = (high - low) * TIME_MARGIN
    return max(0.0, low - margin), high + margin


def run_time_range(report: Report) -> tuple[float, float]:
    ends = [s.start_s + s.duration_s for s in report.train.steps]
    ends += [s.t_s for s in report.gpu.samples]
    ends += [s.t_s for s in report.host.samples]
    ends += [p.start_s + p.duration_s for p in report.phases]
    if (alone := report.compute_alone) is not None and alone.start_s is not None:
        ends.append(alone.start_s + alone.duration_s)
    return 0.0, max(ends) if ends and max(ends) > 0 else 1.0


def draw_phase_verdicts(axes: Axes, report: Report) -> None:
    """Each phase of training with its own verdict, over its steps, between dashed lines."""
    # After shade_phases: a ClearLabels clears only texts already drawn, so the verdicts yield.
    labels = ClearLabels(axes)
    for i, (phase, start, end) in enumerate(phase_spans(report)):
        if i > 0:
            axes.axvline(
                start, color=MUTED_TEXT_COLOUR, linestyle="--", linewidth=1.0, gid="phase-boundary"
            )
        left, right = axes.transData.transform((start, 0))[0], axes.transData.transform((end, 0))[0]
        candidates = [phase_text(phase), phase_text(phase, first=False)]
        if phase.input_cost_fraction is not None:
            candidates.append(percent(phase.input_cost_fraction))
        colour = VERDICT_COLOURS.get(phase.label, UNKNOWN_COLOUR)
        style: dict[str, Any] = {"color": colour, "clip_on": True, "gid": "phase-verdict"}
        text = centred_label(axes, (start + end) / 2, PHASE_STRIP_Y_PCT, candidates[0], **style)
        wordings = _fitting_from(text, candidates, right - left - 4)
        # Where none fits, the shortest may reach over a neighbour's: then it is left out.
        labels.place(text, wordings, movable=False, name=candidates[1])
    labels.caption()


def _fitting_from(text: Text, wordings: list[str], width_px: float) -> list[str]:
    """`wordings` from the longest that `text` fits in `width_px`, else the shortest alone."""
    for index, wording in enumerate(wordings):
        text.set_text(wording)
        if text.get_window_extent().width <= width_px:
            return wordings[index:]
    return wordings[-1:]


def phase_spans(report: Report) -> list[tuple[PhaseVerdict, float, float]]:
    """Each phase verdict with the time its steps span; a phase with no steps here is left out."""
    steps = report.train.steps
    chosen = [
        (phase, [s for s in steps if phase.first_epoch <= s.epoch <= phase.last_epoch])
        for phase in report.verdict.phases
    ]
    return [(phase, *steps_span(in_phase)) for phase, in_phase in chosen if in_phase]


def steps_span(steps: Sequence[StepRecord]) -> tuple[float, float]:
    return min(s.start_s for s in steps), max(s.start_s + s.duration_s for s in steps)
