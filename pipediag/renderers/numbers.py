"""Numbers in words, one spelling for every renderer: shares, ratios, rates, durations."""

from __future__ import annotations

DASH = "\N{EM DASH}"  # a figure that was not measured, where a number would stand
NOT_MEASURED = "not measured"
RATE_DECIMALS_BELOW = 100.0
# Decimal where a size is set beside the memory free; binary for the service's batches.
DECIMAL_UNITS = (("GB", 1e9), ("MB", 1e6), ("KB", 1e3))
BINARY_UNITS = (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def percent(fraction: float) -> str:
    return f"{fraction:.0%}"


def percent_range(low: float, high: float) -> str:
    """(0.17, 0.24) -> "17-24%"."""
    return f"{low * 100:.0f}-{percent(high)}"


def shown_interval(interval: list[float] | None) -> list[float] | None:
    """None where both ends round to one percentage."""
    if interval is None or round(interval[0] * 100) == round(interval[1] * 100):
        return None
    return interval


def speedup(value: float) -> str:
    return f"{value:.1f}x"


def gain(value: float) -> str:
    """Two decimals: fixes differ by a few percent."""
    return f"{value:.2f}x"


def gain_range(low: float, high: float) -> str:
    return f"{low:.2f}-{gain(high)}"


def gain_within(value: float, low: float | None, high: float | None) -> str:
    """ "2.10x (1.90-2.31x)"; the interval left out where none or its ends read the same."""
    if low is None or high is None or gain(low) == gain(high):
        return gain(value)
    return f"{gain(value)} ({gain_range(low, high)})"


def slower(ratio: float) -> str:
    """0.85 -> "15% slower" (a ratio under 1 reads badly)."""
    return f"{percent(1.0 - ratio)} slower"


def counted(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


def utc_time(stamp: str) -> str:
    return stamp.replace("T", " ").removesuffix("Z")


def rate_text(value: float | None) -> str:
    """ "76.6", "714", "2,646": past 100 a decimal is noise, and the page has no room."""
    if value is None:
        return DASH
    return f"{value:,.0f}" if value >= RATE_DECIMALS_BELOW else f"{value:,.1f}"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def bytes_text(count: float | None, units: tuple[tuple[str, float], ...] = DECIMAL_UNITS) -> str:
    if count is None:
        return "unknown size"
    for unit, scale in units:
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:.0f} B"
