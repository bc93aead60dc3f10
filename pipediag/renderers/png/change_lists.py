"""The lists under the fixes in the foot, in the text summary's own lines."""

from __future__ import annotations

from dataclasses import dataclass

from pipediag.renderers.model_words import change_lines, shown_model_side, time_lines
from pipediag.renderers.png.step_time import step_time_shown
from pipediag.renderers.prescription_words import REWRITES_HEADING, rewrites_lines
from pipediag.report.model import Report


@dataclass(frozen=True)
class ListLine:
    """A list's heading and its `conclusion` (what the kept rewrites came to) stay where
    room is short."""

    text: str
    heading: bool = False
    aside: bool = False
    indented: bool = False
    conclusion: bool = False


def change_lists(report: Report) -> list[list[ListLine]]:
    """Each list a heading and its lines; [] for a report with neither."""
    return [found for found in [model_changes(report), rewrites(report)] if found]


def model_changes(report: Report) -> list[ListLine]:
    """The text's "What to change in the model"; without the "Where the step's time goes"
    panel, the text's profile lines (or why there are none) come first."""
    alone = shown_model_side(report)
    if alone is None:
        return []
    lines = [] if step_time_shown(report) else time_lines(alone)
    lines += change_lines(alone)
    if len(lines) == 1:  # nothing tried, and why: a line of its own, not a heading
        return [ListLine(lines[0], aside=True)]
    return [
        ListLine(
            line,
            heading=not line[:1].isspace(),
            aside=line.lstrip().startswith("note:") or "not measured" in line,
        )
        for line in lines
    ]


def rewrites(report: Report) -> list[ListLine]:
    prescription = report.pipeline.prescription
    rows = rewrites_lines(report)
    if prescription is None or not rows:
        return []
    *changes, together = rows
    kept = [change.kept for change in prescription.tried]
    return [
        ListLine(REWRITES_HEADING, heading=True),
        *(
            ListLine(row, aside=not keep, indented=True)
            for row, keep in zip(changes, kept, strict=True)
        ),
        ListLine(together, aside=prescription.shown[0] is None, indented=True, conclusion=True),
    ]
