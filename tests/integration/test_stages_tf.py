"""measure_stages: per-prefix rates and the bottleneck, on real small pipelines.

Sleeps of several milliseconds against near-zero costs, so the verdicts hold on a loaded
2-core machine.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipediag.bench.structure import walk
from pipediag.report.reasons import Reason
from pipediag.report.stages import StageStats

# A short budget per prefix keeps each pipeline under ~3 s.
STAGE_BUDGET_S = 0.3
SLEEP_S = 0.005
BATCH = 4


# --- real pipelines --------------------------------------------------------------------------

tensorflow = pytest.mark.tensorflow


def _tf() -> Any:
    return pytest.importorskip("tensorflow")


def _sleepy(value: Any) -> Any:
    time.sleep(SLEEP_S)
    return value


def _measure(ds: Any) -> list[StageStats]:
    from pipediag.bench.stages import measure_stages

    return measure_stages(walk(ds), max_seconds_per_stage=STAGE_BUDGET_S)


def _bottlenecks(stages: list[StageStats]) -> list[int]:
    return [s.index for s in stages if s.bottleneck]


@tensorflow
def test_sequential_sleeping_map_is_the_bottleneck() -> None:
    tf = _tf()

    def slow_py_map(x: Any) -> Any:
        return tf.py_function(_sleepy, [x], tf.int64)

    # GIVEN a map that sleeps 5 ms per element, sequentially: ~20 ms per batch of 4
    ds = tf.data.Dataset.range(100_000).map(slow_py_map).batch(BATCH).prefetch(1)

    # WHEN each prefix is measured
    stages = _measure(ds)

    # THEN the map, not the batch that inherits its slowness nor the source, is named
    assert [s.kind for s in stages] == ["source", "map", "batch", "prefetch"]
    assert _bottlenecks(stages) == [1]
    source, mapped, batch, _ = stages
    assert mapped.own_s_per_batch is not None
    assert mapped.own_s_per_batch > BATCH * SLEEP_S * 0.8
    assert batch.own_s_per_batch is not None
    # (near zero: a difference of two 20-ms prefixes, a few ms apart on a loaded host)
    assert batch.own_s_per_batch < mapped.own_s_per_batch / 2
    # Prefixes before the batch yield elements: both rates are reported.
    assert mapped.elements_per_s is not None
    assert mapped.batches_per_s == pytest.approx(mapped.elements_per_s / BATCH)
    assert source.batches_per_s is not None
    assert source.batches_per_s > 10 * mapped.batches_per_s
    assert mapped.batches_per_s < 1 / (BATCH * SLEEP_S)


@tensorflow
def test_slow_source_is_named_not_the_cheap_parallel_map() -> None:
    tf = _tf()

    def slow_reader() -> Iterator[int]:
        i = 0
        while True:
            time.sleep(SLEEP_S)
            yield i
            i += 1

    # GIVEN a well-tuned pipeline whose source sleeps 5 ms per element
    ds = (
        tf.data.Dataset.from_generator(slow_reader, output_signature=tf.TensorSpec([], tf.int64))
        .map(lambda x: x * 2, num_parallel_calls=tf.data.AUTOTUNE)
        .batch(BATCH)
        .prefetch(tf.data.AUTOTUNE)
    )

    # WHEN each prefix is measured
    stages = _measure(ds)

    # THEN the source is the bottleneck and the map adds nearly nothing
    assert [s.kind for s in stages] == ["source", "parallel-map", "batch", "prefetch"]
    assert _bottlenecks(stages) == [0]
    source, mapped = stages[0], stages[1]
    assert source.own_s_per_batch is not None
    assert mapped.own_s_per_batch is not None
    assert mapped.own_s_per_batch < source.own_s_per_batch / 2


@tensorflow
def test_file_cache_not_yet_written_is_not_read(tmp_path: Path) -> None:
    tf = _tf()
    cache_file = tmp_path / "user-cache"
    ds = tf.data.Dataset.range(50).cache(str(cache_file)).batch(BATCH)

    stages = _measure(ds)

    assert stages[0].elements_per_s is not None
    assert stages[1].kind == "cache"
    assert stages[1].not_measured == Reason("partial-file-cache")
    assert stages[2].batches_per_s is None
    # The user's cache file was not created by the benchmark.
    assert not list(tmp_path.iterdir())


@tensorflow
def test_elements_that_cannot_be_batched_are_read_one_by_one() -> None:
    tf = _tf()

    def slow_ragged(i: Any) -> Any:
        length = tf.py_function(lambda v: _sleepy(v) % 7 + 1, [i], tf.int64)
        return tf.range(length)

    # GIVEN a sleeping map whose elements vary in length, padded into batches: read in
    # groups (`prefix.batch(n)`), its prefix would fail on the first group
    ds = tf.data.Dataset.range(100_000).map(slow_ragged).padded_batch(BATCH).prefetch(1)

    # WHEN each prefix is measured
    stages = _measure(ds)

    # THEN the map is still measured, element by element, and named the bottleneck
    assert [s.kind for s in stages] == ["source", "map", "padded-batch", "prefetch"]
    assert stages[1].elements_per_s is not None
    assert stages[1].not_measured is None
    assert _bottlenecks(stages) == [1]


@tensorflow
def test_a_cheap_map_before_its_batch_owns_its_cost() -> None:
    import pipelines

    # GIVEN a cheap elementwise map on single elements, then batch(256): read one element per
    # `next()`, Python's overhead per read once swamped the map's own cost
    # WHEN each prefix is measured (element-level prefixes in groups of one batch)
    stages = _measure(pipelines.per_element_map())

    # THEN the map, not the batch after it, carries the cost. How far ahead it reads depends on
    # the host (2.6x on a quiet one, 1.2x on CI's loaded one), so only the order is asserted.
    by_kind = {s.kind: s for s in stages}
    assert _bottlenecks(stages) == [by_kind["parallel-map"].index]
    map_s = by_kind["parallel-map"].own_s_per_batch
    batch_s = by_kind["batch"].own_s_per_batch
    assert map_s is not None and batch_s is not None and map_s > batch_s


# --- a deadline shared with the fix trials ---------------------------------------------------


def _fake_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every prefix read takes exactly the time it is given on the fake clock, at a fixed
    rate; returns the list the reads are recorded in."""
    from pipediag.bench import stages as module

    read: list[int] = []

    def read_prefix(
        prefix: Any, reader: Any, *, group: int, max_seconds: float, max_elements: int
    ) -> tuple[float | None, str | None, float | None, int]:
        reader.clock.sleep(max_seconds)
        read.append(id(prefix))
        return 1000.0, None, 0.0, group

    def calibrate(reader: Any) -> float:
        reader.clock.sleep(module.OVERHEAD_CALIBRATION_S)
        return 0.0

    monkeypatch.setattr(module, "_measure_prefix", read_prefix)
    monkeypatch.setattr(module, "_iteration_overhead_s", calibrate)
    return read


