"""`pipediag compare --png` (docs/design.md, "The comparison and fleet pages")."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pipediag.analysis.compare import Comparison
from pipediag.analysis.noise import measured_steps
from pipediag.renderers.compare_text import RATE_WORDS, headline_lines, run_lines, training_claim
from pipediag.renderers.cost_words import COMPUTE_PART_NAME, COST_PART_NAMES, COST_PARTS, cost_parts
from pipediag.renderers.numbers import gain, percent
from pipediag.renderers.png import new_figure, write_png
from pipediag.renderers.png.cost import PART_COLOURS
from pipediag.renderers.png.style import COMPUTE_COLOUR, LEGEND, MUTED_TEXT_COLOUR, NOTE_TEXT_COLOUR
from pipediag.renderers.png.text_fit import centred_label
from pipediag.report.model import Report

if TYPE_CHECKING:
    from matplotlib.axes import Axes

FIGURE_SIZE_IN = (14.0, 7.0)
BASE_COLOUR = "#adb5bd"
NEW_COLOUR = "#343a40"
JUDGEMENT_COLOURS = {
    "faster": "#2b8a3e",
    "slower": "#c92a2a",
    "noise": MUTED_TEXT_COLOUR,
    "changed": MUTED_TEXT_COLOUR,
    "missing": NOTE_TEXT_COLOUR,
}
PANEL_RECTS = {
    "rates": (0.06, 0.16, 0.26, 0.52),
    "cost": (0.40, 0.16, 0.22, 0.52),
    "steps": (0.70, 0.16, 0.27, 0.52),
}
HEADLINE_FONT = 18
PANEL_TITLE_FONT = 12
HISTOGRAM_BINS = 40
LOG_SCALE_RATIO = 5.0  # rates spanning more than this share a log axis
# A step-time axis beyond this quantile of both runs would squash the bulk into one bin.
STEP_AXIS_QUANTILE = 0.99


def render_comparison_png(
    comparison: Comparison,
    base: Report,
    new: Report,
    path: Path,
    names: tuple[str, str] = ("base", "new"),
) -> Path:
    """Draw the comparison (base and new give the step times) and write it atomically."""
    figure = new_figure(FIGURE_SIZE_IN)
    claim, detail = training_claim(comparison.training)
    _, *more = headline_lines(comparison)
    colour = JUDGEMENT_COLOURS.get(comparison.judgement, NEW_COLOUR)
    style: dict[str, Any] = {"fontsize": HEADLINE_FONT, "fontweight": "bold", "color": colour}
    figure.text(0.02, 0.95, claim, va="top", gid="headline", **style)
    below = [detail, *(line.strip() for line in [*more, *run_lines(comparison, *names)])]
    figure.text(
        0.02, 0.89, "\n".join(below), fontsize=10, color=MUTED_TEXT_COLOUR, va="top", gid="runs"
    )
    _draw_rates(figure.add_axes(PANEL_RECTS["rates"]), comparison)
    _draw_cost(figure.add_axes(PANEL_RECTS["cost"]), base, new)
    _draw_steps(figure.add_axes(PANEL_RECTS["steps"]), base, new)
    return write_png(figure, path)


def _draw_rates(axes: Axes, comparison: Comparison) -> None:
    axes.set_title("Rates (P, T, A)", loc="left", fontsize=PANEL_TITLE_FONT)
    figures = {f.name: f for f in comparison.rates}
    order = [
        (f"{letter} {name}\n{unit}", figures.get(key))
        for key, (letter, name, unit) in RATE_WORDS.items()
    ]
    positions, width = np.arange(len(order), dtype=float), 0.38
    base = [(f.base or 0.0) if f else 0.0 for _, f in order]
    new = [(f.new or 0.0) if f else 0.0 for _, f in order]
    axes.bar(positions - width / 2, base, width, color=BASE_COLOUR, label="base", gid="base-rates")
    axes.bar(positions + width / 2, new, width, color=NEW_COLOUR, label="new", gid="new-rates")
    known = [v for v in (*base, *new) if v > 0]
    top = max([*known, 1.0])
    if known and top / min(known) > LOG_SCALE_RATIO:
        # T can be ten times A: on a linear axis the smaller pairs would be slivers.
        axes.set_yscale("log")
        axes.set_ylim(min(known) / 2, top * 6)
        label_y = top * 3
    else:
        axes.set_ylim(0, top * 1.3)
        label_y = top * 1.17
    axes.set_xticks(positions, [label for label, _ in order], fontsize=9)
    for x, (_, figure) in zip(positions, order, strict=True):
        if figure is None:
            continue
        for offset, value in ((-width / 2, figure.base), (width / 2, figure.new)):
            if value is not None:
                axes.text(x + offset, value, f"{value:.0f}", ha="center", va="bottom", fontsize=8)
        words = figure.judgement
        if figure.change is not None:
            words = f"{gain(figure.change)} {figure.judgement}"
        colour = JUDGEMENT_COLOURS.get(figure.judgement, NEW_COLOUR)
        centred_label(axes, x, label_y, words, color=colour, gid=f"change-{figure.name}")
    _legend_under(axes, -0.12, columns=2)


def _draw_cost(axes: Axes, base: Report, new: Report) -> None:
    axes.set_title("Share of training time", loc="left", fontsize=PANEL_TITLE_FONT)
    parts = [COMPUTE_PART_NAME, *(COST_PART_NAMES[p] for p in COST_PARTS)]
    rows = [_cost_shares(report) for report in (base, new)]
    positions, bottoms = [0, 1], [0.0, 0.0]
    for index, part in enumerate(parts):
        colour = PART_COLOURS[part]
        heights = [0.0 if shares is None else shares[index] for shares in rows]
        axes.bar(positions, heights, 0.55, bottom=bottoms, color=colour, label=part, gid=part)
        ink = "white" if colour == COMPUTE_COLOUR else "black"
        for x, height, bottom in zip(positions, heights, bottoms, strict=True):
            if height >= 0.06:
                centred_label(axes, x, bottom + height / 2, percent(height), bold=False, color=ink)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    for x, shares in zip(positions, rows, strict=True):
        if shares is None:
            axes.text(x, 0.5, "no input cost\nmeasured", ha="center", fontsize=9)
    axes.set_xticks(positions, ["base", "new"])
    axes.set_ylim(0, 1.0)
    axes.set_yticks([0, 0.25, 0.5, 0.75, 1.0], ["0%", "25%", "50%", "75%", "100%"])
    _legend_under(axes, -0.12, columns=2)


def _cost_shares(report: Report) -> list[float] | None:
    """Compute and the cost's parts as shares of training time; None without a cost."""
    verdict = report.verdict
    if (cost := verdict.input_cost_fraction) is None:
        return None
    if (split := verdict.cost_split) is None:
        parts = [cost] + [0.0] * (len(COST_PARTS) - 1)  # unsplit: as the wait every report has
    else:
        parts = [share for _, share in cost_parts(split)]
    return [max(0.0, 1.0 - cost), *parts]


