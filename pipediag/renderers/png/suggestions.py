"""The foot of the page, "What to change" (docs/design.md, "The PNG page")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pipediag.renderers.answer import Change, the_change
from pipediag.renderers.png.change_lists import LIST_HEADING, LIST_INDENT, FootLine, change_lists
from pipediag.renderers.png.style import (
    BODY_FONT,
    LEFT_MARGIN,
    MUTED_TEXT_COLOUR,
    PANEL_TITLE_FONT,
    RIGHT_EDGE,
    WARNING_COLOUR,
)
from pipediag.renderers.png.text_fit import ELLIPSIS, clip, fit_font, fit_width
from pipediag.renderers.scale_out import scale_out_headlines
from pipediag.renderers.suggestion_words import actionable, suggestion_line
from pipediag.report.model import Report, Suggestion

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SUGGESTIONS_TOP_Y = 0.145
SUGGESTION_FIRST_Y = 0.118
SUGGESTION_LINE_STEP = 0.023
MAX_SUGGESTIONS = 5
CHANGE_CODE_LINES = 3  # of the change's code: one place of the five stays a fix's
# The change's font may shrink this much before it is cut: at the foot's own size the
# README's run lost "(measured with its output held in memory)".
CHANGE_FONT_SHRINK = 3.0
CHANGE_MAX_CHARS = 220
SUGGESTION_MAX_CHARS = 150
WARNING_SIGN = "\N{WARNING SIGN} "
# With lists: the foot starts just under the host CPU panel's axis label.
LISTS_TOP_Y = 0.162
LISTS_FIRST_Y = 0.137
LAST_LINE_Y = 0.018
MIN_LINE_STEP = 0.0165
LINES_THAT_FIT = int((LISTS_FIRST_Y - LAST_LINE_Y) / MIN_LINE_STEP + 1e-9) + 1
LISTS_FONT = BODY_FONT - 0.5
FIXES_KEPT_MIN = 2  # fixes kept when the lists need the room
HEADING_SPACE = 0.4  # of a line, before a list's heading
CHANGE = "change"
MORE_IN_TEXT = ELLIPSIS + " {count} more lines in the text summary"


def draw_suggestions(figure: Figure, report: Report) -> None:
    lists = change_lists(report)
    figure.text(
        LEFT_MARGIN,
        LISTS_TOP_Y if lists else SUGGESTIONS_TOP_Y,
        "What to change",
        fontsize=PANEL_TITLE_FONT + 1,
        fontweight="bold",
        va="top",
    )
    lines = foot_lines(report, lists)
    font = LISTS_FONT if lists else BODY_FONT + 0.5
    for foot, y in zip(lines, line_tops(lines, with_lists=bool(lists)), strict=True):
        text = figure.text(
            LEFT_MARGIN + foot.indent,
            y,
            foot.text,
            fontsize=font,
            fontweight="bold" if foot.bold else "normal",
            color=foot.colour,
            va="top",
            gid=foot.gid,
            fontfamily="monospace" if foot.mono else None,
        )
        if foot.gid == CHANGE:
            fit_font(figure, text, RIGHT_EDGE, font - CHANGE_FONT_SHRINK)
        else:
            fit_width(figure, text, RIGHT_EDGE)


def line_tops(lines: list[FootLine], *, with_lists: bool) -> list[float]:
    """Each line's top: a fixed step without lists; with them, the step that fits the foot."""
    if not with_lists:
        return [SUGGESTION_FIRST_Y - i * SUGGESTION_LINE_STEP for i in range(len(lines))]
    room = LISTS_FIRST_Y - LAST_LINE_Y
    spaced = sum(1 for i, line in enumerate(lines) if i and line.gid == LIST_HEADING)
    step = room / max(1.0, len(lines) - 1 + HEADING_SPACE * spaced)
    if step < MIN_LINE_STEP:  # no room for the space: lines close up instead
        spaced, step = 0, room / max(1.0, len(lines) - 1)
    step = max(MIN_LINE_STEP, min(SUGGESTION_LINE_STEP, step))
    tops, y = [], LISTS_FIRST_Y
    for i, line in enumerate(lines):
        if i and spaced and line.gid == LIST_HEADING:
            y -= HEADING_SPACE * step
        tops.append(y)
        y -= step
    return tops


