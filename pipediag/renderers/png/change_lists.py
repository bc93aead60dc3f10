"""The lists under the fixes in the foot, in the text summary's own lines."""

from __future__ import annotations

from dataclasses import dataclass

from pipediag.renderers.model_words import change_lines, shown_model_side, time_lines
from pipediag.renderers.png.step_time import step_time_shown
from pipediag.renderers.png.style import MUTED_TEXT_COLOUR
from pipediag.renderers.prescription_words import REWRITES_HEADING, rewrites_lines
from pipediag.report.model import Report

LIST_INDENT = 0.012  # a rewrite's row under its list's heading (figure fraction)
LIST_HEADING = "list-heading"
LIST_LINE = "list-line"


@dataclass(frozen=True)
class FootLine:
    text: str
    gid: str
    colour: str = "black"
    bold: bool = False
    indent: float = 0.0
    keep: bool = True  # False: a list's line that may be left to the text summary
    mono: bool = False  # code
    conclusion: bool = False  # what the kept rewrites came to: kept, with the list's heading


def change_lists(report: Report) -> list[list[FootLine]]:
    """Each list a heading and its lines; [] for a report with neither."""
    return [found for found in [model_changes(report), rewrites(report)] if found]


def model_changes(report: Report) -> list[FootLine]:
    """The text's "What to change in the model"; without the "Where the step's time goes"
    panel, the text's profile lines (or why there are none) come first."""
    if (alone := shown_model_side(report)) is None:
        return []
    lines = [] if step_time_shown(report) else time_lines(alone)
    lines += change_lines(alone)
    if len(lines) == 1:  # nothing tried, and why: a line of its own, not a heading
        return [FootLine(lines[0], LIST_LINE, MUTED_TEXT_COLOUR, keep=False)]
    return [_model_line(line) for line in lines]


def _model_line(line: str) -> FootLine:
    heading = not line[:1].isspace()
    colour = _ink(line.lstrip().startswith("note:") or "not measured" in line)
    return FootLine(line, LIST_HEADING if heading else LIST_LINE, colour, heading, keep=heading)


def rewrites(report: Report) -> list[FootLine]:
    prescription, rows = report.pipeline.prescription, rewrites_lines(report)
    if prescription is None or not rows:
        return []
    *changes, together = rows
    kept, unmeasured = [change.kept for change in prescription.tried], prescription.shown[0] is None
    return [
        FootLine(REWRITES_HEADING, LIST_HEADING, bold=True),
        *(
            FootLine(row, LIST_LINE, _ink(not keep), indent=LIST_INDENT, keep=False)
            for row, keep in zip(changes, kept, strict=True)
        ),
        FootLine(together, LIST_LINE, _ink(unmeasured), indent=LIST_INDENT, conclusion=True),
    ]


def _ink(aside: bool) -> str:
    """An aside (not kept, not measured, a note) in the muted colour."""
    return MUTED_TEXT_COLOUR if aside else "black"
