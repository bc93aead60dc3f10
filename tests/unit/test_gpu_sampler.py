"""GPU sampler against the scripted fake NVML, plus one run against the real pynvml."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import fake_nvml as fn  # tests/ is on sys.path under pytest (rootdir-relative prepend)
import pytest
from fake_nvml import FakeGpu, FakeNvml, steps, wall_clock_for
from synthetic_reports import FakeClock

import pipediag.samplers.base as base
from pipediag.clock import MONOTONIC
from pipediag.renderers.reason_words import reason_words
from pipediag.report.io import dumps, from_dict, to_dict
from pipediag.report.model import Report
from pipediag.report.reasons import Reason
from pipediag.report.samples import GpuDevice
from pipediag.samplers.gpu import GpuSampler
from pipediag.samplers.nvml_devices import select_visible_devices

THREAD_WAIT_S = 10.0
"""Threaded tests wait this long at most for a reading: a large margin for a loaded CI box."""

TICK_S = 0.1


@pytest.fixture(autouse=True)
def all_gpus_visible(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Tests set CUDA_VISIBLE_DEVICES themselves; the machine's own setting must not leak in.

    (conftest.py's autouse fixture checks that no sampler thread outlives a test.)
    """
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    yield


class Rig:
    """A fake clock, a wall clock tied to it, a fake NVML and a hand-driven sampler."""

    def __init__(self, gpus: list[FakeGpu] | None = None, **nvml_kwargs: Any) -> None:
        self.clock = FakeClock()
        self.wall = wall_clock_for(self.clock)
        self.nvml = FakeNvml([FakeGpu()] if gpus is None else gpus, wall=self.wall, **nvml_kwargs)
        self.t0 = self.clock.now()
        self.sampler = GpuSampler(
            interval_s=TICK_S,
            max_samples=64,
            clock=self.clock,
            nvml=self.nvml,
            wall_clock=self.wall,
        )

    def run(self, ticks: int, step_s: float = TICK_S) -> None:
        self.sampler.start(background=False)
        for _ in range(ticks):
            self.clock.advance(step_s)
            self.sampler.sample_once()
        self.sampler.stop()


def test_gpu_present_readings_and_shutdown() -> None:
    # GIVEN one scripted H200 with driver samples
    rig = Rig()
    # WHEN the sampler ticks five times
    rig.run(5)
    section = rig.sampler.section(rig.t0)
    # THEN every reading is there, in report units, and NVML was shut down
    assert section.available and section.reason is None
    assert section.driver_version == "550.54.15"
    assert section.devices == [
        GpuDevice(
            0,
            "NVIDIA H200",
            "GPU-00000000-0000-0000-0000-000000000000",
            141 * 2**30,
            mig_enabled=False,
            util_source="driver-samples",
            gpm_supported=False,
        )
    ]
    assert section.interval_s == pytest.approx(TICK_S)
    assert [s.t_s for s in section.samples] == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])
    last = section.samples[-1]
    assert last.gpu_util_pct == 50.0
    assert last.mem_used_bytes == 2 * 2**30
    assert last.power_w == 300.0
    assert last.sm_clock_mhz == 1980.0
    assert last.pcie_rx_bytes_per_s == 1000 * 1024
    assert last.pcie_tx_bytes_per_s == 500 * 1024
    assert section.gpu_util_pct_mean == 50.0
    assert section.calls_per_s is not None and section.calls_per_s > 0
    assert section.sampler_cpu_s is not None and section.sampler_cpu_s >= 0.0
    assert not rig.nvml.initialised
    assert not [name for name in rig.nvml.calls if "Set" in name]  # read-only
    assert Reason("gpu-not-gpm-device", value=0) in section.notes  # not one in this script


def test_driver_timestamps_are_converted_to_session_time() -> None:
    # GIVEN driver samples every 0.25 s: 10 % until 0.5 s into the session, then 90 %
    gpu = FakeGpu(sample_period_s=0.25, utilization=steps([(0.0, 10.0), (0.5, 90.0)]))
    rig = Rig([gpu], history_s=2.0)
    rig.sampler.start(background=False)
    readings = []
    for at in (0.3, 0.6, 0.7, 1.2):
        rig.clock.t = rig.t0 + at
        rig.sampler.sample_once()
        readings.append(at)
    rig.sampler.stop()
    section = rig.sampler.section(rig.t0)
    # THEN each tick reports the newest driver sample's time on the session axis:
    # 0.25 (10 %), 0.5 (90 %), nothing new at 0.7 (carried), 0.75 and 1.0 (90 %)
    assert [s.t_s for s in section.samples] == pytest.approx(readings)
    assert [s.gpu_util_t_s for s in section.samples] == pytest.approx([0.25, 0.5, 0.5, 1.0])
    assert [s.gpu_util_pct for s in section.samples] == [10.0, 90.0, 90.0, 90.0]
    # and the mean counts each driver sample once, none from before the session
    assert section.gpu_util_pct_mean == pytest.approx((10 + 90 + 90 + 90) / 4)


