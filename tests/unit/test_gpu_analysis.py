"""GPU analysis: windows, idle attribution, correlation and host contention, on constructed runs.

Two kinds of input: hand-built GPU sections (exact windows, exact numbers) and the real
`GpuSampler` driven tick by tick against the scripted fake NVML (driver timestamps, no
timestamps, GPM, errors mid-run), so the analysis is checked on what the sampler produces.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import fake_nvml as fn
import pytest
from fake_nvml import FakeGpu, FakeNvml, wall_clock_for
from synthetic_reports import FakeClock, synthetic_report

from pipediag.analysis.classifier import build_train_section
from pipediag.analysis.enrich import enrich_report
from pipediag.analysis.gpu import (
    DEFAULT_GPU_THRESHOLDS,
    analyze_gpu,
    attribute_idle,
    pearson,
    with_gpu_idle_cause,
)
from pipediag.analysis.gpu_causes import CAUSE_HOST, CAUSE_INPUT, CAUSE_TRANSFER
from pipediag.analysis.host_contention import host_contention
from pipediag.renderers.reason_words import reason_words
from pipediag.report.io import from_dict, to_dict
from pipediag.report.model import TrainSection, Verdict
from pipediag.report.reasons import Reason
from pipediag.report.samples import (
    GpuDevice,
    GpuSample,
    GpuSection,
    GpuWindow,
    HostSample,
    HostSection,
)
from pipediag.samplers.gpu import GpuSampler
from pipediag.timeline import RawStep

DRIVER_PERIOD_S = 1 / 6
"""The fake driver's sample period (fake_nvml.DRIVER_SAMPLE_PERIOD_S)."""

TICK_S = 0.1
STEP_S = 1 / 120
"""Steps of about 8 ms, many per NVML window, and a whole number of them in each driver window
(1/6 s), GPM window (0.1 s) and phase (1 s), so the constructed shares are exact per window.
`test_steps_not_aligned_with_windows_lose_little` covers the unaligned case."""

REF = DEFAULT_GPU_THRESHOLDS.pcie_reference_bytes_per_s

Phase = tuple[float, float, float, float]
"""(start s, end s, input-wait share of each step, GPU busy share) of a stretch of the run."""

# Slow input (75% of each step waiting, GPU busy 25%) alternating with fast input every second.
ALTERNATING: list[Phase] = [
    (t, t + 1.0, 0.75 if k % 2 == 0 else 0.0, 0.25 if k % 2 == 0 else 1.0)
    for k, t in enumerate(float(s) for s in range(1, 9))
]


def train_from(phases: Sequence[Phase], *, warmup_until_s: float = 1.0) -> TrainSection:
    """20 ms steps through the phases, after 0.2 s warm-up steps from t=0 (session times)."""
    raw: list[RawStep] = []
    t = 0.0
    while t < warmup_until_s - 1e-9:
        raw.append(RawStep(t, t + 0.2, 0.0))
        t += 0.2
    warmup = len(raw)
    for start, end, wait_share, _busy in phases:
        n = round((end - start) / STEP_S)
        raw.extend(
            RawStep(start + i * STEP_S, start + (i + 1) * STEP_S, wait_share * STEP_S)
            for i in range(n)
        )
    return build_train_section(
        raw, origin=0.0, warmup_steps=warmup, style="custom-loop", input_wait_source="x"
    )


def busy_at(phases: Sequence[Phase], default: float = 1.0) -> Callable[[float], float]:
    def busy(t: float) -> float:
        for start, end, _wait, value in phases:
            if start <= t < end:
                return value
        return default

    return busy


def section_from(
    busy: Callable[[float], float],
    *,
    until_s: float = 10.0,
    period_s: float = DRIVER_PERIOD_S,
    timed: bool = True,
    gpm: bool = False,
    util: Callable[[float], float] | None = None,
    pcie_bytes_per_s: Callable[[float], float] | None = None,
    devices: int = 1,
) -> GpuSection:
    """A GPU section whose every reading covers (previous reading, this one] exactly."""
    samples: list[GpuSample] = []
    n = round(until_s / period_s)
    for device in range(devices):
        for k in range(1, n + 1):
            end = k * period_s
            mid = end - period_s / 2
            value = 100 * busy(mid)
            rx = pcie_bytes_per_s(mid) if pcie_bytes_per_s else 1000.0
            samples.append(
                GpuSample(
                    # a GPM reading is taken at the tick; a driver sample shortly before it
                    t_s=end + (0.01 if timed and not gpm else 0.0),
                    device_index=device,
                    gpu_util_pct=(100 * util(mid) if util else value) if not gpm else 100.0,
                    pcie_rx_bytes_per_s=rx,
                    pcie_tx_bytes_per_s=0.0,
                    gpu_util_t_s=end if timed and not gpm else None,
                    sm_active_pct=value if gpm else None,
                )
            )
    return GpuSection(
        available=True,
        devices=[GpuDevice(i, "NVIDIA H200") for i in range(devices)],
        interval_s=period_s,
        samples=samples,
    )


