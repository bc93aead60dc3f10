"""The NVML device layer under the GPU sampler: which GPUs (as CUDA reads
`CUDA_VISIBLE_DEVICES`, MIG included), opened and closed how; every NVML call goes through it,
on the module the sampler hands over (never imported here)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipediag.clock import Clock, wall_minus_clock
from pipediag.report.reasons import Reason, ReasonCode
from pipediag.report.samples import GpuDevice
from pipediag.samplers.base import describe_error

US_PER_S = 1_000_000  # driver sample timestamps are microseconds of wall-clock time
# The NVML initialisation failures a user can act on, by NVML's error.
_INIT_REASONS: dict[str, ReasonCode] = {
    "NVMLError_LibraryNotFound": "nvml-library-not-found",
    "NVMLError_DriverNotLoaded": "nvml-driver-not-loaded",
    "NVMLError_NoPermission": "nvml-no-permission",
    "NVMLError_LibRmVersionMismatch": "nvml-version-mismatch",
}


def _text(value: Any) -> str:
    """Old pynvml versions return bytes for names, UUIDs and versions; new ones str."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def select_visible_devices(
    cuda_visible_devices: str | None, gpus: Sequence[tuple[str, Sequence[str]]]
) -> tuple[list[int], list[Reason]]:
    """NVML indices of the GPUs this process can use, and notes on entries CUDA ignores; `gpus`: per
    NVML index, (GPU UUID, its MIG UUIDs). CUDA stops at the first entry matching nothing (`""`,
    `-1` hide every GPU). A MIG UUID selects its parent GPU: NVML has no per-MIG utilization."""
    if cuda_visible_devices is None:
        return list(range(len(gpus))), []
    selected: list[int] = []
    notes: list[Reason] = []
    for raw in cuda_visible_devices.split(","):
        token = raw.strip()
        if (index := _match_device(token, gpus)) is None:
            if token and not token.startswith("-"):
                notes.append(Reason("cuda-entry-unmatched", detail=token))
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


@dataclass
class NvmlDevice:
    """What the sampler keeps about one GPU between ticks."""

    index: int
    handle: Any
    info: GpuDevice
    use_samples: bool = False
    last_sample_us: int = 0
    last_util: tuple[float, float] | None = None  # (pct, clock time) of the newest driver sample
    # Metrics the device does not support, by the code of their failure.
    disabled: set[ReasonCode] = field(default_factory=set)
    gpm_samples: list[Any] = field(default_factory=list)  # [previous, next] GPM sample buffers
    gpm_t: float = 0.0
    util_readings: int = 0


