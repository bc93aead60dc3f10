"""The step timeline as it is recorded: raw step marks, the warm-up, and the step budget.

Framework-neutral. Past `max_records` the older half of the measured steps is merged in pairs:
memory stays bounded, a long run keeps a whole-run picture, and totals stay exact."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass


class StepBudgetReached(BaseException):  # noqa: N818 - a signal, not an error
    """Raised inside the user's loop once enough steps are measured, to end the script (so no
    partly trained model is saved); a `BaseException`, past the script's `except Exception:`."""


# The fewest measured steps a time bound stops at: a median and p90 need a few dozen.
MIN_MEASURED_STEPS = 20
# A loop whose waits are not timed: twenty 20-Hz host readings still fall in its measured steps.
BRIEF_MEASURED_S = 1.0
# ~20,000 records keep the report a few MB and its PNG quick; a typical diagnosis never merges.
DEFAULT_MAX_RECORDS = 20_000
# Epoch starts kept: a run of more epochs keeps its first ones (a few bytes each).
MAX_EPOCH_STARTS = 10_000


@dataclass(slots=True)  # one per step, made on the user's critical path: keep it cheap
class RawStep:
    """One step (or `count` merged), in clock seconds; `busy_s`: their durations, without gaps."""

    start: float
    end: float
    input_wait_s: float | None
    epoch: int = 0
    count: int = 1
    busy_s: float | None = None

    @property
    def duration_s(self) -> float:
        return self.busy_s if self.busy_s is not None else self.end - self.start


# A step as stored: RawStep's fields as a tuple. A RawStep's __init__ frame, made by `add` on
# the user's critical path, cost more than the rest of the iterator hook when cache-cold.
_Record = tuple[float, float, float | None, int, int, float | None]


def merge_pair(first: _Record, second: _Record) -> _Record:
    first_wait, second_wait = first[2], second[2]
    wait = None if first_wait is None or second_wait is None else first_wait + second_wait
    return (first[0], second[1], wait, first[3], first[4] + second[4], _busy(first) + _busy(second))


def _busy(record: _Record) -> float:
    return record[5] if record[5] is not None else record[1] - record[0]


