"""`pipediag merge DIR...`: load, build the fleet report, write its files (`fleet.json` first)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path

from pipediag.fleet.analysis import build_fleet
from pipediag.fleet.collect import WorkerReport, load_worker_reports
from pipediag.fleet.io import fleet_to_dict
from pipediag.fleet.model import FleetReport
from pipediag.fleet.text import render_fleet_text
from pipediag.fleet.trace import render_fleet_trace
from pipediag.report.io import write_atomically

Writer = Callable[[Sequence[WorkerReport], FleetReport, Path], Path]


def merge_reports(
    paths: Sequence[str | os.PathLike[str]], out_dir: str | os.PathLike[str]
) -> tuple[FleetReport, list[Path], list[str]]:
    """The fleet report, the files written and one line per file that failed; `ReportError`
    when no usable reports are found."""
    workers = load_worker_reports(paths)
    created = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    fleet = build_fleet(workers, created_utc=created)
    written, failures = write_fleet(workers, fleet, Path(out_dir))
    return fleet, written, failures


def write_fleet(
    workers: Sequence[WorkerReport], fleet: FleetReport, out_dir: Path
) -> tuple[list[Path], list[str]]:
    written: list[Path] = []
    failures: list[str] = []
    for name, writer in WRITERS.items():
        try:
            written.append(writer(workers, fleet, out_dir / name))
        except Exception as exc:  # noqa: PERF203 - one file's failure is reported, not fatal
            failures.append(f"could not write {out_dir / name}: {type(exc).__name__}: {exc}")
    return written, failures


def _json(_workers: Sequence[WorkerReport], fleet: FleetReport, path: Path) -> Path:
    write_atomically(path, json.dumps(fleet_to_dict(fleet), indent=1, allow_nan=False).encode())
    return path


def _text(_workers: Sequence[WorkerReport], fleet: FleetReport, path: Path) -> Path:
    write_atomically(path, render_fleet_text(fleet).encode())
    return path


def _png(_workers: Sequence[WorkerReport], fleet: FleetReport, path: Path) -> Path:
    from pipediag.fleet.png import render_fleet_png

    return render_fleet_png(fleet, path)


WRITERS: dict[str, Writer] = {
    "fleet.json": _json,
    "fleet.txt": _text,
    "fleet_trace.json": render_fleet_trace,
    "fleet.png": _png,
}
