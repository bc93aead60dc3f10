"""How a diagnosed run ends, the same under the three front doors: its exit as recorded, a
check before the run that its files can be written, and stopping and writing them."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from pipediag.errors import UsageError
from pipediag.interrupts import EXIT_INTERRUPTED, EXIT_TERMINATED, TerminationRequested
from pipediag.report.model import ExitInfo, Report
from pipediag.report.vocabulary import StopReason
from pipediag.timeline import StepBudgetReached


class Stoppable(Protocol):
    """What `finish` needs of a `DiagnosticSession`."""

    def stop(self, exit_info: ExitInfo, stop_reason: StopReason) -> Report: ...
    def log(self, message: str) -> None: ...


def exit_info_of(exc: BaseException | None) -> ExitInfo:
    """How code that raised `exc` (None: returned normally) ended, as the report records it:
    a `SystemExit`'s code as Python's exit gives it, Ctrl-C and SIGTERM as a shell does."""
    if exc is None:
        return ExitInfo("ok", 0)
    if isinstance(exc, StepBudgetReached):
        return ExitInfo("step-budget", 0)
    if isinstance(exc, SystemExit):
        code = exc.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
        return ExitInfo("system-exit", status, None if status == 0 else str(code))
    if isinstance(exc, TerminationRequested):  # a KeyboardInterrupt: tested first
        return ExitInfo("interrupted", EXIT_TERMINATED, "SIGTERM")
    if isinstance(exc, KeyboardInterrupt):
        return ExitInfo("interrupted", EXIT_INTERRUPTED, "KeyboardInterrupt")
    return ExitInfo("exception", 1, f"{type(exc).__name__}: {exc}")


def stop_reason_of(exit_info: ExitInfo) -> StopReason:
    if exit_info.status == "step-budget":
        return "step-budget"
    if exit_info.status == "interrupted":
        return "interrupted"
    if exit_info.status == "exception":
        return "script-error"
    if exit_info.status == "system-exit" and exit_info.code != 0:
        return "system-exit"
    return "script-finished"


def check_writable(path: Path, message: str, *, is_file: bool = False) -> None:
    """Raise `UsageError(message)` unless `path`, a directory (`is_file`: a file to append
    to), can be written; where it does not exist yet, the nearest folder that does decides."""
    if is_file and path.exists():
        writable = path.is_file() and os.access(path, os.W_OK)
    else:
        probe = path.parent if is_file else path
        while not probe.exists():
            probe = probe.parent
        writable = probe.is_dir() and os.access(probe, os.W_OK | os.X_OK)
    if not writable:
        raise UsageError(message)


def write_files(report: Report, out: Path | None, log: Callable[[str], None]) -> list[Path]:
    """Write the report's files into `out` (None: none); each file that failed is logged."""
    if out is None:
        return []
    from pipediag.renderers import keep_previous, write_outputs

    try:
        kept = keep_previous(out)
    except OSError as exc:
        log(f"could not keep the earlier report in {out}: {exc}; it is overwritten")
    else:
        if kept is not None:
            log(f"the earlier report in {out} is kept in {kept}")
    written, failures = write_outputs(report, out)
    for failure in failures:
        log(failure)
    return written


def finish(
    session: Stoppable, exit_info: ExitInfo, stop_reason: StopReason, out: Path | None
) -> tuple[Report, list[Path]]:
    report = session.stop(exit_info, stop_reason)
    return report, write_files(report, out, session.log)
