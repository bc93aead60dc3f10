"""Multi-worker jobs for tests: a TF_CONFIG for one task, and synthetic worker reports
written where `pipediag run` under TF_CONFIG writes them (OUT/worker-N/report.json)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from synthetic_reports import RunLayout, synthetic_cost_report, synthetic_report

from pipediag.report.io import save_report
from pipediag.report.model import Report, TaskInfo
from pipediag.report.samples import HostContention

T0 = 1_800_000_000.0  # a Unix time, for the workers' anchors


def tf_config(index: int, workers: int = 2, task_type: str = "worker") -> str:
    addresses = [f"localhost:{20000 + i}" for i in range(workers)]
    return json.dumps(
        {"cluster": {"worker": addresses}, "task": {"type": task_type, "index": index}}
    )


def worker(
    index: int,
    *,
    wait: float = 0.02,
    step_s: float = 0.04,
    offset_s: float = 0.0,
    workers: int = 2,
    other_cpu_pct: float | None = None,
    gpu_util_pct: float | None = None,
    steps: int = 60,
) -> Report:
    """Worker `index` of a job: its steps take `step_s`, `wait` of them waiting for input."""
    report = synthetic_cost_report(RunLayout(steps, step_s=step_s), wait=wait, contention=0.0)
    report = replace(
        report,
        task=TaskInfo("worker", index, workers),
        origin_unix_s=T0 + offset_s,
    )
    if other_cpu_pct is not None:
        contention = HostContention(
            available=True,
            cpu_count=2,
            other_cpu_pct_mean=other_cpu_pct,
            process_cpu_pct_mean=100.0,
            system_cpu_pct_mean=min(100.0, 50.0 + other_cpu_pct),
        )
        report = replace(report, host_contention=contention)
    if gpu_util_pct is not None:
        gpu = replace(synthetic_report(with_gpu=True).gpu, gpu_util_pct_mean=gpu_util_pct)
        report = replace(report, gpu=gpu)
    return report


def write_job(root: Path, *reports: Report) -> Path:
    for report in reports:
        assert report.task is not None
        save_report(report, root / report.task.name / "report.json")
    return root
