"""The clock every recorder reads, injectable so tests can use a fake one."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol


class Clock(Protocol):
    """Seconds on a monotonic scale, and a way to wait on it."""

    def now(self) -> float: ...
    def sleep(self, seconds: float) -> None: ...


class MonotonicClock:
    """The real clock: `time.perf_counter`, the highest-resolution monotonic timer."""

    # The builtin itself, not a method calling it: hooks read the clock twice per step of
    # the user's loop, where a Python frame, run cache-cold between train steps, costs ~2 us.
    now = staticmethod(time.perf_counter)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


MONOTONIC = MonotonicClock()


class Quiet:
    """When the samplers neither read nor wake (the observer check's quiet blocks): until
    `release()` or the hold's end, so a block cut short never leaves them paused. A wake
    alone takes the interpreter lock from the training thread (docs/design.md, "What
    pipediag costs a step"), so a sampler sleeps out the hold in `wait_out`."""

    def __init__(self, now: Callable[[], float] = time.perf_counter) -> None:
        self._now = now
        self._until = 0.0
        self._changed = threading.Condition()

    def hold(self, seconds: float) -> None:
        with self._changed:
            self._until = self._now() + seconds
            self._changed.notify_all()

    def release(self) -> None:
        with self._changed:
            self._until = 0.0
            self._changed.notify_all()

    def holding(self) -> bool:
        return self._now() < self._until

    def wait_out(self, stop: threading.Event) -> None:
        """Sleep until the hold ends, is released, or `stop` is set and `interrupt()` called."""
        with self._changed:
            while not stop.is_set() and (left := self._until - self._now()) > 0:
                self._changed.wait(left)

    def interrupt(self) -> None:
        """Wake the sleepers in `wait_out` to look at their stop events again."""
        with self._changed:
            self._changed.notify_all()


def wall_minus_clock(
    clock: Clock, wall_clock: Callable[[], float] = time.time, *, reads: int = 1
) -> float:
    """Wall-clock minus `clock` seconds: the tightest of `reads` reads between two of `clock`."""
    brackets = [(clock.now(), wall_clock(), clock.now()) for _ in range(reads)]
    before, wall, after = min(brackets, key=lambda read: read[2] - read[0])
    return wall - (before + after) / 2


def run_block(
    call: Callable[[], None], step_ended: Callable[[float], bool], clock: Clock, warmup: int
) -> None:
    for _ in range(warmup):
        call()
    done = False
    while not done:
        call()
        done = step_ended(clock.now())
