"""Iterator tear-down off the main thread: phase 1 never waits for a spent iterator to die.

Part of `bench/`: deleting a tf.data iterator can block up to autotune's 60-s period while
it joins the sleeping model thread, with no CPU, so pipediag hands each spent iterator
to a short-lived daemon thread (`pipediag-teardown`, one per tear-down) and goes on. Whoever
owns a `TearDown` drains it at the end (`drain()`): the session for the shared one, each
bench function for the private one it makes. Measurements and rationale: (docs/design.md,
"Iterator tear-down").
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

THREAD_NAME = "pipediag-teardown"
# Longer than a tear-down of a recently read iterator takes (0.001-2.1 s measured); one
# left idle can wait out autotune's whole period (up to 60 s), and that must not hold the
# user's run at its end: its thread sleeps on, off the GIL, until the process exits.
DRAIN_TIMEOUT_S = 10.0
# Where TF 2.21 keeps an eager iterator's resource handle; releasing the handle is what
# cancels and joins the iterator's threads.
_RESOURCE_ATTRIBUTE = "_iterator_resource"


class TearDown:
    """Releases spent iterators on helper threads; `drain()` waits for them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def discard(self, iterator: Any) -> None:
        """Release `iterator` on a helper thread; the caller must not use it again.

        The resource handle is taken out of the TF iterator here and released on the helper
        thread, whatever still refers to the Python object (this call's own argument, the
        caller's local, a traceback). An object without one is only dropped here: it dies
        wherever its last reference goes.
        """
        holder = [_detach(iterator), iterator]
        # `list.clear` drops the references on the helper thread; a finalizer's error there
        # goes to `sys.unraisablehook`, as it would on the main thread.
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
        """Tear-downs still running."""
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


# The session's: bench functions given it leave their tear-downs running, and the session
# calls `drain()` once at its end.
SHARED = TearDown()


def drain(timeout_s: float = DRAIN_TIMEOUT_S) -> bool:
    """Wait for the shared tear-downs (call once when the diagnosis ends); False on timeout."""
    return SHARED.drain(timeout_s)


@contextlib.contextmanager
def owned(teardown: TearDown | None) -> Iterator[TearDown]:
    """`teardown` itself, or a private one drained on exit: a caller that passes none gets
    no thread left behind (today's callers and tests), and still no wait between reads."""
    if teardown is not None:
        yield teardown
        return
    private = TearDown()
    try:
        yield private
    finally:
        private.drain()
