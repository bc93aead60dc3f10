"""`pipediag.keras.Watch`: watch mode as a Keras callback, in your own training script.

    watch = pipediag.keras.Watch(every=500, alert=page_me, logdir="logs")
    model.fit(watch.dataset(train_ds), epochs=50, callbacks=[tensorboard, watch])

`watch.dataset` adds the batch stamps, without which no callback sees the input wait. Imports
Keras: loaded only when used (docs/design.md, "Watching a long run")."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import keras

from pipediag.cli.argtypes import EPOCH, hook_or_command, share_value, steps_or_epoch, whole_number
from pipediag.clock import MONOTONIC, Clock
from pipediag.config import (
    DEFAULT_ALERT_WINDOWS,
    DEFAULT_WARMUP_STEPS,
    DEFAULT_WATCH_LOGDIR,
    RunConfig,
    WatchConfig,
    watching,
)
from pipediag.finish import exit_info_of, finish
from pipediag.hooks.keras_fit import FitTracker
from pipediag.report.model import ExitInfo, Report
from pipediag.report.vocabulary import StopReason
from pipediag.report.watch import WatchAlert, WatchWindow
from pipediag.session import DiagnosticSession


class Watch(keras.callbacks.Callback):  # type: ignore[misc]
    """Watch a long `fit`: per-window verdicts, TensorBoard scalars and alerts.

    Args:
        every: a window per this many steps, or "epoch" (default) for one per epoch.
        alert: called on each alert: a Python callable (given the alert's figures and
            `message`, its words; run on pipediag's thread, what it raises is reported once
            and never reaches training), or a shell command (str; the figures in `PIPEDIAG_*`
            environment variables and as JSON on its stdin; not waited for).
        alert_input_share: the input wait share (0-1) an alert needs, K windows in a row;
            default 0.2 (XProf's "highly input-bound") when `alert` is given.
        alert_windows: K, the windows in a row an alert needs.
        logdir: TensorBoard's log directory (give your `keras.callbacks.TensorBoard`'s
            `log_dir` to see both together); the scalars go to its `pipediag` run. None:
            `out/tensorboard` when `out` is given, else no scalars.
        out: directory for the report files at the end of each `fit`; None writes none.
        log: where the window and alert lines go (stderr); None for silence.
        warmup_steps: the first steps of each `fit`, in no window (tracing, compilation).
        sample_gpu: sample the GPU with NVML.
        clock: the clock steps are timed on.
    """

    def __init__(
        self,
        every: int | str = EPOCH,
        *,
        alert: Any = None,
        alert_input_share: float | None = None,
        alert_windows: int = DEFAULT_ALERT_WINDOWS,
        logdir: str | os.PathLike[str] | None = None,
        out: str | os.PathLike[str] | None = None,
        log: Any = sys.stderr,
        warmup_steps: int = DEFAULT_WARMUP_STEPS,
        sample_gpu: bool = True,
        clock: Clock = MONOTONIC,
    ) -> None:
        super().__init__()
        self.out = None if out is None else Path(out)
        if logdir is None and self.out is not None:
            logdir = self.out / DEFAULT_WATCH_LOGDIR
        watch = WatchConfig(
            every_steps=steps_or_epoch("every", every),
            alert_input_share=share_value("alert_input_share", alert_input_share),
            alert_windows=whole_number("alert_windows", alert_windows, 1),
            alert_command=alert if isinstance(alert, str) else None,
            alert_hook=None
            if alert is None or isinstance(alert, str)
            else hook_or_command("alert", alert),
            logdir=None if logdir is None else os.fspath(logdir),
        )
        base = RunConfig(
            warmup_steps=whole_number("warmup_steps", warmup_steps, 0), sample_gpu=sample_gpu
        )
        self.config = watching(base, watch)
        self._log, self._clock = log, clock
        self._stamps: Any = None
        self._steps_done = 0  # over earlier fit calls: TensorBoard's x axis goes on
        self._running = False
        self._report: Report | None = None
        self.written: list[Path] = []
        self._session, self._tracker = self._new_session()

    def dataset(self, dataset: Any) -> Any:
        """`dataset`, stamped so that each step's input wait is measured; give this to fit. The
        batches pass through unchanged; two stages are added (before a final prefetch)."""
        stamped = self._tracker.stamp(dataset)
        self._stamps = self._tracker.stamps
        return stamped

    @property
    def report(self) -> Report:
        """The report of the last `fit` (its `watch` section holds the windows and alerts)."""
        if self._report is None:
            raise RuntimeError("the report is built when fit ends: read it after model.fit()")
        return self._report

    @property
    def windows(self) -> list[WatchWindow]:
        watch = self.report.watch
        return [] if watch is None else list(watch.windows)

    @property
    def alerts(self) -> list[WatchAlert]:
        watch = self.report.watch
        return [] if watch is None else list(watch.alerts)

    def close(self, exit_info: ExitInfo | None = None) -> None:
        """Stop watching a `fit` that did not end normally (it raised): the samplers and the
        watch thread stop and the report is built. Safe to call at any time."""
        if self._running:
            self._finish(exit_info or ExitInfo("ok", 0), "script-finished")

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self.close(exit_info_of(exc))

    def on_train_begin(self, logs: Any = None) -> None:
        if self._running:  # the last fit raised before its end: its report is built now
            self._finish(ExitInfo("exception", 1, "fit ended without on_train_end"), "script-error")
        if self._report is not None:  # a second fit: a fresh session, same stamps
            self._session, self._tracker = self._new_session()
        session = self._session
        session.start()
        session.mark_style("keras-fit")
        session.found.training_model(self.model)
        self._running = True

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self._tracker.on_epoch_begin(epoch)

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self._tracker.on_epoch_end(epoch)

    def on_train_end(self, logs: Any = None) -> None:
        self._finish(ExitInfo("ok", 0), "script-finished")

    def _new_session(self) -> tuple[DiagnosticSession, FitTracker]:
        argv = list(sys.argv)
        script = argv[0] if argv and argv[0] else "<python>"
        session = DiagnosticSession(
            script, argv[1:], self.config, clock=self._clock, log=self._log, install_hooks=False
        )
        tracker = FitTracker(session)
        tracker.stamps = self._stamps
        session.fit_tracker = tracker
        if session.watcher is not None:
            session.watcher.step_offset = self._steps_done
        # Keras calls the tracker's methods directly: one frame less per event, two per
        # step (as pipediag run's callback, hooks/keras_fit.py). Bound before fit builds its
        # CallbackList, which then dispatches batch ends synchronously (they are not default).
        self.on_train_batch_begin = tracker.on_batch_begin
        self.on_train_batch_end = tracker.on_batch_end
        return session, tracker

    def _finish(self, exit_info: ExitInfo, stop_reason: StopReason) -> None:
        self._running = False
        self._tracker.finish()
        self._steps_done += len(self._session.timeline)
        self._report, self.written = finish(self._session, exit_info, stop_reason, self.out)
