"""A fake clock and synthetic reports for the tests, no TensorFlow needed (imported by plain
name: tests/ is on sys.path under pytest)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from pipediag.analysis.input_cost import contention_kind, dominant_part
from pipediag.report.model import (
    ComputeAlone,
    CostSplit,
    PhaseSpan,
    PipelineBenchmark,
    Report,
    StepRecord,
    TrainSection,
    Verdict,
)
from pipediag.report.reasons import Reason
from pipediag.report.samples import GpuDevice, GpuSample, GpuSection, HostSample, HostSection
from pipediag.report.stages import LatencyStats
from pipediag.report.vocabulary import StepLabel, VerdictLabel


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
        label: StepLabel = (
            "warmup" if warm else ("input-bound" if wait_s / duration > 0.2 else "compute-bound")
        )
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
        gpu = GpuSection(available=False, reason=Reason("nvml-no-gpu"))
    step_s = wait_s + compute_s
    return Report(
        script="train.py",
        args=["--epochs", "1"],
        created_utc="2026-01-01T00:00:00Z",
        verdict=Verdict(
            label="input-bound" if fraction > 0.2 else "compute-bound",
            input_wait_fraction=fraction,
            severity="highly input-bound" if fraction > 0.2 else "not input-bound",
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


@dataclass(frozen=True)
class RunLayout:
    """How a synthetic run is laid out in time, as a real one is: the pipeline benchmark
    from 0.5 s for `benchmark_s`, then warm-up and `steps` measured steps of `step_s` each,
    spread evenly over `epochs` (counted from 0 as the hooks count them)."""

    steps: int = 60
    epochs: int = 1
    step_s: float = 0.04
    benchmark_s: float = 3.0


@dataclass(frozen=True)
class CostEvidence:
    """The figures behind a synthetic cost's parts: P, the pipeline alone's rate (for
    `wait`); the cores the pipeline's threads kept busy while training, which the host
    samples show too, and the host's idle cores (for `contention`); next()'s own time per
    pull (for `fetch`). None: not measured."""

    pipeline_batches_per_s: float = 60.0
    pipeline_cores_busy: float | None = 1.1
    free_cores: float | None = 0.1
    pull_s: float | None = None


DEFAULT_LAYOUT = RunLayout()
DEFAULT_EVIDENCE = CostEvidence()
ENDED_EARLY = Reason("loop-ended-early")


def synthetic_cost_report(
    layout: RunLayout = DEFAULT_LAYOUT,
    *,
    wait: float = 0.04,
    contention: float = 0.40,
    fetch: float = 0.0,
    measured: bool = True,
    estimate_reason: Reason = ENDED_EARLY,
    evidence: CostEvidence = DEFAULT_EVIDENCE,
    cost_interval: tuple[float, float] | None = None,
) -> Report:
    """A report in the shape a diagnosis gives it: input cost split into wait, contention and
    fetch (shares of training time), and the three rates P, T and A; with `cost_interval`, the
    cost's 90% interval as the alternation of rates gives it.

    The run is laid out as `layout` says, `wait` of each step waiting for input, then the
    compute-alone run when `measured`. A = 1 / `layout.step_s`; T = A / (1 - input cost).
    """
    cost = wait + contention + fetch
    step_s, benchmark_s = layout.step_s, layout.benchmark_s
    training = 1.0 / step_s
    compute = training / (1.0 - cost)
    label: VerdictLabel = (
        "input-bound" if cost >= 0.20 else ("balanced" if cost >= 0.05 else "compute-bound")
    )
    dominant = dominant_part(wait, contention, fetch)
    base = synthetic_report(layout.steps, wait_s=wait * step_s, compute_s=(1 - wait) * step_s)
    shift = benchmark_s + 0.2
    per_epoch = max(1, math.ceil(layout.steps / layout.epochs))
    warmup = base.train.warmup_steps
    records = [
        replace(
            s,
            start_s=s.start_s + shift,
            epoch=min(layout.epochs - 1, max(0, s.index - warmup) // per_epoch),
        )
        for s in base.train.steps
    ]
    steps_end = records[-1].start_s + records[-1].duration_s
    alone = None
    if measured:
        alone_steps = 100
        alone = ComputeAlone(
            measured=True,
            method="keras-train-function",
            start_s=steps_end + 0.05,
            duration_s=alone_steps / compute,
            warmup_steps=5,
            steps=alone_steps,
            steps_per_s=compute,
            step_time=LatencyStats(alone_steps, *(1.0 / compute for _ in range(5))),
            cpu_s_per_step=1.0 / compute,  # one core busy while the step runs alone
        )
    end = alone.start_s + alone.duration_s if alone is not None and alone.start_s else steps_end
    interval = base.host.interval_s
    cpu_count = base.host.cpu_count
    alone_start = alone.start_s if alone is not None and alone.start_s else end

    def process_pct(t: float) -> float:
        if 0.5 <= t < 0.5 + benchmark_s:
            return 100.0 * (evidence.pipeline_cores_busy or 1.0)  # the pipeline read alone
        if alone_start <= t:
            return 100.0  # the train step alone
        if shift <= t:
            # both, sharing the cores
            return 100.0 * (1.0 + (evidence.pipeline_cores_busy or 0.0))
        return 20.0

    host_samples = [
        HostSample(
            t_s=k * interval,
            process_cpu_pct=process_pct(k * interval),
            system_cpu_pct=min(100.0, process_pct(k * interval) / cpu_count + 5.0),
            iowait_pct=1.0,
            per_core_pct=[70.0] * cpu_count,
            process_rss_bytes=500_000_000,
            system_mem_used_pct=30.0,
        )
        for k in range(int(end / interval) + 2)
    ]
    verdict = replace(
        base.verdict,
        label=label,
        input_wait_fraction=wait,
        severity=(
            "highly input-bound"
            if cost >= 0.20
            else ("moderately input-bound" if cost >= 0.05 else "not input-bound")
        ),
        compute_alone_steps_per_s=compute,
        input_cost_fraction=cost,
        training_steps_per_s=training,
        compute_alone_source="measured" if measured else "estimated",
        compute_alone_reason=None if measured else estimate_reason,
        cost_split=CostSplit(
            wait=wait,
            contention=contention,
            fetch=fetch,
            dominant=dominant,
            pipeline_cores_busy=evidence.pipeline_cores_busy,
            free_cores=evidence.free_cores,
            pull_s=evidence.pull_s,
            contention_kind=contention_kind(contention, evidence.free_cores, []),
        ),
        input_cost_interval=list(cost_interval) if cost_interval is not None else None,
    )
    rate = evidence.pipeline_batches_per_s
    pipeline = replace(
        base.pipeline,
        batches_per_s=rate,
        duration_s=benchmark_s,
        cpu_s_per_batch=(evidence.pipeline_cores_busy or 0.0) / rate,
        latency=LatencyStats(40, *(k / rate for k in (1.0, 1.0, 1.1, 0.9, 1.3))),
    )
    return replace(
        base,
        verdict=verdict,
        pipeline=pipeline,
        train=replace(base.train, steps=records),
        host=replace(base.host, samples=host_samples),
        compute_alone=alone,
        phases=[PhaseSpan("pipeline_benchmark", 0.5, benchmark_s)],
        wall_time_s=end + 0.5,
    )
