"""Input waits under Keras `fit` without the profiler: a time stamp on every batch.

`fit` pulls each batch inside its compiled train function, so Python never brackets the
wait. pipediag appends two stages to the dataset given to `fit`: `enumerate()` and a map
that records, for batch k of the current iterator, the moment it left the user's pipeline,
then passes the batch on unchanged. Batches leave in order, so the k-th stamp belongs to
the k-th step. The step waited from its start until its batch was out, or not at all if
the batch was ready before the step began:

    wait_k = max(0, stamp_k - step_start_k)

That holds whether tf.data runs the map in the train step's own `GetNext` or in a prefetch
thread injected after it (`inject_prefetch`): a batch stamped before the step started sat
in a buffer, one stamped after it was waited for. Unlike tracing with the TF profiler (one
event per executed op; it cut an op-heavy pipeline under `fit` from 105 to 19 steps/s),
this costs one Python call per batch (`tf.numpy_function`).

Batches made but never used (an iterator dropped at the end of an epoch) are recognised
when the index starts again at 0, and dropped.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from pipediag.clock import Clock


class BatchStamps:
    """The stamps pushed by the dataset's map, read by the step callback."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._pending: deque[tuple[int, float]] = deque()
        self._lock = threading.Lock()

    def push(self, index: Any) -> Any:
        """Called from the pipeline's thread (through `tf.numpy_function`) for each batch."""
        stamp = self._clock.now()
        with self._lock:
            self._pending.append((int(index), stamp))
        return index

    def take(self, count: int = 1) -> list[float] | None:
        """The stamps of the next `count` batches used by training, oldest first.

        None when they are not there (a batch that bypassed the map cannot be timed).
        """
        with self._lock:
            self._drop_stale()
            if len(self._pending) < count:
                self._pending.clear()
                return None
            return [self._pending.popleft()[1] for _ in range(count)]

    def _drop_stale(self) -> None:
        """Drop batches of an iterator that a newer one (index back at 0) replaced."""
        restarts = [i for i, (index, _) in enumerate(self._pending) if index == 0 and i > 0]
        for _ in range(restarts[-1] if restarts else 0):
            self._pending.popleft()


def stamped(dataset: Any, stamps: BatchStamps) -> Any:
    """`dataset` with a stamp taken as each batch leaves it; values are unchanged."""
    import tensorflow as tf

    def stamp(index: Any, element: Any) -> Any:
        # numpy_function, not py_function: no eager tensors made per call, a fraction of
        # the cost; `stateful` keeps tf.data from treating the stamp as free to reorder.
        mark = tf.numpy_function(stamps.push, [index], tf.int64, stateful=True)
        flat = tf.nest.flatten(element, expand_composites=True)
        with tf.control_dependencies([mark]):
            flat = [tf.identity(t) for t in flat]
        return tf.nest.pack_sequence_as(element, flat, expand_composites=True)

    return dataset.enumerate().map(stamp)


def wait_of(stamps: list[float], step_start: float) -> float:
    """Input wait of a step that used these batches (one per step unless steps_per_execution)."""
    wait, ready = 0.0, step_start
    for stamp in stamps:
        if stamp > ready:
            wait += stamp - ready
            ready = stamp
    return wait
