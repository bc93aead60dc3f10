"""A scripted stand-in for the `pynvml` module (nvidia-ml-py), for tests without a GPU.

`FakeNvml` is a module-like object: the function names, constants and `NVMLError` classes
(`NVMLError_NotSupported`, `NVMLError_LibraryNotFound`, ...) are those pynvml uses, so code
written against pynvml runs unchanged against it (`GpuSampler(nvml=FakeNvml(...))`). Only
read-only queries exist: a sampler that tries to change a device setting gets AttributeError.

What it scripts:
- GPUs (`FakeGpu`): name, UUID, memory, power, SM clock, PCIe throughput, and utilization,
  SM activity and SM occupancy as *traces*: functions of seconds since `FakeNvml.epoch`
  (`constant`, `steps`, `from_values` build them).
- Driver utilization samples (`nvmlDeviceGetSamples`): one every `sample_period_s` of wall
  time, stamped in microseconds of the fake's wall clock, starting `history_s` before the
  epoch (as a real driver holds history from before the process started), in a ring of
  `DRIVER_RING_SAMPLES`; `NVMLError_NotFound` when nothing is newer than the caller's
  timestamp, as the real driver does.
- Switches: `library_missing` / `init_error` (nvmlInit fails), no GPUs (`gpus=[]`),
  `FakeGpu(supports_samples=False)` (only GetUtilizationRates), `FakeGpu(gpm=True)`
  (Hopper-style GPM), `FakeGpu(mig_enabled=True, mig_uuids=[...])`, several GPUs, and
  `fail(function, code, ...)` to make any call raise an NVMLError from its Nth call on.
- `calls` counts every call by function name, so tests can assert what was (not) called.

Time: pass `wall=` (seconds, like `time.time`). With a `synthetic_reports.FakeClock`, use
`wall_clock_for(clock)` so that wall time moves with the fake clock at a fixed offset, and the
expected session time of a driver sample is exactly `ts_us / 1e6 - offset`.

Example:
    clock = FakeClock()
    wall = wall_clock_for(clock)
    nvml = FakeNvml([FakeGpu(utilization=steps([(0.0, 10.0), (1.0, 90.0)]))], wall=wall)
    nvml.fail("nvmlDeviceGetPowerUsage", NVML_ERROR_NOT_SUPPORTED)
    sampler = GpuSampler(clock=clock, nvml=nvml, wall_clock=wall)
"""

from __future__ import annotations

import math
import string
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

Trace = Callable[[float], float]
"""A scripted quantity: its value at `t` seconds since the fake's epoch (wall clock)."""

# -- constants, with pynvml's names and values -------------------------------------------------

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_ALREADY_INITIALIZED = 5
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_ERROR_INSUFFICIENT_POWER = 8
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_IRQ_ISSUE = 11
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_CORRUPTED_INFOROM = 14
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_RESET_REQUIRED = 16
NVML_ERROR_OPERATING_SYSTEM = 17
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18
NVML_ERROR_IN_USE = 19
NVML_ERROR_MEMORY = 20
NVML_ERROR_NO_DATA = 21
NVML_ERROR_UNKNOWN = 999

NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_PCIE_UTIL_TX_BYTES = 0
NVML_PCIE_UTIL_RX_BYTES = 1
NVML_TOTAL_POWER_SAMPLES = 0
NVML_GPU_UTILIZATION_SAMPLES = 1
NVML_MEMORY_UTILIZATION_SAMPLES = 2
NVML_VALUE_TYPE_DOUBLE = 0
NVML_VALUE_TYPE_UNSIGNED_INT = 1
NVML_VALUE_TYPE_UNSIGNED_LONG = 2
NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3
NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4
NVML_VALUE_TYPE_SIGNED_INT = 5
NVML_VALUE_TYPE_UNSIGNED_SHORT = 6
NVML_DEVICE_MIG_DISABLE = 0
NVML_DEVICE_MIG_ENABLE = 1
NVML_DEVICE_ARCH_AMPERE = 7
NVML_DEVICE_ARCH_HOPPER = 9
NVML_GPM_METRIC_GRAPHICS_UTIL = 1
NVML_GPM_METRIC_SM_UTIL = 2
NVML_GPM_METRIC_SM_OCCUPANCY = 3
NVML_GPM_METRICS_GET_VERSION = 1
NVML_GPM_SUPPORT_VERSION = 1
FAKE_GPM_METRIC_SLOTS = 8
"""pynvml's request struct has NVML_GPM_METRIC_MAX slots; a few are enough for a fake."""

