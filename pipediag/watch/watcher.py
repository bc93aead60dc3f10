"""The watcher: on its own thread, reads the new step records, closes the windows they
complete and, for each, writes scalars, says a line and runs the alert rule
(docs/design.md, "Watching a long run")."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

from pipediag.clock import Clock
from pipediag.config import DEFAULT_ALERT_INPUT_SHARE, WatchConfig
from pipediag.renderers.watch_view import alert_text, window_line
from pipediag.report.reasons import Reason
from pipediag.report.watch import WatchAlert, WatchSection, WatchWindow
from pipediag.samplers.base import describe_error
from pipediag.timeline import RawStep, StepTimeline
from pipediag.watch.alerts import AlertRule, AlertSinks, describe_hook
from pipediag.watch.tensorboard import RUN_NAME, open_event_file, window_event
from pipediag.watch.windows import WindowAccumulator, WindowList

THREAD_NAME = "pipediag-watch"
# A poll reads only the new records (hundreds at most): well under a millisecond.
POLL_INTERVAL_S = 0.5
# A record still without its wait after this long will not get one: read as unknown. Far
# longer than fit's settling interval (2 s), and than most validation passes.
PENDING_MAX_S = 30.0
# At the end, how long to wait for the watcher's thread (an alert hook may be slow).
JOIN_TIMEOUT_S = 10.0


class Watcher:
    """Windows, TensorBoard scalars and alerts over a whole run; `log` and `note` must be
    thread-safe. Set later: `default_logdir` (api.py: the log directory when neither the
    config nor a `keras.callbacks.TensorBoard` names one; None writes no scalars) and
    `step_offset` (keras.py: steps of earlier `fit` calls, added to TensorBoard's x axis)."""

    def __init__(
        self,
        config: WatchConfig,
        timeline: StepTimeline,
        *,
        clock: Clock,
        warmup_steps: int,
        script: str,
        log: Callable[[str], None],
        note: Callable[[Reason], None],
    ) -> None:
        self.config, self.timeline = config, timeline
        self.clock, self.warmup_steps = clock, warmup_steps
        self.step_offset = 0
        self._log, self._note = log, note
        self.default_logdir: str | None = None
        self._seen_logdir: str | None = None
        # Whether the newest steps' waits are still to come; set by the hook that fills them.
        self.waits_deferred: Callable[[], bool] = lambda: False
        threshold = config.alert_input_share
        if threshold is None and (config.alert_hook is not None or config.alert_command):
            threshold = DEFAULT_ALERT_INPUT_SHARE
        self.rule = None if threshold is None else AlertRule(threshold, config.alert_windows)
        self.sinks = AlertSinks(
            config.alert_hook, config.alert_command, script=script, report_failure=note
        )
        self._accumulator: WindowAccumulator | None = None
        self._windows = WindowList()
        self._alerts: list[WatchAlert] = []
        self._read_to = 0  # the number of the next step to read
        self._scalars: str | None = None  # LOGDIR/pipediag, where the scalars go
        self._events: Any = None  # its event file, opened on the first write
        self._writer_failed = False
        self._lock = threading.Lock()  # one poll at a time: the thread's, or finish()'s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._finished: WatchSection | None = None

    def start(self, origin: float, *, background: bool = True) -> None:
        """Read the timeline, windows on the axis from `origin` (`background=False`: no thread)."""
        if self._accumulator is not None:
            return
        self._accumulator = WindowAccumulator(
            self.config.every_steps, origin=origin, warmup_steps=self.warmup_steps
        )
        if background:
            self._thread = threading.Thread(target=self._loop, name=THREAD_NAME, daemon=True)
            self._thread.start()

    def saw_logdir(self, logdir: str) -> None:
        """The training's own TensorBoard log directory (a `keras.callbacks.TensorBoard`)."""
        if self._seen_logdir is None:
            self._seen_logdir = logdir

    @property
    def logdir(self) -> str | None:
        return self.config.logdir or self._seen_logdir or self.default_logdir

    def finish(self) -> WatchSection:
        """Read what is left, close the last window, stop: the section. Idempotent; never raises."""
        if self._finished is not None:
            return self._finished
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=JOIN_TIMEOUT_S)
            if thread.is_alive():
                self._note(Reason("watch-thread-busy"))
        if thread is None or not thread.is_alive():
            self._guarded(lambda: self.poll(final=True))
        self._guarded(self.sinks.close)
        events, self._events = self._events, None
        if events is not None:
            self._guarded(events.Close)
        self._finished = self.section()
        return self._finished

    def section(self) -> WatchSection:
        windows = self._windows.items()
        return WatchSection(
            every_steps=self.config.every_steps,
            windows=windows,
            alerts=list(self._alerts),
            alert_input_share=None if self.rule is None else self.rule.threshold,
            alert_windows=0 if self.rule is None else self.rule.windows,
            alert_command=self.config.alert_command,
            alert_hook=describe_hook(self.config.alert_hook),
            tensorboard_logdir=None if self._writer_failed else self._scalars,
            merged_windows=sum(1 for w in windows if w.windows > 1),
        )

    def poll(self, *, final: bool = False) -> list[WatchWindow]:
        """Read new records, deliver the windows they close; `final`: all, and the open window."""
        with self._lock:
            if (accumulator := self._accumulator) is None:
                return []
            first, records = self.timeline.records_since(self._read_to)
            if first + sum(r.count for r in records) < self._read_to:
                # The timeline was cleared (a peek was not the training data).
                accumulator.reset()
                self._read_to = 0
                first, records = self.timeline.records_since(0)
            ready = records if final else self._settled(records)
            closed, step = [], first
            for record in ready:
                # A record merged across the last read (a reader lagging by thousands of
                # records) was read with its older half: skipped.
                if step >= self._read_to and (window := accumulator.add(step, record)) is not None:
                    closed.append(window)
                step += record.count
            self._read_to = max(self._read_to, step)
            if final and (last := accumulator.close()) is not None:
                closed.append(last)
            for window in closed:
                self._deliver(window)
            if closed and self._events is not None:
                self._guarded(self._events.Flush)
            return closed

    def _settled(self, records: list[RawStep]) -> list[RawStep]:
        """All but the newest records without a wait, while stamps may come (to `PENDING_MAX_S`)."""
        if not records or records[-1].input_wait_s is not None or not self.waits_deferred():
            return records
        last_known = len(records) - 1
        while last_known >= 0 and records[last_known].input_wait_s is None:
            last_known -= 1
        cutoff, ready = self.clock.now() - PENDING_MAX_S, last_known + 1
        while ready < len(records) and records[ready].end <= cutoff:
            ready += 1
        return records[:ready]

    def _deliver(self, window: WatchWindow) -> None:
        self._windows.append(window)
        self._guarded(lambda: self._write_scalars(window))
        self._log(window_line(window, self.config.every_steps))
        if self.rule is None or (alert := self.rule.observe(window)) is None:
            return
        self._alerts.append(alert)
        self._log(f"ALERT: {alert_text(alert)}")
        self.sinks.deliver(alert)

    def _write_scalars(self, window: WatchWindow) -> None:
        if self._writer_failed:
            return
        if self._scalars is None:
            if (logdir := self.logdir) is None:
                return
            self._scalars = os.path.join(os.fspath(logdir), RUN_NAME)
            self._log(f"TensorBoard scalars: {self._scalars} (see: tensorboard --logdir {logdir})")
        every = self.config.every_steps
        step = window.epoch if every is None else self.step_offset + window.last_step + 1
        try:
            if self._events is None:
                self._events = open_event_file(self._scalars)
            self._events.WriteEvent(window_event(window, step, time.time()))
        except Exception as exc:
            self._writer_failed = True
            error = Reason("exception", detail=describe_error(exc))
            self._note(Reason("scalars-not-written", detail=self._scalars, because=error))

    def _loop(self) -> None:
        while not self._stop.wait(POLL_INTERVAL_S):
            self._guarded(self.poll)

    def _guarded(self, action: Callable[[], Any]) -> None:
        """A bug in one part of the watcher is noted, never raised."""
        try:
            action()
        except Exception as exc:
            self._note(Reason("watch-failed", detail=describe_error(exc)))
