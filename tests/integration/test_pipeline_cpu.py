"""The pipeline benchmark's CPU per batch: what a batch costs the cores, apart from its wait."""

from __future__ import annotations

from typing import Any

import pipelines
import pytest

pytestmark = pytest.mark.tensorflow


def _busy_pipeline() -> Any:
    import tensorflow as tf

    def work(i: Any) -> Any:
        x = tf.cast(tf.range(200_000), tf.float32) + tf.cast(i, tf.float32)
        return tf.reduce_sum(tf.sin(x) * tf.cos(x))

    options = tf.data.Options()
    options.experimental_optimization.map_parallelization = False
    return tf.data.Dataset.range(10**9).map(work).batch(4).with_options(options)


def test_cpu_per_batch_tells_a_waiting_pipeline_from_a_working_one() -> None:
    from pipediag.bench.pipeline import benchmark_dataset

    # GIVEN a pipeline that sleeps 5 ms per element (like storage latency) and one whose
    # sequential map computes
    waiting = benchmark_dataset(pipelines.sequential_map(), max_seconds=1.0)
    working = benchmark_dataset(_busy_pipeline(), max_seconds=1.0)

    # THEN the cores each kept busy (CPU per batch x batches/s) are far apart: the sleeper
    # spends its time waiting, the worker keeps about a core busy
    def cores(benchmark: Any) -> float:
        assert benchmark.measured and benchmark.cpu_s_per_batch is not None
        return benchmark.cpu_s_per_batch * benchmark.batches_per_s

    # (the worker keeps about a core busy; with another process on one of two cores, a fair
    # share of the other can read 0.6, so the line between them is drawn at 0.4)
    assert cores(waiting) < 0.4 < cores(working)
