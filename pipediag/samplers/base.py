"""Thread plumbing shared by the samplers: a reading every `interval_s` on a daemon thread, into
a buffer that halves its resolution when full; nothing raised in the thread reaches the user's
program (docs/design.md, "Sampler threads")."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from pipediag.clock import Clock, Quiet
from pipediag.report.reasons import Reason

ItemT = TypeVar("ItemT")
SamplerT = TypeVar("SamplerT", bound="ThreadedSampler[Any]")

MIN_BUFFER_SAMPLES = 2  # one pair, to be able to halve the resolution
# A reading stuck in a driver call (NVML can block on a sick GPU) must not hang the user's
# program at exit; the thread is a daemon, so it dies with it.
STOP_JOIN_TIMEOUT_S = 2.0
MAX_ERROR_TEXT_CHARS = 200  # error messages go into one-line report notes


def describe_error(exc: BaseException) -> str:
    """`TypeName: message` on one line, short enough for a report note."""
    name, message = type(exc).__name__, " ".join(str(exc).split())
    text = f"{name}: {message}" if message else name
    return text if len(text) <= MAX_ERROR_TEXT_CHARS else text[: MAX_ERROR_TEXT_CHARS - 3] + "..."


def mean_or_none(a: float | None, b: float | None) -> float | None:
    """Mean of two optional readings; a missing one does not drag the other toward zero."""
    if a is None or b is None:
        return b if a is None else a
    return (a + b) / 2


def mean_int_or_none(a: int | None, b: int | None) -> int | None:
    value = mean_or_none(a, b)
    return None if value is None else round(value)


class DecimatingBuffer(Generic[ItemT]):
    """Readings at a uniform interval: at `max_items` (rounded down to even), adjacent pairs
    merge and the interval doubles: a diagnosis needs the whole run, coarser if need be."""

    def __init__(
        self, max_items: int, interval_s: float, merge: Callable[[ItemT, ItemT], ItemT]
    ) -> None:
        if max_items < MIN_BUFFER_SAMPLES:
            raise ValueError(f"max_samples must be at least {MIN_BUFFER_SAMPLES}, got {max_items}")
        self.max_items = max_items - max_items % 2
        self.interval_s = interval_s
        self.halvings = 0
        self._merge = merge
        self._items: list[ItemT] = []

    def append(self, item: ItemT) -> None:
        self._items.append(item)
        if len(self._items) >= self.max_items:
            items = self._items
            # Full at an even count (`max_items` is even, and items come one at a time).
            self._items = [
                self._merge(a, b) for a, b in zip(items[0::2], items[1::2], strict=False)
            ]
            self.interval_s *= 2
            self.halvings += 1

    def items(self) -> list[ItemT]:
        return list(self._items)


@dataclass
class _Failure:
    first: Reason
    count: int = 0


class ThreadedSampler(ABC, Generic[ItemT]):
    """`_setup()` once, `_read()` each interval, `_teardown()` once; tests drive `sample_once()`."""

    thread_name: ClassVar[str] = "pipediag-sampler"

    def __init__(self, *, interval_s: float, max_samples: int, clock: Clock) -> None:
        if not interval_s > 0:
            raise ValueError(f"interval_s must be positive, got {interval_s}")
        self._clock = clock
        self._buffer: DecimatingBuffer[ItemT] = DecimatingBuffer(
            max_samples, interval_s, self._merge
        )
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = self._stopped = False
        self._unavailable_reason: Reason | None = None
        self._failures: dict[str, _Failure] = {}
        self._sampler_cpu_s, self._readings = 0.0, 0
        self._last_reading_t: float | None = None
        # While it holds, the thread sleeps (quiet blocks); the next reading covers the gap (CPU
        # deltas).
        self.quiet: Quiet | None = None

    @abstractmethod
    def _setup(self) -> Reason | None:
        """Probe and prepare (import, init, prime): why sampling is impossible, or None."""

    @abstractmethod
    def _read(self) -> ItemT:
        """One reading; what it raises is counted and noted, never propagated."""

    @abstractmethod
    def _merge(self, earlier: ItemT, later: ItemT) -> ItemT: ...

    def _observe(self, item: ItemT) -> None:  # noqa: B027 (optional hook, empty by design)
        """Whole-run aggregates from a raw reading, before any halving (lock held)."""

    def _teardown(self) -> None:  # noqa: B027 (optional hook, empty by design)
        """Called once by `stop()`, only if setup succeeded."""

    def start(self, *, background: bool = True) -> None:
        """Probe the source and start the thread (`background=False`: no thread)."""
        with self._lock:
            if self._started:
                return
            self._started = True
        try:
            reason = self._setup()
        except Exception as exc:  # a probe must never break the user's program
            reason = Reason("sampler-setup-failed", detail=describe_error(exc))
        if reason is not None:
            self._unavailable_reason = reason
            return
        if background:
            self._thread = threading.Thread(target=self._loop, name=self.thread_name, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the thread and release the source; idempotent, never raises."""
        with self._lock:
            running, self._stopped = self._started and not self._stopped, True
        if not running:
            return
        self._stop.set()
        if self.quiet is not None:
            self.quiet.interrupt()
        if (thread := self._thread) is not None:
            thread.join(timeout=STOP_JOIN_TIMEOUT_S)
            if thread.is_alive():
                self._record_failure("stop", Reason("sampler-stuck", limit=STOP_JOIN_TIMEOUT_S))
                return  # a reading is stuck in the source: tearing it down now could crash it
        if self._unavailable_reason is None:
            try:
                self._teardown()
            except Exception as exc:
                failed = Reason("cleanup-failed", detail=describe_error(exc))
                self._record_failure("teardown", failed)

    def sample_once(self) -> None:
        """Take one reading now and keep it; failures become notes. Never raises."""
        cpu_before = time.thread_time()
        try:
            item = self._read()
        except Exception as exc:
            kind = f"read:{type(exc).__name__}"
            self._record_failure(kind, Reason("reading-failed", detail=describe_error(exc)))
        else:
            now = self._clock.now()
            with self._lock:
                self._buffer.append(item)
                self._observe(item)
                self._readings += 1
                self._last_reading_t = now
        finally:
            self._sampler_cpu_s += time.thread_time() - cpu_before

    def _loop(self) -> None:
        try:
            while not self._stop.wait(self._buffer.interval_s):
                if self.quiet is not None and self.quiet.holding():
                    self.quiet.wait_out(self._stop)
                else:
                    self.sample_once()
        except BaseException as exc:  # sample_once never raises; keep the thread's death visible
            died = Reason("sampler-thread-died", detail=describe_error(exc))
            self._record_failure("thread", died)

    @property
    def interval_s(self) -> float:
        """The effective interval, doubled at each halving."""
        return self._buffer.interval_s

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self: SamplerT) -> SamplerT:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _record_failure(self, kind: str, reason: Reason) -> None:
        """Count a failure by `kind`, an internal key; the first one's reason becomes a note."""
        with self._lock:
            self._failures.setdefault(kind, _Failure(reason)).count += 1

    def _failure_notes(self) -> list[Reason]:
        with self._lock:
            failures = list(self._failures.values())
        return [
            f.first if f.count == 1 else Reason("repeated-failure", value=f.count, because=f.first)
            for f in failures
        ]

    def _snapshot(self) -> tuple[list[ItemT], float]:
        """The kept readings and their effective interval, consistent with each other."""
        with self._lock:
            return self._buffer.items(), self._buffer.interval_s
