"""The key figures a report is read by (the PNG's header and the summary's top block).

Each word and figure that more than one renderer shows is made once, by job, in its own
module: `verdict_words` (the headline, the verdict line), `rate_words` (P, T and A),
`cost_words` (input cost and its parts), `suggestion_words` (fixes and their gains),
`run_words` (the command line, how the run ended, epoch starts) and `numbers`. Renderers
import each from there; what is left here draws on all of them. Pure work over the report
model: no matplotlib, no TensorFlow, nothing measured.
"""

from __future__ import annotations

from pipediag.renderers.cost_words import input_cost_figure
from pipediag.renderers.numbers import DASH, percent
from pipediag.renderers.rate_words import ESTIMATED_WORD, rates
from pipediag.renderers.suggestion_words import best_fix_figure
from pipediag.report.model import Report


def key_figures(report: Report) -> list[tuple[str, str]]:
    """The figures a report is read by, (label, value): input cost, the three rates P, T and
    A, the best fix and the steps measured. Without an input cost (no verdict, or a report
    older than the cost) the input-wait share comes first."""
    verdict, train = report.verdict, report.train
    if verdict.input_cost_fraction is not None:
        first = ("Input cost (of training time)", input_cost_figure(verdict))
    else:
        fraction = verdict.input_wait_fraction
        first = ("Input-wait share", percent(fraction) if fraction is not None else DASH)
    figures = [first]
    for rate in rates(report):
        unit = ESTIMATED_WORD if rate.estimated else rate.unit
        figures.append((f"{rate.title} ({unit})", rate.number))
    warmup = f" (+{train.warmup_steps} warm-up)" if train.warmup_steps else ""
    return [
        *figures,
        best_fix_figure(report),
        (f"Steps measured{warmup}", f"{train.measured_steps:,}"),
    ]
