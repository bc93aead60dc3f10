"""What the GPU's own counters say: windows of one busy share each, why the GPU sat idle, and
how its idle tracks input wait (docs/design.md, "GPU idle causes", "NVML facts")."""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pipediag.analysis.gpu_causes import CAUSE_HOST, CAUSE_INPUT, CAUSE_TRANSFER, CAUSES
from pipediag.report.model import StepRecord, TrainSection, Verdict, timed_steps
from pipediag.report.reasons import Reason, ReasonCode
from pipediag.report.samples import GpuAnalysis, GpuSample, GpuSection, GpuWindow, IdleAttribution
from pipediag.report.vocabulary import BusySource, GpuIdleCause, TimeSource

BUSY_AUTO = "auto"  # a setting: SM activity where GPM has enough windows, else utilization


@dataclass(frozen=True)
class GpuThresholds:
    """Named limits of the GPU analysis (their sources: docs/design.md, "GPU idle causes")."""

    min_step_coverage: float = 0.8  # share of a window the measured steps must cover
    min_windows: int = 3  # fewer are one or two driver averages
    min_correlation_windows: int = 5  # r of 3 random points exceeds 0.9 ~30% of the time
    min_idle_fraction: float = 0.05  # XProf's "moderately input-bound" floor
    untimed_window_s: float = 1.0  # untimed readings merged to the longest driver window
    max_window_s: float = 2.0  # a longer gap between readings is a gap in sampling
    pcie_reference_bytes_per_s: float = 31.5e9  # PCIe 4.0 x16 per direction: an upper bound
    contention_share: float = 0.10  # other processes' share of the CPU named as contention


DEFAULT_GPU_THRESHOLDS = GpuThresholds()

_CONSTANT_EPSILON = 1e-9  # below this standard deviation Pearson r is undefined
# Tick times are sums of float intervals: 10 ticks of 0.1 s can span 0.9999999 s.
_TIME_SLACK_S = 1e-6
# Windows holding less of the measured step time describe a minority of the run: say so.
LOW_COVERAGE_NOTE = 0.5
# The sampler's notes on utilization readings: the likeliest why, where none succeeded (MIG
# first: NVML gives no per-MIG utilization). A reading's failure whose error text names
# utilization is not among them.
_UTILIZATION_NOTES: frozenset[ReasonCode] = frozenset(
    {
        "gpu-mig-enabled",
        "gpu-driver-samples-setup-failed",
        "gpu-util-samples-unavailable",
        "gpu-util-unavailable",
        "no-util-reading-on-gpu",
    }
)


def measured_steps(train: TrainSection) -> list[StepRecord]:
    return [s for s in timed_steps(train.steps) if s.input_wait_s is not None]


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """None when a series is constant or too short."""
    if (n := len(x)) < 2 or n != len(y):
        return None
    mx, my = sum(x) / n, sum(y) / n
    sxx, syy = sum((v - mx) ** 2 for v in x), sum((v - my) ** 2 for v in y)
    if math.sqrt(sxx / n) < _CONSTANT_EPSILON or math.sqrt(syy / n) < _CONSTANT_EPSILON:
        return None
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def _about_utilization(note: Reason) -> bool:
    first = note.because if note.code == "repeated-failure" else note
    return first is not None and first.code in _UTILIZATION_NOTES


def _choose_source(samples: Sequence[GpuSample], busy_metric: str, th: GpuThresholds) -> BusySource:
    if busy_metric == "sm-active":
        return "sm-active"
    if busy_metric == "utilization":
        return "utilization"
    gpm = sum(s.sm_active_pct is not None for s in samples)
    return "sm-active" if gpm >= th.min_windows else "utilization"


def _device_busy_mean(samples: Sequence[GpuSample]) -> float:
    values = [s.gpu_util_pct for s in samples if s.gpu_util_pct is not None]
    values += [s.sm_active_pct for s in samples if s.sm_active_pct is not None]
    return sum(values) / len(values) if values else -1.0


