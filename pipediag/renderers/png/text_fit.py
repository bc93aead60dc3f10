"""The texts the panels draw alike (captions, bar labels, notes), and keeping text on the page:
character counts cannot tell how wide a text is drawn, so texts are measured with the figure's
renderer, then shortened or shrunk to fit, and labels moved apart where they would overlap."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from pipediag.renderers.png.style import MUTED_TEXT_COLOUR, NOTE_FONT, NOTE_TEXT_COLOUR

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox, Transform

ELLIPSIS = "\N{HORIZONTAL ELLIPSIS}"
LABEL_GAP_PX = 2.0  # kept clear around a label: its white box's 1-pt pad, and a hair
MOVED_LABEL_GAP_LINES = 0.5  # more between a moved label and the text it avoided, in lines
UNLABELLED_GID = "unlabelled"
UNLABELLED_PREFIX = "not labelled above: "
UNLABELLED_FONT = 8
UNLABELLED_INDENT_PX = 12.0  # between the x label and the caption right of it


def caption(axes: Axes, x: float, y: float, text: str, **style: Any) -> Text:
    """Muted 9-pt text hanging from (x, y) in the panel's fractions; `style` overrides."""
    muted: dict[str, Any] = {"va": "top", "fontsize": 9, "color": MUTED_TEXT_COLOUR}
    return axes.text(x, y, text, **({"transform": axes.transAxes} | muted | style))


def end_label(
    axes: Axes, x: float, row: float, text: str, *, bold: bool = False, **style: Any
) -> Text:
    """A bar's figure just right of where it ends, on its row; 9 pt unless `style` says."""
    return centred_label(axes, x, row, text, bold=bold, **({"ha": "left"} | style))


def centred_label(
    axes: Axes, x: float, y: float, text: str, *, bold: bool = True, **style: Any
) -> Text:
    """A label centred on what it marks; 9 pt unless `style` says."""
    weight = "bold" if bold else "normal"
    centred: dict[str, Any] = {"ha": "center", "va": "center", "fontsize": 9, "fontweight": weight}
    return axes.text(x, y, text, **(centred | style))


def row_label(axes: Axes, x_in: Transform, x: float, row: float, text: str, **style: Any) -> Text:
    """Text ending at `x` (in `x_in`'s units: the panel's, the page's) on a bar's row."""
    from matplotlib.transforms import blended_transform_factory

    at = blended_transform_factory(x_in, axes.transData)
    ending: dict[str, Any] = {"va": "center", "ha": "right", "fontsize": 9}
    return axes.text(x, row, text, transform=at, **(ending | style))


def note(axes: Axes, text: str) -> None:
    """A grey note in the middle of a panel with nothing to draw, saying why."""
    style: dict[str, Any] = {"fontsize": NOTE_FONT, "color": NOTE_TEXT_COLOUR, "wrap": True}
    centred_label(axes, 0.5, 0.5, text, bold=False, transform=axes.transAxes, gid="note", **style)


def fit_width(figure: Figure, artist: Text, right: float) -> None:
    """Shorten a one-line text, with an ellipsis, to end left of `right` (figure fraction)."""
    _shorten(artist, lambda box: box.x1 <= right * figure.bbox.width)


def fit_left(figure: Figure, artist: Text, left: float) -> None:
    """Shorten a right-aligned one-line text to start right of `left` (figure fraction)."""
    _shorten(artist, lambda box: box.x0 >= left * figure.bbox.width)


def _shorten(artist: Text, fits: Callable[[Bbox], bool]) -> None:
    full = artist.get_text()
    if fits(artist.get_window_extent()):
        return

    def prefix_fits(length: int) -> bool:
        artist.set_text(full[:length] + ELLIPSIS)
        return fits(artist.get_window_extent())

    kept = _most_that_fit(len(full) - 1, prefix_fits)
    artist.set_text(full[:kept].rstrip() + ELLIPSIS)