def foot_lines(report: Report, lists: list[list[FootLine]] | None = None) -> list[FootLine]:
    lists = change_lists(report) if lists is None else lists
    change = the_change(report)
    # A change with code was measured to help: it leads, with the code; so does the note
    # the answer gives where none helped (where the cost lies, or why nothing can help).
    noted = change.suggestion is not None and change.suggestion.kind == "note"
    said = _change_lines(change) if (change.code or noted) and not change.model else []
    prescribed = bool(said) and change.suggestion is None
    if prescribed:
        # The change is the pipeline pipediag would write: its list's conclusion would repeat it.
        lists = [[line for line in found if not line.conclusion] for found in lists]
    scale_out = [
        FootLine(clip(text, SUGGESTION_MAX_CHARS), "scale-out", MUTED_TEXT_COLOUR)
        for text in scale_out_headlines(report)
    ]
    listed = [line for found in lists for line in found]
    room = MAX_SUGGESTIONS - len(scale_out) - len(said)
    if lists:
        room = min(
            room, max(FIXES_KEPT_MIN, LINES_THAT_FIT - len(scale_out) - len(listed) - len(said))
        )
    if prescribed:
        said_already = _kept_rewrites(report)
    else:
        said_already = [change.suggestion] if said and change.suggestion is not None else []
    fixes = [
        FootLine(text, "suggestion", WARNING_COLOUR if warning else "black")
        for text, warning in suggestion_lines(report, said_already=said_already)[: max(0, room)]
    ]
    if not (lines := [*said, *fixes, *scale_out]) and not lists:
        return [FootLine("No suggestions", "no-suggestions", MUTED_TEXT_COLOUR)]
    lines += listed
    if not lists or len(lines) <= LINES_THAT_FIT:
        return lines
    return _cut_to_fit(lines, LINES_THAT_FIT)


def _cut_to_fit(lines: list[FootLine], room: int) -> list[FootLine]:
    """The last droppable lines left out, one line saying how many where the first was."""
    need = len(lines) + 1 - room  # with the line saying how many
    droppable = [i for i, line in enumerate(lines) if not line.keep]
    dropped = droppable[max(0, len(droppable) - need) :] if need > 0 else []
    if not dropped:
        return lines[:room]
    at, words = min(dropped), MORE_IN_TEXT.format(count=len(dropped))
    more = FootLine(words, "more-in-text", MUTED_TEXT_COLOUR, indent=lines[at].indent)
    kept = [line for i, line in enumerate(lines) if i not in dropped]
    return (kept[:at] + [more] + kept[at:])[:room]


def _change_lines(change: Change) -> list[FootLine]:
    head = FootLine(clip(change.head, CHANGE_MAX_CHARS), CHANGE, bold=True)
    code = [
        FootLine(clip(line, SUGGESTION_MAX_CHARS), "change-code", indent=LIST_INDENT, mono=True)
        for line in change.code[:CHANGE_CODE_LINES]
    ]
    return [head, *code]


def _kept_rewrites(report: Report) -> list[Suggestion]:
    """The fixes in the pipeline pipediag would write, measured on training: said by it."""
    prescription = report.pipeline.prescription
    kept = {(c.fix, c.stage_index) for c in prescription.kept} if prescription else set()
    return [
        s
        for s in report.suggestions
        if (s.fix, s.stage_index) in kept and s.gain.on("training") is not None
    ]


def suggestion_lines(
    report: Report, said_already: Sequence[Suggestion] = ()
) -> list[tuple[str, bool]]:
    """A numbered line per top fix or warning not `said_already`; whether it may change results."""
    lines = []
    shown = [s for s in actionable(report) if not any(s is said for said in said_already)]
    for rank, s in enumerate(shown[:MAX_SUGGESTIONS], start=1):
        start = f"{rank}. " + (WARNING_SIGN if s.correctness_warning else "")
        line = suggestion_line(s, report, max_chars=SUGGESTION_MAX_CHARS - len(start))
        lines.append((clip(start + line, SUGGESTION_MAX_CHARS), s.correctness_warning))
    return lines