def test_falls_back_to_utilization_rates_without_driver_samples() -> None:
    rig = Rig([FakeGpu(supports_samples=False, utilization=steps([(0.0, 30.0)]))])
    rig.run(3)
    section = rig.sampler.section(rig.t0)
    assert section.devices[0].util_source == "utilization-rates"
    assert [s.gpu_util_pct for s in section.samples] == [30.0, 30.0, 30.0]
    assert all(s.gpu_util_t_s is None and s.mem_util_pct == 10.0 for s in section.samples)
    unread = Reason("gpu-driver-samples-setup-failed", value=0, detail="NVMLError_NotSupported")
    assert unread in section.notes


@pytest.mark.parametrize(
    ("kwargs", "reason", "words"),
    [
        (
            {"library_missing": True},
            Reason("nvml-library-not-found"),
            "NVML library not found (no NVIDIA driver): no GPU on this machine",
        ),
        (
            {"init_error": fn.NVML_ERROR_DRIVER_NOT_LOADED},
            Reason("nvml-driver-not-loaded"),
            "NVMLError_DriverNotLoaded",
        ),
        (
            {"init_error": fn.NVML_ERROR_NO_PERMISSION},
            Reason("nvml-no-permission"),
            "NVMLError_NoPermission",
        ),
        (
            {"init_error": fn.NVML_ERROR_UNKNOWN},
            Reason("nvml-init-failed", detail="NVMLError_Unknown"),
            "NVML failed to initialise: NVMLError_Unknown",
        ),
    ],
)
def test_nvml_init_failure_gives_a_one_line_reason(
    kwargs: dict[str, Any], reason: Reason, words: str
) -> None:
    rig = Rig(**kwargs)
    rig.sampler.start()  # background: no thread may start
    assert not rig.sampler.running
    rig.sampler.stop()
    section = rig.sampler.section(rig.t0)
    assert not section.available
    assert section.reason == reason
    assert words in reason_words(reason) and "\n" not in reason_words(reason)
    assert section.samples == []


def test_no_devices_is_unavailable_and_nvml_is_shut_down() -> None:
    rig = Rig([])
    rig.run(2)
    section = rig.sampler.section(rig.t0)
    assert not section.available and section.reason == Reason("nvml-no-gpu")
    assert not rig.nvml.initialised


def _three_gpus() -> list[FakeGpu]:
    return [
        FakeGpu(uuid="GPU-aaaa1111-0000", utilization=steps([(0.0, 10.0)])),
        FakeGpu(uuid="GPU-bbbb2222-0000", utilization=steps([(0.0, 20.0)])),
        FakeGpu(
            uuid="GPU-cccc3333-0000",
            utilization=steps([(0.0, 30.0)]),
            mig_enabled=True,
            mig_uuids=["MIG-dddd4444-0000"],
        ),
    ]


