"""Input waits under Keras `fit` without the profiler: `enumerate()` and a stamping map
appended to the dataset record when batch k left the user's pipeline; step k waited
`max(0, stamp_k - step_start_k)` (docs/design.md, "Batch stamps")."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from pipediag.clock import Clock, wall_minus_clock

IN_GRAPH = "in-graph"
PYTHON = "python"


class BatchStamps:
    """The stamps of batches as they leave the pipeline, on the session clock (`wall_clock`
    places the in-graph `tf.timestamp()` stamps, wall time, on it)."""

    def __init__(self, clock: Clock, wall_clock: Callable[[], float] = time.time) -> None:
        self._clock, self._wall_clock = clock, wall_clock
        self._pending: deque[tuple[int, float]] = deque()
        self._lock = threading.Lock()
        self._queue: Any = None
        self._attached = False

    def attach(self, dataset: Any) -> Any:
        """`dataset` with a stamp taken as each batch leaves it; values are unchanged."""
        import tensorflow as tf
        from tensorflow.python.framework import config  # the public API only has `enable_`

        self._attached = True
        if config.is_op_determinism_enabled():
            # numpy_function, not py_function: no eager tensors made per call, a fraction of
            # the cost; `stateful` keeps tf.data from treating the stamp as free to reorder.
            return _with_stamp(
                dataset,
                lambda index: tf.numpy_function(self.push, [index], tf.int64, stateful=True),
            )
        # Unbounded (-1): a full queue would block the user's pipeline. It holds the batches
        # made since `collect()` last ran: a few steps' worth, and prefetched ones.
        queue = self._queue = tf.queue.FIFOQueue(-1, [tf.int64, tf.float64], shapes=[[], []])
        return _with_stamp(dataset, lambda index: queue.enqueue([index, tf.timestamp()]))

    @property
    def method(self) -> str:
        """How stamps are taken: `IN_GRAPH`, `PYTHON`, or "" before `attach`."""
        if not self._attached:
            return ""
        return IN_GRAPH if self._queue is not None else PYTHON

    def push(self, index: Any) -> Any:
        """On the pipeline's thread (`tf.numpy_function`), each batch."""
        stamp = self._clock.now()
        with self._lock:
            self._pending.append((int(index), stamp))
        return index

    def collect(self) -> None:
        """The in-graph queue's stamps to the pending ones. On fit's thread, between steps;
        pipediag is the queue's only reader, so the size read first is there to take."""
        if (queue := self._queue) is None:
            return
        size = int(queue.size())
        if size == 0:
            return
        indices, walls = queue.dequeue_many(size)
        offset = wall_minus_clock(self._clock, self._wall_clock)
        stamps = [w - offset for w in walls.numpy().tolist()]
        with self._lock:
            self._pending.extend(zip(indices.numpy().tolist(), stamps, strict=True))

    def take(self, counts: list[int]) -> list[list[float] | None]:
        """The stamps of consecutive steps using `counts` batches each; None where they are
        not there. For one pass (or a pass and the next's start): batches of an iterator a
        newer one replaced (index back at 0) were never used, and are dropped first."""
        with self._lock:
            pending = self._pending
            restarts = [i for i, (index, _) in enumerate(pending) if index == 0 and i > 0]
            for _ in range(restarts[-1] if restarts else 0):
                pending.popleft()
            taken: list[list[float] | None] = []
            for count in counts:
                if len(pending) < count:
                    pending.clear()
                    taken.append(None)
                else:
                    taken.append([pending.popleft()[1] for _ in range(count)])
            return taken


def split_final_prefetch(dataset: Any) -> tuple[Any, Callable[[Any], Any]]:
    """(what the final prefetch reads, a function putting it back); (dataset, identity): none."""
    from tensorflow.python.data.ops import prefetch_op

    if not isinstance(dataset, prefetch_op._PrefetchDataset):
        return dataset, lambda ds: ds
    buffer_size, name = int(dataset._buffer_size.numpy()), dataset._name
    return dataset._input_dataset, lambda ds: ds.prefetch(buffer_size, name=name)


def _with_stamp(dataset: Any, stamp_op: Callable[[Any], Any]) -> Any:
    import tensorflow as tf

    inner, restore_prefetch = split_final_prefetch(dataset)

    def stamp(index: Any, element: Any) -> Any:
        mark, flat = stamp_op(index), tf.nest.flatten(element, expand_composites=True)
        with tf.control_dependencies([mark]):
            flat = [tf.identity(t) for t in flat]
        return tf.nest.pack_sequence_as(element, flat, expand_composites=True)

    return restore_prefetch(serial_map(inner.enumerate(), stamp))


def serial_map(dataset: Any, function: Callable[..., Any]) -> Any:
    """`dataset.map(function)` run on the thread that asks for the element, not the inter-op
    pool (docs/design.md, "Batch stamps"); only the class behind `map` takes the option."""
    try:
        from tensorflow.python.data.ops import map_op

        return map_op._MapDataset(
            dataset, function, use_inter_op_parallelism=False, preserve_cardinality=True
        )
    except Exception:  # another TensorFlow: the public map, slower but the same values
        return dataset.map(function)


def wait_of(stamps: list[float], step_start: float) -> float:
    """Input wait of a step that used these batches (several with steps_per_execution)."""
    wait, ready = 0.0, step_start
    for stamp in stamps:
        if stamp > ready:
            wait += stamp - ready
            ready = stamp
    return wait
