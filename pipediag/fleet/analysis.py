"""Pure functions from the workers' reports to the fleet report: rows, clock, straggler."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import datetime, timezone

from pipediag.fleet.collect import WorkerReport
from pipediag.fleet.model import ClockAnchor, FleetReport, Straggler, StragglerCause, WorkerRow
from pipediag.report.model import Report
from pipediag.report.reasons import Reason

# Lockstep: rates within one step in the fewest measured steps, never under this (relative).
RATE_TOLERANCE = 0.02
# Under lockstep, a wait share this far over the others' median names a worker (XProf's line).
WAIT_GAP = 0.05
# ...else its host's other processes or its GPU, in points: below it, samples and NVML windows blur.
HOST_GAP_PCT = 10.0
GPU_GAP_PCT = 10.0


def build_fleet(workers: Sequence[WorkerReport], *, created_utc: str = "") -> FleetReport:
    anchors = [_anchor(w.report) for w in workers]
    known = [unix_s for unix_s, _ in anchors if unix_s is not None]
    zero = min(known) if known else None
    rows = [
        worker_row(w, clock_offset_s=0.0 if zero is None or unix_s is None else unix_s - zero)
        for w, (unix_s, _) in zip(workers, anchors, strict=True)
    ]
    straggler, no_straggler = find_straggler(rows)
    return FleetReport(
        workers=rows,
        straggler=straggler,
        no_straggler_reason=no_straggler,
        lockstep=in_lockstep(rows),
        created_utc=created_utc,
        notes=_notes(workers),
    )


def worker_row(worker: WorkerReport, *, clock_offset_s: float = 0.0) -> WorkerRow:
    report = worker.report
    verdict = report.verdict
    training = verdict.training_steps_per_s or report.train.steps_per_s
    step_s = 1.0 / training if training else None
    wait, host = verdict.input_wait_fraction, report.host
    # During the measured steps when known (host contention), else over the whole run.
    if (contention := report.host_contention) is not None and contention.available:
        process, system = contention.process_cpu_pct_mean, contention.system_cpu_pct_mean
        other = contention.other_cpu_pct_mean
    else:
        process, system, other = host.process_cpu_pct_mean, host.system_cpu_pct_mean, None
    split = verdict.cost_split
    return WorkerRow(
        task=worker.label,
        report_path=str(worker.path),
        task_type=report.task.type if report.task else None,
        task_index=report.task.index if report.task else None,
        script=report.script,
        verdict=verdict.label,
        measured_steps=report.train.measured_steps,
        input_cost_fraction=verdict.input_cost_fraction,
        input_wait_fraction=wait,
        wait_s_per_step=wait * step_s if wait is not None and step_s is not None else None,
        step_s=step_s,
        pipeline_batches_per_s=report.pipeline.batches_per_s if report.pipeline.measured else None,
        compute_alone_steps_per_s=verdict.compute_alone_steps_per_s,
        compute_alone_source=verdict.compute_alone_source,
        training_steps_per_s=training,
        window_steps_per_s=report.train.steps_per_s,
        process_cpu_pct=process,
        system_cpu_pct=system,
        other_cpu_pct=other,
        cpu_count=host.cpu_count or report.environment.cpu_count,
        gpu_util_pct=report.gpu.gpu_util_pct_mean if report.gpu.available else None,
        cost_wait=split.wait if split else None,
        cost_contention=split.contention if split else None,
        cost_fetch=split.fetch if split else None,
        origin_unix_s=report.origin_unix_s,
        clock_offset_s=clock_offset_s,
        clock_anchor=_anchor(report)[1],
    )


def find_straggler(rows: Sequence[WorkerRow]) -> tuple[Straggler | None, Reason | None]:
    """The worker that held the others back, or None and why. Synchronous rates agree: then it is
    the one whose input wait, then host or GPU, stands out (docs/design.md, "Multi-worker jobs")."""
    if len(rows) < 2:
        return None, Reason("one-worker")
    if len(timed := [r for r in rows if r.training_steps_per_s]) < 2:
        return None, Reason("too-few-timed-workers")
    slowest = min(timed, key=_rate)
    if not in_lockstep(timed):
        return _straggler(slowest, [r for r in timed if r is not slowest]), None
    for value, gap in (
        ("input_wait_fraction", WAIT_GAP),
        ("other_cpu_pct", HOST_GAP_PCT),
        ("gpu_util_pct", GPU_GAP_PCT),
    ):
        pick = _by(timed, value)
        others = [r for r in timed if r is not pick]
        if pick is not None and _stands_out(pick, others, value, gap):
            return _straggler(pick, others), None
    return None, Reason("none-stands-out", value=rate_tolerance(timed), limit=WAIT_GAP)


def in_lockstep(rows: Sequence[WorkerRow]) -> bool:
    """Whether at least two workers trained, all at one rate (within `rate_tolerance`)."""
    timed = [r for r in rows if r.training_steps_per_s]
    rates = [r.window_steps_per_s or _rate(r) for r in timed]
    return len(rates) >= 2 and max(rates) <= min(rates) * (1 + rate_tolerance(timed))


def rate_tolerance(rows: Sequence[WorkerRow]) -> float:
    """One step in the fewest measured steps, at least `RATE_TOLERANCE`."""
    counts = [r.measured_steps for r in rows if r.measured_steps > 0]
    return max(RATE_TOLERANCE, 1.0 / min(counts)) if counts else RATE_TOLERANCE


def _straggler(row: WorkerRow, others: list[WorkerRow]) -> Straggler:
    extra_wait = _excess(row.wait_s_per_step, [r.wait_s_per_step for r in others])
    extra_compute = _excess(_rest_s(row), [_rest_s(r) for r in others])
    cause: StragglerCause
    if extra_wait is not None and extra_wait > max(0.0, extra_compute or 0.0):
        cause = "input"
    elif _stands_out(row, others, "gpu_util_pct", GPU_GAP_PCT):
        cause = "gpu"
    elif _stands_out(row, others, "other_cpu_pct", HOST_GAP_PCT):
        cause = "host-cpu"
    else:
        cause = "compute"
    return Straggler(
        task=row.task,
        cause=cause,
        steps_per_s=row.training_steps_per_s,
        others_steps_per_s=_median(_rate(r) for r in others),
        extra_wait_s=extra_wait,
        extra_compute_s=extra_compute,
        others_input_wait_fraction=_median(r.input_wait_fraction for r in others),
        others_input_cost_fraction=_median(r.input_cost_fraction for r in others),
        others_system_cpu_pct=_median(r.system_cpu_pct for r in others),
        others_other_cpu_pct=_median(r.other_cpu_pct for r in others),
        others_gpu_util_pct=_median(r.gpu_util_pct for r in others),
    )


def _by(rows: list[WorkerRow], field: str) -> WorkerRow | None:
    known = [r for r in rows if getattr(r, field) is not None]
    return max(known, key=lambda r: getattr(r, field)) if len(known) >= 2 else None


def _stands_out(row: WorkerRow, others: list[WorkerRow], field: str, gap: float) -> bool:
    value, rest = getattr(row, field), _median(getattr(r, field) for r in others)
    return value is not None and rest is not None and value - rest >= gap


def _rest_s(row: WorkerRow) -> float | None:
    """Compute, and the all-reduce's waits."""
    if row.step_s is None or row.wait_s_per_step is None:
        return None
    return row.step_s - row.wait_s_per_step