class StepTimeline:
    """Thread-safe list of steps, with the warm-up and the step budget that ends the run
    (None: until the script ends). `measured_seconds` also reaches the budget, with at least
    `MIN_MEASURED_STEPS`; `fixed_end`: only the step count does (workers in lockstep)."""

    def __init__(
        self,
        *,
        warmup_steps: int,
        measured_steps: int | None,
        measured_seconds: float | None = None,
        max_records: int | None = None,
        fixed_end: bool = False,
    ) -> None:
        self.warmup_steps, self.fixed_end = warmup_steps, fixed_end
        self.measured_steps = measured_steps
        # The step count that reaches the budget; None measures until the script ends.
        self._budget_end = None if measured_steps is None else warmup_steps + measured_steps
        self._time_bound = None if measured_steps is None else measured_seconds
        self._min_end = warmup_steps + min(MIN_MEASURED_STEPS, measured_steps or 0)
        self._measured_from: float | None = None
        cap = DEFAULT_MAX_RECORDS if max_records is None else max_records  # read at each run
        self.max_records = max(cap, warmup_steps + 2)
        self.merges = 0
        self._steps: list[_Record] = []
        self._count = 0
        self._lock = threading.Lock()
        # (epoch, seconds its iterator took to make, its steps) at each epoch's start.
        self.epoch_starts: list[tuple[int, float, int | None]] = []
        # The script's newest iterator: (when it was made, seconds `iter()` took).
        self.last_iterator_made: tuple[float, float] | None = None

    def add(self, start: float, end: float, input_wait_s: float | None, epoch: int = 0) -> bool:
        """Record a step; returns `budget_reached` after it (one call on the hot path)."""
        with self._lock:
            self._steps.append((start, end, input_wait_s, epoch, 1, None))
            self._count += 1
            if len(self._steps) > self.max_records:
                # The older half merged in pairs; the newest, whose waits a trace may fill, stay.
                head, body = self._steps[: self.warmup_steps], self._steps[self.warmup_steps :]
                half = len(body) // 2 // 2 * 2
                merged = [merge_pair(body[i], body[i + 1]) for i in range(0, half, 2)]
                self._steps = head + merged + body[half:]
                self.merges += 1
            if self._budget_end is None:
                return False
            if self._count >= self._budget_end:
                return True
            if self._time_bound is None or self._count <= self.warmup_steps:
                return False
            if self._measured_from is None:
                self._measured_from = start
            if self._count >= self._min_end and end - self._measured_from >= self._time_bound:
                self._budget_end = self._count  # reached: later calls agree
                return True
            return False

    def mark_epoch_start(self, epoch: int, duration_s: float, steps: int | None) -> None:
        """An epoch's start-up, before its first step (kept apart from the steps' rates)."""
        if len(self.epoch_starts) < MAX_EPOCH_STARTS:
            self.epoch_starts.append((epoch, duration_s, steps))

    def fill_waits(
        self, wait_for: Callable[[float, float], float | None], since: float | None = None
    ) -> None:
        """Fill unknown waits with `wait_for(start, end)`, from the end back to `since` if given."""
        with self._lock:
            steps = self._steps
            for i in range(len(steps) - 1, -1, -1):
                record = steps[i]
                if since is not None and record[0] < since:
                    break
                if record[2] is None and record[4] == 1:
                    start, end = record[0], record[1]
                    steps[i] = (start, end, wait_for(start, end), *record[3:])

    def clear(self) -> None:
        with self._lock:
            self._steps.clear()
            self._count = self.merges = 0
            self.epoch_starts.clear()

    @property
    def steps(self) -> list[RawStep]:
        with self._lock:
            records = list(self._steps)
        return [RawStep(*record) for record in records]

    def records_since(self, step: int) -> tuple[int, list[RawStep]]:
        """The newest records from the one holding step `step`, and the first step they hold; found
        from the end, so a reader that keeps up (watch mode) reads only the new."""
        with self._lock:
            records = self._steps
            first, i = self._count, len(records)
            while i > 0 and first > step:
                i -= 1
                first -= records[i][4]
            new = records[i:]
        return first, [RawStep(*record) for record in new]

    def median_measured_step_s(self) -> float | None:
        """The median measured step (a merged record counts as its mean step), or None."""
        durations = sorted(s.duration_s / s.count for s in self.steps[self.warmup_steps :])
        return durations[len(durations) // 2] if durations else None

    def __len__(self) -> int:
        """Steps recorded, merged ones counted one by one: the next step's index."""
        return self._count

    def extend_budget(self, steps: int) -> None:
        """Measure `steps` more before the budget is reached (a cache filling in epoch 1)."""
        with self._lock:
            if self._budget_end is not None:
                self._budget_end = max(self._budget_end, self._count) + steps
                self._time_bound = None  # the extension is counted in steps

    def measure_briefly(self) -> None:
        """End the measured steps after `BRIEF_MEASURED_S` (and `MIN_MEASURED_STEPS`), for a loop
        whose waits are not timed (docs/design.md, "Loops that pull inside a tf.function"); not
        for an exact step count, an extended budget or workers in lockstep."""
        with self._lock:
            if self._time_bound is not None and not self.fixed_end:
                self._time_bound = min(self._time_bound, BRIEF_MEASURED_S)

    def end_budget(self) -> None:
        """Reach the budget now (fit's steps left are wanted for the alternation)."""
        with self._lock:
            if self._budget_end is not None and not self.fixed_end:
                self._budget_end = self._count

    @property
    def budget_reached(self) -> bool:
        return self._budget_end is not None and self._count >= self._budget_end
