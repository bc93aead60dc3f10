"""Run the user's script exactly as `python script.py args...` would, and say how it ended."""

from __future__ import annotations

import runpy
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from pipediag.errors import UsageError
from pipediag.finish import exit_info_of, stop_reason_of
from pipediag.interrupts import interrupts_unwind_the_script
from pipediag.report.model import ExitInfo
from pipediag.report.vocabulary import StopReason

# The exception that stopped the script at the step budget, and with it the script's frames,
# held until its answer is out: their idle iterators may wait out autotune's sleep as they
# are deleted (docs/design.md, "Iterator tear-down").
_STOPPED: list[BaseException] = []


def release_stopped_script() -> None:
    """Let go of the frames of a script pipediag stopped, once its report is out."""
    _STOPPED.clear()


@dataclass(frozen=True)
class RunOutcome:
    exit: ExitInfo
    stop_reason: StopReason


def check_script(path: str) -> Path:
    """Fail early, in one line, on a script that cannot run; return its resolved path."""
    script = Path(path)
    if not script.exists():
        raise UsageError(f"script not found: {path}")
    if script.is_dir():
        raise UsageError(f"{path} is a directory: give the training script, e.g. {path}/train.py")
    try:
        source = script.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    if b"\0" in source:
        raise UsageError(f"{path} is not a Python script (binary file)")
    try:
        compile(source, str(script), "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise UsageError(f"{path}:{exc.lineno}: syntax error in the script: {exc.msg}") from None
    except ValueError as exc:
        raise UsageError(f"{path} is not a Python script: {exc}") from None
    return script.resolve()


def run_script(script: Path, args: list[str], *, as_typed: str | None = None) -> RunOutcome:
    """Run `script` as `__main__` with `sys.argv` (`as_typed`: its path as typed) and `sys.path[0]`
    as Python sets them; every end a `RunOutcome`, tracebacks as Python prints them."""
    saved_argv = sys.argv[:]
    saved_path0 = sys.path[0] if sys.path else None
    argv0 = as_typed or str(script)
    sys.argv = [argv0, *args]
    if not (sys.flags.isolated or getattr(sys.flags, "safe_path", False)):
        sys.path[:1] = [str(script.parent)]  # replaces sys.path[0], or adds it
    try:
        with interrupts_unwind_the_script():
            runpy.run_path(argv0, run_name="__main__")
    except BaseException as exc:
        exit_info = exit_info_of(exc)
        if exit_info.status == "exception":  # from the script's own first frame on
            tb: TracebackType | None = exc.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename != argv0:
                tb = tb.tb_next
            traceback.print_exception(type(exc), exc, tb or exc.__traceback__, file=sys.stderr)
        elif isinstance(exc, SystemExit) and not (exc.code is None or isinstance(exc.code, int)):
            print(exc.code, file=sys.stderr)  # as Python prints `sys.exit("message")`
        elif exit_info.status == "step-budget":
            _STOPPED.append(exc)
        return RunOutcome(exit_info, stop_reason_of(exit_info))
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None and sys.path:
            sys.path[0] = saved_path0
    return RunOutcome(exit_info_of(None), "script-finished")