# -- hand-built sections ----------------------------------------------------------------------


def test_idle_during_input_waits_is_attributed_to_input_and_correlates() -> None:
    # GIVEN 1 s phases: slow input (GPU 25% busy, steps 75% waiting) alternating with fast
    train = train_from(ALTERNATING)
    gpu = section_from(busy_at(ALTERNATING))
    # WHEN the GPU's side is analysed
    a = analyze_gpu(gpu, train)
    # THEN the windows are the driver's, inside the measured steps only (1 s to 9 s)
    assert a.available and a.reason is None
    assert a.busy_source == "utilization" and a.time_source == "driver-timestamps"
    assert a.window_s_median == pytest.approx(DRIVER_PERIOD_S)
    assert len(a.windows) == 48
    assert min(w.start_s for w in a.windows) == pytest.approx(1.0)
    assert max(w.end_s for w in a.windows) == pytest.approx(9.0)
    # AND the idle time is all input wait: 4 slow seconds x 75% idle
    att = a.attribution
    assert att is not None
    assert att.window_s == pytest.approx(8.0)
    assert att.idle_s == pytest.approx(3.0)
    assert att.input_wait_s == pytest.approx(3.0)
    assert att.host_overhead_s == pytest.approx(0.0, abs=1e-9)
    assert att.transfer_s == pytest.approx(0.0, abs=1e-6)
    assert att.dominant == CAUSE_INPUT
    # AND GPU idle tracks input wait perfectly, over every window
    assert a.idle_input_wait_correlation == pytest.approx(1.0)
    assert a.correlation_windows == 48
    assert a.gpu_busy_fraction == pytest.approx(0.625)
    assert a.input_wait_fraction == pytest.approx(0.375)
    assert a.coverage_fraction == pytest.approx(1.0)


def test_idle_without_input_wait_is_host_overhead() -> None:
    # GIVEN steps that never wait for input, on a GPU busy only half the time
    phases: list[Phase] = [(1.0, 9.0, 0.0, 0.5)]
    a = analyze_gpu(section_from(busy_at(phases)), train_from(phases))
    # THEN the idle half is host-side overhead; the steady run has no defined correlation
    att = a.attribution
    assert att is not None and att.dominant == CAUSE_HOST
    assert att.host_overhead_s == pytest.approx(4.0)
    assert att.input_wait_s == pytest.approx(0.0)
    assert a.idle_input_wait_correlation is None and a.correlation_windows == 0
    assert Reason("steady-run") in a.notes


def test_pcie_busy_while_sms_idle_is_transfer() -> None:
    # GIVEN no input wait, GPU busy 50%, PCIe busy 40% of the reference link
    phases: list[Phase] = [(1.0, 9.0, 0.0, 0.5)]
    gpu = section_from(busy_at(phases), pcie_bytes_per_s=lambda _t: 0.4 * REF)
    a = analyze_gpu(gpu, train_from(phases))
    att = a.attribution
    assert att is not None
    # THEN 0.4 of every window is transfer and the remaining 0.1 host overhead
    assert att.transfer_s == pytest.approx(3.2)
    assert att.host_overhead_s == pytest.approx(0.8)
    assert att.dominant == CAUSE_TRANSFER
    assert all(w.pcie_busy_fraction == pytest.approx(0.4) for w in a.windows)


def test_mixed_causes_split_in_order_input_transfer_host() -> None:
    # GIVEN steps waiting 30%, GPU busy 40%, PCIe busy 10%
    phases: list[Phase] = [(1.0, 9.0, 0.3, 0.4)]
    gpu = section_from(busy_at(phases), pcie_bytes_per_s=lambda _t: 0.1 * REF)
    att = analyze_gpu(gpu, train_from(phases)).attribution
    # THEN idle 0.6 = input 0.3 + transfer 0.1 + host 0.2 (x 8 s)
    assert att is not None
    assert (att.idle_s, att.input_wait_s, att.transfer_s, att.host_overhead_s) == pytest.approx(
        (4.8, 2.4, 0.8, 1.6)
    )
    assert att.dominant == CAUSE_INPUT


