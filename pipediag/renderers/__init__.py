"""Renderers: write a report out (text, JSON, PNG, Chrome trace); one failing never costs
the others. May import: `report` and `analysis` (the data types of a comparison or a
history); never the measuring packages. matplotlib only inside the PNG renderers."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path

from pipediag.renderers.chrome_trace import render_trace
from pipediag.renderers.files import PREVIOUS, REPORT_JSON, REPORT_PNG, REPORT_TEXT, TRACE_JSON
from pipediag.renderers.text import render_text
from pipediag.report.io import save_report, write_atomically
from pipediag.report.model import Report


def _write_text(report: Report, path: Path) -> Path:
    write_atomically(path, render_text(report).encode())
    return path


def _write_png(report: Report, path: Path) -> Path:
    from pipediag.renderers.png import render_png

    return render_png(report, path)


WRITERS: dict[str, Callable[[Report, Path], Path]] = {
    REPORT_JSON: save_report,
    REPORT_TEXT: _write_text,
    REPORT_PNG: _write_png,
    TRACE_JSON: render_trace,
}


def write_outputs(report: Report, out_dir: Path) -> tuple[list[Path], list[str]]:
    """Write every output file; returns (written paths, one-line failures)."""
    return write_files(out_dir, {name: partial(write, report) for name, write in WRITERS.items()})


def write_files(
    out_dir: Path, writers: Mapping[str, Callable[[Path], Path]]
) -> tuple[list[Path], list[str]]:
    """Each file in `out_dir` by its writer (a report's, a fleet's): (written, failures)."""
    written: list[Path] = []
    failures: list[str] = []
    for name, writer in writers.items():
        try:
            written.append(writer(out_dir / name))
        except Exception as exc:  # noqa: PERF203 - one renderer's failure is reported, not fatal
            failures.append(f"could not write {out_dir / name}: {type(exc).__name__}: {exc}")
    return written, failures


def keep_previous(out_dir: Path) -> Path | None:
    """Move an earlier run's report into `out_dir/previous`, so none is overwritten unseen."""
    if not (out_dir / REPORT_JSON).is_file():
        return None
    previous = out_dir / PREVIOUS
    shutil.rmtree(previous, ignore_errors=True)
    previous.mkdir()
    for name in WRITERS:
        if (out_dir / name).is_file():
            (out_dir / name).replace(previous / name)
    return previous
