"""One slice of a trial served to a custom loop, timed by the loop's own pulls: step k runs
from pull k to pull k + 1. Shared by the fixes' trials (`training_trial.py`) and XLA on the
loop's step (`loop_xla.py`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from pipediag.bench.pipeline import BatchTiming

# A slice never times more steps than this (sub-millisecond steps).
MAX_STEPS_PER_SLICE = 2000


@dataclass
class PullSlice:
    """A side's slice: `seconds` from `began`, and when each pull began.

    `first_untimed`: the slice's first step reads a fresh iterator (`iterator`, made in
    `opened_s`), whose start-up is the side's epoch start: it is timed apart
    (`BatchTiming.first_batch_s`), the rest from its end. Otherwise every step is timed.
    """

    side: int
    seconds: float
    began: float
    first_untimed: bool = False
    iterator: Any = None
    opened_s: float | None = None
    pulls: list[float] = field(default_factory=list)
    cpu_from: float | None = None
    exhausted: bool = False

    def pull(self, now: float) -> None:
        """A pull at `now`: the step before it ends, the next begins."""
        self.pulls.append(now)
        if self.cpu_from is None and len(self.pulls) == 1 + self.first_untimed:
            self.cpu_from = time.process_time()

    def over(self, now: float) -> bool:
        timed = len(self.pulls) - 1 - self.first_untimed
        return timed >= MAX_STEPS_PER_SLICE or now >= self.began + self.seconds

    def timing(self) -> BatchTiming:
        """What the slice's timed steps took, and the process CPU they used."""
        start = int(self.first_untimed)
        pulls = self.pulls
        if len(pulls) < start + 1 or (self.first_untimed and len(pulls) < 2):
            return BatchTiming(None, [], 0.0, exhausted=True)
        latencies = [b - a for a, b in zip(pulls[start:], pulls[start + 1 :], strict=False)]
        cpu_s = None if self.cpu_from is None else time.process_time() - self.cpu_from
        return BatchTiming(
            pulls[1] - pulls[0] if self.first_untimed else None,
            latencies,
            pulls[-1] - pulls[start],
            self.exhausted,
            cpu_s,
            self.opened_s,
        )
