"""Iterator tear-down off the main thread: phase 1 never waits for a spent iterator to die.

Deleting a tf.data iterator joins its threads. With autotune on, these include the model
thread, often asleep in `Model::OptimizeLoop` between two optimisation passes, and the
delete waits for it to wake: on TF 2.21 (2 cores) one delete blocked the main thread for
0.001 to 2.1 s, 2.4 s in all for the 23 iterators phase 1 reads on
examples/input_bound_fit.py (gdb: `RootDataset::Iterator::~Iterator` in
`UnboundedThreadPool::LogicalThreadWrapper::~LogicalThreadWrapper`, the model thread in a
timed `CondVar` wait). The wait is idle: process CPU over those deletes was 0.025 s for
2.4 s of waiting (cancellation is immediate; in-flight elements finish, then the join
sleeps). So a tear-down may overlap the next timed read at no measurable cost, and
pipediag hands each spent iterator to a helper thread and goes on.

One short-lived thread per tear-down rather than one worker draining a queue: a worker
asleep in a 1.2-s join would leave the iterators queued behind it alive, their prefetch and
map threads filling buffers (real CPU) during the next timed read; here every discarded
iterator is cancelled at once. Threads are named `pipediag-teardown` and are daemons.

Whoever owns a `TearDown` drains it at the end (`drain()`): the session at its end
(`bench.teardown.drain()` for the shared one), and each bench function for the private one
it makes when none is passed, so a direct call leaves no thread behind.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

THREAD_NAME = "pipediag-teardown"
# Far longer than any tear-down measured (2.1 s): a hung one must not hang the user's run.
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
