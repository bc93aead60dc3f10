"""The framework-neutral API: diagnose any training loop (PyTorch, JAX, plain Python), its
steps marked by the caller. The step budget stops recording without ending the program.
Imports no TensorFlow, pynvml or framework (docs/design.md, "Loops pipediag cannot hook")."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Final, TypeVar

from pipediag.clock import MONOTONIC, Clock
from pipediag.config import DEFAULT_OUT_DIR, RunConfig
from pipediag.finish import exit_info_of, stop_reason_of, write_files
from pipediag.report.model import ExitInfo, PipelineBenchmark, Report
from pipediag.report.reasons import Reason, ReasonCode
from pipediag.report.vocabulary import StopReason
from pipediag.session import DiagnosticSession

T = TypeVar("T")

STYLE: Final = "custom-loop"  # steps timed around the caller's own `next()`
_ITERATE = "iterate()"
_MARKS = "explicit marks"
# The note when a way of marking steps is ignored, the other one having come first.
_IGNORED: Final[dict[str, ReasonCode]] = {_ITERATE: "iterate-ignored", _MARKS: "marks-ignored"}


class Monitor:
    """Records one training loop's steps and input waits, and writes pipediag's report; use
    as `with pipediag.monitor() as mon:` (`monitor` is this class).

    Args:
        out: directory for report.json, summary.txt, report.png and trace.json; None writes
            nothing (the report is still in `report`).
        config: warm-up, step budget and sampling settings (`RunConfig`); the pipeline
            benchmark settings do not apply.
        name: what the report calls the program; defaults to `sys.argv[0]`.
        clock: the clock every mark is read from (a fake one in tests); times given to
            `mark_step` must come from it.
        log: where pipediag's progress lines go (stderr by default); None for silence.
    """

    def __init__(
        self,
        out: str | os.PathLike[str] | None = DEFAULT_OUT_DIR,
        *,
        config: RunConfig | None = None,
        name: str | None = None,
        clock: Clock = MONOTONIC,
        log: Any = sys.stderr,
    ) -> None:
        self.out = None if out is None else Path(out)
        self.config = config or RunConfig()
        self.clock = clock
        argv = list(sys.argv)
        script = name or (argv[0] if argv and argv[0] else "<python>")
        self.session = DiagnosticSession(
            script, argv[1:], self.config, clock=clock, log=log, install_hooks=False
        )
        self.written: list[Path] = []
        self._report: Report | None = None
        self._started = self._recording = False
        self._mode: str | None = None
        self._epoch = -1
        self._open_start: float | None = None  # an explicit step() in progress
        self._open_wait = 0.0
        self._pending_start: float | None = None  # an input_wait() before its step()
        self._pending_wait = 0.0

    def start(self) -> Monitor:
        """Start the samplers and open the timeline; a second call does nothing."""
        if self._started:
            return self
        self._started = self._recording = True
        self.session.conclusion.diagnosis.pipeline = PipelineBenchmark(
            measured=False, reason=Reason("no-pipeline-benchmark")
        )
        self.session.start()
        return self

    def stop(
        self, exit_info: ExitInfo | None = None, stop_reason: StopReason = "script-finished"
    ) -> Report:
        """Stop recording, build the report and write its files; later calls return it again.

        Args:
            exit_info: how the monitored code ended (`__exit__` fills it in); None means it
                ended normally.
            stop_reason: the report's `stop_reason` when the step budget was not reached.
        """
        exit_info = exit_info or ExitInfo("ok", 0)
        if not self._started:
            self.start()
        if self._report is None:
            self._finish(exit_info, stop_reason)
        elif exit_info.status != "ok":  # built at the step budget; the code failed later
            self._report = replace(self._report, exit=exit_info)
        report = self._report
        assert report is not None
        if not self.written:
            self.written = write_files(report, self.out, self.session.log)
        return report

    def __enter__(self) -> Monitor:
        return self.start()

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        exit_info = exit_info_of(exc)
        self.stop(exit_info, stop_reason_of(exit_info))  # an exception propagates unchanged

    @property
    def report(self) -> Report:
        """The report, once the monitor has stopped (at the end of the `with` block)."""
        if self._report is None:
            raise RuntimeError(
                "the report is built when the monitor stops: read it after the `with` block "
                "or call stop()"
            )
        return self._report

    @property
    def recording(self) -> bool:
        """Whether steps are being recorded: started, and the step budget not reached yet."""
        return self._recording

    @property
    def budget_reached(self) -> bool:
        return self.session.timeline.budget_reached

    def iterate(self, iterable: Iterable[T]) -> Iterator[T]:
        """Yield from `iterable`, timing each `next()` as the input wait of a step.

        A step runs from one `next()` to the next, so it holds the wait for its batch and the
        work done on it. Each call is a new pass (epoch); a loop left early drops its last,
        unfinished step. After the step budget the items pass through untimed.
        """
        if not self._use(_ITERATE):
            yield from iterable
            return
        self._epoch += 1
        epoch, clock = self._epoch, self.clock
        iterator = iter(iterable)
        open_start: float | None = None
        open_wait = 0.0
        while True:
            began = clock.now()
            if open_start is not None:
                self._add(open_start, began, open_wait, epoch)
                open_start = None
            try:
                item = next(iterator)
            except StopIteration:
                return
            if self._recording:
                open_start, open_wait = began, clock.now() - began
            yield item

    @contextlib.contextmanager
    def step(self) -> Iterator[None]:
        """Mark one train step; `input_wait()` inside it (or just before it) times its input.

        A wait marked just before the step (outside any step) opens the step at the wait's
        start, so the step always holds its own wait.
        """
        if not self._use(_MARKS):
            yield
            return
        if self._open_start is not None:
            self.session.note_once(Reason("nested-step"))
            yield
            return
        start = self._pending_start if self._pending_start is not None else self.clock.now()
        self._open_start, self._open_wait = start, self._pending_wait
        self._pending_start, self._pending_wait = None, 0.0
        try:
            yield
            end, wait = self.clock.now(), self._open_wait
        finally:
            self._open_start, self._open_wait = None, 0.0  # a step that failed is no step
        self._add(start, end, wait, max(self._epoch, 0))

    @contextlib.contextmanager
    def input_wait(self) -> Iterator[None]:
        """Time a wait for input (e.g. `batch = next(it)`) inside or just before a step()."""
        if not self._use(_MARKS):
            yield
            return
        began = self.clock.now()
        try:
            yield
        finally:
            waited = self.clock.now() - began
            if self._open_start is not None:
                self._open_wait += waited
            else:
                if self._pending_start is None:
                    self._pending_start = began
                self._pending_wait += waited

    def mark_step(self, start: float, end: float, input_wait_s: float | None = None) -> None:
        """Record a step measured by the caller, with times from `mon.clock.now()`.

        Args:
            start: when the step began (including its wait for input).
            end: when it ended.
            input_wait_s: how long of it was spent waiting for input; None if unknown
                (such a step is kept out of the verdict).
        """
        self._require_started()
        if end < start:
            raise ValueError(f"a step cannot end ({end}) before it starts ({start})")
        if not self._use(_MARKS):
            return
        if input_wait_s is not None:
            input_wait_s = min(max(0.0, input_wait_s), end - start)
        self._add(start, end, input_wait_s, max(self._epoch, 0))

    def _require_started(self) -> None:
        if not self._started:
            raise RuntimeError(
                "start the monitor first: `with pipediag.monitor() as mon:` or mon.start()"
            )

    def _use(self, mode: str) -> bool:
        """Whether marks of this kind are recorded (once started): one way per run, as iterate()
        and explicit marks would count steps twice; the other kind is noted and ignored."""
        self._require_started()
        if self._mode is None:
            self._mode = mode
        if self._mode == mode:
            return True
        self.session.note_once(Reason(_IGNORED[mode]))
        return False

    def _add(self, start: float, end: float, input_wait_s: float | None, epoch: int) -> None:
        if not self._recording:
            return
        session = self.session
        session.mark_style(STYLE)
        if session.timeline.add(start, end, input_wait_s, epoch):
            warmup, measured = self.config.warmup_steps, self.config.measured_steps
            session.note(Reason("step-budget-reached", value=warmup, limit=measured))
            self._finish(ExitInfo("ok", 0), "step-budget")

    def _finish(self, exit_info: ExitInfo, stop_reason: StopReason) -> None:
        """Stop the samplers and freeze the report (at the budget, or when the code ends)."""
        self._recording = False
        if self.session.timeline.budget_reached:
            stop_reason = "step-budget"
        self._report = self.session.stop(exit_info, stop_reason)


monitor = Monitor
"""Diagnose a training loop of any framework: `with pipediag.monitor() as mon:`. Another name
for `Monitor`, lower-case like the other front door, `diagnose()`."""
