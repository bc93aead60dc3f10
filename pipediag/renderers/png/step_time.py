"""The "Where the step's time goes" panel (docs/design.md, "The PNG page")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipediag.renderers.model_words import (
    HOST,
    MODEL_SETS_THE_RATE,
    TIME_GROUP_WORDS,
    TimeBar,
    model_side_of,
    shown_model_side,
    time_bars,
    time_heading,
)
from pipediag.renderers.png.style import (
    COMPUTE_COLOUR,
    HOST_GAP_COLOUR,
    MUTED_TEXT_COLOUR,
    PANEL_TITLE_FONT,
    RIGHT_EDGE,
    SCOPE_COLOUR,
)
from pipediag.renderers.png.text_fit import end_label, fit_font, fit_left, row_label
from pipediag.report.model import Report

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

GROUP_COLOURS = {"op_type": COMPUTE_COLOUR, "scope": SCOPE_COLOUR, HOST: HOST_GAP_COLOUR}
# Geometry in figure fractions: the names start right of the host CPU panel's last tick label,
# the bars where TF's longest op name ends at `BAR_FONT` (docs/design.md, "The PNG page").
NAMES_LEFT = 0.633
BARS_LEFT = 0.80
BARS_WIDTH = RIGHT_EDGE - 0.005 - BARS_LEFT
BARS_BOTTOM = 0.19
TOP_MAX = 0.43  # the top when the panel above leaves more room
TITLE_ROOM = 0.04  # the title's line, between the panel above and the bars
LEGEND_GAP = 0.006  # from the bars' bottom down to the legend
BAR_FONT = 8
TITLE_MIN_FONT = 10
SHARE_ROOM = 1.3  # the axis runs past the widest bar, for its share
NAME_PAD = 0.004  # between a name and its bar
GROUP_GAP = 0.5  # rows between two groupings


def step_time_shown(report: Report) -> bool:
    """Where the model sets the rate and its profile has top ops."""
    alone = shown_model_side(report)
    return alone is not None and report.verdict.label in MODEL_SETS_THE_RATE and bool(alone.top_ops)


def step_time_rect(figure: Figure, above: Axes) -> tuple[float, float, float, float]:
    drawn = above.get_tightbbox()
    top = TOP_MAX if drawn is None else min(TOP_MAX, drawn.y0 / figure.bbox.height - TITLE_ROOM)
    return (BARS_LEFT, BARS_BOTTOM, BARS_WIDTH, max(top - BARS_BOTTOM, 0.08))


def draw_step_time(axes: Axes, report: Report) -> None:
    alone = model_side_of(report)
    bars = time_bars(alone) if alone is not None else []
    if alone is None or not bars:
        return
    figure: Figure = axes.get_figure()  # type: ignore[assignment]
    title = figure.text(
        NAMES_LEFT,
        axes.get_position().y1 + 0.008,
        time_heading(alone),
        fontsize=PANEL_TITLE_FONT,
        va="bottom",
        gid="step-time-title",
    )
    fit_font(figure, title, RIGHT_EDGE, TITLE_MIN_FONT)
    groups = list(dict.fromkeys(bar.group for bar in bars))  # `GROUP_GAP` rows before each next
    positions = [i + GROUP_GAP * groups.index(bar.group) for i, bar in enumerate(bars)]
    colours = [GROUP_COLOURS.get(bar.group, COMPUTE_COLOUR) for bar in bars]
    axes.barh(
        positions, [bar.share for bar in bars], height=0.7, color=colours, gid="step-time-bars"
    )
    axes.set_ylim(positions[-1] + 0.5, -0.5)  # the largest op type at the top, as the text lists
    axes.set_xlim(0, max(bar.share for bar in bars) * SHARE_ROOM)
    axes.set(xticks=[], yticks=[])
    axes.spines[["top", "right", "bottom"]].set_visible(False)
    _name_bars(figure, axes, bars, positions)
    _legend(figure, axes, bars)


def _name_bars(figure: Figure, axes: Axes, bars: list[TimeBar], positions: list[float]) -> None:
    muted: dict[str, Any] = {"fontsize": BAR_FONT, "color": MUTED_TEXT_COLOUR}
    for y, bar in zip(positions, bars, strict=True):
        colour = HOST_GAP_COLOUR if bar.group == HOST else "black"
        name_style = {"fontsize": BAR_FONT, "color": colour, "gid": "step-time-name"}
        name = row_label(axes, figure.transFigure, BARS_LEFT - NAME_PAD, y, bar.name, **name_style)
        fit_left(figure, name, NAMES_LEFT)
        end_label(axes, bar.share, y, f" {bar.share_text}", gid="step-time-share", **muted)


def _legend(figure: Figure, axes: Axes, bars: list[TimeBar]) -> None:
    from matplotlib.patches import Patch

    shown = [group for group in TIME_GROUP_WORDS if any(bar.group == group for bar in bars)]
    axes.legend(
        handles=[
            Patch(color=GROUP_COLOURS[group], label=TIME_GROUP_WORDS[group]) for group in shown
        ],
        loc="upper left",
        bbox_to_anchor=(NAMES_LEFT, axes.get_position().y0 - LEGEND_GAP),
        bbox_transform=figure.transFigure,
        ncol=len(shown),
        fontsize=BAR_FONT,
        frameon=False,
        borderaxespad=0.0,
        borderpad=0.0,
        handlelength=1.0,
        handletextpad=0.4,
        columnspacing=1.0,
    )
