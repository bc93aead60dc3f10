"""`fleet.png`: where each worker's step time goes, and how fast each trained
(docs/design.md, "The comparison and fleet pages")."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from pipediag.fleet.model import FleetReport, WorkerRow
from pipediag.fleet.words import fleet_heading, no_straggler_text
from pipediag.renderers.png import new_figure
from pipediag.renderers.png.style import (
    COMPUTE_COLOUR,
    COST_COLOURS,
    MUTED_TEXT_COLOUR,
    TRAINING_RATE_COLOUR,
    WARNING_COLOUR,
)
from pipediag.renderers.png.text_fit import end_label

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

WIDTH_IN = 14.0
BASE_HEIGHT_IN = 3.2  # title and axes' labels
ROW_HEIGHT_IN = 0.55  # one bar row per worker
MAX_HEIGHT_IN = 20.0  # many workers: thinner rows, the page stays readable
TITLE_WRAP_CHARS = 150
REST_COLOUR = "#a5d8ff"  # the train step and, under lockstep, the all-reduce's waits
STRAGGLER_EDGE_COLOUR = WARNING_COLOUR
BAR_HEIGHT = 0.6
REST_LABELS = {True: "train step and all-reduce", False: "train step"}
PERCENT = 100.0


def build_fleet_figure(fleet: FleetReport) -> Figure:
    """The fleet page as a matplotlib `Figure` (tests inspect it)."""
    rows = fleet.workers
    height = min(MAX_HEIGHT_IN, BASE_HEIGHT_IN + ROW_HEIGHT_IN * max(1, len(rows)))
    figure = new_figure((WIDTH_IN, height))
    straggler = fleet.straggler.task if fleet.straggler is not None else None
    if fleet.straggler is not None:
        title = f"{fleet_heading(fleet)}; straggler {straggler} ({fleet.straggler.cause})"
    else:
        title = f"{fleet_heading(fleet)}; no straggler: {no_straggler_text(fleet)}"
    figure.suptitle("\n".join(textwrap.wrap(title, TITLE_WRAP_CHARS)), fontsize=13)
    shares, rates = figure.subplots(1, 2, gridspec_kw={"width_ratios": (3, 2)})
    _draw_shares(shares, rows, straggler, fleet.lockstep)
    _draw_rates(rates, rows, straggler)
    figure.subplots_adjust(left=0.08, right=0.98, bottom=0.22, top=0.80, wspace=0.2)
    return figure


def _parts(row: WorkerRow, lockstep: bool) -> list[tuple[str, float, str]]:
    """The row's step time in shares; in lockstep only its own wait (`FleetReport.lockstep`)."""
    wait = row.input_wait_fraction if row.input_wait_fraction is not None else row.cost_wait
    parts = [("input wait", wait or 0.0, COST_COLOURS["wait"])]
    if not lockstep:
        parts += [
            ("contention", row.cost_contention or 0.0, COST_COLOURS["contention"]),
            ("fetch", row.cost_fetch or 0.0, COST_COLOURS["fetch"]),
        ]
    rest = max(0.0, 1.0 - sum(share for _, share, _ in parts))
    return [*parts, (REST_LABELS[lockstep], rest, REST_COLOUR)]


def _draw_shares(axes: Axes, rows: list[WorkerRow], straggler: str | None, lockstep: bool) -> None:
    drawn: set[str] = set()
    for y, row in enumerate(rows):
        left = 0.0
        for name, share, colour in _parts(row, lockstep):
            if share <= 0:
                continue
            axes.barh(
                y,
                share * PERCENT,
                left=left * PERCENT,
                height=BAR_HEIGHT,
                color=colour,
                label=None if name in drawn else name,
                edgecolor=STRAGGLER_EDGE_COLOUR if row.task == straggler else "none",
                linewidth=2 if row.task == straggler else 0,
            )
            drawn.add(name)
            left += share
    _label_rows(axes, rows, straggler)
    axes.set_xlim(0, PERCENT)
    axes.set_xlabel("share of step time (%)")
    axes.set_title("Where each worker's step time goes", fontsize=12)
    if drawn:
        axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=4, frameon=False)


def _draw_rates(axes: Axes, rows: list[WorkerRow], straggler: str | None) -> None:
    for y, row in enumerate(rows):
        rate = row.training_steps_per_s or 0.0
        colour = STRAGGLER_EDGE_COLOUR if row.task == straggler else TRAINING_RATE_COLOUR
        axes.barh(y, rate, height=BAR_HEIGHT, color=colour)
        if row.training_steps_per_s is not None:
            end_label(axes, rate, y, f" {rate:.1f}", fontsize=10, color=MUTED_TEXT_COLOUR)
        if row.compute_alone_steps_per_s is not None:
            axes.plot(
                [row.compute_alone_steps_per_s] * 2,
                [y - BAR_HEIGHT / 2, y + BAR_HEIGHT / 2],
                color=COMPUTE_COLOUR,
                linewidth=3,
                label="T compute alone" if y == 0 else None,
            )
    _label_rows(axes, rows, straggler)
    axes.set_xlim(left=0)
    axes.margins(x=0.15)
    axes.set_xlabel("steps/s")
    axes.set_title("Training rate A (bars) and compute alone T (ticks)", fontsize=12)


def _label_rows(axes: Axes, rows: list[WorkerRow], straggler: str | None) -> None:
    axes.set_yticks(list(range(len(rows))))
    axes.set_yticklabels(
        [f"{row.task}\nstraggler" if row.task == straggler else row.task for row in rows]
    )
    axes.invert_yaxis()  # the first worker on top, as in fleet.txt