def test_busy_gpu_names_no_idle_cause() -> None:
    phases: list[Phase] = [(1.0, 9.0, 0.01, 0.98)]
    a = analyze_gpu(section_from(busy_at(phases)), train_from(phases))
    assert a.attribution is not None and a.attribution.dominant is None


def test_gpm_sm_activity_is_preferred_to_utilization() -> None:
    # GIVEN a GPU whose utilization says 100% (a kernel always resident) but whose SMs idle
    # during the slow-input phases
    train = train_from(ALTERNATING)
    gpu = section_from(busy_at(ALTERNATING), gpm=True, period_s=TICK_S)
    # WHEN analysed by default, and forced to utilization
    a = analyze_gpu(gpu, train)
    forced = analyze_gpu(gpu, train, busy_metric="utilization")
    # THEN SM activity finds the input-wait idle; utilization sees none
    assert a.busy_source == "sm-active" and a.time_source == "gpm-sample-times"
    assert a.attribution is not None and a.attribution.dominant == CAUSE_INPUT
    assert a.attribution.input_wait_s == pytest.approx(3.0)
    assert a.idle_input_wait_correlation == pytest.approx(1.0)
    assert forced.gpu_busy_fraction == pytest.approx(1.0)
    assert forced.attribution is not None and forced.attribution.dominant is None


def test_without_timestamps_readings_are_merged_into_longer_windows() -> None:
    # GIVEN utilization read at 0.1 s ticks with no driver timestamps, 2 s phases
    phases: list[Phase] = [
        (t, t + 2.0, 0.75 if k % 2 == 0 else 0.0, 0.25 if k % 2 == 0 else 1.0)
        for k, t in enumerate((1.0, 3.0, 5.0, 7.0))
    ]
    gpu = section_from(busy_at(phases), period_s=TICK_S, timed=False)
    a = analyze_gpu(gpu, train_from(phases))
    # THEN windows are at least 1 s long, and the constructed figures still come out
    assert a.time_source == "sampler-ticks"
    assert a.window_s_median == pytest.approx(1.0)
    assert Reason("untimed-readings", limit=1.0) in a.notes
    assert a.attribution is not None
    assert a.attribution.input_wait_s == pytest.approx(3.0)
    assert a.idle_input_wait_correlation == pytest.approx(1.0)


def test_steps_shorter_than_windows_are_aggregated_not_resolved() -> None:
    # GIVEN every other 8 ms step waits entirely for input (a 50% wait share per window)
    raw = [
        RawStep(1.0 + i * STEP_S, 1.0 + (i + 1) * STEP_S, STEP_S if i % 2 else 0.0)
        for i in range(960)
    ]
    train = build_train_section(
        raw, origin=0.0, warmup_steps=0, style="custom-loop", input_wait_source="x"
    )
    a = analyze_gpu(section_from(lambda _t: 0.5), train)
    # THEN each window sees the 50% share, never a per-step 0/100% label
    assert {round(w.input_wait_fraction, 6) for w in a.windows} == {0.5}
    assert a.attribution is not None and a.attribution.input_wait_s == pytest.approx(4.0)


def test_steps_not_aligned_with_windows_lose_little() -> None:
    # GIVEN 20 ms steps (8.3 per driver window), each waiting its first 75% in slow phases
    raw: list[RawStep] = []
    for start, end, wait_share, _busy in ALTERNATING:
        n = round((end - start) / 0.02)
        raw.extend(
            RawStep(start + i * 0.02, start + (i + 1) * 0.02, wait_share * 0.02) for i in range(n)
        )
    train = build_train_section(
        raw, origin=0.0, warmup_steps=0, style="custom-loop", input_wait_source="x"
    )
    a = analyze_gpu(section_from(busy_at(ALTERNATING)), train)
    # THEN a window's wait share wobbles around 75% with where the step edges fall; where it
    # exceeds the idle share the excess is not idle time, so a little input wait goes unused
    assert a.attribution is not None
    assert a.attribution.input_wait_s == pytest.approx(3.0, rel=0.02)
    assert a.attribution.host_overhead_s == pytest.approx(0.0, abs=0.06)
    assert a.idle_input_wait_correlation == pytest.approx(1.0, abs=0.01)


