"""pipediag's progress lines: on a terminal, each phase is one line a daemon thread redraws
with its remaining budget; elsewhere (CI logs, files), every phase and message is one plain
line, with its budget."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Literal, TextIO

PREFIX = "pipediag: "
# A terminal's redraws: smooth for a countdown in tenths of seconds, cheap beside the work.
REDRAW_INTERVAL_S = 0.25
THREAD_NAME = "pipediag-progress"


# The steps pipediag says it is taking; their words: `renderers/progress_words.py`.
ProgressStepName = Literal[
    "pipeline-alone",  # phase 1: the input pipeline alone
    "train-steps",  # the user's measured steps
    "cached-epoch",  # the step budget extended into the epoch that reads a filling cache
    "step-alone",  # the train step alone on a cached batch, under fit
    "alternation",  # training and the train step alone in turn
    "stage-timing",
    "candidate-fixes",  # the what-if fixes on the pipeline alone
    "stage-holds",  # each stage held in memory on training
    "rewrites-on-training",
    "model-side",  # model-side changes on the train step alone
    "loop-profile",  # a custom loop's step time, profiled
    "loop-xla",  # XLA on a custom loop's own train step
    "service-local",  # the pipeline read through local tf.data service workers
    "service-cluster",  # the pipeline read through an existing tf.data service
]


@dataclass(frozen=True)
class ProgressStep:
    """A step said on the progress line: its name and the figures its words show."""

    name: ProgressStepName
    workers: int = 0  # "service-local": the local workers started
    service: str = ""  # "service-cluster": the dispatcher's address


class Progress:
    """Where pipediag says what it does (`stream` None: `--quiet`; `live`: redraw phase lines)."""

    def __init__(self, stream: TextIO | Any | None, *, live: bool | None = None) -> None:
        self._stream = stream
        isatty = getattr(stream, "isatty", None)
        self._live = bool(live if live is not None else (callable(isatty) and isatty()))
        self._lock = threading.Lock()
        self._phase: str | None = None
        self._deadline: float | None = None
        self._drawn = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def live(self) -> bool:
        return self._live and self._stream is not None

    def message(self, text: str) -> None:
        """A line that stays: a verdict, a note, a warning."""
        if self._stream is None:
            return
        with self._lock:
            self._end_phase_line()
            self._write(f"{PREFIX}{text}\n")
            self._phase = self._deadline = None

    def phase(self, text: str, budget_s: float | None = None, *, redraw: bool = True) -> None:
        """A phase starts, with its budget (`redraw=False`: the user's code prints meanwhile)."""
        if self._stream is None:
            return
        with self._lock:
            self._end_phase_line()
            if not self.live or not redraw:
                budget = f" (up to {budget_s:.2g} s)" if budget_s else ""
                self._write(f"{PREFIX}{text}{budget}...\n")
                return
            self._phase = text
            self._deadline = time.monotonic() + budget_s if budget_s else None
            self._draw()
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._redraw_loop, name=THREAD_NAME, daemon=True)
            self._thread.start()

    def close(self) -> None:
        """End the phase line and stop redrawing; safe to call more than once."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=1.0)
        with self._lock:
            self._end_phase_line()
            self._phase = self._deadline = None

    # Called with the lock held: _draw, _end_phase_line, _write.
    def _draw(self) -> None:
        if self._phase is None:
            return
        text = f"{PREFIX}{self._phase}..."
        if self._deadline is not None:
            left = max(0.0, self._deadline - time.monotonic())
            text += f" {left:.1f} s left"
        self._write("\r\x1b[2K" + text)
        self._drawn = True

    def _end_phase_line(self) -> None:
        if self._drawn:
            self._write("\n")
            self._drawn = False

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)  # type: ignore[union-attr]
            self._stream.flush()  # type: ignore[union-attr]
        except (OSError, ValueError):  # a closed or broken stream never stops a diagnosis
            self._stream = None

    def _redraw_loop(self) -> None:
        while not self._stop.wait(REDRAW_INTERVAL_S):
            with self._lock:
                if self._drawn:
                    self._draw()
