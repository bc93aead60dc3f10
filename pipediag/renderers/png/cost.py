"""The input-cost panel: training time as one stacked bar (`cost_words.cost_bar`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pipediag.renderers.cost_words import (
    COMPUTE_PART_NAME,
    COST_PART_NAMES,
    UNSPLIT_PART_NAME,
    cost_bar,
)
from pipediag.renderers.numbers import percent
from pipediag.renderers.png.style import (
    COMPUTE_COLOUR,
    COST_COLOURS,
    INPUT_COLOUR,
    LEGEND,
    PANEL_TITLE_FONT,
    RIGHT_EDGE,
)
from pipediag.renderers.png.text_fit import caption, centred_label, fit_font, note
from pipediag.report.model import Report

if TYPE_CHECKING:
    from matplotlib.axes import Axes

PART_COLOURS = {
    COMPUTE_PART_NAME: COMPUTE_COLOUR,
    UNSPLIT_PART_NAME: INPUT_COLOUR,
    **{COST_PART_NAMES[part]: colour for part, colour in COST_COLOURS.items()},
}
DARK_PART_COLOURS = (COMPUTE_COLOUR, INPUT_COLOUR)  # white text on these
# The caption goes under the legend's rows, in the cost bar's data units (bar: -0.5 to 0.5).
COST_CAPTION_TOP_Y = -1.0
COST_LEGEND_ROW_H = 0.6
COST_LEGEND_COLUMNS = 2
TITLE_MIN_FONT = 10  # a long title (the cost not measurable) shrinks to this, then is cut
COST_TITLE_ROOM = 0.035  # over the bar, for its title: the pipeline panel's note stays above
COST_LABEL_MIN_PX = 34.0  # a part narrower than this carries no percentage


def draw_cost(axes: Axes, report: Report) -> None:
    bar = cost_bar(report)
    title = axes.set_title(bar.title, loc="left", fontsize=PANEL_TITLE_FONT)
    fit_font(axes.get_figure(), title, RIGHT_EDGE, TITLE_MIN_FONT)  # type: ignore[arg-type]
    axes.set(xticks=[], yticks=[], xlim=(0, 1), ylim=(-0.5, 0.5))
    axes.spines[:].set_visible(False)
    if not bar.parts:
        note(axes, "No input-cost or input-wait timings")
        return
    from matplotlib.patches import Patch

    px_per_share, left = axes.get_window_extent().width, 0.0
    for part in bar.parts:
        colour = PART_COLOURS[part.part]
        axes.barh([0], [part.share], left=[left], color=colour, height=1.0, gid=f"cost-{part.part}")
        if part.share * px_per_share >= COST_LABEL_MIN_PX:
            ink = "white" if colour in DARK_PART_COLOURS else "black"
            share = percent(part.share)
            centred_label(axes, left + part.share / 2, 0, share, color=ink, gid="cost-share")
        left += part.share
    axes.legend(
        handles=[Patch(color=PART_COLOURS[p.part], label=p.text) for p in bar.parts],
        loc="upper left",
        bbox_to_anchor=(0.0, -0.1),
        ncol=COST_LEGEND_COLUMNS,
        **LEGEND,
        borderaxespad=0.0,
        handlelength=1.2,
        columnspacing=1.0,
    )
    if bar.caption:
        rows = math.ceil(len(bar.parts) / COST_LEGEND_COLUMNS)
        top_y = COST_CAPTION_TOP_Y - COST_LEGEND_ROW_H * rows
        caption(axes, 0.0, top_y, bar.caption, transform=axes.transData, gid="cost-caption")