@tensorflow
def test_a_deadline_keeps_the_stages_read_and_lists_the_rest_without_rates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from synthetic_reports import FakeClock

    from pipediag.analysis.paired import STAGE_ROUNDS
    from pipediag.bench.stages import OVERHEAD_CALIBRATION_S, measure_stages

    tf = _tf()
    _fake_reads(monkeypatch)
    clock = FakeClock()
    ds = tf.data.Dataset.range(100).map(lambda x: x * 2).batch(BATCH).prefetch(1)
    # GIVEN time for the calibration and two and a half slices
    slice_s = STAGE_BUDGET_S / STAGE_ROUNDS
    deadline = clock.now() + OVERHEAD_CALIBRATION_S + 2.5 * slice_s

    # WHEN the stages are measured against it
    stages = measure_stages(
        walk(ds), max_seconds_per_stage=STAGE_BUDGET_S, clock=clock, deadline=deadline
    )

    # THEN the first two prefixes have rates, the others are listed without, saying why
    assert [s.kind for s in stages] == ["source", "map", "batch", "prefetch"]
    assert [s.elements_per_s for s in stages[:2]] == [1000.0, 1000.0]
    assert [s.batches_per_s for s in stages[2:]] == [None, None]
    assert [s.not_measured for s in stages[2:]] == [Reason("stage-out-of-time")] * 2
    assert stages[0].not_measured is None
    assert clock.now() <= deadline


@tensorflow
def test_a_spent_deadline_reads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from synthetic_reports import FakeClock

    from pipediag.bench.stages import measure_stages

    tf = _tf()
    read = _fake_reads(monkeypatch)
    clock = FakeClock()
    ds = tf.data.Dataset.range(100).batch(BATCH)

    stages = measure_stages(walk(ds), clock=clock, deadline=clock.now())

    assert read == []
    assert [s.not_measured for s in stages] == [Reason("stage-out-of-time")] * len(stages)
