"""One slice of a trial served to a custom loop, timed by its pulls (step k runs from pull k to
pull k + 1), and `from_ends`, which makes every timing of train steps from when they ended."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pipediag.bench.pipeline import BatchTiming

# A slice never times more steps than this (sub-millisecond steps).
MAX_STEPS_PER_SLICE = 2000


def from_ends(
    ends: Sequence[float],
    *,
    per_call: int = 1,
    first_s: float | None = None,
    exhausted: bool = False,
    cpu_s: float | None = None,
    opened_s: float | None = None,
) -> BatchTiming:
    """A run's timing from its calls' ends: a latency per batch at its call's mean."""
    latencies = [
        (b - a) / per_call for a, b in zip(ends, ends[1:], strict=False) for _ in range(per_call)
    ]
    return BatchTiming(first_s, latencies, ends[-1] - ends[0], exhausted, cpu_s, opened_s)


@dataclass
class PullSlice:
    """A side's slice; `first_untimed`: a fresh `iterator`'s first step, timed apart."""

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
        """What the slice's timed steps took, and their process CPU."""
        start = int(self.first_untimed)
        pulls = self.pulls
        if len(pulls) <= start:
            return BatchTiming(None, [], 0.0, exhausted=True)
        return from_ends(
            pulls[start:],
            first_s=pulls[1] - pulls[0] if self.first_untimed else None,
            exhausted=self.exhausted,
            cpu_s=None if self.cpu_from is None else time.process_time() - self.cpu_from,
            opened_s=self.opened_s,
        )
