"""Numbers in words, one spelling for every renderer: shares, ratios, rates, durations."""

from __future__ import annotations

DASH = "\N{EM DASH}"  # a figure that was not measured, where a number would stand
NOT_MEASURED = "not measured"
RATE_DECIMALS_BELOW = 100.0  # rates below this keep one decimal: 76.6, 714, 2,646


def percent(fraction: float) -> str:
    """A share as a whole percentage: 0.437 -> "44%"."""
    return f"{fraction:.0%}"


def percent_range(low: float, high: float) -> str:
    """Two shares as one range of whole percentages: (0.17, 0.24) -> "17-24%"."""
    return f"{low * 100:.0f}-{percent(high)}"


def shown_interval(interval: list[float] | None) -> list[float] | None:
    """An interval worth printing: None without one, or where its ends round to the same
    whole percentage (a measured wait above the pairs' interval pins both ends to it)."""
    if interval is None or round(interval[0] * 100) == round(interval[1] * 100):
        return None
    return interval


def speedup(value: float) -> str:
    """A ratio of rates, to one decimal: 1.78 -> "1.8x"."""
    return f"{value:.1f}x"


def gain(value: float) -> str:
    """A fix's speedup, to two decimals (fixes differ by a few percent): 1.4 -> "1.40x"."""
    return f"{value:.2f}x"


def gain_range(low: float, high: float) -> str:
    """An interval of speedups, to two decimals: (1.9, 2.31) -> "1.90-2.31x"."""
    return f"{low:.2f}-{gain(high)}"


def gain_within(value: float, low: float | None, high: float | None) -> str:
    """A speedup and its interval: "2.10x (1.90-2.31x)"; the interval left out where it is
    none or its ends read the same ("5.67x (5.67-5.67x)" says nothing)."""
    if low is None or high is None or gain(low) == gain(high):
        return gain(value)
    return f"{gain(value)} ({gain_range(low, high)})"


def slower(ratio: float) -> str:
    """A ratio of rates under 1 as a loss: 0.85 -> "15% slower" (a ratio under 1 reads
    badly)."""
    return f"{percent(1.0 - ratio)} slower"


def counted(count: int, noun: str) -> str:
    """A count and its noun, plural unless one: (3, "pair") -> "3 pairs"."""
    return f"{count} {noun}{'s' if count != 1 else ''}"


def utc_time(stamp: str) -> str:
    """A stored UTC time stamp as a person reads it: "2026-01-01T10:00:00Z" ->
    "2026-01-01 10:00:00"."""
    return stamp.replace("T", " ").removesuffix("Z")


def rate_text(value: float | None) -> str:
    """A rate (batches/s or steps/s) without its unit: "76.6", "714", "2,646"; a dash if
    not measured. Past 100 a decimal is noise, and the page has no room for it."""
    if value is None:
        return DASH
    return f"{value:,.0f}" if value >= RATE_DECIMALS_BELOW else f"{value:,.1f}"


def ms(seconds: float) -> str:
    """A duration in milliseconds: 0.0131 -> "13.1 ms"."""
    return f"{seconds * 1e3:.1f} ms"
