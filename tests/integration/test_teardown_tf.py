"""TearDown with real tf.data iterators: released on the teardown thread, and a shared
teardown drained once at its caller's end.
"""

from __future__ import annotations

from typing import Any

import pytest

from pipediag.bench.teardown import TearDown


@pytest.mark.tensorflow
def test_a_tf_iterator_is_released_on_the_teardown_thread() -> None:
    tf = pytest.importorskip("tensorflow")
    teardown = TearDown()
    iterator: Any = iter(tf.data.Dataset.range(10**6).map(lambda x: x * 2).prefetch(2))
    next(iterator)

    teardown.discard(iterator)

    # The handle left the Python object: nothing the caller holds can release it here.
    assert "_iterator_resource" not in vars(iterator)
    assert teardown.drain(timeout_s=30.0)


@pytest.mark.tensorflow
def test_a_caller_that_shares_the_teardown_drains_it_at_its_end() -> None:
    pytest.importorskip("tensorflow")
    import pipelines

    from pipediag.bench import teardown
    from pipediag.bench.pipeline import benchmark_dataset

    # GIVEN the benchmark run as the session runs it, with the shared tear-down
    bench = benchmark_dataset(pipelines.sequential_map(), max_seconds=0.3, teardown=teardown.SHARED)

    # THEN its iterator may still be going away; one drain at the end leaves no thread
    assert bench.measured, bench.reason
    assert teardown.SHARED.drain(timeout_s=30.0)
    assert teardown.SHARED.pending() == 0