class NvmlDevices:
    """The visible GPUs through NVML, and NVML's errors named and classified."""

    def __init__(
        self,
        nvml: Any,
        *,
        clock: Clock,
        wall_clock: Callable[[], float],
        record_failure: Callable[[str, Reason], None],
    ) -> None:
        self.nvml: Any = nvml
        self._clock, self._wall_clock = clock, wall_clock
        self._record_failure = record_failure
        self._wall_minus_clock_s = 0.0
        self.driver_version: str | None = None
        self.devices: list[NvmlDevice] = []
        self.setup_notes: list[Reason] = []
        self.calls = 0

    def call(self, name: str, *args: Any) -> Any:
        """Counted, so the call rate can be reported."""
        self.calls += 1
        return getattr(self.nvml, name)(*args)

    def is_nvml_error(self, exc: BaseException, name: str = "NVMLError") -> bool:
        cls = getattr(self.nvml, name, None)
        return isinstance(cls, type) and issubclass(cls, BaseException) and isinstance(exc, cls)

    def is_permanent(self, exc: BaseException) -> bool:
        """The device or driver lacks the feature: retrying will not help."""
        names = ("NVMLError_NotSupported", "NVMLError_FunctionNotFound")
        return any(self.is_nvml_error(exc, name) for name in names)

    def error_name(self, exc: BaseException) -> str:
        return type(exc).__name__ if self.is_nvml_error(exc) else describe_error(exc)

    def to_clock(self, timestamp_us: int) -> float:
        return timestamp_us / US_PER_S - self._wall_minus_clock_s

    def _wall_us(self) -> int:
        return int(self._wall_clock() * US_PER_S)

    def init_reason(self, exc: BaseException) -> Reason:
        for name, code in _INIT_REASONS.items():
            if self.is_nvml_error(exc, name):
                return Reason(code)
        return Reason("nvml-init-failed", detail=self.error_name(exc))

    def discover(self) -> Reason | None:
        """Find the visible GPUs and probe what each supports; a reason if there are none."""
        version = self._optional("nvmlSystemGetDriverVersion", failed="driver-version-unavailable")
        self.driver_version = None if version is None else _text(version)
        if (count := int(self.call("nvmlDeviceGetCount"))) == 0:
            return Reason("nvml-no-gpu")
        handles = [
            self._optional("nvmlDeviceGetHandleByIndex", index, failed="gpu-skipped", gpu=index)
            for index in range(count)
        ]
        uuids = [self._uuid(h) if h is not None else "" for h in handles]
        mig = [h is not None and self._mig_enabled(h) for h in handles]
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        mig_uuids = [
            self._mig_uuids(h) if visible and "mig-" in visible.lower() and m else []
            for h, m in zip(handles, mig, strict=True)
        ]
        selected, notes = select_visible_devices(visible, list(zip(uuids, mig_uuids, strict=True)))
        self.setup_notes.extend(notes)
        if (
            visible
            and count > 1
            and any(t.strip().isdigit() for t in visible.split(","))
            and os.environ.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID"
        ):
            self.setup_notes.append(Reason("cuda-order-unsure"))
        self._wall_minus_clock_s = wall_minus_clock(self._clock, self._wall_clock)
        for index in selected:
            if handles[index] is not None:
                device = self._open_device(index, handles[index], uuids[index], mig[index])
                self.devices.append(device)
        if not self.devices:
            if visible is not None and not selected:
                return Reason("cuda-hides-gpus", detail=visible)
            return Reason("no-gpu-opened")
        return None

    def _optional(
        self, name: str, *args: Any, failed: ReasonCode | None = None, gpu: int | None = None
    ) -> Any:
        """An NVML answer the diagnosis can do without: None on failure, noting `failed` if any."""
        try:
            return self.call(name, *args)
        except Exception as exc:
            if failed is not None:
                self._note(failed, gpu, exc)
            return None

    def _uuid(self, handle: Any) -> str:
        uuid = self._optional("nvmlDeviceGetUUID", handle)
        return "" if uuid is None else _text(uuid)

    def _note(self, code: ReasonCode, index: int | None, exc: BaseException) -> None:
        self.setup_notes.append(Reason(code, value=index, detail=self.error_name(exc)))

    def _mig_enabled(self, handle: Any) -> bool:
        mode = self._optional("nvmlDeviceGetMigMode", handle)  # None: a GPU without MIG
        return mode is not None and bool(mode[0] == getattr(self.nvml, "NVML_DEVICE_MIG_ENABLE", 1))

    def _mig_uuids(self, handle: Any) -> list[str]:
        slots = int(self._optional("nvmlDeviceGetMaxMigDeviceCount", handle) or 0)
        # An empty MIG slot has no handle: None.
        children = (
            self._optional("nvmlDeviceGetMigDeviceHandleByIndex", handle, slot)
            for slot in range(slots)
        )
        return [uuid for child in children if child is not None and (uuid := self._uuid(child))]

    def _open_device(self, index: int, handle: Any, uuid: str, mig: bool) -> NvmlDevice:
        # Static properties: a failure is a note, not a lost device.
        name = self._optional("nvmlDeviceGetName", handle, failed="gpu-name-unavailable", gpu=index)
        name = "" if name is None else _text(name)
        memory = self._optional(
            "nvmlDeviceGetMemoryInfo", handle, failed="gpu-memory-size-unavailable", gpu=index
        )
        memory_total = None if memory is None else int(memory.total)
        device = NvmlDevice(index=index, handle=handle, info=GpuDevice(index, name))
        if mig:
            self.setup_notes.append(Reason("gpu-mig-enabled", value=index))
        # Probe the driver's sample buffer, and skip what it holds from before the session.
        try:
            samples = self.nvml.NVML_GPU_UTILIZATION_SAMPLES
            _, raw = self.call("nvmlDeviceGetSamples", handle, samples, 0)
            device.use_samples = True
            device.last_sample_us = max((int(s.timeStamp) for s in raw), default=self._wall_us())
        except Exception as exc:
            if self.is_nvml_error(exc, "NVMLError_NotFound"):  # supported, nothing buffered yet
                device.use_samples = True
                device.last_sample_us = self._wall_us()
            else:
                self._note("gpu-driver-samples-setup-failed", index, exc)
        device.info = GpuDevice(
            index=index,
            name=name,
            uuid=uuid,
            memory_total_bytes=memory_total,
            mig_enabled=mig,
            util_source="driver-samples" if device.use_samples else "utilization-rates",
            gpm_supported=self._open_gpm(device),
        )
        return device

    def _open_gpm(self, device: NvmlDevice) -> bool:
        """Start GPM on Hopper+ (read-only sampling); False when the GPU or driver lacks it."""
        try:
            if not self.call("nvmlGpmQueryDeviceSupport", device.handle).isSupportedDevice:
                self.setup_notes.append(Reason("gpu-not-gpm-device", value=device.index))
                return False
            device.gpm_samples = [self.call("nvmlGpmSampleAlloc") for _ in range(2)]
            self.call("nvmlGpmSampleGet", device.handle, device.gpm_samples[0])
            device.gpm_t = self._clock.now()
            return True
        except Exception as exc:
            self._free_gpm(device)
            self._note("gpu-gpm-setup-failed", device.index, exc)
            return False

    def _free_gpm(self, device: NvmlDevice) -> None:
        samples, device.gpm_samples = device.gpm_samples, []
        for sample in samples:
            self._release("nvmlGpmSampleFree", sample, kind="gpm-free", failed="gpm-free-failed")

    def shutdown(self) -> None:
        self._release("nvmlShutdown", kind="shutdown", failed="nvml-shutdown-failed")

    def _release(self, name: str, *args: Any, kind: str, failed: ReasonCode) -> None:
        """A call that frees what NVML holds: its failure is counted by `kind`, never raised."""
        try:
            self.call(name, *args)
        except Exception as exc:
            self._record_failure(kind, Reason(failed, detail=self.error_name(exc)))

    def close(self) -> None:
        for device in self.devices:
            self._free_gpm(device)
        self.shutdown()
