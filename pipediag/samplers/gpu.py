"""GPU activity over the run, from read-only NVML queries on a background thread: the sampler's
life and report section (the queries: `nvml_devices.py`, `nvml_readings.py`; docs/design.md,
"NVML facts")."""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pipediag.clock import MONOTONIC, Clock
from pipediag.config import DEFAULT_GPU_INTERVAL_S, DEFAULT_MAX_SAMPLES
from pipediag.report.reasons import Reason
from pipediag.report.samples import GpuSample, GpuSection
from pipediag.samplers.base import ThreadedSampler, mean_int_or_none, mean_or_none
from pipediag.samplers.nvml_devices import NvmlDevices
from pipediag.samplers.nvml_readings import NvmlReader


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
    """One `GpuSample` per usable GPU a tick. `nvml`: pynvml's API (tests pass
    `tests/fake_nvml.FakeNvml`), None to import `pynvml` in `start()`."""

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
        self._reader = NvmlReader(self._gpus, record_failure=self._record_failure, lock=self._lock)
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
        samples = self._reader.read(self._clock.now())
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
            util_sum, util_count = self._reader.util_sum, self._reader.util_count
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
