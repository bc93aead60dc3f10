"""Keeping text on the page: character counts cannot tell how wide a text is drawn, so texts
are measured with the figure's renderer, then shortened or shrunk to fit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipediag.renderers.png.style import NOTE_FONT, NOTE_TEXT_COLOUR

if TYPE_CHECKING:
    from collections.abc import Callable

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

ELLIPSIS = "\N{HORIZONTAL ELLIPSIS}"


def note(axes: Axes, text: str) -> None:
    """A grey note in the middle of a panel with nothing to draw, saying why."""
    axes.text(
        0.5,
        0.5,
        text,
        transform=axes.transAxes,
        ha="center",
        va="center",
        fontsize=NOTE_FONT,
        color=NOTE_TEXT_COLOUR,
        wrap=True,
        gid="note",
    )


def fit_width(figure: Figure, artist: Text, right: float) -> None:
    """Shorten a one-line text, with an ellipsis, to end left of `right` (figure fraction)."""
    limit_px = right * figure.bbox.width
    _shorten(artist, lambda box: box.x1 <= limit_px)


def fit_left(figure: Figure, artist: Text, left: float) -> None:
    """Shorten a right-aligned one-line text to start right of `left` (figure fraction)."""
    limit_px = left * figure.bbox.width
    _shorten(artist, lambda box: box.x0 >= limit_px)


def _shorten(artist: Text, fits: Callable[[Bbox], bool]) -> None:
    full = artist.get_text()
    if fits(artist.get_window_extent()):
        return
    low, high = 0, len(full)  # longest prefix that fits lies in [low, high)
    while low < high - 1:
        middle = (low + high) // 2
        artist.set_text(full[:middle] + ELLIPSIS)
        if fits(artist.get_window_extent()):
            low = middle
        else:
            high = middle
    artist.set_text(full[:low].rstrip() + ELLIPSIS)


def fit_font(figure: Figure, artist: Text, right: float, min_size: float) -> None:
    """Shrink a one-line text's font, down to `min_size`, to end left of `right`; then shorten
    it."""
    limit_px = right * figure.bbox.width
    size = float(artist.get_fontsize())
    while artist.get_window_extent().x1 > limit_px and size > min_size:
        size = max(min_size, size - 1.0)
        artist.set_fontsize(size)
    fit_width(figure, artist, right)


def left_edge(figure: Figure, artist: Text) -> float:
    return float(artist.get_window_extent().x0 / figure.bbox.width)


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
