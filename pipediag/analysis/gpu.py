"""What the GPU's own counters say: busy share, why it sat idle, and how that tracks input waits.

Part of `analysis/`, pure functions over the report model only (no NVML, no TensorFlow).
NVML windows (1/6 s to 1 s) are far longer than a step, so no single step is labelled from
the GPU: per window, the GPU's idle time is split into input wait (counted first), transfer
(an upper bound) and host overhead, after HolisticTraceAnalysis, and GPU idle is correlated
with input wait across windows (Pearson r). Its windows are in gpu_windows.py, the causes in
gpu_causes.py; the renderers word the figures (renderers/hardware_words.py). Method:
(docs/design.md, "GPU idle causes").
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pipediag.analysis.gpu_causes import (
    CAUSE_HOST,
    CAUSE_INPUT,
    CAUSE_TRANSFER,
    CAUSES,
)
from pipediag.analysis.gpu_windows import (
    StepIndex,
    busy_points,
    clip01,
    merge_untimed,
    reading_intervals,
    with_pcie,
)
from pipediag.report.model import (
    GpuAnalysis,
    GpuIdleCause,
    GpuSample,
    GpuSection,
    GpuWindow,
    IdleAttribution,
    StepRecord,
    TrainSection,
    Verdict,
    timed_steps,
)
from pipediag.report.reasons import (
    FEW_GPU_WINDOWS,
    NO_BUSY_READING,
    NO_GPU_READING,
    NO_GPU_SAMPLED,
    NO_TIMED_WAIT_STEP,
    STEPS_SPAN,
    Reason,
)
from pipediag.report.vocabulary import (
    BUSY_SM_ACTIVE,
    BUSY_UTILIZATION,
    TIME_DRIVER,
    TIME_GPM,
    TIME_MIXED,
    TIME_TICKS,
    BusySource,
    TimeSource,
)

BUSY_AUTO = "auto"  # a setting: SM activity where GPM has enough windows, else utilization


@dataclass(frozen=True)
class GpuThresholds:
    """Named limits of the GPU analysis, with where each comes from.

    Attributes:
        min_step_coverage: a window counts only if measured steps cover this share of it;
            windows mostly in the warm-up, the pipeline benchmark or the script's set-up say
            nothing about the train loop. 0.8 keeps a window that a step boundary or an epoch
            end clips, and drops one that is mostly outside the loop (a judgement call).
        min_windows: fewer windows than this inside the measured steps and the GPU figures are
            one or two driver averages: too few to report (NVML averages over 1/6 s to 1 s).
        min_correlation_windows: Pearson r over fewer points is noise (r of 3 random points
            exceeds 0.9 about 30% of the time).
        min_idle_fraction: below this idle share the GPU is busy and no idle cause is named;
            5% mirrors XProf's "moderately input-bound" floor
            (kModeratelyInfeedBoundThresholdInPercent = 5).
        untimed_window_s: readings without driver timestamps (`nvmlDeviceGetUtilizationRates`)
            average over an unknown window of 1/6 s to 1 s before the read; merging them into
            windows of at least 1 s (the longest driver window) bounds the misplacement to
            about half of each window.
        max_window_s: a gap between readings longer than this (2x the longest driver window)
            is a gap in sampling (NVML errors, decimation edges), not one long window.
        pcie_reference_bytes_per_s: the link bandwidth that PCIe throughput is compared with.
            PCIe 4.0 x16: 16 GT/s x 16 lanes x 128/130 = 31.5 GB/s per direction (PCI-SIG).
            On PCIe 5.0 (H100/H200) this overstates the link's busy share up to 2x, so the
            transfer share stays an upper bound. NVML counts throughput over 20 ms per call.
        contention_share: other processes taking this share of the whole machine's CPU or
            more is named as contention when input-bound. A judgement call: on 2 cores it is
            a fifth of a core, and sharing cores cut a 1.6x pipeline speed-up to 1.18x end
            to end (docs/design.md, "Costs that are not waiting").
    """

    min_step_coverage: float = 0.8
    min_windows: int = 3
    min_correlation_windows: int = 5
    min_idle_fraction: float = 0.05
    untimed_window_s: float = 1.0
    max_window_s: float = 2.0
    pcie_reference_bytes_per_s: float = 31.5e9
    contention_share: float = 0.10


DEFAULT_GPU_THRESHOLDS = GpuThresholds()

_CONSTANT_EPSILON = 1e-9
"""Below this standard deviation a series is constant and Pearson r is undefined."""


LOW_COVERAGE_NOTE = 0.5
"""When the windows hold less than half of the measured step time, the GPU figures describe a
minority of the run (readings failed or stopped): say so next to them."""


def measured_steps(train: TrainSection) -> list[StepRecord]:
    """Steps past the warm-up whose input wait was measured: the ones a window is compared with."""
    return [s for s in timed_steps(train.steps) if s.input_wait_s is not None]


# -- the analysis -----------------------------------------------------------------------------


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson correlation; None when a series is constant (r undefined) or too short."""
    n = len(x)
    if n < 2 or n != len(y):
        return None
    mx, my = sum(x) / n, sum(y) / n
    sxx = sum((v - mx) ** 2 for v in x)
    syy = sum((v - my) ** 2 for v in y)
    if math.sqrt(sxx / n) < _CONSTANT_EPSILON or math.sqrt(syy / n) < _CONSTANT_EPSILON:
        return None
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def _unavailable(reason: Reason) -> GpuAnalysis:
    return GpuAnalysis(available=False, reason=reason)