def step_times_s(report: Report) -> np.ndarray:
    """Every measured step's time; a merged record counts as `count` steps of its mean."""
    if not (records := measured_steps(report.train.steps)):
        return np.zeros(0)
    means = np.array([s.duration_s / s.count for s in records])
    return np.repeat(means, [s.count for s in records])


def _draw_steps(axes: Axes, base: Report, new: Report) -> None:
    axes.set_title("Step time (measured steps)", loc="left", fontsize=PANEL_TITLE_FONT)
    runs = [
        ("base", step_times_s(base) * 1e3, BASE_COLOUR),
        ("new", step_times_s(new) * 1e3, NEW_COLOUR),
    ]
    if not (present := [values for _, values, _ in runs if values.size]):
        axes.text(0.5, 0.5, "no measured steps", ha="center", transform=axes.transAxes)
        return
    joined = np.concatenate(present)
    high, low = float(np.quantile(joined, STEP_AXIS_QUANTILE)), float(joined.min())
    bins = np.linspace(low, max(high, low * 1.01 + 1e-9), HISTOGRAM_BINS)
    for name, values, colour in runs:
        if not values.size:
            continue
        median = float(np.median(values))
        axes.hist(
            np.clip(values, None, bins[-1]),
            bins=bins.tolist(),
            weights=np.full(values.size, 1.0 / values.size),
            histtype="stepfilled" if name == "base" else "step",
            color=colour,
            alpha=0.7 if name == "base" else 1.0,
            linewidth=1.8,
            label=f"{name}: median {median:.1f} ms, n={values.size}",
            gid=f"steps-{name}",
        )
        axes.axvline(median, color=colour, linestyle="--", linewidth=1.2)
    axes.set(xlabel="step time (ms)", ylabel="share of steps")
    _legend_under(axes, -0.14)


def _legend_under(axes: Axes, top: float, columns: int = 1) -> None:
    """The panel's legend under it from `top` (axes fraction), and no top or right spine."""
    axes.legend(loc="upper left", bbox_to_anchor=(0.0, top), ncol=columns, **LEGEND)
    axes.spines[["top", "right"]].set_visible(False)
