"""Batch stamps on real tf.data pipelines: taken in the graph, read back on the session clock.

Each stamp is compared with the moments the batch was asked for and received, with a margin
of milliseconds for a clock conversion that is good to microseconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from pipediag.clock import MONOTONIC
from pipediag.hooks.batch_stamps import IN_GRAPH, PYTHON, BatchStamps

MARGIN_S = 0.005
WAIT_S = 60.0
"""The longest a test waits for a pipeline thread: a large margin for a loaded CI box."""


def _iterate(dataset: object, stamps: BatchStamps) -> list[tuple[float, float, list[int]]]:
    """(asked, received, values) for each batch of the stamped dataset."""
    seen = []
    it = iter(stamps.attach(dataset))
    while True:
        asked = time.perf_counter()
        try:
            batch = next(it)
        except StopIteration:
            return seen
        seen.append((asked, time.perf_counter(), batch.numpy().tolist()))


@pytest.mark.tensorflow
def test_in_graph_stamps_fall_between_asking_for_a_batch_and_getting_it() -> None:
    import tensorflow as tf

    def slow(i: int) -> int:
        time.sleep(0.02)
        return i

    dataset = (
        tf.data.Dataset.range(12)
        .map(lambda i: tf.numpy_function(slow, [i], tf.int64, stateful=True))
        .batch(3)
    )
    stamps = BatchStamps(MONOTONIC)
    seen = _iterate(dataset, stamps)

    assert stamps.method == IN_GRAPH
    assert [values for _, _, values in seen] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    stamps.collect()
    for asked, received, _ in seen:
        (stamp,) = stamps.take([1])[0] or [float("nan")]
        # Each batch took 60 ms to make: its stamp is at the end of that wait, not the start.
        assert asked + 0.05 < stamp < received + MARGIN_S
    assert stamps.take([1]) == [None]


@pytest.mark.tensorflow
def test_a_final_prefetch_stays_last_and_batches_are_stamped_as_they_enter_it() -> None:
    import tensorflow as tf
    from tensorflow.python.data.ops import prefetch_op

    dataset = tf.data.Dataset.range(8).batch(2).prefetch(3)
    stamps = BatchStamps(MONOTONIC)
    stamped = stamps.attach(dataset)
    assert isinstance(stamped, prefetch_op._PrefetchDataset)
    assert int(stamped._buffer_size) == 3

    it = iter(stamped)
    first = next(it)  # starts the prefetch thread, which fills its buffer
    # all four batches stamped (the in-graph queue holds the stamps until collect): the three
    # left are in the buffer, however long the thread took to be scheduled
    _wait_until(lambda: int(stamps._queue.size()) == 4)
    asked = time.perf_counter()
    rest = [b.numpy().tolist() for b in it]
    assert [first.numpy().tolist(), *rest] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    stamps.collect()
    second = stamps.take([1, 1])[1]
    # the second batch was in the buffer before training asked for it: it waited for nothing
    assert second is not None and second[0] < asked


@pytest.mark.tensorflow
def test_op_determinism_forbids_tf_timestamp_so_stamps_come_from_python() -> None:
    import tensorflow as tf
    from tensorflow.python.framework import config

    tf.config.experimental.enable_op_determinism()
    try:
        stamps = BatchStamps(MONOTONIC)
        seen = _iterate(tf.data.Dataset.range(6).batch(2), stamps)
    finally:
        config.disable_op_determinism()

    assert stamps.method == PYTHON
    assert [values for _, _, values in seen] == [[0, 1], [2, 3], [4, 5]]
    stamps.collect()  # nothing to read: Python stamps are pending already
    for asked, received, _ in seen:
        (stamp,) = stamps.take([1])[0] or [float("nan")]
        assert asked - MARGIN_S < stamp < received + MARGIN_S


def _wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


@pytest.mark.tensorflow
def test_the_stamp_stage_runs_its_function_in_place_and_keeps_the_elements() -> None:
    import tensorflow as tf

    from pipediag.hooks.batch_stamps import serial_map, split_final_prefetch

    stamped = BatchStamps(MONOTONIC).attach(
        tf.data.Dataset.range(6).batch(2).prefetch(tf.data.AUTOTUNE)
    )
    stage, _ = split_final_prefetch(stamped)
    # Through the inter-op thread pool the stamp cost ~85 us of CPU a batch; in place, ~3 us.
    assert stage._use_inter_op_parallelism is False
    assert stage.cardinality().numpy() == 3
    assert [b.numpy().tolist() for b in stamped] == [[0, 1], [2, 3], [4, 5]]
    doubled = serial_map(tf.data.Dataset.range(3), lambda x: x * 2)
    assert list(doubled.as_numpy_iterator()) == [0, 2, 4]
