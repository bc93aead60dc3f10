"""GPU activity over the run, from NVML (nvidia-ml-py) on a background thread.

Only read-only NVML queries are made: no clock, power, accounting or persistence setting is
ever changed (scalene's accounting-mode change is the counter-example). `pynvml` is imported
inside `start()`, never at module import, so the core runs on machines without it.

Utilization comes from the driver's own timestamped samples (`nvmlDeviceGetSamples`) where it
can: the driver averages utilization over windows of about 1/6 s to 1 s, and its timestamps
place each window on the session clock better than our tick time would. Where the driver has
no samples, `nvmlDeviceGetUtilizationRates` gives the latest window. On Hopper and newer, GPM
adds SM activity and occupancy, which tell "a kernel was running" (utilization) apart from
"the SMs were busy" (activity).
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pipediag.clock import MONOTONIC, Clock, wall_minus_clock
from pipediag.config import DEFAULT_GPU_INTERVAL_S, DEFAULT_MAX_SAMPLES
from pipediag.report.model import GpuDevice, GpuSample, GpuSection
from pipediag.report.vocabulary import UTIL_SOURCE_RATES, UTIL_SOURCE_SAMPLES
from pipediag.samplers.base import (
    ThreadedSampler,
    describe_error,
    mean_int_or_none,
    mean_or_none,
)

T = TypeVar("T")


GPM_MIN_INTERVAL_S = 0.1
"""NVML documents GPM metrics between two samples at least about 100 ms apart."""

GPM_INTERVAL_SLACK_S = 0.001
"""Ticks 0.1 s apart measure 0.0999... s in floating point; a millisecond short is close enough."""

US_PER_S = 1_000_000
"""Driver sample timestamps are microseconds of wall-clock time."""

MW_PER_W = 1000.0
"""nvmlDeviceGetPowerUsage returns milliwatts."""

BYTES_PER_NVML_KB = 1024
"""nvmlDeviceGetPcieThroughput returns KB/s; NVML's KB are 1024 bytes."""


NO_GPU_REASON = "NVML found no GPU"

_VALUE_FIELDS = {
    "NVML_VALUE_TYPE_DOUBLE": "dVal",
    "NVML_VALUE_TYPE_UNSIGNED_INT": "uiVal",
    "NVML_VALUE_TYPE_UNSIGNED_LONG": "ulVal",
    "NVML_VALUE_TYPE_UNSIGNED_LONG_LONG": "ullVal",
    "NVML_VALUE_TYPE_SIGNED_LONG_LONG": "sllVal",
    "NVML_VALUE_TYPE_SIGNED_INT": "siVal",
    "NVML_VALUE_TYPE_UNSIGNED_SHORT": "usVal",
}
"""nvmlSample_t carries a C union; the value type NVML returns says which member to read."""

_INIT_REASONS = {
    "NVMLError_LibraryNotFound": (
        "NVML library not found (no NVIDIA driver): no GPU on this machine"
    ),
    "NVMLError_DriverNotLoaded": (
        "NVIDIA driver not loaded (NVMLError_DriverNotLoaded): no usable GPU"
    ),
    "NVMLError_NoPermission": (
        "no permission to query the GPU through NVML (NVMLError_NoPermission)"
    ),
    "NVMLError_LibRmVersionMismatch": (
        "NVML library and kernel driver versions differ (NVMLError_LibRmVersionMismatch): "
        "reload the driver or reboot"
    ),
}
"""One-line reasons for the NVML initialisation failures a user can act on."""