DRIVER_SAMPLE_PERIOD_S = 1 / 6
"""The driver's utilization window at its finest: about 1/6 s to 1 s (docs/design.md, "NVML
facts")."""

DRIVER_RING_SAMPLES = 100
"""The driver keeps a bounded history of samples; older ones are overwritten."""

DEFAULT_WALL_OFFSET_S = 1_700_000_000.0
"""`wall_clock_for` places the fake wall clock this far from the session clock (late 2023)."""


# -- errors, generated as pynvml generates them -------------------------------------------------


class NVMLError(Exception):
    """pynvml's base error: `NVMLError(code)` builds the subclass for that code."""

    _value_class: dict[int, type[NVMLError]] = {}
    value: int

    def __new__(cls, value: int) -> NVMLError:
        if cls is NVMLError:
            cls = NVMLError._value_class.get(value, cls)
        obj = Exception.__new__(cls)
        obj.value = value
        return obj

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return _ERROR_STRINGS.get(self.value, f"NVML Error with code {self.value}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (NVMLError, (self.value,))


_ERROR_STRINGS = {
    NVML_ERROR_UNINITIALIZED: "Uninitialized",
    NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
    NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    NVML_ERROR_NO_PERMISSION: "Insufficient Permissions",
    NVML_ERROR_NOT_FOUND: "Not Found",
    NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
    NVML_ERROR_TIMEOUT: "Timeout",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
    NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
    NVML_ERROR_GPU_IS_LOST: "GPU is lost",
    NVML_ERROR_UNKNOWN: "Unknown Error",
}


def _error_class_name(constant: str) -> str:
    """NVML_ERROR_LIB_RM_VERSION_MISMATCH -> NVMLError_LibRmVersionMismatch, as pynvml does."""
    words = string.capwords(constant.replace("NVML_ERROR_", ""), "_").replace("_", "")
    return f"NVMLError_{words}"


ERROR_CLASSES: dict[str, type[NVMLError]] = {}
"""Every NVMLError subclass by name, e.g. ERROR_CLASSES["NVMLError_NotSupported"]."""

for _constant, _code in list(globals().items()):
    if _constant.startswith("NVML_ERROR_") and isinstance(_code, int):
        _cls = type(_error_class_name(_constant), (NVMLError,), {})
        ERROR_CLASSES[_cls.__name__] = _cls
        NVMLError._value_class[_code] = _cls
        globals()[_cls.__name__] = _cls

NVMLError_NotSupported = ERROR_CLASSES["NVMLError_NotSupported"]
NVMLError_NotFound = ERROR_CLASSES["NVMLError_NotFound"]
NVMLError_LibraryNotFound = ERROR_CLASSES["NVMLError_LibraryNotFound"]
NVMLError_Uninitialized = ERROR_CLASSES["NVMLError_Uninitialized"]


# -- traces -------------------------------------------------------------------------------------


def constant(value: float) -> Trace:
    """The same value at all times."""
    return lambda _t: value


def steps(points: Sequence[tuple[float, float]]) -> Trace:
    """Piecewise constant: `[(0.0, 10.0), (2.0, 90.0)]` is 10 until t=2 s, then 90.

    Before the first point, the first value holds.
    """
    ordered = sorted(points)

    def trace(t: float) -> float:
        value = ordered[0][1]
        for start, v in ordered:
            if t >= start:
                value = v
        return value

    return trace


def from_values(values: Sequence[float], period_s: float) -> Trace:
    """`values[k]` during [k * period_s, (k + 1) * period_s); the last value after the end."""

    def trace(t: float) -> float:
        k = min(len(values) - 1, max(0, math.floor(t / period_s)))
        return values[k]

    return trace


def wall_clock_for(clock: Any, offset_s: float = DEFAULT_WALL_OFFSET_S) -> Callable[[], float]:
    """A wall clock that moves with `clock` (e.g. a FakeClock), `offset_s` ahead of it."""
    return lambda: clock.now() + offset_s


# -- scripted devices ---------------------------------------------------------------------------


@dataclass
class FakeGpu:
    """One scripted GPU. Traces take seconds since the fake's epoch (wall clock)."""

    name: str = "NVIDIA H200"
    uuid: str = ""  # "" -> GPU-00000000-0000-0000-0000-00000000000<index>
    memory_total_bytes: int = 141 * 2**30
    memory_used_bytes: int = 2 * 2**30
    utilization: Trace = field(default_factory=lambda: constant(50.0))
    memory_utilization: Trace = field(default_factory=lambda: constant(10.0))
    power_mw: int = 300_000
    sm_clock_mhz: int = 1980
    pcie_rx_kb_s: int = 1000
    pcie_tx_kb_s: int = 500
    supports_samples: bool = True
    sample_period_s: float = DRIVER_SAMPLE_PERIOD_S
    gpm: bool = False
    sm_active_pct: Trace = field(default_factory=lambda: constant(40.0))
    sm_occupancy_pct: Trace = field(default_factory=lambda: constant(20.0))
    mig_enabled: bool = False
    mig_uuids: list[str] = field(default_factory=list)
    architecture: int = NVML_DEVICE_ARCH_HOPPER


@dataclass(frozen=True)
class FakeHandle:
    """A device handle: a GPU, or one MIG slot of it."""

    gpu: int
    mig_slot: int | None = None


class FakeSampleValue:
    """The `c_nvmlValue_t` union: every member reads the same number."""

    def __init__(self, value: float) -> None:
        self.dVal = float(value)
        self.uiVal = self.ulVal = self.ullVal = self.sllVal = self.siVal = self.usVal = int(value)


@dataclass
class FakeSample:
    """One `c_nvmlSample_t`: a wall-clock timestamp in µs and a value."""

    timeStamp: int  # pynvml's field names
    sampleValue: FakeSampleValue


@dataclass
class FakeGpmSample:
    """An opaque GPM sample buffer; the fake remembers which GPU filled it, and when."""

    gpu: int | None = None
    wall_s: float | None = None
    freed: bool = False


@dataclass
class FakeGpmMetric:
    metricId: int = 0
    nvmlReturn: int = NVML_SUCCESS
    value: float = 0.0


class FakeGpmMetricsGet:
    """Stand-in for `pynvml.c_nvmlGpmMetricsGet_t`."""

    def __init__(self) -> None:
        self.version = 0
        self.numMetrics = 0
        self.sample1: FakeGpmSample | None = None
        self.sample2: FakeGpmSample | None = None
        self.metrics = [FakeGpmMetric() for _ in range(FAKE_GPM_METRIC_SLOTS)]


@dataclass
class Failure:
    """A scripted failure: `function` raises NVMLError(code) on matching calls.

    The first `after` matching calls succeed; then `times` calls fail (None: all of them).
    `gpu` restricts it to calls on that GPU's handle (None: any call).
    """

    function: str
    code: int
    gpu: int | None = None
    after: int = 0
    times: int | None = None
    seen: int = 0
    raised: int = 0


class FakeNvml:
    """A module-like fake of pynvml over scripted GPUs. See the module docstring.

    Args:
        gpus: the GPUs, in NVML index order.
        wall: wall-clock seconds; driver timestamps come from it.
        epoch: wall time that traces call t=0; defaults to `wall()` at construction.
        library_missing: nvmlInit raises NVMLError_LibraryNotFound, as with no driver.
        init_error: an NVML error code nvmlInit raises instead.
        driver_version: what nvmlSystemGetDriverVersion returns.
        history_s: how much driver sample history exists before the epoch.
    """

    NVMLError = NVMLError
    c_nvmlGpmMetricsGet_t = FakeGpmMetricsGet

    def __init__(
        self,
        gpus: Sequence[FakeGpu] = (FakeGpu(),),
        *,
        wall: Callable[[], float] = time.time,
        epoch: float | None = None,
        library_missing: bool = False,
        init_error: int | None = None,
        driver_version: str = "550.54.15",
        history_s: float = 2.0,
    ) -> None:
        self.gpus = list(gpus)
        for i, gpu in enumerate(self.gpus):
            if not gpu.uuid:
                gpu.uuid = f"GPU-00000000-0000-0000-0000-{i:012d}"
        self.wall = wall
        self.epoch = wall() if epoch is None else epoch
        self.init_error = NVML_ERROR_LIBRARY_NOT_FOUND if library_missing else init_error
        self.driver_version = driver_version
        self.history_s = history_s
        self.init_count = 0
        self.calls: Counter[str] = Counter()
        self.failures: list[Failure] = []
        self.gpm_allocated: list[FakeGpmSample] = []

    # -- scripting ------------------------------------------------------------------------

    def fail(
        self,
        function: str,
        code: int = NVML_ERROR_UNKNOWN,
        *,
        gpu: int | None = None,
        after: int = 0,
        times: int | None = None,
    ) -> Failure:
        """Make `function` raise NVMLError(code) after `after` good calls, `times` times."""
        failure = Failure(function, code, gpu, after, times)
        self.failures.append(failure)
        return failure

    def now_t(self) -> float:
        """Seconds since the epoch on the fake's wall clock: where the traces are read."""
        return self.wall() - self.epoch

    @property
    def initialised(self) -> bool:
        return self.init_count > 0

    def _enter(self, function: str, handle: FakeHandle | None = None) -> None:
        self.calls[function] += 1
        if function != "nvmlInit" and not self.initialised:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)
        for failure in self.failures:
            if failure.function != function:
                continue
            if failure.gpu is not None and (handle is None or handle.gpu != failure.gpu):
                continue
            failure.seen += 1
            if failure.seen > failure.after and (
                failure.times is None or failure.raised < failure.times
            ):
                failure.raised += 1
                raise NVMLError(failure.code)

    def _gpu(self, handle: FakeHandle) -> FakeGpu:
        if not isinstance(handle, FakeHandle) or not 0 <= handle.gpu < len(self.gpus):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return self.gpus[handle.gpu]

    # -- init ----------------------------------------------------------------------------

    def nvmlInit(self) -> None:
        self._enter("nvmlInit")
        if self.init_error is not None:
            raise NVMLError(self.init_error)
        self.init_count += 1

    def nvmlShutdown(self) -> None:
        self._enter("nvmlShutdown")
        self.init_count -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        self._enter("nvmlSystemGetDriverVersion")
        return self.driver_version

    # -- devices -------------------------------------------------------------------------

    def nvmlDeviceGetCount(self) -> int:
        self._enter("nvmlDeviceGetCount")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeHandle:
        self._enter("nvmlDeviceGetHandleByIndex", FakeHandle(index))
        if not 0 <= index < len(self.gpus):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return FakeHandle(index)

    def nvmlDeviceGetName(self, handle: FakeHandle) -> str:
        self._enter("nvmlDeviceGetName", handle)
        return self._gpu(handle).name

    def nvmlDeviceGetUUID(self, handle: FakeHandle) -> str:
        self._enter("nvmlDeviceGetUUID", handle)
        gpu = self._gpu(handle)
        if handle.mig_slot is not None:
            return gpu.mig_uuids[handle.mig_slot]
        return gpu.uuid

    def nvmlDeviceGetArchitecture(self, handle: FakeHandle) -> int:
        self._enter("nvmlDeviceGetArchitecture", handle)
        return self._gpu(handle).architecture

    def nvmlDeviceGetMemoryInfo(self, handle: FakeHandle, version: Any = None) -> SimpleNamespace:
        self._enter("nvmlDeviceGetMemoryInfo", handle)
        gpu = self._gpu(handle)
        used, total = gpu.memory_used_bytes, gpu.memory_total_bytes
        return SimpleNamespace(**{"total": total, "used": used, "free": total - used})

    def nvmlDeviceGetUtilizationRates(self, handle: FakeHandle) -> SimpleNamespace:
        self._enter("nvmlDeviceGetUtilizationRates", handle)
        gpu, t = self._gpu(handle), self.now_t()
        return SimpleNamespace(
            **{"gpu": int(gpu.utilization(t)), "memory": int(gpu.memory_utilization(t))}
        )

    def nvmlDeviceGetSamples(
        self, handle: FakeHandle, sampling_type: int, last_seen_us: int
    ) -> tuple[int, list[FakeSample]]:
        """Driver samples newer than `last_seen_us`; NVMLError_NotFound when there are none."""
        self._enter("nvmlDeviceGetSamples", handle)
        gpu = self._gpu(handle)
        if not gpu.supports_samples:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        if sampling_type == NVML_GPU_UTILIZATION_SAMPLES:
            trace = gpu.utilization
        elif sampling_type == NVML_MEMORY_UTILIZATION_SAMPLES:
            trace = gpu.memory_utilization
        else:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        samples = [
            FakeSample(ts, FakeSampleValue(int(trace(ts / 1e6 - self.epoch))))
            for ts in self.sample_timestamps_us(gpu)
            if ts > last_seen_us
        ]
        if not samples:
            raise NVMLError(NVML_ERROR_NOT_FOUND)
        return NVML_VALUE_TYPE_UNSIGNED_INT, samples

    def sample_timestamps_us(self, gpu: FakeGpu) -> list[int]:
        """Timestamps of the driver samples held now (the ring's newest, oldest first)."""
        start_us = round((self.epoch - self.history_s) * 1e6)
        period_us = round(gpu.sample_period_s * 1e6)
        now_us = round(self.wall() * 1e6)
        if now_us < start_us:
            return []
        newest = (now_us - start_us) // period_us
        oldest = max(0, newest - DRIVER_RING_SAMPLES + 1)
        return [start_us + k * period_us for k in range(oldest, newest + 1)]

    def nvmlDeviceGetPowerUsage(self, handle: FakeHandle) -> int:
        self._enter("nvmlDeviceGetPowerUsage", handle)
        return self._gpu(handle).power_mw

    def nvmlDeviceGetClockInfo(self, handle: FakeHandle, clock_type: int) -> int:
        self._enter("nvmlDeviceGetClockInfo", handle)
        if clock_type not in (NVML_CLOCK_GRAPHICS, NVML_CLOCK_SM, NVML_CLOCK_MEM):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return self._gpu(handle).sm_clock_mhz

    def nvmlDeviceGetPcieThroughput(self, handle: FakeHandle, counter: int) -> int:
        self._enter("nvmlDeviceGetPcieThroughput", handle)
        gpu = self._gpu(handle)
        if counter == NVML_PCIE_UTIL_RX_BYTES:
            return gpu.pcie_rx_kb_s
        if counter == NVML_PCIE_UTIL_TX_BYTES:
            return gpu.pcie_tx_kb_s
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)

    # -- MIG -----------------------------------------------------------------------------

    def nvmlDeviceGetMigMode(self, handle: FakeHandle) -> list[int]:
        self._enter("nvmlDeviceGetMigMode", handle)
        gpu = self._gpu(handle)
        if not gpu.mig_enabled and not gpu.mig_uuids:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        mode = NVML_DEVICE_MIG_ENABLE if gpu.mig_enabled else NVML_DEVICE_MIG_DISABLE
        return [mode, mode]

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: FakeHandle) -> int:
        self._enter("nvmlDeviceGetMaxMigDeviceCount", handle)
        return len(self._gpu(handle).mig_uuids)

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: FakeHandle, index: int) -> FakeHandle:
        self._enter("nvmlDeviceGetMigDeviceHandleByIndex", handle)
        if not 0 <= index < len(self._gpu(handle).mig_uuids):
            raise NVMLError(NVML_ERROR_NOT_FOUND)
        return FakeHandle(handle.gpu, index)

    # -- GPM (Hopper+) -------------------------------------------------------------------

    def nvmlGpmQueryDeviceSupport(self, handle: FakeHandle) -> SimpleNamespace:
        self._enter("nvmlGpmQueryDeviceSupport", handle)
        supported = int(self._gpu(handle).gpm)
        return SimpleNamespace(
            **{"version": NVML_GPM_SUPPORT_VERSION, "isSupportedDevice": supported}
        )

    def nvmlGpmSampleAlloc(self) -> FakeGpmSample:
        self._enter("nvmlGpmSampleAlloc")
        sample = FakeGpmSample()
        self.gpm_allocated.append(sample)
        return sample

    def nvmlGpmSampleFree(self, sample: FakeGpmSample) -> None:
        self._enter("nvmlGpmSampleFree")
        sample.freed = True

    def nvmlGpmSampleGet(self, handle: FakeHandle, sample: FakeGpmSample) -> FakeGpmSample:
        self._enter("nvmlGpmSampleGet", handle)
        if not self._gpu(handle).gpm:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        sample.gpu, sample.wall_s = handle.gpu, self.wall()
        return sample

    def nvmlGpmMetricsGet(self, request: FakeGpmMetricsGet) -> FakeGpmMetricsGet:
        """Metrics at the midpoint of the two samples' times, read off the GPU's traces."""
        self._enter("nvmlGpmMetricsGet")
        first, second = request.sample1, request.sample2
        if (
            first is None
            or second is None
            or first.wall_s is None
            or second.wall_s is None
            or first.gpu != second.gpu
        ):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        assert first.gpu is not None
        gpu = self.gpus[first.gpu]
        t = (first.wall_s + second.wall_s) / 2 - self.epoch
        traces = {
            NVML_GPM_METRIC_SM_UTIL: gpu.sm_active_pct,
            NVML_GPM_METRIC_SM_OCCUPANCY: gpu.sm_occupancy_pct,
            NVML_GPM_METRIC_GRAPHICS_UTIL: gpu.utilization,
        }
        for metric in request.metrics[: request.numMetrics]:
            trace = traces.get(metric.metricId)
            if trace is None:
                metric.nvmlReturn = NVML_ERROR_NOT_SUPPORTED
            else:
                metric.nvmlReturn, metric.value = NVML_SUCCESS, float(trace(t))
        return request


for _name, _cls in ERROR_CLASSES.items():
    setattr(FakeNvml, _name, _cls)
for _name, _value in list(globals().items()):
    if _name.startswith("NVML_") and isinstance(_value, int):
        setattr(FakeNvml, _name, _value)
