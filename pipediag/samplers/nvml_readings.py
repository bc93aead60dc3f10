"""The per-tick NVML readings of each open GPU, for the GPU sampler (docs/design.md, "NVML
facts"): each kind of failure noted once, unsupported metrics dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from pipediag.report.reasons import Reason, ReasonCode
from pipediag.report.samples import GpuSample
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


class NvmlReader:
    """One `GpuSample` per open device each tick, and the whole-run utilization totals
    (updated under the sampler's `lock`, consistent with its reading count)."""

    def __init__(
        self,
        gpus: NvmlDevices,
        *,
        record_failure: Callable[[str, Reason], None],
        lock: threading.Lock,
    ) -> None:
        self._gpus = gpus
        self._record_failure = record_failure
        self._lock = lock
        self.util_sum = 0.0
        self.util_count = 0

    def read(self, now: float) -> list[GpuSample]:
        return [self._read_device(device, now) for device in self._gpus.devices]

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
            self.util_sum += total
            self.util_count += count

    def _sample_value(self, value_type: int, sample: Any) -> float:
        for constant, member in _VALUE_FIELDS.items():
            if getattr(self._gpus.nvml, constant, None) == value_type:
                return float(getattr(sample.sampleValue, member))
        return float(sample.sampleValue.uiVal)  # utilization samples are unsigned ints

    def _gpm(self, d: NvmlDevice, now: float) -> tuple[float | None, float | None]:
        """SM activity and occupancy since the last GPM sample, once it is old enough."""
        if (
            not d.gpm_samples
            or "gpu-gpm-unavailable" in d.disabled
            or now - d.gpm_t < GPM_MIN_INTERVAL_S - GPM_INTERVAL_SLACK_S
        ):
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