def _text(value: Any) -> str:
    """Old pynvml versions return bytes for names, UUIDs and versions; new ones str."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def select_visible_devices(
    cuda_visible_devices: str | None, gpus: Sequence[tuple[str, Sequence[str]]]
) -> tuple[list[int], list[str]]:
    """NVML indices of the GPUs this process can use, as CUDA reads `CUDA_VISIBLE_DEVICES`.

    CUDA takes a comma-separated list of indices or UUID prefixes (`GPU-...`, `MIG-...`) and
    stops at the first entry that matches nothing, so `""` and `-1` hide every GPU. A MIG UUID
    selects its parent GPU here, since NVML has no per-MIG utilization.

    Args:
        cuda_visible_devices: the variable's value, None when unset.
        gpus: per NVML index, (GPU UUID, UUIDs of its MIG devices).

    Returns:
        The selected NVML indices in the order given, and notes on entries CUDA would ignore.
    """
    if cuda_visible_devices is None:
        return list(range(len(gpus))), []
    selected: list[int] = []
    notes: list[str] = []
    for raw in cuda_visible_devices.split(","):
        token = raw.strip()
        index = _match_device(token, gpus)
        if index is None:
            if token and not token.startswith("-"):
                notes.append(
                    f"CUDA_VISIBLE_DEVICES entry {token!r} matches no single GPU; CUDA ignores "
                    "it and every entry after it"
                )
            break
        if index not in selected:
            selected.append(index)
    return selected, notes


def _match_device(token: str, gpus: Sequence[tuple[str, Sequence[str]]]) -> int | None:
    if token.isdigit():
        index = int(token)
        return index if index < len(gpus) else None
    prefix = token.lower()
    if not prefix.startswith(("gpu-", "mig-")):
        return None
    matches = [
        i
        for i, (uuid, mig_uuids) in enumerate(gpus)
        if uuid.lower().startswith(prefix) or any(m.lower().startswith(prefix) for m in mig_uuids)
    ]
    return matches[0] if len(matches) == 1 else None


def merge_gpu_samples(earlier: GpuSample, later: GpuSample) -> GpuSample:
    """One sample covering both ticks: means of what was read, timed at the later tick."""
    return GpuSample(
        t_s=later.t_s,
        device_index=later.device_index,
        gpu_util_pct=mean_or_none(earlier.gpu_util_pct, later.gpu_util_pct),
        mem_util_pct=mean_or_none(earlier.mem_util_pct, later.mem_util_pct),
        mem_used_bytes=mean_int_or_none(earlier.mem_used_bytes, later.mem_used_bytes),
        power_w=mean_or_none(earlier.power_w, later.power_w),
        sm_clock_mhz=mean_or_none(earlier.sm_clock_mhz, later.sm_clock_mhz),
        pcie_rx_bytes_per_s=mean_or_none(earlier.pcie_rx_bytes_per_s, later.pcie_rx_bytes_per_s),
        pcie_tx_bytes_per_s=mean_or_none(earlier.pcie_tx_bytes_per_s, later.pcie_tx_bytes_per_s),
        gpu_util_t_s=later.gpu_util_t_s if later.gpu_util_t_s is not None else earlier.gpu_util_t_s,
        sm_active_pct=mean_or_none(earlier.sm_active_pct, later.sm_active_pct),
        sm_occupancy_pct=mean_or_none(earlier.sm_occupancy_pct, later.sm_occupancy_pct),
    )


@dataclass
class _Device:
    """What the sampler keeps about one GPU between ticks."""

    index: int
    handle: Any
    info: GpuDevice
    use_samples: bool = False
    last_sample_us: int = 0
    last_util: tuple[float, float] | None = None  # (pct, clock time) of the newest driver sample
    disabled: set[str] = field(default_factory=set)  # metrics the device does not support
    gpm_samples: list[Any] = field(default_factory=list)  # [previous, next] GPM sample buffers
    gpm_t: float = 0.0
    util_readings: int = 0


class GpuSampler(ThreadedSampler[list[GpuSample]]):
    """NVML readings of the GPUs this process can use, every `interval_s`.

    Each tick yields one `GpuSample` per device. A call that fails is noted once per kind of
    failure and the other readings go on; a metric the device does not support
    (`NVMLError_NotSupported`) is not asked for again.

    Args:
        interval_s: seconds between ticks (default 10 Hz).
        max_samples: ticks kept per device; beyond, the resolution halves.
        clock: the session clock.
        nvml: a module-like object with pynvml's API (tests pass `tests/fake_nvml.FakeNvml`);
            None imports `pynvml` inside `start()`.
        wall_clock: wall-clock seconds, to place driver timestamps on the session clock
            (injectable so tests can pin the offset).
    """

    thread_name = "pipediag-gpu-sampler"

    def __init__(
        self,
        interval_s: float = DEFAULT_GPU_INTERVAL_S,
        max_samples: int = DEFAULT_MAX_SAMPLES,
        clock: Clock = MONOTONIC,
        nvml: Any = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(interval_s=interval_s, max_samples=max_samples, clock=clock)
        self._nvml: Any = nvml
        self._wall_clock = wall_clock
        self._wall_minus_clock_s = 0.0
        self._driver_version: str | None = None
        self._devices: list[_Device] = []
        self._setup_notes: list[str] = []
        self._calls = 0
        self._calls_at_sampling_start = 0
        self._calls_through_last_read = 0
        self._sampling_start_t: float | None = None
        self._util_sum = 0.0
        self._util_count = 0

    # -- NVML plumbing ----------------------------------------------------------------------

    def _call(self, name: str, *args: Any) -> Any:
        """Every NVML call goes through here, so the call rate can be reported."""
        self._calls += 1
        return getattr(self._nvml, name)(*args)

    def _error_class(self, name: str) -> type[BaseException] | tuple[()]:
        cls = getattr(self._nvml, name, None)
        return cls if isinstance(cls, type) and issubclass(cls, BaseException) else ()

    def _is_nvml_error(self, exc: BaseException, name: str = "NVMLError") -> bool:
        cls = self._error_class(name)
        return bool(cls) and isinstance(exc, cls)

    def _permanent(self, exc: BaseException) -> bool:
        """Errors that will not go away on retry: the device or driver lacks the feature."""
        return self._is_nvml_error(exc, "NVMLError_NotSupported") or self._is_nvml_error(
            exc, "NVMLError_FunctionNotFound"
        )

    def _error_name(self, exc: BaseException) -> str:
        return type(exc).__name__ if self._is_nvml_error(exc) else describe_error(exc)

    def _to_clock(self, timestamp_us: int) -> float:
        """A driver timestamp (µs of wall-clock time) on the session clock."""
        return timestamp_us / US_PER_S - self._wall_minus_clock_s

    def _wall_us(self) -> int:
        return int(self._wall_clock() * US_PER_S)

    # -- setup and teardown -----------------------------------------------------------------

    def _setup(self) -> str | None:
        if self._nvml is None:
            try:
                self._nvml = importlib.import_module("pynvml")
            except ImportError:
                return "nvidia-ml-py (pynvml) is not installed: pip install nvidia-ml-py"
        try:
            self._call("nvmlInit")
        except Exception as exc:
            return self._init_reason(exc)
        reason: str | None = "GPU discovery failed"
        try:
            reason = self._discover()
        except Exception as exc:
            reason = f"GPU discovery through NVML failed: {self._error_name(exc)}"
        finally:
            if reason is not None:
                self._shutdown()
        return reason

    def _init_reason(self, exc: BaseException) -> str:
        for name, reason in _INIT_REASONS.items():
            if self._is_nvml_error(exc, name):
                return reason
        return f"NVML failed to initialise: {self._error_name(exc)}"

    def _discover(self) -> str | None:
        """Find the visible GPUs and probe what each supports; a reason if there are none."""
        try:
            self._driver_version = _text(self._call("nvmlSystemGetDriverVersion"))
        except Exception as exc:
            self._setup_notes.append(f"driver version unavailable: {self._error_name(exc)}")
        count = int(self._call("nvmlDeviceGetCount"))
        if count == 0:
            return NO_GPU_REASON
        handles: list[Any] = []
        uuids: list[str] = []
        for index in range(count):
            try:
                handle = self._call("nvmlDeviceGetHandleByIndex", index)
            except Exception as exc:
                handle = None
                self._setup_notes.append(f"GPU {index} skipped: {self._error_name(exc)}")
            handles.append(handle)
            uuids.append(self._uuid(handle) if handle is not None else "")
        mig = [h is not None and self._mig_enabled(h) for h in handles]
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        mig_uuids = [
            self._mig_uuids(h) if visible and "mig-" in visible.lower() and m else []
            for h, m in zip(handles, mig, strict=True)
        ]
        selected, notes = select_visible_devices(visible, list(zip(uuids, mig_uuids, strict=True)))
        self._setup_notes.extend(notes)
        if (
            visible
            and count > 1
            and any(t.strip().isdigit() for t in visible.split(","))
            and os.environ.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID"
        ):
            self._setup_notes.append(
                "CUDA_VISIBLE_DEVICES indices were read in NVML (PCI bus) order; CUDA's default "
                "order can differ on mixed GPUs: set CUDA_DEVICE_ORDER=PCI_BUS_ID to be sure"
            )
        self._wall_minus_clock_s = wall_minus_clock(self._clock, self._wall_clock)
        for index in selected:
            if handles[index] is not None:
                device = self._open_device(index, handles[index], uuids[index], mig[index])
                self._devices.append(device)
        if not self._devices:
            if visible is not None and not selected:
                return f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU from this process"
            return "no visible GPU could be opened through NVML"
        self._sampling_start_t = self._clock.now()
        self._calls_at_sampling_start = self._calls
        return None

    def _uuid(self, handle: Any) -> str:
        try:
            return _text(self._call("nvmlDeviceGetUUID", handle))
        except Exception:
            return ""

    def _optional(self, read: Callable[[], T], default: T, what: str) -> T:
        """A static property of a device; a failure is a note, not a lost device."""
        try:
            return read()
        except Exception as exc:
            self._setup_notes.append(f"{what} unavailable: {self._error_name(exc)}")
            return default

    def _mig_enabled(self, handle: Any) -> bool:
        try:
            current = self._call("nvmlDeviceGetMigMode", handle)[0]
        except Exception:  # NotSupported on GPUs without MIG
            return False
        return bool(current == getattr(self._nvml, "NVML_DEVICE_MIG_ENABLE", 1))

    def _mig_uuids(self, handle: Any) -> list[str]:
        uuids: list[str] = []
        try:
            slots = int(self._call("nvmlDeviceGetMaxMigDeviceCount", handle))
        except Exception:
            return uuids
        for slot in range(slots):
            uuid = self._mig_slot_uuid(handle, slot)
            if uuid:
                uuids.append(uuid)
        return uuids

    def _mig_slot_uuid(self, handle: Any, slot: int) -> str:
        try:
            child = self._call("nvmlDeviceGetMigDeviceHandleByIndex", handle, slot)
            return _text(self._call("nvmlDeviceGetUUID", child))
        except Exception:  # NotFound: an empty MIG slot
            return ""

    def _open_device(self, index: int, handle: Any, uuid: str, mig: bool) -> _Device:
        nv = self._nvml
        name = self._optional(
            lambda: _text(self._call("nvmlDeviceGetName", handle)), "", f"GPU {index} name"
        )
        memory_total = self._optional(
            lambda: int(self._call("nvmlDeviceGetMemoryInfo", handle).total),
            None,
            f"GPU {index} memory size",
        )
        device = _Device(index=index, handle=handle, info=GpuDevice(index, name))
        if mig:
            self._setup_notes.append(
                f"GPU {index} has MIG enabled: NVML gives no per-MIG utilization, so readings "
                "are the whole GPU's (every MIG instance together)"
            )
        # Probe the driver's sample buffer, and skip what it holds from before the session.
        try:
            _, raw = self._call("nvmlDeviceGetSamples", handle, nv.NVML_GPU_UTILIZATION_SAMPLES, 0)
            device.use_samples = True
            device.last_sample_us = max((int(s.timeStamp) for s in raw), default=self._wall_us())
        except Exception as exc:
            if self._is_nvml_error(exc, "NVMLError_NotFound"):  # supported, nothing buffered yet
                device.use_samples = True
                device.last_sample_us = self._wall_us()
            else:
                self._setup_notes.append(
                    f"GPU {index}: driver utilization samples unavailable "
                    f"({self._error_name(exc)}); using nvmlDeviceGetUtilizationRates"
                )
        gpm = self._open_gpm(device)
        device.info = GpuDevice(
            index=index,
            name=name,
            uuid=uuid,
            memory_total_bytes=memory_total,
            mig_enabled=mig,
            util_source=UTIL_SOURCE_SAMPLES if device.use_samples else UTIL_SOURCE_RATES,
            gpm_supported=gpm,
        )
        return device

    def _open_gpm(self, device: _Device) -> bool:
        """Start GPM on Hopper+ (read-only sampling); False when the GPU or driver lacks it."""
        try:
            support = self._call("nvmlGpmQueryDeviceSupport", device.handle)
            if not support.isSupportedDevice:
                raise LookupError("not a GPM device (needs Hopper or newer)")
            device.gpm_samples = [self._call("nvmlGpmSampleAlloc") for _ in range(2)]
            self._call("nvmlGpmSampleGet", device.handle, device.gpm_samples[0])
            device.gpm_t = self._clock.now()
            return True
        except Exception as exc:
            self._free_gpm(device)
            why = str(exc) if isinstance(exc, LookupError) else self._error_name(exc)
            self._setup_notes.append(
                f"GPU {device.index}: SM activity/occupancy (GPM) unavailable: {why}"
            )
            return False

    def _free_gpm(self, device: _Device) -> None:
        samples, device.gpm_samples = device.gpm_samples, []
        for sample in samples:
            self._free_gpm_sample(sample)

    def _free_gpm_sample(self, sample: Any) -> None:
        try:
            self._call("nvmlGpmSampleFree", sample)
        except Exception as exc:
            self._record_failure("gpm-free", f"GPM sample free failed: {self._error_name(exc)}")

    def _teardown(self) -> None:
        for device in self._devices:
            self._free_gpm(device)
        self._shutdown()

    def _shutdown(self) -> None:
        try:
            self._call("nvmlShutdown")
        except Exception as exc:
            self._record_failure("shutdown", f"nvmlShutdown failed: {self._error_name(exc)}")

    # -- readings ---------------------------------------------------------------------------

    def _read(self) -> list[GpuSample]:
        now = self._clock.now()
        samples = [self._read_device(device, now) for device in self._devices]
        self._calls_through_last_read = self._calls
        return samples

    def _read_device(self, d: _Device, now: float) -> GpuSample:
        nv, h = self._nvml, d.handle
        util, util_t, mem_util = self._utilization(d)
        mem_used = self._metric(
            d,
            "memory",
            "memory readings",
            lambda: int(self._call("nvmlDeviceGetMemoryInfo", h).used),
        )
        power = self._metric(
            d,
            "power",
            "power readings",
            lambda: self._call("nvmlDeviceGetPowerUsage", h) / MW_PER_W,
        )
        sm_clock = self._metric(
            d,
            "clock",
            "SM clock readings",
            lambda: float(self._call("nvmlDeviceGetClockInfo", h, nv.NVML_CLOCK_SM)),
        )
        rx = self._metric(
            d,
            "pcie-rx",
            "PCIe RX readings",
            lambda: (
                float(self._call("nvmlDeviceGetPcieThroughput", h, nv.NVML_PCIE_UTIL_RX_BYTES))
                * BYTES_PER_NVML_KB
            ),
        )
        tx = self._metric(
            d,
            "pcie-tx",
            "PCIe TX readings",
            lambda: (
                float(self._call("nvmlDeviceGetPcieThroughput", h, nv.NVML_PCIE_UTIL_TX_BYTES))
                * BYTES_PER_NVML_KB
            ),
        )
        sm_active, sm_occupancy = self._gpm(d, now)
        return GpuSample(
            t_s=now,
            device_index=d.index,
            gpu_util_pct=util,
            mem_util_pct=mem_util,
            mem_used_bytes=mem_used,
            power_w=power,
            sm_clock_mhz=sm_clock,
            pcie_rx_bytes_per_s=rx,
            pcie_tx_bytes_per_s=tx,
            gpu_util_t_s=util_t,
            sm_active_pct=sm_active,
            sm_occupancy_pct=sm_occupancy,
        )

    def _metric(self, d: _Device, key: str, label: str, read: Callable[[], T]) -> T | None:
        """One reading; a failure is noted once per kind and gives None for this tick."""
        if key in d.disabled:
            return None
        try:
            return read()
        except Exception as exc:
            self._note_failure(d, key, label, exc)
            return None

    def _note_failure(self, d: _Device, key: str, label: str, exc: BaseException) -> None:
        name = self._error_name(exc)
        self._record_failure(
            f"{key}:{d.index}:{type(exc).__name__}", f"{label} unavailable on GPU {d.index}: {name}"
        )
        if self._permanent(exc):
            d.disabled.add(key)

    def _utilization(self, d: _Device) -> tuple[float | None, float | None, float | None]:
        """(GPU util %, its session-clock time or None, memory util %) for this tick."""
        if d.use_samples:
            try:
                value_type, raw = self._call(
                    "nvmlDeviceGetSamples",
                    d.handle,
                    self._nvml.NVML_GPU_UTILIZATION_SAMPLES,
                    d.last_sample_us,
                )
            except Exception as exc:
                if not self._is_nvml_error(exc, "NVMLError_NotFound"):  # NotFound: none new
                    self._note_failure(d, "util-samples", "driver utilization samples", exc)
                    if self._permanent(exc):
                        d.use_samples = False
                    return self._utilization_rates(d)
                raw = []
            fresh = [
                (int(s.timeStamp), self._sample_value(value_type, s))
                for s in raw
                if int(s.timeStamp) > d.last_sample_us
            ]
            if fresh:
                d.last_sample_us = max(ts for ts, _ in fresh)
                values = [v for _, v in fresh]
                d.last_util = (sum(values) / len(values), self._to_clock(d.last_sample_us))
                with self._lock:
                    self._util_sum += sum(values)
                    self._util_count += len(values)
            if d.last_util is None:
                return None, None, None
            d.util_readings += 1
            return d.last_util[0], d.last_util[1], None
        return self._utilization_rates(d)

    def _utilization_rates(self, d: _Device) -> tuple[float | None, float | None, float | None]:
        rates = self._metric(
            d,
            "util",
            "GPU utilization",
            lambda: self._call("nvmlDeviceGetUtilizationRates", d.handle),
        )
        if rates is None:
            return None, None, None
        gpu = float(rates.gpu)
        with self._lock:
            self._util_sum += gpu
            self._util_count += 1
        d.util_readings += 1
        return gpu, None, float(rates.memory)

    def _sample_value(self, value_type: int, sample: Any) -> float:
        for constant, member in _VALUE_FIELDS.items():
            if getattr(self._nvml, constant, None) == value_type:
                return float(getattr(sample.sampleValue, member))
        return float(sample.sampleValue.uiVal)  # utilization samples are unsigned ints

    def _gpm(self, d: _Device, now: float) -> tuple[float | None, float | None]:
        """SM activity and occupancy since the last GPM sample, once it is old enough."""
        if (
            not d.gpm_samples
            or "gpm" in d.disabled
            or now - d.gpm_t < GPM_MIN_INTERVAL_S - GPM_INTERVAL_SLACK_S
        ):
            return None, None
        nv = self._nvml
        try:
            previous, following = d.gpm_samples
            self._call("nvmlGpmSampleGet", d.handle, following)
            request = nv.c_nvmlGpmMetricsGet_t()
            request.version = nv.NVML_GPM_METRICS_GET_VERSION
            request.numMetrics = 2
            request.sample1 = previous
            request.sample2 = following
            request.metrics[0].metricId = nv.NVML_GPM_METRIC_SM_UTIL
            request.metrics[1].metricId = nv.NVML_GPM_METRIC_SM_OCCUPANCY
            self._call("nvmlGpmMetricsGet", request)
        except Exception as exc:
            self._note_failure(d, "gpm", "SM activity/occupancy (GPM) readings", exc)
            return None, None
        d.gpm_samples = [following, previous]
        d.gpm_t = now
        success = getattr(nv, "NVML_SUCCESS", 0)
        values = [
            float(m.value) if m.nvmlReturn == success else None for m in list(request.metrics)[:2]
        ]
        return values[0], values[1]

    def _merge(self, earlier: list[GpuSample], later: list[GpuSample]) -> list[GpuSample]:
        return [merge_gpu_samples(a, b) for a, b in zip(earlier, later, strict=True)]

    # -- the report section -----------------------------------------------------------------

    def section(self, t0: float) -> GpuSection:
        """The report section, with times in seconds since `t0` (the session start).

        Args:
            t0: `clock.now()` at the start of the session.
        """
        if not self._started:
            return GpuSection(available=False, reason="GPU sampler was not started")
        notes = list(self._setup_notes) + self._failure_notes()
        if self._unavailable_reason is not None:
            return GpuSection(
                available=False,
                reason=self._unavailable_reason,
                driver_version=self._driver_version,
                notes=notes,
            )
        ticks, interval_s = self._snapshot()
        with self._lock:
            readings = self._readings
            util_sum, util_count = self._util_sum, self._util_count
            last_t = self._last_reading_t
            calls = self._calls_through_last_read - self._calls_at_sampling_start
        notes.extend(
            f"no GPU utilization reading succeeded on GPU {d.index}"
            for d in self._devices
            if readings and not d.util_readings
        )
        samples = [
            GpuSample(
                t_s=s.t_s - t0,
                device_index=s.device_index,
                gpu_util_pct=s.gpu_util_pct,
                mem_util_pct=s.mem_util_pct,
                mem_used_bytes=s.mem_used_bytes,
                power_w=s.power_w,
                sm_clock_mhz=s.sm_clock_mhz,
                pcie_rx_bytes_per_s=s.pcie_rx_bytes_per_s,
                pcie_tx_bytes_per_s=s.pcie_tx_bytes_per_s,
                gpu_util_t_s=None if s.gpu_util_t_s is None else s.gpu_util_t_s - t0,
                sm_active_pct=s.sm_active_pct,
                sm_occupancy_pct=s.sm_occupancy_pct,
            )
            for tick in ticks
            for s in tick
        ]
        calls_per_s = None
        if self._sampling_start_t is not None and last_t is not None:
            span = last_t - self._sampling_start_t
            calls_per_s = calls / span if span > 0 else None
        return GpuSection(
            available=True,
            driver_version=self._driver_version,
            devices=[d.info for d in self._devices],
            interval_s=interval_s,
            samples=samples,
            gpu_util_pct_mean=util_sum / util_count if util_count else None,
            notes=notes,
            sampler_cpu_s=self._sampler_cpu_s,
            calls_per_s=calls_per_s,
        )
