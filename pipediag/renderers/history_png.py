"""`pipediag history FILE --png PATH`: training rate and input cost over the runs."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from pipediag.analysis.trend import Trend, TrendRow
from pipediag.renderers.history_text import regression_lines, slower_than_text
from pipediag.renderers.numbers import counted
from pipediag.renderers.png import new_figure, write_png
from pipediag.renderers.png.style import MUTED_TEXT_COLOUR, UNKNOWN_COLOUR, VERDICT_COLOURS

if TYPE_CHECKING:
    from matplotlib.axes import Axes

FIGURE_SIZE_IN = (12.0, 7.5)
SCRIPT_COLOURS = ("#343a40", "#1864ab", "#5f3dc4", "#0b7285", "#a61e4d", "#5c940d")
REGRESSION_COLOUR = "#c92a2a"
RATE_RECT = (0.08, 0.47, 0.88, 0.36)
COST_RECT = (0.08, 0.12, 0.88, 0.24)
MAX_TICK_LABELS = 30  # more runs than this: let matplotlib pick the ticks
LOG_SCALE_RATIO = 10.0  # rates spanning more than this share a log axis
MAX_SUBTITLE_REGRESSIONS = 3


def render_history_png(trend: Trend, path: Path, source: str = "") -> Path:
    figure, regressions = new_figure(FIGURE_SIZE_IN), len(trend.regressions)
    title = f"{len(trend.rows)} runs" + (f" in {source}" if source else "")
    title += f": {counted(regressions, 'regression')}" if regressions else ""
    colour = REGRESSION_COLOUR if regressions else "black"
    figure.text(
        0.02, 0.96, title, fontsize=16, fontweight="bold", color=colour, va="top", gid="title"
    )
    lines = regression_lines(trend)
    shown = lines[:1] if not regressions else lines[1 : 1 + MAX_SUBTITLE_REGRESSIONS]
    subtitle = "\n".join(line.strip() for line in shown)
    figure.text(
        0.02, 0.915, subtitle, fontsize=10, color=MUTED_TEXT_COLOUR, va="top", gid="subtitle"
    )
    rates = figure.add_axes(RATE_RECT)
    costs = figure.add_axes(COST_RECT, sharex=rates)
    _draw_rates(rates, trend)
    _draw_costs(costs, trend)
    if (numbers := [row.number for row in trend.rows]) and len(numbers) <= MAX_TICK_LABELS:
        costs.set_xticks(numbers)
    costs.set_xlabel("run (line of the history file)")
    return write_png(figure, path)


def _draw_rates(axes: Axes, trend: Trend) -> None:
    axes.set_title("Training rate A (steps/s), 95% noise bars", loc="left", fontsize=12)
    for index, script in enumerate(trend.scripts):
        colour = SCRIPT_COLOURS[index % len(SCRIPT_COLOURS)]
        rows = [r for r in trend.rows if r.entry.script == script and r.entry.rates.training]
        if not rows:
            continue
        low, high = zip(*(_noise_bar(r, trend) for r in rows), strict=True)
        axes.errorbar(
            [r.number for r in rows],
            [r.entry.rates.training or 0.0 for r in rows],
            yerr=[low, high],
            color=colour,
            marker="o",
            capsize=3,
            label=Path(script).name,
            gid=f"rates-{index}",
        )
    for row in trend.regressions:
        if (rate := row.entry.rates.training) is None:
            continue
        axes.scatter(
            [row.number],
            [rate],
            s=220,
            facecolors="none",
            edgecolors=REGRESSION_COLOUR,
            linewidths=2,
            zorder=5,
            gid="regression",
        )
        axes.annotate(
            _why(row),
            (row.number, rate),
            textcoords="offset points",
            xytext=(0, -26),
            ha="center",
            fontsize=9,
            color=REGRESSION_COLOUR,
        )
    rates = [r.entry.rates.training for r in trend.rows if r.entry.rates.training]
    if rates and max(rates) / min(rates) > LOG_SCALE_RATIO:
        axes.set_yscale("log")  # scripts of very different speeds share the axis
    else:
        axes.set_ylim(bottom=0)
    if len(trend.scripts) > 1:
        axes.legend(loc="lower left", fontsize=9, frameon=False)
    axes.spines[["top", "right"]].set_visible(False)


def _noise_bar(row: TrendRow, trend: Trend) -> tuple[float, float]:
    """Below and above the rate: its own error and the run-to-run term (95%)."""
    rate, rules = row.entry.rates.training or 0.0, trend.rules
    half = rules.z * math.hypot(row.entry.training_log_se or 0.0, rules.run_to_run)
    return rate - rate * math.exp(-half), rate * math.exp(half) - rate


def _why(row: TrendRow) -> str:
    parts = []
    if row.slower and row.change is not None:
        parts.append(slower_than_text(row.change.change, row.best_earlier))
    if row.verdict_worse:
        parts.append(f"now {row.entry.verdict}")
    return "\n".join(parts)


def _draw_costs(axes: Axes, trend: Trend) -> None:
    axes.set_title("Input cost (share of training time), by verdict", loc="left", fontsize=12)
    rows = [r for r in trend.rows if r.entry.shares.input_cost is not None]
    for index, script in enumerate(trend.scripts):
        if len(mine := [r for r in rows if r.entry.script == script]) > 1:
            axes.plot(
                [r.number for r in mine],
                [100 * (r.entry.shares.input_cost or 0.0) for r in mine],
                color=SCRIPT_COLOURS[index % len(SCRIPT_COLOURS)],
                linewidth=1,
                alpha=0.5,
            )
    axes.scatter(
        [r.number for r in rows],
        [100 * (r.entry.shares.input_cost or 0.0) for r in rows],
        c=[VERDICT_COLOURS.get(r.entry.verdict, UNKNOWN_COLOUR) for r in rows],
        s=40,
        zorder=3,
        gid="costs",
    )
    for band in (5, 20):  # the verdict's bands (docs/design.md, "Input cost")
        axes.axhline(band, color=MUTED_TEXT_COLOUR, linewidth=0.8, linestyle=":")
    axes.set(ylim=(0, 100), ylabel="%")
    axes.spines[["top", "right"]].set_visible(False)
