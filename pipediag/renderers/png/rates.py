"""The pipeline panel: stages against A and T, else P, T and A (docs/design.md, "The PNG page")."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pipediag.renderers.numbers import NOT_MEASURED, rate_text
from pipediag.renderers.png.style import (
    COMPUTE_COLOUR,
    INPUT_COLOUR,
    LEGEND,
    NOTE_TEXT_COLOUR,
    PANEL_TITLE_FONT,
    STAGE_COLOUR,
    TRAINING_RATE_COLOUR,
)
from pipediag.renderers.png.text_fit import caption, clip, end_label, note, row_label
from pipediag.renderers.rate_words import ESTIMATED_WORD, rates
from pipediag.renderers.run_words import deep_skipped_text
from pipediag.renderers.stage_cost_words import costliest_stage, if_free_text
from pipediag.report.model import Report
from pipediag.report.names import stage_name
from pipediag.report.stages import StageStats

if TYPE_CHECKING:
    from matplotlib.axes import Axes

MAX_STAGES = 12  # the slowest stages are kept when a pipeline has more
STAGE_LABEL_MAX_CHARS = 21
RATE_NOTE_WRAP_CHARS = 46
LOG_SCALE_RATIO = 20.0  # rates spanning more than this use a log axis
RATE_COLOURS = {"P": INPUT_COLOUR, "T": COMPUTE_COLOUR, "A": TRAINING_RATE_COLOUR}
RATE_LINE_STYLES = {"A": "--", "T": ":"}  # the rates drawn as lines over the stages
# The bars without stage timings, top to bottom: training between the two rates alone.
RATE_BAR_ORDER = ("P", "A", "T")
# Room for the gains if free beside the bars: a 9-pt character's mean width (bold labels a
# little wider), a gap before the column, and the share of the panel the bars keep at least.
CHAR_PT = 5.8
COLUMN_GAP_PT = 8.0
MIN_BAR_SHARE = 0.25


def draw_pipeline(axes: Axes, report: Report) -> None:
    if stages := [s for s in report.pipeline.stages if s.batches_per_s is not None]:
        _draw_stages(axes, report, stages)
    else:
        _draw_rate_comparison(axes, report)


def stage_ms(stages: Sequence[StageStats]) -> list[float]:
    """Each stage's own milliseconds per batch (docs/design.md, "The PNG page")."""
    found, before = [], 0.0
    for stats in stages:
        prefix = 1000.0 / stats.batches_per_s if stats.batches_per_s else before
        own = stats.own_s_per_batch * 1000.0 if stats.own_s_per_batch is not None else None
        found.append(max(0.0, prefix - before) if own is None else own)
        before = prefix
    return found


def _draw_stages(axes: Axes, report: Report, stages: list[StageStats]) -> None:
    axes.set_title("Stage time (ms per batch)", loc="left", fontsize=PANEL_TITLE_FONT)
    own = dict(zip((s.index for s in stages), stage_ms(stages), strict=True))
    if len(stages) > MAX_STAGES:
        kept = sorted(stages, key=lambda s: own[s.index], reverse=True)[:MAX_STAGES]
        stages = sorted(kept, key=lambda s: s.index)
    values = [own[s.index] for s in stages]
    # When the model sets the pace, the slowest stage (on a cached pipeline, its rate is the
    # first, filling pass) is not the run's bottleneck: named, not painted as the problem.
    input_problem = report.verdict.label != "compute-bound"
    # The bottleneck, named by the jump measured on training where there is one.
    costliest = costliest_stage(report.pipeline.stages)
    marked_index = costliest.index if costliest is not None else None
    mark = " bottleneck" if input_problem else " slowest stage"
    marks = [mark if s.index == marked_index else "" for s in stages]
    colours = [INPUT_COLOUR if m and input_problem else STAGE_COLOUR for m in marks]
    positions = list(range(len(stages)))
    axes.barh(positions, values, color=colours, height=0.65, gid="stage-bars")
    names = [clip(stage_name(s), STAGE_LABEL_MAX_CHARS) for s in stages]
    axes.set_yticks(positions, names, fontsize=9)
    axes.invert_yaxis()  # source at the top, as the pipeline reads
    # The step times the stages are read against, A's and T's (docs/design.md, "The PNG page").
    by_letter = {rate.letter: rate for rate in rates(report)}
    marked = [by_letter[letter] for letter in ("A", "T")]
    step_ms = [1000.0 / rate.value if rate.value else 0.0 for rate in marked]
    for rate, ms in zip(marked, step_ms, strict=True):
        if ms:
            axes.axvline(
                ms,
                color=RATE_COLOURS[rate.letter],
                linestyle=RATE_LINE_STYLES[rate.letter],
                linewidth=1.4,
                label=f"{rate.title}: {ms:.1f} ms per step",
            )
    if any(step_ms):
        axes.legend(loc="upper left", bbox_to_anchor=(0.0, -0.08), **LEGEND, borderaxespad=0.0)
    axes.set_xlim(0, max([*values, *step_ms, 1e-3]) * 1.6)
    # Beside a column of gains if free there is no room for the word: the column names it.
    column = max(len(if_free_text(s)) for s in stages)  # characters; 0: no gains if free
    labels = [f" {_ms_text(ms)}{'' if column else m}" for ms, m in zip(values, marks, strict=True)]
    _room_for_if_free(axes, column, values, labels)
    for y, ms, label, m in zip(positions, values, labels, marks, strict=True):
        end_label(axes, ms, y, label, bold=bool(m))
    _label_if_free(axes, stages)