@pytest.mark.parametrize(
    ("visible", "expected"),
    [
        ("2,0", [2, 0]),
        ("GPU-bbbb", [1]),
        ("MIG-dddd4444", [2]),
        ("1, 1 ,0", [1, 0]),
        ("1,bogus,2", [1]),
        ("0,-1,2", [0]),
    ],
)
def test_cuda_visible_devices_selects_gpus(
    monkeypatch: pytest.MonkeyPatch, visible: str, expected: list[int]
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    rig = Rig(_three_gpus())
    rig.run(2)
    section = rig.sampler.section(rig.t0)
    assert [d.index for d in section.devices] == expected
    assert {s.device_index for s in section.samples} == set(expected)
    # each device's readings are its own
    for s in section.samples:
        assert s.gpu_util_pct == 10.0 * (s.device_index + 1)
    if "bogus" in visible:
        assert Reason("cuda-entry-unmatched", detail="bogus") in section.notes
    if 2 in expected:
        assert section.devices[expected.index(2)].mig_enabled
        assert Reason("gpu-mig-enabled", value=2) in section.notes


@pytest.mark.parametrize("visible", ["", "-1", "NoDevFiles"])
def test_cuda_visible_devices_hiding_every_gpu(
    monkeypatch: pytest.MonkeyPatch, visible: str
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    rig = Rig(_three_gpus())
    rig.run(1)
    section = rig.sampler.section(rig.t0)
    assert not section.available
    assert section.reason == Reason("cuda-hides-gpus", detail=visible)
    assert reason_words(section.reason) == (
        f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU from this process"
    )
    assert not rig.nvml.initialised


def test_cuda_device_order_note_for_indices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    rig = Rig(_three_gpus())
    rig.run(1)
    assert Reason("cuda-order-unsure") in rig.sampler.section(rig.t0).notes
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    rig = Rig(_three_gpus())
    rig.run(1)
    assert Reason("cuda-order-unsure") not in rig.sampler.section(rig.t0).notes


def test_select_visible_devices_unset_means_all() -> None:
    gpus = [("GPU-a", []), ("GPU-b", [])]
    assert select_visible_devices(None, gpus) == ([0, 1], [])
    assert select_visible_devices("GPU-", gpus)[0] == []  # ambiguous prefix matches nothing
    assert select_visible_devices("5", gpus)[0] == []


def test_failure_mid_run_is_noted_once_and_other_readings_continue() -> None:
    # GIVEN power readings that stop being supported after two ticks, and memory readings
    # that fail twice (after the one call made at start) and then recover
    rig = Rig()
    rig.nvml.fail("nvmlDeviceGetPowerUsage", fn.NVML_ERROR_NOT_SUPPORTED, after=2)
    rig.nvml.fail("nvmlDeviceGetMemoryInfo", fn.NVML_ERROR_UNKNOWN, after=1, times=2)
    rig.run(5)
    section = rig.sampler.section(rig.t0)
    # THEN each failure kind is one note, and everything else kept being read
    assert [s.power_w for s in section.samples] == [300.0, 300.0, None, None, None]
    assert [s.mem_used_bytes for s in section.samples] == [None, None] + [2 * 2**30] * 3
    assert all(s.gpu_util_pct == 50.0 and s.sm_clock_mhz == 1980.0 for s in section.samples)
    notes = [reason_words(n) for n in section.notes]
    assert "power readings unavailable on GPU 0: NVMLError_NotSupported" in notes
    assert "memory readings unavailable on GPU 0: NVMLError_Unknown (2 times)" in notes
    # and an unsupported reading is not asked for again
    assert rig.nvml.calls["nvmlDeviceGetPowerUsage"] == 3


def test_utilization_that_keeps_failing_is_marked() -> None:
    rig = Rig([FakeGpu(supports_samples=False)])
    rig.nvml.fail("nvmlDeviceGetUtilizationRates", fn.NVML_ERROR_GPU_IS_LOST)
    rig.run(4)
    section = rig.sampler.section(rig.t0)
    assert section.available
    assert all(s.gpu_util_pct is None and s.power_w == 300.0 for s in section.samples)
    assert section.gpu_util_pct_mean is None
    notes = [reason_words(n) for n in section.notes]
    assert "GPU utilization unavailable on GPU 0: NVMLError_GpuIsLost (4 times)" in notes
    assert "no GPU utilization reading succeeded on GPU 0" in notes


def test_driver_samples_failing_mid_run_fall_back_for_that_tick() -> None:
    rig = Rig()
    rig.nvml.fail("nvmlDeviceGetSamples", fn.NVML_ERROR_UNKNOWN, after=2, times=1)
    rig.run(3)
    section = rig.sampler.section(rig.t0)
    assert [s.gpu_util_pct for s in section.samples] == [50.0, 50.0, 50.0]
    assert section.samples[1].gpu_util_t_s is None  # that tick came from GetUtilizationRates
    failed = Reason("gpu-util-samples-unavailable", value=0, detail="NVMLError_Unknown")
    assert failed in section.notes


def test_gpm_metrics_on_hopper() -> None:
    rig = Rig([FakeGpu(gpm=True, sm_active_pct=steps([(0.0, 42.0)]))])
    rig.run(3)
    section = rig.sampler.section(rig.t0)
    assert section.devices[0].gpm_supported
    assert [s.sm_active_pct for s in section.samples] == [42.0, 42.0, 42.0]
    assert [s.sm_occupancy_pct for s in section.samples] == [20.0, 20.0, 20.0]
    assert rig.nvml.gpm_allocated and all(s.freed for s in rig.nvml.gpm_allocated)


def test_gpm_waits_100_ms_between_samples() -> None:
    rig = Rig([FakeGpu(gpm=True)])
    rig.run(4, step_s=0.05)
    values = [s.sm_active_pct for s in rig.sampler.section(rig.t0).samples]
    assert values == [None, 40.0, None, 40.0]


def test_gpm_absent_leaves_sm_metrics_empty() -> None:
    rig = Rig([FakeGpu(gpm=False)])
    rig.run(2)
    section = rig.sampler.section(rig.t0)
    assert not section.devices[0].gpm_supported
    assert all(s.sm_active_pct is None for s in section.samples)
    assert rig.nvml.calls["nvmlGpmSampleGet"] == 0


def test_several_gpus_and_bounded_memory() -> None:
    rig = Rig([FakeGpu(), FakeGpu(utilization=steps([(0.0, 70.0)]))])
    rig.sampler = GpuSampler(
        interval_s=TICK_S, max_samples=4, clock=rig.clock, nvml=rig.nvml, wall_clock=rig.wall
    )
    rig.sampler.start(background=False)
    for _ in range(10):
        rig.clock.advance(rig.sampler.interval_s)
        rig.sampler.sample_once()
    rig.sampler.stop()
    section = rig.sampler.section(rig.t0)
    assert len(section.devices) == 2
    assert len(section.samples) <= 2 * 4
    assert section.interval_s == pytest.approx(TICK_S * 16)  # halved at 4, 6, 8, 10 ticks
    by_device = {d: [s for s in section.samples if s.device_index == d] for d in (0, 1)}
    assert len(by_device[0]) == len(by_device[1]) == 2
    assert all(s.gpu_util_pct == 50.0 for s in by_device[0])
    assert all(s.gpu_util_pct == 70.0 for s in by_device[1])
    assert section.gpu_util_pct_mean == pytest.approx(60.0)


def test_section_round_trips_through_the_json_report() -> None:
    rig = Rig([FakeGpu(gpm=True)])
    rig.run(2)
    section = rig.sampler.section(rig.t0)
    report = Report(script="train.py", gpu=section)
    dumps(report)  # JSON-ready: no NaN, no foreign types
    assert from_dict(to_dict(report)).gpu == section


def test_threaded_run_stops_and_shuts_down() -> None:
    nvml = FakeNvml([FakeGpu()])
    sampler = GpuSampler(interval_s=0.01, clock=MONOTONIC, nvml=nvml)
    t0 = MONOTONIC.now()
    with sampler:
        sampler.start()  # idempotent
        names = [t.name for t in threading.enumerate()]
        assert names.count("pipediag-gpu-sampler") == 1
        _wait_for(lambda: bool(sampler.section(t0).samples))
    assert not sampler.running
    sampler.stop()
    section = sampler.section(t0)
    assert section.available and section.samples
    assert not nvml.initialised


def test_stop_never_hangs_on_a_stuck_nvml_call(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a power reading that blocks inside the driver
    monkeypatch.setattr(base, "STOP_JOIN_TIMEOUT_S", 0.2)
    release = threading.Event()
    stuck = threading.Event()
    nvml = FakeNvml([FakeGpu()])
    real_power = nvml.nvmlDeviceGetPowerUsage

    def blocking_power(handle: Any) -> int:
        stuck.set()
        release.wait(THREAD_WAIT_S)
        return real_power(handle)

    nvml.nvmlDeviceGetPowerUsage = blocking_power  # type: ignore[method-assign]
    sampler = GpuSampler(interval_s=0.01, clock=MONOTONIC, nvml=nvml)
    sampler.start()
    assert stuck.wait(THREAD_WAIT_S)
    # WHEN the session stops
    started = time.monotonic()
    sampler.stop()
    # THEN stop returns promptly, says why, and leaves NVML alone under the stuck call
    assert time.monotonic() - started < THREAD_WAIT_S / 2
    section = sampler.section(MONOTONIC.now())
    assert Reason("sampler-stuck", limit=base.STOP_JOIN_TIMEOUT_S) in section.notes
    assert nvml.initialised
    release.set()
    _wait_for(lambda: not sampler.running)


def test_real_pynvml_without_a_gpu_is_unavailable_with_a_reason() -> None:
    has_gpu = os.path.exists("/dev/nvidia0")
    sampler = GpuSampler(interval_s=0.05)
    t0 = MONOTONIC.now()
    with sampler:
        time.sleep(0.2)
    section = sampler.section(t0)
    if has_gpu:  # the GPU machine: the real thing must work
        assert section.available and section.devices and section.samples
    else:
        assert not section.available
        assert section.reason is not None
        assert "\n" not in reason_words(section.reason)


def _wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + THREAD_WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)