def _most_that_fit(most: int, fits: Callable[[int], bool]) -> int:
    """The largest count up to `most` that `fits`, else 0; each count under one that fits fits."""
    low, high = 0, most + 1  # the largest that fits lies in [low, high)
    while low < high - 1:
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return low


def fit_font(figure: Figure, artist: Text, right: float, min_size: float) -> None:
    """Shrink a one-line text's font, down to `min_size`, to end left of `right`, then cut it."""
    limit_px, size = right * figure.bbox.width, float(artist.get_fontsize())
    while artist.get_window_extent().x1 > limit_px and size > min_size:
        size = max(min_size, size - 1.0)
        artist.set_fontsize(size)
    fit_width(figure, artist, right)


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def truncate_lines(lines: list[str], limit: int) -> list[str]:
    """At most `limit` lines, the last ending in an ellipsis when lines were dropped."""
    if len(lines) <= limit:
        return lines
    kept = lines[:limit]
    kept[-1] = kept[-1][:-1] + ELLIPSIS
    return kept


def under(
    figure: Figure, above: Axes, rect: tuple[float, float, float, float], room: float
) -> tuple[float, float, float, float]:
    """`rect`, moved down where what `above` drew reaches into the `room` kept over it."""
    drawn = above.get_tightbbox()
    left, bottom, width, height = rect
    if drawn is None:
        return rect
    over = bottom + height + room - drawn.y0 / figure.bbox.height
    return rect if over <= 0 else (left, bottom - over, width, height)


@dataclass
class ClearLabels:
    """Labels on one panel placed clear of every text there (docs/design.md, "The PNG page")."""

    axes: Axes
    taken: list[Bbox] = field(init=False)  # the extents of the texts placed, with a gap
    unlabelled: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.taken = [_clearance(t) for t in self.axes.texts if t.get_visible() and t.get_text()]

    def place(
        self, label: Text, wordings: Sequence[str], *, movable: bool = True, name: str = ""
    ) -> None:
        """The first of `wordings` (fullest first) that fits where `label` is or, when `movable`,
        nearest above or below; else none, named by `name` (by default the first wording)."""
        panel, preferred = self.axes.get_window_extent(), label.get_position()
        for wording in wordings:
            label.set_text(wording)
            label.set_position(preferred)  # where drawn: the last wording tried may have moved it
            extent = label.get_window_extent()  # moved in where the panel's edge would clip it
            shift_px = max(0.0, panel.x0 - extent.x0) - max(0.0, extent.x1 - panel.x1)
            if shift_px:
                _shift(label, shift_px, 0.0)
            start = label.get_position()
            for rise_px in self._rises(label, movable):
                label.set_position(start)
                _shift(label, 0.0, rise_px)
                extent = _clearance(label)
                inside = panel.y0 <= extent.y0 and extent.y1 <= panel.y1
                if inside and not any(extent.overlaps(other) for other in self.taken):
                    self.taken.append(extent)
                    return
        label.remove()
        self.unlabelled.append(" ".join((name or wordings[0]).split()))

    def place_tallest_first(self, labels: Sequence[Text]) -> None:
        """Each label in its own words, the tallest first, each wording once before any repeats."""
        tallest = sorted(labels, key=lambda label: label.get_window_extent().height, reverse=True)
        first_of_wording: dict[str, Text] = {}
        for label in tallest:
            first_of_wording.setdefault(label.get_text(), label)
        firsts = list(first_of_wording.values())
        for label in [*firsts, *(label for label in tallest if label not in firsts)]:
            self.place(label, [label.get_text()])

    def _rises(self, label: Text, movable: bool) -> list[float]:
        """How far up the label may move (display pixels, down where negative), nearest first."""
        if not movable:
            return [0.0]
        extent = _clearance(label)
        middle = (extent.y0 + extent.y1) / 2
        line_px = label.get_fontproperties().get_size_in_points() * self.axes.figure.dpi / 72
        # LABEL_GAP_PX / 2: clear of `overlaps`, which counts touching
        half = extent.height / 2 + LABEL_GAP_PX / 2 + MOVED_LABEL_GAP_LINES * line_px
        met = [t for t in self.taken if t.x0 <= extent.x1 and extent.x0 <= t.x1]
        rises = [height - middle for t in met for height in (t.y0 - half, t.y1 + half)]
        return [0.0, *sorted(rises, key=abs)]

    def caption(self) -> None:
        """Name the labels that fitted nowhere, under the panel (see `_name_unlabelled`)."""
        if self.unlabelled:
            _name_unlabelled(self.axes, list(dict.fromkeys(self.unlabelled)))  # each name once


