"""Alerts: the input wait share at or over a threshold for K windows in a row, delivered to
a callable and a shell command (docs/design.md, "Watching a long run")."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pipediag.renderers.watch_view import alert_text
from pipediag.report.reasons import Reason
from pipediag.report.watch import WatchAlert, WatchWindow
from pipediag.samplers.base import describe_error
from pipediag.watch.windows import merge_windows

# At the end, how long to wait for alert commands (never killed: a pager call may be slow).
COMMAND_WAIT_S = 5.0


class AlertRule:
    """K (`windows`) windows at or over `threshold` in a row alert; one under or unknown re-arms."""

    def __init__(self, threshold: float, windows: int) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"the alert threshold is a share from 0 to 1, got {threshold}")
        if windows < 1:
            raise ValueError(f"an alert needs at least one window, got {windows}")
        self.threshold, self.windows = threshold, windows
        self._streak: list[WatchWindow] = []

    def observe(self, window: WatchWindow) -> WatchAlert | None:
        if (share := window.input_wait_fraction) is None or share < self.threshold:
            self._streak = []
            return None
        self._streak.append(window)
        if len(self._streak) != self.windows:
            return None  # not yet K in a row, or this streak has fired already
        return self._alert(self._streak)

    def _alert(self, streak: Sequence[WatchWindow]) -> WatchAlert:
        first, last = streak[0], streak[-1]
        # Its share over the steps whose wait is known, as windows' are: never under the threshold.
        whole = functools.reduce(merge_windows, streak)
        share = whole.input_wait_fraction
        share = share if share is not None else last.input_wait_fraction or 0.0
        return WatchAlert(
            t_s=last.end_s,
            window_index=last.index,
            first_step=first.first_step,
            last_step=last.last_step,
            windows=len(streak),
            threshold=self.threshold,
            input_wait_fraction=share,
            steps_per_s=whole.steps_per_s,
            epoch=last.epoch,
        )


def alert_environment(alert: WatchAlert, script: str) -> dict[str, str]:
    """The `PIPEDIAG_*` variables an alert command gets, beside the caller's environment."""
    rate = "" if alert.steps_per_s is None else f"{alert.steps_per_s:.6g}"
    return {
        "PIPEDIAG_ALERT": alert_text(alert),
        "PIPEDIAG_INPUT_WAIT_SHARE": f"{alert.input_wait_fraction:.6g}",
        "PIPEDIAG_THRESHOLD": f"{alert.threshold:.6g}",
        "PIPEDIAG_WINDOWS": str(alert.windows),
        "PIPEDIAG_FIRST_STEP": str(alert.first_step),
        "PIPEDIAG_LAST_STEP": str(alert.last_step),
        "PIPEDIAG_EPOCH": str(alert.epoch),
        "PIPEDIAG_STEPS_PER_S": rate,
        "PIPEDIAG_SCRIPT": script,
    }


def alert_json(alert: WatchAlert, script: str) -> str:
    """The alert as the command reads it on stdin: one JSON line, its figures and words."""
    fields = dataclasses.asdict(alert)
    epoch = fields.pop("epoch")  # after the words, in the order commands have always read
    fields |= {"message": alert_text(alert), "epoch": epoch, "script": script}
    return json.dumps(fields) + "\n"


@dataclass(frozen=True)
class WordedAlert(WatchAlert):
    """An alert as a hook is given it: the report's figures, and `message`, their words."""

    message: str = ""


class AlertSinks:
    """Delivers alerts to a callable and a shell command; each kind of failure reported once."""

    def __init__(
        self,
        hook: Callable[[WatchAlert], object] | None,
        command: str | None,
        *,
        script: str,
        report_failure: Callable[[Reason], None],
    ) -> None:
        self.hook, self.command = hook, command
        self.script, self._report_failure = script, report_failure
        self._reported: set[str] = set()
        self._running: list[subprocess.Popen[bytes]] = []

    def deliver(self, alert: WatchAlert) -> None:
        self._reap()
        if self.hook is not None:
            try:
                self.hook(WordedAlert(**dataclasses.asdict(alert), message=alert_text(alert)))
            except Exception as exc:
                self._once("hook", Reason("alert-hook-raised", detail=describe_error(exc)))
        if self.command is not None:
            self._start_command(self.command, alert)

    def _start_command(self, command: str, alert: WatchAlert) -> None:
        try:
            process = subprocess.Popen(  # noqa: S602 - the user's own shell command, by design
                command,
                shell=True,
                stdin=subprocess.PIPE,
                env={**os.environ, **alert_environment(alert, self.script)},
            )
        except OSError as exc:
            self._once("start", Reason("alert-command-no-start", detail=describe_error(exc)))
            return
        with contextlib.suppress(OSError):  # it exited without reading its stdin: its choice
            assert process.stdin is not None
            process.stdin.write(alert_json(alert, self.script).encode())
            process.stdin.close()
        self._running.append(process)

    def _reap(self) -> None:
        """Collect the commands that ended (no zombies), and say the first that failed."""
        still = []
        for process in self._running:
            if (code := process.poll()) is None:
                still.append(process)
            elif code != 0:
                failed = Reason("alert-command-exit", detail=self.command or "", value=code)
                self._once("exit", failed)
        self._running = still

    def close(self, wait_s: float = COMMAND_WAIT_S) -> None:
        """At the end of the run: wait a little for running commands, then leave them be."""
        deadline = time.monotonic() + wait_s
        for process in self._running:
            with contextlib.suppress(subprocess.TimeoutExpired):  # left running: said below
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
        self._reap()
        if self._running:
            self._once("running", Reason("alert-command-running", detail=self.command or ""))

    def _once(self, kind: str, failure: Reason) -> None:
        if kind not in self._reported:
            self._reported.add(kind)
            self._report_failure(failure)


def describe_hook(hook: Any) -> str | None:
    """A callable's name for the report (`module.qualname`), or None."""
    if hook is None:
        return None
    name = getattr(hook, "__qualname__", None) or type(hook).__qualname__
    module = getattr(hook, "__module__", None)
    return f"{module}.{name}" if module else str(name)