def _choose_source(samples: Sequence[GpuSample], busy_metric: str, th: GpuThresholds) -> BusySource:
    if busy_metric == BUSY_SM_ACTIVE:
        return BUSY_SM_ACTIVE
    if busy_metric == BUSY_UTILIZATION:
        return BUSY_UTILIZATION
    gpm = sum(s.sm_active_pct is not None for s in samples)
    return BUSY_SM_ACTIVE if gpm >= th.min_windows else BUSY_UTILIZATION


def _device_busy_mean(samples: Sequence[GpuSample]) -> float:
    values = [s.gpu_util_pct for s in samples if s.gpu_util_pct is not None]
    values += [s.sm_active_pct for s in samples if s.sm_active_pct is not None]
    return sum(values) / len(values) if values else -1.0


def analyze_gpu(
    gpu: GpuSection,
    train: TrainSection,
    *,
    busy_metric: str = BUSY_AUTO,
    thresholds: GpuThresholds = DEFAULT_GPU_THRESHOLDS,
) -> GpuAnalysis:
    """The GPU's side of the run: per-window busy and input-wait shares, idle causes, correlation.

    Args:
        gpu: the report's GPU section (times on the session clock, as the steps).
        train: the report's train section; only measured steps with an input wait count.
        busy_metric: "auto" uses GPM SM activity when the device reported it (Hopper+) and
            utilization otherwise; "sm-active" or "utilization" force one. SM activity is the
            better "busy": utilization counts the GPU busy while any kernel runs, however
            small.
        thresholds: the named limits (see `GpuThresholds`).

    Returns:
        A `GpuAnalysis`; `available=False` with a reason when there is no GPU, no reading,
        no measured step, or too few windows inside the measured steps.
    """
    th = thresholds
    if not gpu.available:
        return _unavailable(Reason(NO_GPU_SAMPLED, because=gpu.reason))
    steps = measured_steps(train)
    if not steps:
        return _unavailable(Reason(NO_TIMED_WAIT_STEP))
    by_device: dict[int, list[GpuSample]] = {}
    for sample in gpu.samples:
        by_device.setdefault(sample.device_index, []).append(sample)
    with_readings = {
        index: samples
        for index, samples in by_device.items()
        if any(s.gpu_util_pct is not None or s.sm_active_pct is not None for s in samples)
    }
    if not with_readings:
        about_util = [n for n in gpu.notes if "utilization" in n.lower()] or gpu.notes
        return _unavailable(Reason(NO_GPU_READING, detail=about_util[0] if about_util else ""))
    notes: list[str] = []
    device = max(with_readings, key=lambda i: (_device_busy_mean(with_readings[i]), -i))
    if len(by_device) > 1:
        notes.append(
            f"GPU {device} analysed, the busiest of the {len(by_device)} GPUs sampled; "
            "data-parallel GPUs idle together when input-bound"
        )
    samples = sorted(with_readings[device], key=lambda s: s.t_s)
    source = _choose_source(samples, busy_metric, th)
    points = busy_points(samples, source)
    if not points:
        return _unavailable(Reason(NO_BUSY_READING, detail=source, value=device))
    fallback = gpu.interval_s if gpu.interval_s > 0 else th.untimed_window_s
    intervals = reading_intervals(points, fallback, th.max_window_s)
    intervals = merge_untimed(intervals, th.untimed_window_s)
    intervals = with_pcie(intervals, samples, th.pcie_reference_bytes_per_s)
    timed = {i.timed for i in intervals}
    time_source: TimeSource
    if timed == {True}:
        time_source = TIME_GPM if source == BUSY_SM_ACTIVE else TIME_DRIVER
    elif timed == {False}:
        time_source = TIME_TICKS
        notes.append(
            "no driver timestamps: utilization readings were placed at the sampler's ticks and "
            f"merged into windows of at least {th.untimed_window_s:g} s"
        )
    else:
        time_source = TIME_MIXED
    index = StepIndex(steps)
    windows: list[GpuWindow] = []
    outside = 0
    for interval in intervals:
        covered, waited = index.overlap(interval.start, interval.end)
        coverage = covered / interval.length
        if coverage < th.min_step_coverage:
            outside += 1
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
    if len(windows) < th.min_windows:
        span = steps[-1].start_s + steps[-1].duration_s - steps[0].start_s
        return GpuAnalysis(
            available=False,
            reason=Reason(
                FEW_GPU_WINDOWS,
                value=len(windows),
                limit=th.min_windows,
                because=Reason(STEPS_SPAN, value=span),
            ),
            device_index=device,
            busy_source=source,
            time_source=time_source,
            notes=notes,
        )
    step_time = sum(s.duration_s for s in steps)
    lengths = [w.end_s - w.start_s for w in windows]
    pairs = list(zip(windows, lengths, strict=True))
    in_windows = sum(w.step_coverage * length for w, length in pairs)
    coverage_fraction = clip01(in_windows / step_time) if step_time > 0 else None
    if coverage_fraction is not None and coverage_fraction < LOW_COVERAGE_NOTE:
        notes.append(
            f"GPU windows cover only {coverage_fraction:.0%} of the measured step time "
            "(readings missing or failing during the run)"
        )
    attribution = attribute_idle(windows, thresholds=th)
    busy = sum(w.gpu_busy_fraction * length for w, length in pairs) / sum(lengths)
    wait = sum(w.input_wait_fraction * w.step_coverage * length for w, length in pairs) / in_windows
    r: float | None = None
    if len(windows) >= th.min_correlation_windows:
        r = pearson(
            [1.0 - w.gpu_busy_fraction for w in windows],
            [w.input_wait_fraction for w in windows],
        )
        if r is None:
            notes.append(
                "GPU idle or input wait did not vary across windows: their correlation is "
                "undefined (a steady run); the idle attribution still holds"
            )
    else:
        notes.append(
            f"{len(windows)} windows are too few for a correlation "
            f"(need {th.min_correlation_windows})"
        )
    return GpuAnalysis(
        available=True,
        device_index=device,
        busy_source=source,
        time_source=time_source,
        window_s_median=statistics.median(lengths),
        windows=windows,
        gpu_busy_fraction=busy,
        input_wait_fraction=wait,
        idle_input_wait_correlation=r,
        correlation_windows=len(windows) if r is not None else 0,
        attribution=attribution,
        coverage_fraction=coverage_fraction,
        notes=notes,  # the sampler's own notes stay in the GPU section
    )


