"""The foot of the page, "What to change": the top fixes and warnings, one line each.

The lines are the text summary's (`summary.suggestion_line`), numbered in one list; notes (a
check that found a fix not worth making) are not things to change, so the page leaves them
out. A fix that changes what the model trains on is drawn in the warning colour. Where the
report shows the tf.data service check (`renderers/scale_out.py`), its status and prediction
take the last two places, in a muted colour.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipediag.renderers import summary
from pipediag.renderers.png.style import (
    BODY_FONT,
    LEFT_MARGIN,
    MUTED_TEXT_COLOUR,
    PANEL_TITLE_FONT,
    RIGHT_EDGE,
    WARNING_COLOUR,
)
from pipediag.renderers.png.text_fit import clip, fit_width
from pipediag.renderers.scale_out import scale_out_headlines
from pipediag.report.model import Report

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SUGGESTIONS_TOP_Y = 0.145
SUGGESTION_FIRST_Y = 0.118
SUGGESTION_LINE_STEP = 0.023
MAX_SUGGESTIONS = 5
SUGGESTION_MAX_CHARS = 150
# Before the line of a fix that changes what the model trains on.
WARNING_SIGN = "\N{WARNING SIGN} "


def draw_suggestions(figure: Figure, report: Report) -> None:
    figure.text(
        LEFT_MARGIN,
        SUGGESTIONS_TOP_Y,
        "What to change",
        fontsize=PANEL_TITLE_FONT + 1,
        fontweight="bold",
        va="top",
    )
    scale_out = scale_out_headlines(report)
    # The scale-out lines take the last places of the list (the page's height is fixed).
    lines = suggestion_lines(report)[: MAX_SUGGESTIONS - len(scale_out)]
    for i, text in enumerate(scale_out):
        line = figure.text(
            LEFT_MARGIN,
            SUGGESTION_FIRST_Y - (len(lines) + i) * SUGGESTION_LINE_STEP,
            clip(text, SUGGESTION_MAX_CHARS),
            fontsize=BODY_FONT + 0.5,
            color=MUTED_TEXT_COLOUR,
            va="top",
            gid="scale-out",
        )
        fit_width(figure, line, RIGHT_EDGE)
    if not lines and not scale_out:
        figure.text(
            LEFT_MARGIN,
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
            LEFT_MARGIN,
            SUGGESTION_FIRST_Y - i * SUGGESTION_LINE_STEP,
            text,
            fontsize=BODY_FONT + 0.5,
            color=WARNING_COLOUR if warning else "black",
            va="top",
            gid="suggestion",
        )
        fit_width(figure, line, RIGHT_EDGE)


def suggestion_lines(report: Report) -> list[tuple[str, bool]]:
    """One numbered line per top fix or warning, and whether it may change results."""
    lines = []
    for rank, s in enumerate(summary.actionable(report)[:MAX_SUGGESTIONS], start=1):
        start = f"{rank}. " + (WARNING_SIGN if s.correctness_warning else "")
        line = summary.suggestion_line(s, max_chars=SUGGESTION_MAX_CHARS - len(start))
        lines.append((clip(start + line, SUGGESTION_MAX_CHARS), s.correctness_warning))
    return lines
