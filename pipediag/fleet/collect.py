"""Find and load the reports of a job's workers: `pipediag merge DIR...`, where a DIR is a
report directory, the workers' shared `--out` (`out/worker-0/report.json`, ...) or a file."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pipediag.errors import ReportError
from pipediag.renderers.files import REPORT_JSON
from pipediag.report.io import load_report
from pipediag.report.model import Report

# Task types first in this order, then any other.
TASK_TYPE_ORDER = ("chief", "worker")


@dataclass(frozen=True)
class WorkerReport:
    """One worker's report and where it came from; `label` names its row."""

    label: str
    path: Path
    report: Report
    # The version the file was written in (an older report is converted when read).
    written_schema: int | None = None


def find_report_files(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Every `report.json` the paths name, each once, in the order given."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_file():
            files = [path]
        elif path.is_dir():
            own = path / REPORT_JSON
            files = [own] if own.is_file() else sorted(path.glob(f"*/{REPORT_JSON}"))
            if not files:
                raise ReportError(
                    f"no pipediag reports in {path} (looked for {own} and "
                    f"{path / '*' / REPORT_JSON}): give the --out directory of `pipediag run`"
                )
        else:
            raise ReportError(f"{path} does not exist: give the --out directory of `pipediag run`")
        found += [f for f in files if f.resolve() not in {g.resolve() for g in found}]
    return found


def load_worker_reports(paths: Sequence[str | os.PathLike[str]]) -> list[WorkerReport]:
    """Load every worker's report; `ReportError` naming the file if one cannot be used, or if
    their schema versions differ (their figures may not mean the same)."""
    workers = []
    for path in find_report_files(paths):
        try:
            report = load_report(path)
        except ReportError as exc:
            message = str(exc)
            raise ReportError(message if str(path) in message else f"{path}: {message}") from None
        workers.append(WorkerReport(_label(path, report), path, report, _written_schema(path)))
    _check_same_schema(workers)
    _check_distinct_tasks(workers)
    return sorted(workers, key=_order)


def _label(path: Path, report: Report) -> str:
    """The task's name (`worker-0`), or the report directory's for a run outside a job."""
    return report.task.name if report.task is not None else path.resolve().parent.name or str(path)


def _written_schema(path: Path) -> int | None:
    try:
        version = json.loads(path.read_text(encoding="utf-8")).get("schema_version")
    except (OSError, ValueError, AttributeError):
        return None
    return version if isinstance(version, int) else None


def _check_same_schema(workers: list[WorkerReport]) -> None:
    if len({w.written_schema for w in workers}) > 1:
        listed = ", ".join(f"{w.path}: {w.written_schema}" for w in workers)
        raise ReportError(
            f"the reports have different schema versions ({listed}): run every worker with "
            "the same pipediag"
        )


def _check_distinct_tasks(workers: list[WorkerReport]) -> None:
    seen: dict[str, Path] = {}
    for worker in workers:
        if worker.report.task is None:
            continue
        if (other := seen.setdefault(worker.label, worker.path)) != worker.path:
            raise ReportError(
                f"two reports for {worker.label} ({other} and {worker.path}): merge the "
                "reports of one job at a time"
            )


def _order(worker: WorkerReport) -> tuple[int, str, int, str]:
    if (task := worker.report.task) is None:
        return (len(TASK_TYPE_ORDER) + 1, "", 0, worker.label)
    rank = (
        TASK_TYPE_ORDER.index(task.type) if task.type in TASK_TYPE_ORDER else len(TASK_TYPE_ORDER)
    )
    return (rank, task.type, task.index, worker.label)