def analyze_gpu(
    gpu: GpuSection, train: TrainSection, *, busy_metric: str = BUSY_AUTO
) -> GpuAnalysis:
    """Per-window busy and wait shares, idle causes, correlation; `busy_metric`: docs/design.md,
    "GPU idle causes"."""
    th = DEFAULT_GPU_THRESHOLDS
    if not gpu.available:
        return GpuAnalysis(available=False, reason=Reason("no-gpu-sampled", because=gpu.reason))
    if not (steps := measured_steps(train)):
        return GpuAnalysis(available=False, reason=Reason("no-timed-wait-step"))
    by_device: dict[int, list[GpuSample]] = {}
    for sample in gpu.samples:
        by_device.setdefault(sample.device_index, []).append(sample)
    with_readings = {
        index: samples
        for index, samples in by_device.items()
        if any(s.gpu_util_pct is not None or s.sm_active_pct is not None for s in samples)
    }
    if not with_readings:
        about_util = [n for n in gpu.notes if _about_utilization(n)] or gpu.notes
        reason = Reason("no-gpu-reading", because=about_util[0] if about_util else None)
        return GpuAnalysis(available=False, reason=reason)
    notes: list[Reason] = []
    device = max(with_readings, key=lambda i: (_device_busy_mean(with_readings[i]), -i))
    if len(by_device) > 1:
        notes.append(Reason("busiest-gpu-analysed", value=device, limit=len(by_device)))
    samples = sorted(with_readings[device], key=lambda s: s.t_s)
    source = _choose_source(samples, busy_metric, th)
    if not (points := busy_points(samples, source)):
        reason = Reason("no-busy-reading", detail=source, value=device)
        return GpuAnalysis(available=False, reason=reason)
    fallback = gpu.interval_s if gpu.interval_s > 0 else th.untimed_window_s
    intervals = reading_intervals(points, fallback, th.max_window_s)
    intervals = merge_untimed(intervals, th.untimed_window_s)
    intervals = with_pcie(intervals, samples, th.pcie_reference_bytes_per_s)
    timed = {i.timed for i in intervals}
    time_source: TimeSource
    if timed == {True}:
        time_source = "gpm-sample-times" if source == "sm-active" else "driver-timestamps"
    elif timed == {False}:
        time_source = "sampler-ticks"
        notes.append(Reason("untimed-readings", limit=th.untimed_window_s))
    else:
        time_source = "mixed"
    index = StepIndex(steps)
    windows: list[GpuWindow] = []
    for interval in intervals:
        covered, waited = index.overlap(interval.start, interval.end)
        if (coverage := covered / interval.length) < th.min_step_coverage:
            continue
        windows.append(
            GpuWindow(
                start_s=interval.start,
                end_s=interval.end,
                gpu_busy_fraction=interval.busy,
                input_wait_fraction=clip01(waited / covered) if covered > 0 else 0.0,
                step_coverage=clip01(coverage),
                pcie_busy_fraction=interval.pcie,
            )
        )
    # `notes` shared: those added below are its too (the sampler's own stay in the GPU section).
    found = GpuAnalysis(
        False, device_index=device, busy_source=source, time_source=time_source, notes=notes
    )
    if len(windows) < th.min_windows:
        span_s = steps[-1].start_s + steps[-1].duration_s - steps[0].start_s
        span = Reason("steps-span", value=span_s)
        few = Reason("few-gpu-windows", value=len(windows), limit=th.min_windows, because=span)
        return replace(found, reason=few)
    step_time, lengths = sum(s.duration_s for s in steps), [w.end_s - w.start_s for w in windows]
    pairs = list(zip(windows, lengths, strict=True))
    in_windows = sum(w.step_coverage * length for w, length in pairs)
    coverage_fraction = clip01(in_windows / step_time) if step_time > 0 else None
    if coverage_fraction is not None and coverage_fraction < LOW_COVERAGE_NOTE:
        notes.append(Reason("low-window-coverage", value=coverage_fraction))
    busy = sum(w.gpu_busy_fraction * length for w, length in pairs) / sum(lengths)
    wait = sum(w.input_wait_fraction * w.step_coverage * length for w, length in pairs) / in_windows
    r: float | None = None
    if len(windows) >= th.min_correlation_windows:
        r = pearson(
            [1.0 - w.gpu_busy_fraction for w in windows], [w.input_wait_fraction for w in windows]
        )
        if r is None:
            notes.append(Reason("steady-run"))
    else:
        limit = th.min_correlation_windows
        notes.append(Reason("few-correlation-windows", value=len(windows), limit=limit))
    return replace(
        found,
        available=True,
        window_s_median=statistics.median(lengths),
        windows=windows,
        gpu_busy_fraction=busy,
        input_wait_fraction=wait,
        idle_input_wait_correlation=r,
        correlation_windows=len(windows) if r is not None else 0,
        attribution=attribute_idle(windows),
        coverage_fraction=coverage_fraction,
    )


