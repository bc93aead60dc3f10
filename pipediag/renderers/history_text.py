"""`pipediag history FILE` in the terminal: one row per run, regressions marked.

Runs are listed per script, oldest first. Each row holds the run's verdict, input cost and
wait, its training rate, and how that rate compares with the fastest earlier run of the
script; a regression (slower beyond noise, or a worse verdict) is marked on its row and
listed again at the end, so a CI log shows it without scrolling.
"""

from __future__ import annotations

import shlex

from pipediag.analysis import noise
from pipediag.analysis.trend import Trend, TrendRow
from pipediag.renderers.numbers import percent

HEADER = ("#", "time (UTC)", "commit", "args", "verdict", "cost", "wait", "A steps/s", "vs best")
ARGS_MAX_CHARS = 28
COMMIT_CHARS = 8
REGRESSION_MARK = "REGRESSION"


def render_history(trend: Trend, source: str) -> str:
    """The trend as text; `source` names the history file."""
    runs = len(trend.rows)
    scripts = trend.scripts
    lines = [
        f"History: {source}, {runs} run{'s' * (runs != 1)} of {len(scripts)} "
        f"script{'s' * (len(scripts) != 1)}"
    ]
    for script in scripts:
        lines += ["", script]
        rows = [row for row in trend.rows if row.entry.script == script]
        lines += _table([HEADER, *(_cells(row) for row in rows)])
    lines.append("")
    lines += regression_lines(trend)
    return "\n".join(lines) + "\n"


def regression_lines(trend: Trend) -> list[str]:
    """ "No regressions." or one line per regression, with the evidence."""
    regressions = trend.regressions
    if not regressions:
        return [
            "No regressions: no run slower than the fastest run of its script recorded "
            "before it, beyond noise, no verdict worse than the previous recorded run's."
        ]
    return [
        f"Regressions: {len(regressions)}",
        *(f"  run {row.number}: {'; '.join(regression_reasons(row))}" for row in regressions),
    ]


def regression_reasons(row: TrendRow) -> list[str]:
    reasons = []
    if row.slower and row.change is not None:
        reasons.append(
            f"{1.0 - row.change.change:.0%} slower than run {row.best_earlier}, beyond noise "
            f"(95% interval {row.change.low:.2f}-{row.change.high:.2f}x)"
        )
    if row.verdict_worse:
        reasons.append(f"verdict worse: {row.previous_verdict} -> {row.entry.verdict}")
    return reasons


def _cells(row: TrendRow) -> tuple[str, ...]:
    entry = row.entry
    shares, rates = entry.shares, entry.rates
    return (
        str(row.number),
        entry.time_utc.replace("T", " ").removesuffix("Z"),
        (entry.commit or "-")[:COMMIT_CHARS],
        _clip(shlex.join(entry.args), ARGS_MAX_CHARS) or "-",
        entry.verdict,
        "-" if shares.input_cost is None else percent(shares.input_cost),
        "-" if shares.input_wait is None else percent(shares.input_wait),
        "-" if rates.training is None else f"{rates.training:.1f}",
        _versus(row),
    )


def _versus(row: TrendRow) -> str:
    if row.change is None:
        text = ""
    else:
        judged = "noise" if noise.is_noise(row.change) else ""
        text = f"{row.change.change:.2f}x run {row.best_earlier}"
        if judged:
            text += f" ({judged})"
    if row.regression:
        text = f"{text}  {REGRESSION_MARK}".strip()
    return text


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    right = {0, 5, 6, 7}  # numbers
    lines = []
    for row in rows:
        cells = [
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append(("  " + "  ".join(cells)).rstrip())
    return lines


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