def test_windows_outside_the_measured_steps_are_left_out() -> None:
    # GIVEN a GPU idle before and after the loop (set-up, saving), busy during it
    phases: list[Phase] = [(3.0, 5.0, 0.0, 1.0)]
    a = analyze_gpu(section_from(busy_at(phases, default=0.0)), train_from(phases))
    # THEN only the loop's windows count: the GPU was busy throughout
    assert all(w.start_s >= 3.0 - 1e-9 and w.end_s <= 5.0 + 1e-9 for w in a.windows)
    assert a.gpu_busy_fraction == pytest.approx(1.0)


def test_several_gpus_analyse_the_busiest_and_say_so() -> None:
    gpu = section_from(busy_at(ALTERNATING), devices=2)
    idle_second = [
        s if s.device_index == 0 else GpuSample(s.t_s, 1, 0.0, gpu_util_t_s=s.gpu_util_t_s)
        for s in gpu.samples
    ]
    a = analyze_gpu(GpuSection(True, samples=idle_second, interval_s=0.1), train_from(ALTERNATING))
    assert a.device_index == 0
    assert Reason("busiest-gpu-analysed", value=0, limit=2) in a.notes


def test_no_gpu_gives_no_analysis_with_reason() -> None:
    gpu = GpuSection(available=False, reason=Reason("nvml-no-gpu"))
    a = analyze_gpu(gpu, train_from(ALTERNATING))
    assert not a.available
    assert a.reason == Reason("no-gpu-sampled", because=Reason("nvml-no-gpu"))
    assert reason_words(a.reason) == "no GPU was sampled: NVML found no GPU"
    verdict = Verdict(label="input-bound", input_wait_fraction=0.5)
    assert with_gpu_idle_cause(verdict, a) == verdict


def test_no_measured_steps_gives_no_analysis() -> None:
    a = analyze_gpu(section_from(lambda _t: 0.5), TrainSection())
    assert not a.available and a.reason == Reason("no-timed-wait-step")


def test_too_short_a_run_says_how_many_windows() -> None:
    phases: list[Phase] = [(1.0, 1.3, 0.5, 0.5)]
    a = analyze_gpu(section_from(busy_at(phases)), train_from(phases))
    assert not a.available
    assert a.reason is not None and a.reason.code == "few-gpu-windows"
    assert (a.reason.value, a.reason.limit) == (2, 3)
    assert reason_words(a.reason) == (
        "only 2 NVML window(s) fell inside the measured steps (0.30 s of steps; need 3): NVML "
        "averages over 1/6 s to 1 s, so run more steps for a GPU view"
    )


def test_attribution_of_no_windows_is_zero() -> None:
    att = attribute_idle([])
    assert (att.window_s, att.idle_s, att.dominant) == (0.0, 0.0, None)
    w = GpuWindow(0.0, 1.0, gpu_busy_fraction=0.0, input_wait_fraction=1.0, step_coverage=1.0)
    assert attribute_idle([w]).dominant == CAUSE_INPUT


def test_pearson() -> None:
    assert pearson([0, 1, 2, 3], [0, 2, 4, 6]) == pytest.approx(1.0)
    assert pearson([0, 1, 2, 3], [3, 2, 1, 0]) == pytest.approx(-1.0)
    assert pearson([1, 1, 1], [0, 1, 2]) is None
    assert pearson([1.0], [2.0]) is None


# -- through the real sampler, against the fake NVML ------------------------------------------


class Rig:
    """A fake clock at the session origin, a fake NVML reading the traces, a ticked sampler."""

    def __init__(self, gpu: FakeGpu, **nvml: Any) -> None:
        self.clock = FakeClock()
        self.wall = wall_clock_for(self.clock)
        self.t0 = self.clock.now()
        self.nvml = FakeNvml([gpu], wall=self.wall, **nvml)
        self.sampler = GpuSampler(
            interval_s=TICK_S,
            max_samples=4096,
            clock=self.clock,
            nvml=self.nvml,
            wall_clock=self.wall,
        )

    def run(self, until_s: float) -> GpuSection:
        self.sampler.start(background=False)
        for _ in range(round(until_s / TICK_S)):
            self.clock.advance(TICK_S)
            self.sampler.sample_once()
        self.sampler.stop()
        return self.sampler.section(self.t0)


