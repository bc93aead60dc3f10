"""GPU activity over the run, from read-only NVML queries on a background thread: the sampler's
life, its per-tick readings (each kind of failure noted once, unsupported metrics dropped) and
report section (the devices: `nvml_devices.py`; docs/design.md, "NVML facts")."""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from pipediag.clock import MONOTONIC, Clock
from pipediag.config import DEFAULT_GPU_INTERVAL_S, DEFAULT_MAX_SAMPLES
from pipediag.report.reasons import Reason, ReasonCode
from pipediag.report.samples import GpuSample, GpuSection
from pipediag.samplers.base import ThreadedSampler, mean_int_or_none, mean_or_none
from pipediag.samplers.nvml_devices import NvmlDevice, NvmlDevices

T = TypeVar("T")

GPM_MIN_INTERVAL_S = 0.1  # NVML documents GPM metrics between samples >= ~100 ms apart
# Ticks 0.1 s apart measure 0.0999... s in floating point; a millisecond short is close enough.
GPM_INTERVAL_SLACK_S = 0.001
MW_PER_W = 1000.0  # nvmlDeviceGetPowerUsage returns milliwatts
BYTES_PER_NVML_KB = 1024  # nvmlDeviceGetPcieThroughput returns KB/s of 1024 bytes
# nvmlSample_t carries a C union; the value type NVML returns says which member to read.
_VALUE_FIELDS = {
    "NVML_VALUE_TYPE_DOUBLE": "dVal",
    "NVML_VALUE_TYPE_UNSIGNED_INT": "uiVal",
    "NVML_VALUE_TYPE_UNSIGNED_LONG": "ulVal",
    "NVML_VALUE_TYPE_UNSIGNED_LONG_LONG": "ullVal",
    "NVML_VALUE_TYPE_SIGNED_LONG_LONG": "sllVal",
    "NVML_VALUE_TYPE_SIGNED_INT": "siVal",
    "NVML_VALUE_TYPE_UNSIGNED_SHORT": "usVal",
}


