"""GPU readings as intervals of one busy share each, and the measured steps' time and waits
inside an interval: the windows `analysis/gpu.py` reads (docs/design.md, "NVML facts")."""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pipediag.report.model import StepRecord
from pipediag.report.samples import GpuSample
from pipediag.report.vocabulary import BusySource

# Tick times are sums of float intervals: 10 ticks of 0.1 s can span 0.9999999 s.
_TIME_SLACK_S = 1e-6


@dataclass(frozen=True)
class Interval:
    """A stretch of time over which NVML reports one average busy share."""

    start: float
    end: float
    busy: float  # 0..1
    timed: bool  # placed by the driver's or GPM's own times, not by the sampler's tick
    pcie: float | None = None  # link busy share 0..1

    @property
    def length(self) -> float:
        return self.end - self.start


def clip01(value: float) -> float:
    return min(1.0, max(0.0, value))


def busy_points(
    samples: Sequence[GpuSample], source: BusySource
) -> list[tuple[float, float, bool]]:
    """(end time, busy 0..1, timed) per distinct reading, in time order. A driver reading
    covers (previous driver timestamp, `gpu_util_t_s`]; GPM (previous GPM read, `t_s`]. A tick
    without a fresh driver sample repeats the last one with its timestamp: repeats are dropped."""
    points: list[tuple[float, float, bool]] = []
    seen_driver_t: set[float] = set()
    for s in samples:
        if source == "sm-active":
            if s.sm_active_pct is None:
                continue
            points.append((s.t_s, clip01(s.sm_active_pct / 100), True))
        else:
            if s.gpu_util_pct is None:
                continue
            if s.gpu_util_t_s is not None:
                if s.gpu_util_t_s in seen_driver_t:
                    continue
                seen_driver_t.add(s.gpu_util_t_s)
                points.append((s.gpu_util_t_s, clip01(s.gpu_util_pct / 100), True))
            else:
                points.append((s.t_s, clip01(s.gpu_util_pct / 100), False))
    points.sort(key=lambda p: p[0])
    ordered: list[tuple[float, float, bool]] = []
    for p in points:
        if not ordered or p[0] > ordered[-1][0]:
            ordered.append(p)
    return ordered


def reading_intervals(
    points: list[tuple[float, float, bool]], fallback_s: float, max_window_s: float
) -> list[Interval]:
    """Each reading covers the time since the previous one; the first, and one after a gap,
    the median window length."""
    gaps = [b[0] - a[0] for a, b in zip(points, points[1:], strict=False)]
    usable = [g for g in gaps if 0 < g <= max_window_s]
    typical = statistics.median(usable) if usable else fallback_s
    typical = min(max(typical, 0.0), max_window_s)
    intervals: list[Interval] = []
    previous_end: float | None = None
    for end, busy, timed in points:
        if previous_end is not None and end - previous_end <= max_window_s:
            start = previous_end
        else:
            start = end - typical
        if end > start:
            intervals.append(Interval(start, end, busy, timed))
        previous_end = end
    return intervals


def merge_untimed(intervals: list[Interval], target_s: float) -> list[Interval]:
    """Join consecutive untimed intervals until each spans `target_s`."""
    merged: list[Interval] = []
    run: list[Interval] = []

    def flush() -> None:
        if run:
            length = sum(i.length for i in run)
            busy = sum(i.busy * i.length for i in run) / length if length > 0 else run[-1].busy
            merged.append(Interval(run[0].start, run[-1].end, busy, False))
            run.clear()

    for interval in intervals:
        if interval.timed:
            flush()
            merged.append(interval)
            continue
        if run and abs(interval.start - run[-1].end) > _TIME_SLACK_S:  # never across a gap
            flush()
        run.append(interval)
        if run[-1].end - run[0].start >= target_s - _TIME_SLACK_S:
            flush()
    flush()
    return merged


def with_pcie(
    intervals: list[Interval], samples: Sequence[GpuSample], link_bytes_per_s: float
) -> list[Interval]:
    """The mean PCIe busy share of the ticks inside each interval."""
    ticks = sorted(
        (s.t_s, max(s.pcie_rx_bytes_per_s or 0.0, s.pcie_tx_bytes_per_s or 0.0))
        for s in samples
        if s.pcie_rx_bytes_per_s is not None or s.pcie_tx_bytes_per_s is not None
    )
    times = [t for t, _ in ticks]
    result: list[Interval] = []
    for interval in intervals:
        lo = bisect.bisect_right(times, interval.start)
        hi = bisect.bisect_right(times, interval.end)
        inside = [rate for _, rate in ticks[lo:hi]]
        pcie = clip01(sum(inside) / len(inside) / link_bytes_per_s) if inside else None
        result.append(replace(interval, pcie=pcie))
    return result


class StepIndex:
    def __init__(self, steps: Sequence[StepRecord]) -> None:
        ordered = sorted(steps, key=lambda s: s.start_s)
        self._starts = [s.start_s for s in ordered]
        self._steps = ordered
        self._max_duration = max((s.duration_s for s in ordered), default=0.0)

    def overlap(self, a: float, b: float) -> tuple[float, float]:
        """(step seconds, wait seconds) inside [a, b); a wait opens its step, as the pull of
        the next batch does."""
        covered = waited = 0.0
        i = bisect.bisect_left(self._starts, a - self._max_duration)
        while i < len(self._steps) and self._starts[i] < b:
            step = self._steps[i]
            i += 1
            start, end = step.start_s, step.start_s + step.duration_s
            inside = max(0.0, min(end, b) - max(start, a))
            covered += inside
            wait = min(step.input_wait_s or 0.0, step.duration_s)
            if step.count > 1:
                # A record that merges several steps (long runs, timeline.py) holds their
                # total wait: spread it evenly rather than pile it up at the record's start.
                waited += inside * (wait / step.duration_s if step.duration_s > 0 else 0.0)
            else:
                waited += max(0.0, min(start + wait, b) - max(start, a))
        return covered, waited
