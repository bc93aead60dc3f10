"""`pipediag merge DIR...`: load, build the fleet report, write its files (`fleet.json` first)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

from pipediag.fleet.analysis import build_fleet
from pipediag.fleet.collect import load_worker_reports
from pipediag.fleet.io import fleet_to_dict
from pipediag.fleet.model import FleetReport
from pipediag.fleet.text import render_fleet_text
from pipediag.fleet.trace import fleet_trace
from pipediag.renderers import write_files
from pipediag.renderers.chrome_trace import write_trace
from pipediag.report.io import write_atomically


def merge_reports(
    paths: Sequence[str | os.PathLike[str]], out_dir: str | os.PathLike[str]
) -> tuple[FleetReport, list[Path], list[str]]:
    """The fleet report, files written, a line per failed file; `ReportError` if none is usable."""
    workers = load_worker_reports(paths)
    created = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    fleet = build_fleet(workers, created_utc=created)
    writers: dict[str, Callable[[Path], Path]] = {
        "fleet.json": lambda path: _atomic(
            path, json.dumps(fleet_to_dict(fleet), indent=1, allow_nan=False)
        ),
        "fleet.txt": lambda path: _atomic(path, render_fleet_text(fleet)),
        "fleet_trace.json": lambda path: write_trace(fleet_trace(workers, fleet), path),
        "fleet.png": partial(_png, fleet),
    }
    written, failures = write_files(Path(out_dir), writers)
    return fleet, written, failures


def _atomic(path: Path, text: str) -> Path:
    write_atomically(path, text.encode())
    return path


def _png(fleet: FleetReport, path: Path) -> Path:
    from pipediag.fleet.png import build_fleet_figure
    from pipediag.renderers.png import write_png

    return write_png(build_fleet_figure(fleet), path)