def merge_gpu_samples(earlier: GpuSample, later: GpuSample) -> GpuSample:
    """One sample covering both ticks: means of what was read, timed at the later tick."""
    return replace(
        later,
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


class GpuSampler(ThreadedSampler[list[GpuSample]]):
    """A `GpuSample` per usable GPU a tick; `nvml`: pynvml's API (a fake in tests; None: import)."""

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
        self._gpus = NvmlDevices(
            nvml, clock=clock, wall_clock=wall_clock, record_failure=self._record_failure
        )
        # Whole-run utilization totals, under the lock (consistent with the reading count).
        self._util_sum, self._util_count = 0.0, 0
        self._calls_at_sampling_start = self._calls_through_last_read = 0
        self._sampling_start_t: float | None = None

    def _setup(self) -> Reason | None:
        gpus = self._gpus
        if gpus.nvml is None:
            try:
                gpus.nvml = importlib.import_module("pynvml")
            except ImportError:
                return Reason("no-pynvml")
        try:
            gpus.call("nvmlInit")
        except Exception as exc:
            return gpus.init_reason(exc)
        try:
            reason = gpus.discover()
        except Exception as exc:
            reason = Reason("gpu-discovery-failed", detail=gpus.error_name(exc))
        except BaseException:
            gpus.shutdown()
            raise
        if reason is not None:
            gpus.shutdown()
        else:
            self._sampling_start_t = self._clock.now()
            self._calls_at_sampling_start = gpus.calls
        return reason

    def _teardown(self) -> None:
        self._gpus.close()

    def _read(self) -> list[GpuSample]:
        now = self._clock.now()
        samples = [self._read_device(device, now) for device in self._gpus.devices]
        self._calls_through_last_read = self._gpus.calls
        return samples

    def _merge(self, earlier: list[GpuSample], later: list[GpuSample]) -> list[GpuSample]:
        return [merge_gpu_samples(a, b) for a, b in zip(earlier, later, strict=True)]

    def section(self, t0: float) -> GpuSection:
        """The report section; times in seconds since `t0`, the session's start."""
        if not self._started:
            return GpuSection(available=False, reason=Reason("gpu-sampler-not-started"))
        notes = list(self._gpus.setup_notes) + self._failure_notes()
        if self._unavailable_reason is not None:
            return GpuSection(
                available=False,
                reason=self._unavailable_reason,
                driver_version=self._gpus.driver_version,
                notes=notes,
            )
        ticks, interval_s = self._snapshot()
        with self._lock:
            readings = self._readings
            util_sum, util_count = self._util_sum, self._util_count
            last_t = self._last_reading_t
            calls = self._calls_through_last_read - self._calls_at_sampling_start
        notes.extend(
            Reason("no-util-reading-on-gpu", value=d.index)
            for d in self._gpus.devices
            if readings and not d.util_readings
        )
        samples = [
            replace(
                s,
                t_s=s.t_s - t0,
                gpu_util_t_s=None if s.gpu_util_t_s is None else s.gpu_util_t_s - t0,
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
            driver_version=self._gpus.driver_version,
            devices=[d.info for d in self._gpus.devices],
            interval_s=interval_s,
            samples=samples,
            gpu_util_pct_mean=util_sum / util_count if util_count else None,
            notes=notes,
            sampler_cpu_s=self._sampler_cpu_s,
            calls_per_s=calls_per_s,
        )

    def _read_device(self, d: NvmlDevice, now: float) -> GpuSample:
        nv, h = self._gpus.nvml, d.handle
        util, util_t, mem_util = self._utilization(d)
        call = self._gpus.call
        mem_used = self._metric(
            d, "gpu-memory-unavailable", lambda: int(call("nvmlDeviceGetMemoryInfo", h).used)
        )
        power = self._metric(
            d, "gpu-power-unavailable", lambda: call("nvmlDeviceGetPowerUsage", h) / MW_PER_W
        )
        sm_clock = self._metric(
            d,
            "gpu-clock-unavailable",
            lambda: float(call("nvmlDeviceGetClockInfo", h, nv.NVML_CLOCK_SM)),
        )
        rx = self._pcie(d, "gpu-pcie-rx-unavailable", nv.NVML_PCIE_UTIL_RX_BYTES)
        tx = self._pcie(d, "gpu-pcie-tx-unavailable", nv.NVML_PCIE_UTIL_TX_BYTES)
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

    def _pcie(self, d: NvmlDevice, unavailable: ReasonCode, counter: int) -> float | None:
        """PCIe throughput one way, in bytes/s."""
        call = self._gpus.call
        return self._metric(
            d,
            unavailable,
            lambda: (
                float(call("nvmlDeviceGetPcieThroughput", d.handle, counter)) * BYTES_PER_NVML_KB
            ),
        )

    def _metric(self, d: NvmlDevice, unavailable: ReasonCode, read: Callable[[], T]) -> T | None:
        """One reading; a failure is noted once per kind and gives None for this tick."""
        if unavailable in d.disabled:
            return None
        try:
            return read()
        except Exception as exc:
            self._note_failure(d, unavailable, exc)
            return None

    def _note_failure(self, d: NvmlDevice, unavailable: ReasonCode, exc: BaseException) -> None:
        """`unavailable`: the metric's code, which also keys its failures and its switch-off."""
        reason = Reason(unavailable, value=d.index, detail=self._gpus.error_name(exc))
        self._record_failure(f"{unavailable}:{d.index}:{type(exc).__name__}", reason)
        if self._gpus.is_permanent(exc):
            d.disabled.add(unavailable)

    def _utilization(self, d: NvmlDevice) -> tuple[float | None, float | None, float | None]:
        """(GPU util %, its session-clock time or None, memory util %) for this tick."""
        if not d.use_samples:
            return self._utilization_rates(d)
        try:
            value_type, raw = self._gpus.call(
                "nvmlDeviceGetSamples",
                d.handle,
                self._gpus.nvml.NVML_GPU_UTILIZATION_SAMPLES,
                d.last_sample_us,
            )
        except Exception as exc:
            if not self._gpus.is_nvml_error(exc, "NVMLError_NotFound"):  # NotFound: none new
                self._note_failure(d, "gpu-util-samples-unavailable", exc)
                if self._gpus.is_permanent(exc):
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
            d.last_util = (sum(values) / len(values), self._gpus.to_clock(d.last_sample_us))
            self._add_util(sum(values), len(values))
        if d.last_util is None:
            return None, None, None
        d.util_readings += 1
        return d.last_util[0], d.last_util[1], None

    def _utilization_rates(self, d: NvmlDevice) -> tuple[float | None, float | None, float | None]:
        call = self._gpus.call
        rates = self._metric(
            d, "gpu-util-unavailable", lambda: call("nvmlDeviceGetUtilizationRates", d.handle)
        )
        if rates is None:
            return None, None, None
        gpu = float(rates.gpu)
        self._add_util(gpu, 1)
        d.util_readings += 1
        return gpu, None, float(rates.memory)

    def _add_util(self, total: float, count: int) -> None:
        with self._lock:
            self._util_sum += total
            self._util_count += count

    def _sample_value(self, value_type: int, sample: Any) -> float:
        for constant, member in _VALUE_FIELDS.items():
            if getattr(self._gpus.nvml, constant, None) == value_type:
                return float(getattr(sample.sampleValue, member))
        return float(sample.sampleValue.uiVal)  # utilization samples are unsigned ints

    def _gpm(self, d: NvmlDevice, now: float) -> tuple[float | None, float | None]:
        """SM activity and occupancy since the last GPM sample, once it is old enough."""
        if not d.gpm_samples or "gpu-gpm-unavailable" in d.disabled:
            return None, None
        if now - d.gpm_t < GPM_MIN_INTERVAL_S - GPM_INTERVAL_SLACK_S:
            return None, None
        nv = self._gpus.nvml
        try:
            previous, following = d.gpm_samples
            self._gpus.call("nvmlGpmSampleGet", d.handle, following)
            request = nv.c_nvmlGpmMetricsGet_t()
            request.version = nv.NVML_GPM_METRICS_GET_VERSION
            request.numMetrics = 2
            request.sample1 = previous
            request.sample2 = following
            request.metrics[0].metricId = nv.NVML_GPM_METRIC_SM_UTIL
            request.metrics[1].metricId = nv.NVML_GPM_METRIC_SM_OCCUPANCY
            self._gpus.call("nvmlGpmMetricsGet", request)
        except Exception as exc:
            self._note_failure(d, "gpu-gpm-unavailable", exc)
            return None, None
        d.gpm_samples = [following, previous]
        d.gpm_t = now
        success = getattr(nv, "NVML_SUCCESS", 0)
        values = [
            float(m.value) if m.nvmlReturn == success else None for m in list(request.metrics)[:2]
        ]
        return values[0], values[1]