def _window_trace(busy: Callable[[float], float], window_s: float) -> Callable[[float], float]:
    """The fake reads a trace at a reading's own time; a real driver averages the window
    before it, so the fake is given the value half a window back."""
    return lambda t: 100.0 * busy(t - window_s / 2)


def test_fake_nvml_driver_samples_give_the_constructed_attribution() -> None:
    # GIVEN a fake H200 with driver samples whose utilization follows the alternating phases
    rig = Rig(FakeGpu(utilization=_window_trace(busy_at(ALTERNATING), DRIVER_PERIOD_S)))
    gpu = rig.run(10.0)
    # WHEN the sampled section is analysed against the constructed steps
    a = analyze_gpu(gpu, train_from(ALTERNATING))
    # THEN the driver's timestamps place the windows, and the figures come out as constructed
    assert a.time_source == "driver-timestamps" and a.busy_source == "utilization"
    assert a.window_s_median == pytest.approx(DRIVER_PERIOD_S, abs=1e-5)
    assert a.attribution is not None
    assert a.attribution.input_wait_s == pytest.approx(3.0, abs=0.01)
    assert a.attribution.dominant == CAUSE_INPUT
    assert a.idle_input_wait_correlation == pytest.approx(1.0, abs=1e-3)


def test_fake_nvml_without_driver_samples_uses_ticks() -> None:
    phases: list[Phase] = [
        (t, t + 2.0, 0.75 if k % 2 == 0 else 0.0, 0.25 if k % 2 == 0 else 1.0)
        for k, t in enumerate((1.0, 3.0, 5.0, 7.0))
    ]
    trace = _window_trace(busy_at(phases), TICK_S)
    rig = Rig(FakeGpu(supports_samples=False, utilization=trace))
    a = analyze_gpu(rig.run(10.0), train_from(phases))
    assert a.time_source == "sampler-ticks"
    assert a.attribution is not None
    assert a.attribution.input_wait_s == pytest.approx(3.0, abs=0.01)
    assert a.idle_input_wait_correlation == pytest.approx(1.0, abs=1e-3)


def test_fake_nvml_gpm_present_and_absent() -> None:
    # (the fake reads GPM traces at the midpoint of two GPM samples: no shift needed)
    sm_active = _window_trace(busy_at(ALTERNATING), 0.0)
    with_gpm = Rig(FakeGpu(gpm=True, utilization=fn.constant(100.0), sm_active_pct=sm_active))
    without = Rig(FakeGpu(gpm=False, utilization=fn.constant(100.0), sm_active_pct=sm_active))
    a = analyze_gpu(with_gpm.run(10.0), train_from(ALTERNATING))
    b = analyze_gpu(without.run(10.0), train_from(ALTERNATING))
    # THEN GPM's SM activity exposes the input-wait idle that utilization (100%) hides
    assert a.busy_source == "sm-active" and a.time_source == "gpm-sample-times"
    assert a.attribution is not None and a.attribution.dominant == CAUSE_INPUT
    assert a.attribution.input_wait_s == pytest.approx(3.0, abs=0.01)
    assert b.busy_source == "utilization"
    assert b.gpu_busy_fraction == pytest.approx(1.0)
    assert b.attribution is not None and b.attribution.dominant is None


def test_fake_nvml_readings_failing_throughout_make_the_analysis_unavailable() -> None:
    rig = Rig(FakeGpu())
    rig.nvml.fail("nvmlDeviceGetSamples", fn.NVML_ERROR_GPU_IS_LOST, after=1)
    rig.nvml.fail("nvmlDeviceGetUtilizationRates", fn.NVML_ERROR_GPU_IS_LOST)
    gpu = rig.run(10.0)
    a = analyze_gpu(gpu, train_from(ALTERNATING))
    assert gpu.available and gpu.notes
    assert not a.available
    assert a.reason is not None and a.reason.code == "no-gpu-reading"
    words = reason_words(a.reason)
    assert words.startswith("no GPU utilization reading succeeded")
    assert "NVMLError_GpuIsLost" in words