def _ms_text(ms: float) -> str:
    return f"{ms:.1f} ms" if ms >= 1.0 else f"{ms:.2f} ms"


def _room_for_if_free(axes: Axes, column: int, values: list[float], labels: list[str]) -> None:
    """Widen the axis so that every bar's label ends left of the gains-if-free column."""
    width_pt = axes.get_window_extent().width * 72 / axes.figure.dpi
    low, shown = axes.get_xlim()
    high = shown
    for value, label in zip(values, labels, strict=True):
        if value <= 0:
            continue
        free = 1.0 - ((len(label) + column) * CHAR_PT + COLUMN_GAP_PT) / width_pt
        high = max(high, value / max(free, MIN_BAR_SHARE))
    axes.set_xlim(low, high)
    # no ticks out in the column's room (set_xticks only widens the limits)
    axes.set_xticks([tick for tick in axes.get_xticks() if low <= tick <= shown])


def _label_if_free(axes: Axes, stages: list[StageStats]) -> None:
    for y, stats in enumerate(stages):
        if not (text := if_free_text(stats)):
            continue
        weight = "bold" if stats.training_cost_jump else "normal"
        colour = TRAINING_RATE_COLOUR if stats.training_speedup_if_free else NOTE_TEXT_COLOUR
        style = {"fontweight": weight, "color": colour, "gid": "stage-if-free"}
        row_label(axes, axes.transAxes, 0.99, y, text, **style)


def _draw_rate_comparison(axes: Axes, report: Report) -> None:
    axes.set_title("Pipeline vs model rates", loc="left", fontsize=PANEL_TITLE_FONT)
    by_letter = {rate.letter: rate for rate in rates(report)}
    rows = [by_letter[letter] for letter in RATE_BAR_ORDER]
    values = [rate.value for rate in rows]
    if all(value is None for value in values):
        note(axes, "No rates measured")
        axes.set(xticks=[], yticks=[])
        return
    positions, colours = list(range(len(rows))), [RATE_COLOURS[rate.letter] for rate in rows]
    axes.barh(positions, [v or 0.0 for v in values], height=0.6, color=colours, gid="rate-bars")
    labels = [
        f"{rate.title}\n({rate.unit}{', ' + ESTIMATED_WORD if rate.estimated else ''})"
        for rate in rows
    ]
    axes.set_yticks(positions, labels, fontsize=9)
    axes.invert_yaxis()
    verdict, marks = report.verdict, ["" for _ in rows]
    # Without an input cost, training runs at best at the slower rate alone: the limit.
    alone = [rate for rate in rows if rate.letter in ("P", "T") and rate.value is not None]
    if verdict.input_cost_fraction is None and alone:
        limit = min(alone, key=lambda rate: rate.value or 0.0)
        marks[rows.index(limit)] = " \N{LEFTWARDS ARROW} limit"
    _scale_rate_axis(axes, [value for value in values if value is not None])
    left = axes.get_xlim()[0] if axes.get_xscale() == "log" else 0.0
    for y, (rate, mark) in enumerate(zip(values, marks, strict=True)):
        if rate is None:
            end_label(axes, left, y, f" {NOT_MEASURED}", color=NOTE_TEXT_COLOUR)
        else:
            end_label(axes, rate, y, f" {rate_text(rate)}{mark}", bold=bool(mark))
    if verdict.input_cost_fraction is None:
        reading = "the slower of pipeline alone and compute alone limits training."
    else:
        reading = "training (A) would run at T if input cost nothing."
    skipped = report.pipeline.deep_skipped_reason
    why = f"Stages/fixes {deep_skipped_text(skipped)}" if skipped else "No per-stage timing"
    wrapped = "\n".join(textwrap.wrap(f"{why}; {reading}", RATE_NOTE_WRAP_CHARS))
    caption(axes, 0.0, -0.1, wrapped, gid="rate-note")


def _scale_rate_axis(axes: Axes, rates: list[float]) -> None:
    if not (positive := [r for r in rates if r > 0]):
        axes.set_xlim(0, 1)
        return
    low, high = min(positive), max(positive)
    if high / low > LOG_SCALE_RATIO:
        axes.set_xscale("log")
        axes.set_xlim(low / 2, high * 12)
    else:
        axes.set_xlim(0, high * 1.6)
