"""Iterator tear-down on short-lived daemon threads: deleting a tf.data iterator can block up
to autotune's 60-s period (docs/design.md, "Iterator tear-down")."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

THREAD_NAME = "pipediag-teardown"
# Longer than a recent iterator's tear-down takes (0.001-2.1 s); an idle one's (up to 60 s)
# must not hold the user's run at its end: its thread sleeps on until the process exits.
DRAIN_TIMEOUT_S = 10.0
# Where TF 2.21 keeps an iterator's resource handle, whose release joins its threads.
_RESOURCE_ATTRIBUTE = "_iterator_resource"


class TearDown:
    """Releases spent iterators on helper threads; `drain()` waits for them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def discard(self, iterator: Any) -> None:
        """Release `iterator`'s resource on a helper thread; the caller must not use it again."""
        holder = [_detach(iterator), iterator]
        # The references are dropped on the helper thread (docs/design.md, "Iterator tear-down").
        thread = threading.Thread(target=holder.clear, name=THREAD_NAME, daemon=True)
        try:
            thread.start()
        except RuntimeError:  # no thread to be had (interpreter shutting down): inline
            holder.clear()
            return
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)

    def pending(self) -> int:
        with self._lock:
            return sum(t.is_alive() for t in self._threads)

    def drain(self, timeout_s: float = DRAIN_TIMEOUT_S) -> bool:
        """Wait for every tear-down started so far; False if some outlived `timeout_s`."""
        end = time.monotonic() + timeout_s
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(max(0.0, end - time.monotonic()))
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            return not self._threads


def _detach(iterator: Any) -> Any:
    state = getattr(iterator, "__dict__", None)
    return state.pop(_RESOURCE_ATTRIBUTE, None) if isinstance(state, dict) else None


def released_after(iterator: Iterator[Any], teardown: TearDown | None) -> Iterator[Any]:
    """`iterator`'s elements; once read (or left), it is released by `teardown` (None: here)."""
    try:
        yield from iterator
    finally:
        if teardown is not None:
            teardown.discard(iterator)
        del iterator


SHARED = TearDown()


@contextlib.contextmanager
def owned(teardown: TearDown | None) -> Iterator[TearDown]:
    """`teardown` itself, or a private one drained on exit: no thread left behind."""
    if teardown is not None:
        yield teardown
        return
    private = TearDown()
    try:
        yield private
    finally:
        private.drain()
