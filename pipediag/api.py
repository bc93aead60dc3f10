"""The Python API: the same diagnosis as `pipediag run`, returning the Report."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipediag.cluster import task_from_env, task_out_dir
from pipediag.config import DEFAULT_OUT_DIR, DEFAULT_WATCH_LOGDIR, RunConfig
from pipediag.finish import check_writable, finish
from pipediag.interrupts import EXIT_INTERRUPTED, second_interrupt_aborts
from pipediag.report.model import ExitInfo, Report
from pipediag.runner import RunOutcome, check_script, release_stopped_script, run_script
from pipediag.session import DiagnosticSession

# How the run is recorded if it stops before the script ends (Ctrl-C while starting).
_NOT_ENDED = RunOutcome(
    ExitInfo("interrupted", EXIT_INTERRUPTED, "stopped before the script ended"), "interrupted"
)


def diagnose(
    script: str | os.PathLike[str],
    args: Sequence[str] = (),
    *,
    config: RunConfig | None = None,
    out: str | os.PathLike[str] | None = DEFAULT_OUT_DIR,
    log: Any = sys.stderr,
) -> Report:
    """Run a training script under pipediag and return its report.

    Args:
        script: path of the unmodified training script.
        args: the script's own command-line arguments.
        config: what to measure (steps, warm-up, pipeline benchmark budget).
        out: directory for report.json, summary.txt, report.png and trace.json;
            None writes nothing. Under `TF_CONFIG` (a multi-worker job) they go to its
            `<type>-<index>` subdirectory, e.g. `out/worker-0`.
        log: where progress lines go; None for silence.

    The script runs in this process as `__main__`. The report is built (and written)
    however the script ends; its `exit` field says how.
    """
    report, _ = run_and_report(str(script), list(args), config or RunConfig(), out=out, log=log)
    release_stopped_script()
    return report


def run_and_report(
    script: str, args: list[str], config: RunConfig, *, out: str | os.PathLike[str] | None, log: Any
) -> tuple[Report, list[Path]]:
    """The whole `pipediag run`: check, run, stop, write; the report and the files written."""
    path, task = check_script(script), task_from_env()
    folder = None if out is None else task_out_dir(out, task)
    if folder is not None:
        check_writable(
            folder, f"cannot write reports to {folder}: choose a writable --out directory"
        )
    session = DiagnosticSession(script, args, config, log=log, task=task)
    if session.watcher is not None and folder is not None:
        # Watch mode's scalars, where no --watch-logdir or Keras callback names a directory.
        session.watcher.default_logdir = str(folder / DEFAULT_WATCH_LOGDIR)
    outcome = _NOT_ENDED
    try:
        session.start()
        outcome = run_script(path, args, as_typed=script)
    finally:
        with second_interrupt_aborts(outcome.stop_reason == "interrupted"):
            report, written = finish(session, outcome.exit, outcome.stop_reason, folder)
    return report, written
