"""`pipediag history FILE` in the terminal: one row per run, per script; regressions
marked, and listed again at the end so a CI log shows them without scrolling."""

from __future__ import annotations

import shlex

from pipediag.analysis import noise
from pipediag.analysis.trend import Trend, TrendRow
from pipediag.renderers.compare_text import columns
from pipediag.renderers.numbers import counted, gain, gain_range, percent, slower, utc_time

HEADER = ("#", "time (UTC)", "commit", "args", "verdict", "cost", "wait", "A steps/s", "vs best")
NUMBER_COLUMNS = {0, 5, 6, 7}  # right-aligned
ARGS_MAX_CHARS = 28
COMMIT_CHARS = 8
REGRESSION_MARK = "REGRESSION"


def render_history(trend: Trend, source: str) -> str:
    scripts = trend.scripts
    lines = [
        f"History: {source}, {counted(len(trend.rows), 'run')} of {counted(len(scripts), 'script')}"
    ]
    for script in scripts:
        lines += ["", script]
        rows = [row for row in trend.rows if row.entry.script == script]
        lines += columns([HEADER, *(_cells(row) for row in rows)], right=NUMBER_COLUMNS)
    lines += ["", *regression_lines(trend)]
    return "\n".join(lines) + "\n"


def regression_lines(trend: Trend) -> list[str]:
    if not (regressions := trend.regressions):
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
            f"{slower_than_text(row.change.change, row.best_earlier)}, beyond noise "
            f"(95% interval {gain_range(row.change.low, row.change.high)})"
        )
    if row.verdict_worse:
        reasons.append(f"verdict worse: {row.previous_verdict} -> {row.entry.verdict}")
    return reasons


def slower_than_text(ratio: float, best_earlier: int | None) -> str:
    return f"{slower(ratio)} than run {best_earlier}"


def _cells(row: TrendRow) -> tuple[str, ...]:
    entry = row.entry
    shares, rates = entry.shares, entry.rates
    args = shlex.join(entry.args) or "-"
    return (
        str(row.number),
        utc_time(entry.time_utc),
        (entry.commit or "-")[:COMMIT_CHARS],
        args if len(args) <= ARGS_MAX_CHARS else args[: ARGS_MAX_CHARS - 3] + "...",
        entry.verdict,
        "-" if shares.input_cost is None else percent(shares.input_cost),
        "-" if shares.input_wait is None else percent(shares.input_wait),
        "-" if rates.training is None else f"{rates.training:.1f}",
        _versus(row),
    )


def _versus(row: TrendRow) -> str:
    text = ""
    if row.change is not None:
        text = f"{gain(row.change.change)} run {row.best_earlier}"
        if noise.is_noise(row.change):
            text += " (noise)"
    if row.regression:
        text = f"{text}  {REGRESSION_MARK}".strip()
    return text
