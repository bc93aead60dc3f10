"""The step timeline as it is recorded: raw step marks, the warm-up, and the step budget.

Framework-neutral: the TensorFlow hooks feed it, and so can any training loop.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


class StepBudgetReached(BaseException):  # noqa: N818 - a signal, not an error
    """Raised inside the user's loop once enough steps are measured, to end the script.

    A `BaseException`, so that the script's own `except Exception:` does not swallow it;
    ending the script (rather than letting it run on) means no partially trained model is
    saved over the user's files.
    """


@dataclass
class RawStep:
    """One step as measured, in clock seconds; `input_wait_s` None until known."""

    start: float
    end: float
    input_wait_s: float | None
    epoch: int = 0

    @property
    def duration_s(self) -> float:
        return self.end - self.start


class StepTimeline:
    """Thread-safe list of steps, with the warm-up and the step budget that ends the run.

    Args:
        warmup_steps: the first steps (tracing, compilation, buffers filling) kept out of
            the verdict.
        measured_steps: how many steps after the warm-up to measure before the budget is
            reached; None measures until the script ends.
    """

    def __init__(self, *, warmup_steps: int, measured_steps: int | None) -> None:
        self.warmup_steps = warmup_steps
        self.measured_steps = measured_steps
        self._steps: list[RawStep] = []
        self._lock = threading.Lock()

    def add(self, start: float, end: float, input_wait_s: float | None, epoch: int = 0) -> None:
        with self._lock:
            self._steps.append(RawStep(start, end, input_wait_s, epoch))

    def clear(self) -> None:
        with self._lock:
            self._steps.clear()

    @property
    def steps(self) -> list[RawStep]:
        with self._lock:
            return list(self._steps)

    def __len__(self) -> int:
        return len(self._steps)

    @property
    def budget_reached(self) -> bool:
        if self.measured_steps is None:
            return False
        return len(self._steps) >= self.warmup_steps + self.measured_steps

    def is_measured(self, index: int) -> bool:
        """Whether the step with this index counts (past the warm-up, within the budget)."""
        return index >= self.warmup_steps