def _excess(value: float | None, others: list[float | None]) -> float | None:
    rest = _median(others)
    return None if value is None or rest is None else value - rest


def _median(values: object) -> float | None:
    known = [float(v) for v in values if v is not None]  # type: ignore[attr-defined]
    return statistics.median(known) if known else None


def _rate(row: WorkerRow) -> float:
    return row.training_steps_per_s or 0.0


def _anchor(report: Report) -> tuple[float | None, ClockAnchor]:
    """The Unix time of the report's time zero, and what it was read from."""
    if report.origin_unix_s is not None:
        return report.origin_unix_s, "origin-unix"
    try:
        created = datetime.strptime(report.created_utc, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None, "none"
    return created.replace(tzinfo=timezone.utc).timestamp(), "created-utc"


def _notes(workers: Sequence[WorkerReport]) -> list[Reason]:
    notes, scripts = [], sorted({w.report.script for w in workers})
    if len(scripts) > 1:
        notes.append(Reason("different-scripts", detail=", ".join(scripts)))
    sizes = sorted({w.report.task.cluster_size for w in workers if w.report.task is not None})
    if sizes and sizes[-1] > len(workers):
        notes.append(Reason("cluster-partly-merged", value=sizes[-1], limit=len(workers)))
    if incomplete := [w.label for w in workers if not w.report.complete]:
        notes.append(Reason("incomplete-runs", detail=", ".join(incomplete)))
    return notes