def test_fake_nvml_error_mid_run_keeps_the_windows_before_it_and_notes_it() -> None:
    # GIVEN utilization readings that fail from 3 s on (30 ticks; +1 for the set-up probe)
    rig = Rig(FakeGpu(utilization=_window_trace(busy_at(ALTERNATING), DRIVER_PERIOD_S)))
    rig.nvml.fail("nvmlDeviceGetSamples", fn.NVML_ERROR_GPU_IS_LOST, after=31)
    rig.nvml.fail("nvmlDeviceGetUtilizationRates", fn.NVML_ERROR_GPU_IS_LOST)
    gpu = rig.run(10.0)
    a = analyze_gpu(gpu, train_from(ALTERNATING))
    # THEN the analysis covers 1-3 s (the last driver sample may fall just after the last
    # good tick), says how little of the run that is, and keeps the sampler's notes
    assert a.available
    assert max(w.end_s for w in a.windows) == pytest.approx(3.0, abs=DRIVER_PERIOD_S + 1e-3)
    assert a.coverage_fraction == pytest.approx(0.25, abs=0.03)
    assert any(reason_words(n).startswith("GPU windows cover only 2") for n in a.notes)
    assert any("GpuIsLost" in reason_words(n) for n in gpu.notes)
    assert a.attribution is not None and a.attribution.input_wait_s == pytest.approx(0.75, abs=0.01)


# -- host contention --------------------------------------------------------------------------


def host_with(process_pct: float, system_pct: float, cores: int = 4) -> HostSection:
    samples = [
        HostSample(
            t_s=0.05 * k,
            process_cpu_pct=process_pct,
            system_cpu_pct=system_pct,
            iowait_pct=0.0,
            per_core_pct=[system_pct] * cores,
            process_rss_bytes=1,
            system_mem_used_pct=10.0,
        )
        for k in range(1, 200)
    ]
    return HostSection(available=True, cpu_count=cores, interval_s=0.05, samples=samples)


def test_contention_other_processes_share_when_input_bound() -> None:
    # GIVEN 4 cores, this process using one (25% of the machine), the machine 75% busy
    train = train_from([(1.0, 9.0, 0.75, 0.25)])
    verdict = Verdict(label="input-bound")
    c = host_contention(host_with(100.0, 75.0), train, verdict)
    # THEN others took half the machine: two cores
    assert c.available and c.contended
    assert c.other_cpu_pct_mean == pytest.approx(50.0)
    assert c.other_cores_mean == pytest.approx(2.0)
    # AND read over the measured steps, where it bears on an input-bound verdict
    assert c.scope == "measured-steps" and c.bears_on_verdict
    # AND a quiet machine is not contended
    quiet = host_contention(host_with(100.0, 26.0), train, verdict)
    assert not quiet.contended and quiet.other_cpu_pct_mean == pytest.approx(1.0)


def test_contention_does_not_bear_on_a_compute_bound_verdict_or_an_unsampled_host() -> None:
    train = train_from([(1.0, 9.0, 0.0, 1.0)])
    c = host_contention(host_with(100.0, 75.0), train, Verdict(label="compute-bound"))
    assert c.contended and not c.bears_on_verdict
    # no measured step: read over the whole run
    whole = host_contention(host_with(100.0, 75.0), TrainSection(), Verdict(label="input-bound"))
    assert whole.scope == "whole-run" and whole.bears_on_verdict
    none = host_contention(HostSection(available=False, reason=Reason("no-psutil")), train)
    assert not none.available and none.reason == Reason("no-psutil")


# -- the report -------------------------------------------------------------------------------


def test_enrich_report_fills_the_verdict_and_round_trips() -> None:
    report = synthetic_report(300, with_gpu=True)  # 9 s of steps: several 1 s windows
    enriched = enrich_report(report)
    assert enriched.gpu_analysis is not None and enriched.gpu_analysis.available
    assert enriched.gpu_analysis.attribution is not None
    assert enriched.verdict.gpu_idle_cause == enriched.gpu_analysis.attribution.dominant
    assert enriched.verdict.gpu_idle_cause == CAUSE_INPUT
    assert enriched.host_contention is not None and enriched.host_contention.available
    assert enrich_report(enriched) == enriched  # idempotent
    assert from_dict(to_dict(enriched)) == enriched


def test_enrich_report_without_gpu_records_why() -> None:
    enriched = enrich_report(synthetic_report(with_gpu=False))
    assert enriched.gpu_analysis is not None and not enriched.gpu_analysis.available
    assert enriched.verdict.gpu_idle_cause is None
    assert from_dict(to_dict(enriched)) == enriched
