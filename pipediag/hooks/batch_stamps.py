"""Input waits under Keras `fit` without the profiler: a time stamp on every batch.

A hook (`hooks/`): `fit` pulls each batch inside its compiled train function, so pipediag
appends `enumerate()` and a stamping map to the dataset given to `fit`. The map records, in
the graph (`tf.timestamp()` into a `FIFOQueue`), when batch k left the user's pipeline, and
step k waited `max(0, stamp_k - step_start_k)`. Used by the fit hook and by
`pipediag.keras.Watch.dataset`. Method and costs: (docs/design.md, "Batch stamps").
"""

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
    """The stamps of batches as they leave the pipeline, on the session clock.

    Args:
        clock: the session clock.
        wall_clock: wall-clock seconds, to place in-graph stamps (`tf.timestamp()`, wall
            time) on the session clock.
    """

    def __init__(self, clock: Clock, wall_clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._wall_clock = wall_clock
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
            return _with_stamp(dataset, self._python_stamp)
        # Unbounded (-1): a full queue would block the user's pipeline. It holds at most the
        # batches made since `collect()` last ran: a few steps' worth, and prefetched ones.
        self._queue = tf.queue.FIFOQueue(-1, [tf.int64, tf.float64], shapes=[[], []])
        return _with_stamp(dataset, self._graph_stamp)

    @property
    def method(self) -> str:
        """How stamps are taken: `IN_GRAPH`, `PYTHON`, or "" before `attach`."""
        if not self._attached:
            return ""
        return IN_GRAPH if self._queue is not None else PYTHON

    def _graph_stamp(self, index: Any) -> Any:
        import tensorflow as tf

        return self._queue.enqueue([index, tf.timestamp()])

    def _python_stamp(self, index: Any) -> Any:
        import tensorflow as tf

        # numpy_function, not py_function: no eager tensors made per call, a fraction of
        # the cost; `stateful` keeps tf.data from treating the stamp as free to reorder.
        return tf.numpy_function(self.push, [index], tf.int64, stateful=True)

    def push(self, index: Any) -> Any:
        """Called from the pipeline's thread (through `tf.numpy_function`) for each batch."""
        stamp = self._clock.now()
        with self._lock:
            self._pending.append((int(index), stamp))
        return index

    def collect(self) -> None:
        """Move the stamps the in-graph queue holds to the pending ones, on the session clock.

        Runs on the thread that runs `fit` (between steps); pipediag is the queue's only
        reader, so the size read first is there to take.
        """
        queue = self._queue
        if queue is None:
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
        """The stamps of the batches of consecutive steps, for steps using `counts` batches.

        Call it with the steps of one pass over the data (one iterator) at a time, or of a
        pass and the start of the next: batches a replaced iterator made but training never
        used are dropped once, before the first step. A step whose batches are not there
        (a batch that bypassed the map) gets None.
        """
        with self._lock:
            self._drop_stale()
            pending = self._pending
            taken: list[list[float] | None] = []
            for count in counts:
                if len(pending) < count:
                    pending.clear()
                    taken.append(None)
                else:
                    taken.append([pending.popleft()[1] for _ in range(count)])
            return taken

    def _drop_stale(self) -> None:
        """Drop batches of an iterator that a newer one (index back at 0) replaced."""
        restarts = [i for i, (index, _) in enumerate(self._pending) if index == 0 and i > 0]
        for _ in range(restarts[-1] if restarts else 0):
            self._pending.popleft()


def split_final_prefetch(dataset: Any) -> tuple[Any, Callable[[Any], Any]]:
    """(what the final prefetch reads, a function that puts that prefetch back on top of a
    dataset); for a dataset that does not end in a prefetch, (dataset, identity)."""
    from tensorflow.python.data.ops import prefetch_op

    if not isinstance(dataset, prefetch_op._PrefetchDataset):
        return dataset, lambda ds: ds
    buffer_size = int(dataset._buffer_size.numpy())
    name = dataset._name
    return dataset._input_dataset, lambda ds: ds.prefetch(buffer_size, name=name)


def _with_stamp(dataset: Any, stamp_op: Callable[[Any], Any]) -> Any:
    """`dataset` with the two stamping stages, before its final prefetch if it ends in one."""
    inner, restore_prefetch = split_final_prefetch(dataset)
    return restore_prefetch(_append_stamp(inner, stamp_op))


def _append_stamp(dataset: Any, stamp_op: Callable[[Any], Any]) -> Any:
    import tensorflow as tf

    def stamp(index: Any, element: Any) -> Any:
        mark = stamp_op(index)
        flat = tf.nest.flatten(element, expand_composites=True)
        with tf.control_dependencies([mark]):
            flat = [tf.identity(t) for t in flat]
        return tf.nest.pack_sequence_as(element, flat, expand_composites=True)

    return serial_map(dataset.enumerate(), stamp)


def serial_map(dataset: Any, function: Callable[..., Any]) -> Any:
    """`dataset.map(function)`, the function run on the thread that asks for the element.

    A plain `map` runs its function through TensorFlow's inter-op thread pool, handing every
    element to another thread and back: for the stamp's few small ops that handoff is
    nearly all the cost, 85 us of CPU a batch here, against 3 us run in place
    (docs/design.md, "Watching a long run"). `Dataset.map` has no argument for it; the
    dataset class behind it does. Where that class is not as expected, the plain map.
    """
    try:
        from tensorflow.python.data.ops import map_op

        return map_op._MapDataset(
            dataset, function, use_inter_op_parallelism=False, preserve_cardinality=True
        )
    except Exception:  # another TensorFlow: the public map, slower but the same values
        return dataset.map(function)


def wait_of(stamps: list[float], step_start: float) -> float:
    """Input wait of a step that used these batches (one per step unless steps_per_execution)."""
    wait, ready = 0.0, step_start
    for stamp in stamps:
        if stamp > ready:
            wait += stamp - ready
            ready = stamp
    return wait
