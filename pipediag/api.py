"""The Python API: the same diagnosis as `pipediag run`, returning the Report."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipediag.cluster import task_from_env, task_out_dir
from pipediag.config import DEFAULT_OUT_DIR, RunConfig
from pipediag.interrupts import EXIT_INTERRUPTED, second_interrupt_aborts
from pipediag.report.model import Report
from pipediag.runner import RunOutcome, check_script, run_script
from pipediag.session import DiagnosticSession

# Under the report directory: watch mode's TensorBoard log directory by default.
WATCH_LOGDIR = "tensorboard"


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
    return report


def run_and_report(
    script: str,
    args: list[str],
    config: RunConfig,
    *,
    out: str | os.PathLike[str] | None,
    log: Any,
) -> tuple[Report, list[Path]]:
    """The whole `pipediag run`: check, run, stop, write. Returns the report and its files.

    A task of a multi-worker job (`TF_CONFIG`) writes into its own directory under `out`,
    so the workers of one job never overwrite each other's files.
    """
    path = check_script(script)
    task = task_from_env()
    if out is not None:
        out = task_out_dir(out, task)
        _check_writable(out)
    session = DiagnosticSession(script, args, config, log=log, task=task)
    if session.watcher is not None and out is not None:
        # Watch mode's TensorBoard scalars, when neither --watch-logdir nor a Keras
        # TensorBoard callback names a log directory: beside the report.
        session.watcher.default_logdir = str(Path(out) / WATCH_LOGDIR)
    outcome = RunOutcome(exit=_interrupted_exit(), stop_reason="interrupted")
    try:
        session.start()
        outcome = run_script(path, args, as_typed=script)
    finally:
        with second_interrupt_aborts(outcome.stop_reason == "interrupted"):
            report = session.stop(outcome.exit, outcome.stop_reason)
            written: list[Path] = []
            if out is not None:
                from pipediag.renderers import write_outputs

                written, failures = write_outputs(report, Path(out))
                for failure in failures:
                    session.log(failure)
    return report, written


def _interrupted_exit() -> Any:
    from pipediag.report.model import ExitInfo

    return ExitInfo("interrupted", EXIT_INTERRUPTED, "stopped before the script ended")


def _check_writable(out: Path) -> None:
    from pipediag.errors import UsageError

    probe = out
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write reports to {out}: choose a writable --out directory")
