"""Helpers for tests: a fake clock and synthetic reports, no TensorFlow needed."""

from __future__ import annotations

import math

from pipediag.report.model import (
    COMPUTE_BOUND,
    INPUT_BOUND,
    WARMUP,
    GpuDevice,
    GpuSample,
    GpuSection,
    HostSample,
    HostSection,
    LatencyStats,
    PipelineBenchmark,
    Report,
    StepRecord,
    TrainSection,
    Verdict,
)


class FakeClock:
    """A clock that moves only when told to: `sleep` and `advance` move it forward."""

    def __init__(self, start: float = 1000.0) -> None:
        self.t = start

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += max(0.0, seconds)

    def advance(self, seconds: float) -> None:
        self.t += seconds


def synthetic_report(
    steps: int = 50,
    *,
    wait_s: float = 0.02,
    compute_s: float = 0.01,
    warmup_steps: int = 3,
    with_gpu: bool = False,
    host_interval_s: float = 0.05,
) -> Report:
    """A plausible report with `steps` measured steps, for renderer and analysis tests."""
    records: list[StepRecord] = []
    t = 0.5
    for i in range(warmup_steps + steps):
        warm = i < warmup_steps
        duration = (0.4 if warm else 0.0) + wait_s + compute_s
        label = WARMUP if warm else (INPUT_BOUND if wait_s / duration > 0.2 else COMPUTE_BOUND)
        records.append(StepRecord(i, t, duration, wait_s, label))
        t += duration
    end = t
    fraction = wait_s / (wait_s + compute_s)
    host_samples = [
        HostSample(
            t_s=k * host_interval_s,
            process_cpu_pct=120 + 30 * math.sin(k / 5),
            system_cpu_pct=70 + 10 * math.sin(k / 7),
            iowait_pct=1.0,
            per_core_pct=[70.0, 70.0],
            process_rss_bytes=500_000_000,
            system_mem_used_pct=30.0,
        )
        for k in range(int(end / host_interval_s) + 1)
    ]
    if with_gpu:
        gpu = GpuSection(
            available=True,
            driver_version="550.00",
            devices=[GpuDevice(0, "NVIDIA H200", "GPU-0", 141 * 2**30)],
            interval_s=0.1,
            samples=[
                GpuSample(k * 0.1, 0, 100 * compute_s / (wait_s + compute_s), 20.0, 2**30)
                for k in range(int(end / 0.1) + 1)
            ],
            gpu_util_pct_mean=100 * compute_s / (wait_s + compute_s),
        )
    else:
        gpu = GpuSection(available=False, reason="NVML found no GPU (NVMLError_LibraryNotFound)")
    step_s = wait_s + compute_s
    return Report(
        script="train.py",
        args=["--epochs", "1"],
        created_utc="2026-01-01T00:00:00Z",
        verdict=Verdict(
            label=INPUT_BOUND if fraction > 0.2 else COMPUTE_BOUND,
            input_wait_fraction=fraction,
            severity="highly input-bound" if fraction > 0.2 else "not input-bound",
            summary=f"{fraction:.0%} of step time was spent waiting for input.",
            input_bound_steps=steps if fraction > 0.2 else 0,
            compute_bound_steps=0 if fraction > 0.2 else steps,
            compute_alone_steps_per_s=1 / compute_s,
            pipeline_headroom=compute_s / wait_s if wait_s else None,
        ),
        pipeline=PipelineBenchmark(
            measured=True,
            dataset="_PrefetchDataset <- _BatchDataset <- _MapDataset <- _RangeDataset",
            batches=40,
            duration_s=40 * wait_s,
            first_batch_s=0.05,
            batches_per_s=1 / wait_s if wait_s else None,
            cpu_s_per_batch=0.4 * wait_s,
            latency=LatencyStats(40, wait_s, wait_s, wait_s * 1.1, wait_s * 0.9, wait_s * 1.3),
        ),
        train=TrainSection(
            style="keras-fit",
            input_wait_source="profiler-trace",
            warmup_steps=warmup_steps,
            measured_steps=steps,
            steps_per_s=1 / step_s,
            step_time=LatencyStats(steps, step_s, step_s, step_s, step_s, step_s),
            input_wait=LatencyStats(steps, wait_s, wait_s, wait_s, wait_s, wait_s),
            steps=records,
        ),
        host=HostSection(
            available=True,
            cpu_count=2,
            interval_s=host_interval_s,
            samples=host_samples,
            process_cpu_pct_mean=120.0,
            system_cpu_pct_mean=70.0,
            iowait_pct_mean=1.0,
            process_rss_bytes_max=500_000_000,
        ),
        gpu=gpu,
        complete=True,
        stop_reason="step-budget",
        wall_time_s=end + 1.0,
        phase_times_s={"pipeline_benchmark": 3.0, "train": end, "analysis": 0.01},
    )