def attribute_idle(
    windows: Sequence[GpuWindow], *, thresholds: GpuThresholds = DEFAULT_GPU_THRESHOLDS
) -> IdleAttribution:
    """Split the GPU's idle time in `windows` into input wait, transfer and host overhead.

    Per window of length L: idle = (1 - busy) L; input wait takes min(idle, wait share x L);
    transfer takes min(rest, PCIe busy share x L); host overhead is what remains. See the
    module docstring for why in this order.
    """
    window_s = idle_s = input_s = transfer_s = host_s = 0.0
    for w in windows:
        length = w.end_s - w.start_s
        idle = (1.0 - w.gpu_busy_fraction) * length
        waiting = min(idle, w.input_wait_fraction * length)
        rest = idle - waiting
        transfer = min(rest, (w.pcie_busy_fraction or 0.0) * length)
        window_s += length
        idle_s += idle
        input_s += waiting
        transfer_s += transfer
        host_s += rest - transfer
    shares: dict[GpuIdleCause, float] = {
        CAUSE_INPUT: input_s,
        CAUSE_TRANSFER: transfer_s,
        CAUSE_HOST: host_s,
    }
    dominant: GpuIdleCause | None = None
    if window_s > 0 and idle_s / window_s >= thresholds.min_idle_fraction:
        worst = max(CAUSES, key=shares.__getitem__)
        dominant = worst
    return IdleAttribution(
        window_s=window_s,
        idle_s=idle_s,
        input_wait_s=input_s,
        host_overhead_s=host_s,
        transfer_s=transfer_s,
        dominant=dominant,
    )


# -- what the verdict layer uses --------------------------------------------------------------


def with_gpu_idle_cause(verdict: Verdict, analysis: GpuAnalysis | None) -> Verdict:
    """The verdict with the GPU's dominant idle cause filled in (unchanged without an analysis
    of a sampled GPU)."""
    if analysis is None or not analysis.available or analysis.attribution is None:
        return verdict
    return replace(verdict, gpu_idle_cause=analysis.attribution.dominant)
