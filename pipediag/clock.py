"""The clock every recorder reads, injectable so tests can use a fake one."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Seconds on a monotonic scale, and a way to wait on it."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class MonotonicClock:
    """The real clock: `time.perf_counter`, the highest-resolution monotonic timer."""

    def now(self) -> float:
        return time.perf_counter()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


MONOTONIC = MonotonicClock()
