"""The top of the page: the verdict's claim and explanation, the key figures, the run line."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

from pipediag.renderers.cost_words import input_cost_figure
from pipediag.renderers.numbers import DASH, percent
from pipediag.renderers.png.style import (
    BODY_FONT,
    FIGURE_LABEL_FONT,
    FIGURE_VALUE_FONT,
    HEADLINE_FONT,
    HEADLINE_MIN_FONT,
    LEFT_MARGIN,
    MUTED_TEXT_COLOUR,
    RIGHT_EDGE,
    SUBHEAD_FONT,
    UNKNOWN_COLOUR,
    VERDICT_COLOURS,
    WARNING_COLOUR,
)
from pipediag.renderers.png.text_fit import clip, fit_font, fit_width, truncate_lines
from pipediag.renderers.rate_words import rates
from pipediag.renderers.run_words import command_line, stop_reason_text, training_text
from pipediag.renderers.suggestion_words import best_fix_figure
from pipediag.renderers.verdict_words import headline, sentence
from pipediag.report.model import Report

if TYPE_CHECKING:
    from matplotlib.figure import Figure

HEADLINE_Y = 0.965
SUMMARY_Y = 0.918
SUMMARY_LINE_STEP = 0.022
SUMMARY_WRAP_CHARS = 125
SUMMARY_MAX_LINES = 2
KEY_FIGURES_W = 0.96
KEY_FIGURE_GAP = 0.006  # between a key figure and the next
KEY_LABEL_Y = 0.862
KEY_VALUE_Y = 0.842
RUN_LINE_Y = 0.802
TEXT_GAP = 0.015  # between two texts on one line (figure fraction)
INCOMPLETE_REASON_MAX_CHARS = 40
SEPARATOR = "  \N{MIDDLE DOT}  "
RUN_LINE_SEPARATOR = "   \N{MIDDLE DOT}   "


def draw_header(figure: Figure, report: Report) -> None:
    colour = VERDICT_COLOURS.get(report.verdict.label, UNKNOWN_COLOUR)
    head, subhead = header_lines(report)
    style: dict[str, Any] = {"fontsize": HEADLINE_FONT, "fontweight": "bold", "color": colour}
    headline = figure.text(LEFT_MARGIN, HEADLINE_Y, head, va="top", gid="headline", **style)
    fit_font(figure, headline, RIGHT_EDGE, HEADLINE_MIN_FONT)
    wrapped = textwrap.wrap(subhead, SUMMARY_WRAP_CHARS)
    for i, line in enumerate(truncate_lines(wrapped, SUMMARY_MAX_LINES)):
        y = SUMMARY_Y - i * SUMMARY_LINE_STEP
        _fitted(figure, LEFT_MARGIN, y, line, RIGHT_EDGE, fontsize=SUBHEAD_FONT, gid="subhead")
    _draw_key_figures(figure, report)
    run_right = RIGHT_EDGE
    if not report.complete:
        banner = figure.text(
            RIGHT_EDGE,
            RUN_LINE_Y,
            incomplete_line(report),
            fontsize=BODY_FONT + 1.5,
            fontweight="bold",
            color=WARNING_COLOUR,
            ha="right",
            va="top",
            gid="incomplete",
        )
        run_right = banner.get_window_extent().x0 / figure.bbox.width - TEXT_GAP
    style = {"fontsize": BODY_FONT, "color": MUTED_TEXT_COLOUR, "gid": "run-line"}
    _fitted(figure, LEFT_MARGIN, RUN_LINE_Y, run_line(report), run_right, **style)


def header_lines(report: Report) -> tuple[str, str]:
    """(the headline's claim, its explanation and the text summary's details)."""
    head = headline(report)
    return head.claim, SEPARATOR.join(p for p in [sentence(head.explanation), *head.details] if p)


def incomplete_line(report: Report) -> str:
    reason, exit_info = clip(stop_reason_text(report), INCOMPLETE_REASON_MAX_CHARS), report.exit
    status = "" if exit_info.status == "ok" else f", exit: {exit_info.status} ({exit_info.code})"
    return f"\N{WARNING SIGN} INCOMPLETE RUN: {reason}{status}"


def run_line(report: Report) -> str:
    """ "$ pipediag run train.py --epochs 2 · keras-fit, input wait from ... · <time>"."""
    parts = [f"$ pipediag run {command_line(report)}"]
    if report.train.style != "none":
        parts.append(training_text(report.train))
    if report.created_utc:
        parts.append(report.created_utc)
    return RUN_LINE_SEPARATOR.join(parts)


def key_figures(report: Report) -> list[tuple[str, str]]:
    """(label, value): input cost (else the wait share), P, T, A, best fix, steps measured."""
    verdict, train = report.verdict, report.train
    if verdict.input_cost_fraction is not None:
        first = ("Input cost (of training time)", input_cost_figure(verdict))
    else:
        fraction = verdict.input_wait_fraction
        first = ("Input-wait share", percent(fraction) if fraction is not None else DASH)
    shown_rates = [(f"{rate.title} ({rate.shown_unit})", rate.number) for rate in rates(report)]
    warmup = f" (+{train.warmup_steps} warm-up)" if train.warmup_steps else ""
    steps = (f"Steps measured{warmup}", f"{train.measured_steps:,}")
    return [first, *shown_rates, best_fix_figure(report), steps]


def _draw_key_figures(figure: Figure, report: Report) -> None:
    cards = key_figures(report)
    width = KEY_FIGURES_W / max(1, len(cards))
    for i, (label, value) in enumerate(cards):
        x = LEFT_MARGIN + i * width
        right = RIGHT_EDGE if i == len(cards) - 1 else x + width - KEY_FIGURE_GAP
        style = {"fontsize": FIGURE_LABEL_FONT, "color": MUTED_TEXT_COLOUR}
        _fitted(figure, x, KEY_LABEL_Y, label, right, **style)
        value_style: dict[str, Any] = {"fontsize": FIGURE_VALUE_FONT, "fontweight": "bold"}
        value_text = figure.text(x, KEY_VALUE_Y, value, va="top", gid="key-figure", **value_style)
        fit_font(figure, value_text, right, FIGURE_LABEL_FONT + 1)


def _fitted(figure: Figure, x: float, y: float, text: str, right: float, **style: Any) -> None:
    fit_width(figure, figure.text(x, y, text, va="top", **style), right)