def attribute_idle(windows: Sequence[GpuWindow]) -> IdleAttribution:
    """Each window's idle split by cause, input wait first (docs/design.md, "GPU idle causes")."""
    window_s = idle_s = 0.0
    seconds: dict[GpuIdleCause, float] = dict.fromkeys(CAUSES, 0.0)
    for w in windows:
        length = w.end_s - w.start_s
        idle = (1.0 - w.gpu_busy_fraction) * length
        waiting = min(idle, w.input_wait_fraction * length)
        transfer = min(idle - waiting, (w.pcie_busy_fraction or 0.0) * length)
        window_s += length
        idle_s += idle
        seconds[CAUSE_INPUT] += waiting
        seconds[CAUSE_TRANSFER] += transfer
        seconds[CAUSE_HOST] += idle - waiting - transfer
    dominant: GpuIdleCause | None = None
    if window_s > 0 and idle_s / window_s >= DEFAULT_GPU_THRESHOLDS.min_idle_fraction:
        worst = max(CAUSES, key=seconds.__getitem__)
        dominant = worst
    return IdleAttribution(
        window_s=window_s,
        idle_s=idle_s,
        input_wait_s=seconds[CAUSE_INPUT],
        host_overhead_s=seconds[CAUSE_HOST],
        transfer_s=seconds[CAUSE_TRANSFER],
        dominant=dominant,
    )


def with_gpu_idle_cause(verdict: Verdict, analysis: GpuAnalysis | None) -> Verdict:
    if analysis is None or not analysis.available or analysis.attribution is None:
        return verdict
    return replace(verdict, gpu_idle_cause=analysis.attribution.dominant)


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
    without a fresh driver sample repeats the last: the first reading of a time is kept."""
    points: list[tuple[float, float, bool]] = []
    for s in samples:
        if source == "sm-active":
            if s.sm_active_pct is not None:
                points.append((s.t_s, clip01(s.sm_active_pct / 100), True))
        elif s.gpu_util_pct is not None:
            driver_t = s.gpu_util_t_s
            end = s.t_s if driver_t is None else driver_t
            points.append((end, clip01(s.gpu_util_pct / 100), driver_t is not None))
    firsts: dict[float, tuple[float, float, bool]] = {}
    for p in sorted(points, key=lambda p: p[0]):  # stable: a time's first reading stays first
        firsts.setdefault(p[0], p)
    return list(firsts.values())


def reading_intervals(
    points: list[tuple[float, float, bool]], fallback_s: float, max_window_s: float
) -> list[Interval]:
    """Each reading spans from the last one; the first, or one after a gap, a median window."""
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
        self._steps = sorted(steps, key=lambda s: s.start_s)
        self._starts = [s.start_s for s in self._steps]
        self._max_duration = max((s.duration_s for s in self._steps), default=0.0)

    def overlap(self, a: float, b: float) -> tuple[float, float]:
        """(step seconds, wait seconds) inside [a, b); a wait opens its step, as its pull does."""
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
