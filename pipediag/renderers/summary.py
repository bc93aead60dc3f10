"""The key figures a report is read by (the PNG's header). Each word that more than one
renderer shows is made once in its `*_words.py` module; this draws on several."""

from __future__ import annotations

from pipediag.renderers.cost_words import input_cost_figure
from pipediag.renderers.numbers import DASH, percent
from pipediag.renderers.rate_words import rates
from pipediag.renderers.suggestion_words import best_fix_figure
from pipediag.report.model import Report


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
