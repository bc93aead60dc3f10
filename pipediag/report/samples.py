"""The host and GPU sections of the report: samples over time, and what analysis read there."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipediag.report.reasons import Reason
from pipediag.report.vocabulary import (
    BusySource,
    ContentionScope,
    GpuIdleCause,
    TimeSource,
    UtilSource,
)


@dataclass(frozen=True)
class HostSample:
    """One psutil reading of the host."""

    t_s: float
    process_cpu_pct: float
    system_cpu_pct: float
    iowait_pct: float | None
    per_core_pct: list[float]
    process_rss_bytes: int
    system_mem_used_pct: float
    # The machine's time its hypervisor gave other guests (counted busy in `system_cpu_pct`).
    steal_pct: float | None = None


@dataclass(frozen=True)
class HostSection:
    """Host CPU and memory over the run, from a psutil sampler thread."""

    available: bool
    reason: Reason | None = None
    cpu_count: int = 0
    interval_s: float = 0.0
    samples: list[HostSample] = field(default_factory=list)
    process_cpu_pct_mean: float | None = None
    system_cpu_pct_mean: float | None = None
    iowait_pct_mean: float | None = None
    process_rss_bytes_max: int | None = None
    sampler_cpu_s: float | None = None
    notes: list[Reason] = field(default_factory=list)  # sampler failures, one per kind


@dataclass(frozen=True)
class GpuDevice:
    """A GPU that NVML found."""

    index: int
    name: str
    uuid: str = ""
    memory_total_bytes: int | None = None
    mig_enabled: bool = False  # MIG on: readings are the parent GPU's, not one MIG slice's
    util_source: UtilSource = ""
    gpm_supported: bool = False  # GPU Performance Monitoring (Hopper+): SM activity/occupancy


@dataclass(frozen=True)
class GpuSample:
    """One NVML reading of one device."""

    t_s: float
    device_index: int
    gpu_util_pct: float | None
    mem_util_pct: float | None = None
    mem_used_bytes: int | None = None
    power_w: float | None = None
    sm_clock_mhz: float | None = None
    pcie_rx_bytes_per_s: float | None = None
    pcie_tx_bytes_per_s: float | None = None
    # Session time of the newest driver sample behind gpu_util_pct; None via GetUtilizationRates.
    gpu_util_t_s: float | None = None
    sm_active_pct: float | None = None  # GPM SM activity since the previous GPM reading
    sm_occupancy_pct: float | None = None  # GPM SM occupancy since the previous GPM reading


@dataclass(frozen=True)
class GpuSection:
    """GPU activity over the run, from an NVML sampler thread, or why there is none."""

    available: bool
    reason: Reason | None = None
    driver_version: str | None = None
    devices: list[GpuDevice] = field(default_factory=list)
    interval_s: float = 0.0
    samples: list[GpuSample] = field(default_factory=list)
    gpu_util_pct_mean: float | None = None
    notes: list[Reason] = field(default_factory=list)
    sampler_cpu_s: float | None = None
    calls_per_s: float | None = None  # NVML calls the sampler made per second of sampling


@dataclass(frozen=True)
class GpuWindow:
    """What the GPU and the host did over one NVML window (docs/design.md, "GPU idle causes")."""

    start_s: float
    end_s: float
    gpu_busy_fraction: float
    input_wait_fraction: float  # share of the measured steps' time in the window spent waiting
    step_coverage: float  # share of the window covered by measured steps
    pcie_busy_fraction: float | None = None  # max(RX, TX) over the reference link bandwidth


@dataclass(frozen=True)
class IdleAttribution:
    """GPU idle time by cause over the measured steps' windows, adding up to `idle_s`."""

    window_s: float
    idle_s: float
    input_wait_s: float
    host_overhead_s: float
    transfer_s: float
    dominant: GpuIdleCause | None = None  # the largest cause; None when hardly idle

    def seconds_of(self, cause: GpuIdleCause) -> float:
        by_cause = {"input-wait": self.input_wait_s, "transfer": self.transfer_s}
        return by_cause.get(cause, self.host_overhead_s)

    def share_of(self, cause: GpuIdleCause) -> float:
        return self.seconds_of(cause) / self.idle_s if self.idle_s > 0 else 0.0


@dataclass(frozen=True)
class GpuAnalysis:
    """The GPU's view of the run: busy share, idle causes, and their link to input waits."""

    available: bool
    reason: Reason | None = None
    device_index: int | None = None
    busy_source: BusySource = ""
    time_source: TimeSource = ""
    window_s_median: float | None = None
    windows: list[GpuWindow] = field(default_factory=list)
    gpu_busy_fraction: float | None = None
    input_wait_fraction: float | None = None
    idle_input_wait_correlation: float | None = None  # Pearson r over the windows
    correlation_windows: int = 0
    attribution: IdleAttribution | None = None
    coverage_fraction: float | None = None  # share of measured step time inside a window
    notes: list[Reason] = field(default_factory=list)


@dataclass(frozen=True)
class HostContention:
    """How much of the host's CPU other processes took while the steps were measured: system
    busy share minus this process's (psutil's process percent is per core)."""

    available: bool
    reason: Reason | None = None
    cpu_count: int = 0
    samples: int = 0
    other_cpu_pct_mean: float | None = None  # share of the whole machine, 100 = every core
    other_cpu_pct_max: float | None = None
    other_cores_mean: float | None = None
    process_cpu_pct_mean: float | None = None  # per core, as psutil reports it
    system_cpu_pct_mean: float | None = None
    contended: bool = False
    scope: ContentionScope = ""  # which samples the figures above were read over
    # The verdict leaves room for other processes to starve the input pipeline (input-bound,
    # balanced or uncertain): only then is the contention worth naming.
    bears_on_verdict: bool = False