def _shift(label: Text, right_px: float, up_px: float) -> None:
    """Moved by display pixels, in the label's own coordinates: its alignment and transform hold."""
    transform = label.get_transform()
    x_px, y_px = transform.transform(label.get_position())
    x, y = transform.inverted().transform((x_px + right_px, y_px + up_px))
    label.set_position((x, y))


def _clearance(label: Text) -> Bbox:
    return label.get_window_extent().padded(LABEL_GAP_PX)


def _name_unlabelled(axes: Axes, names: Sequence[str]) -> None:
    """A muted line under `axes` naming what is drawn there without a label (docs/design.md,
    "The PNG page"); a second call writes a line below the first."""
    panel = axes.get_window_extent()
    ticks_and_label = axes.xaxis.get_tightbbox()  # places the x label, measured next
    axis_label, earlier = axes.xaxis.label, [t for t in axes.texts if t.get_gid() == UNLABELLED_GID]
    listed = UNLABELLED_PREFIX + _listed(names, len(names))
    line = caption(axes, 1.0, 0.0, listed, ha="right", fontsize=UNLABELLED_FONT, gid=UNLABELLED_GID)
    if earlier:
        top_px = earlier[-1].get_window_extent().y0
    elif axis_label.get_visible() and axis_label.get_text():
        extent = axis_label.get_window_extent()
        _set_top(line, panel, extent.y1)
        if line.get_window_extent().x0 >= extent.x1 + UNLABELLED_INDENT_PX:
            return
        top_px = extent.y0
    else:  # the tick marks count in no tight box where their labels are hidden
        top_px = panel.y0 - _tick_room_px(axes)
    if ticks_and_label is not None:  # under the tick labels and the x label, whichever line
        top_px = min(top_px, ticks_and_label.y0)
    _set_top(line, panel, top_px - LABEL_GAP_PX)

    def names_fit(shown: int) -> bool:
        line.set_text(UNLABELLED_PREFIX + _listed(names, shown))
        return bool(line.get_window_extent().x0 >= panel.x0)

    # Counted from one short of all: "; and 1 more" may be longer than the last name.
    shown = len(names) if names_fit(len(names)) else _most_that_fit(len(names) - 1, names_fit)
    line.set_text(UNLABELLED_PREFIX + _listed(names, shown))


def _set_top(line: Text, panel: Bbox, top_px: float) -> None:
    line.set_y((top_px - panel.y0) / panel.height)  # in the panel's fractions


def _listed(names: Sequence[str], shown: int) -> str:
    """The first `shown` names, then how many more (docs/design.md, "The PNG page")."""
    if shown == 0:
        return f"{len(names)} label" + ("" if len(names) == 1 else "s")
    listed, more = "; ".join(names[:shown]), len(names) - shown
    return f"{listed}; and {more} more" if more else listed


def _tick_room_px(axes: Axes) -> float:
    """How far the x axis's tick marks and their pad reach below the panel."""
    # matplotlib's stub types Tick.get_pad as returning None; it returns the pad in points.
    pad_pt = cast("float", axes.xaxis.majorTicks[0].get_pad())
    return float((axes.xaxis.get_tick_padding() + pad_pt) * axes.figure.dpi / 72)
