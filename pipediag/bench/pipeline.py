"""Phase 1: read the training dataset alone, on its own iterator, and time each batch.

The user's iterator is never touched, and neither is the state that the user's future
iterators draw on (shuffle seeds, memory caches, variables the pipeline updates): the
benchmark reads a private copy of the dataset (`bench/isolate.py`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pipediag.analysis.stats import latency_stats
from pipediag.bench.teardown import TearDown, owned
from pipediag.clock import MONOTONIC, Clock
from pipediag.config import DEFAULT_BENCH_BATCHES, DEFAULT_BENCH_SECONDS
from pipediag.report.model import PipelineBenchmark
from pipediag.report.reasons import (
    DISTRIBUTED_FEED,
    EMPTY_DATASET,
    NOT_READ_ALONE,
    ONE_BATCH,
    Reason,
)

# The defaults are the run's (`pipediag/config.py`, which owns every default).
DEFAULT_MAX_SECONDS = DEFAULT_BENCH_SECONDS
DEFAULT_MAX_BATCHES = DEFAULT_BENCH_BATCHES
# Python-chain stage names whose per-iterator state the user's iterators share.
SHARED_STATE_STAGES = ("Shuffle", "Cache", "Random", "DirectedInterleave")
# The first batch pays for starting worker threads and filling buffers: timed apart.
WARMUP_BATCHES = 1


@dataclass(frozen=True)
class BatchTiming:
    """Raw timing of one bounded read: the first batch apart, then one latency per batch."""

    first_batch_s: float | None
    latencies_s: list[float]
    duration_s: float
    exhausted: bool
    # CPU time of the whole process (every thread: tf.data's pool, the consumer) over the
    # timed batches; what a batch costs the cores it will share with the train step.
    cpu_s: float | None = None
    # How long making the read's iterator took, where it was made for the read (None: an
    # iterator kept from an earlier read). With the first batch, what an epoch's start costs.
    opened_s: float | None = None

    @property
    def batches_per_s(self) -> float | None:
        if not self.latencies_s or self.duration_s <= 0:
            return None
        return len(self.latencies_s) / self.duration_s

    @property
    def cpu_s_per_batch(self) -> float | None:
        if not self.latencies_s or self.cpu_s is None:
            return None
        return self.cpu_s / len(self.latencies_s)


def time_iterator(
    iterator: Iterator[Any],
    *,
    max_batches: int = DEFAULT_MAX_BATCHES,
    max_seconds: float = DEFAULT_MAX_SECONDS,
    clock: Clock = MONOTONIC,
) -> BatchTiming:
    """Pull up to `max_batches` batches (after warm-up) or for `max_seconds`, timing each."""
    start = clock.now()
    first_batch_s: float | None = None
    for _ in range(WARMUP_BATCHES):
        try:
            next(iterator)
        except StopIteration:
            return BatchTiming(None, [], 0.0, exhausted=True)
        first_batch_s = clock.now() - start
    latencies: list[float] = []
    cpu_from = time.process_time()
    measured_from = clock.now()
    deadline = start + max_seconds
    exhausted = False
    before = measured_from
    while len(latencies) < max_batches and before < deadline:
        try:
            next(iterator)
        except StopIteration:
            exhausted = True
            break
        after = clock.now()
        latencies.append(after - before)
        before = after
    cpu_s = time.process_time() - cpu_from
    return BatchTiming(first_batch_s, latencies, before - measured_from, exhausted, cpu_s)


def benchmark_dataset(
    dataset: Any,
    *,
    max_batches: int = DEFAULT_MAX_BATCHES,
    max_seconds: float = DEFAULT_MAX_SECONDS,
    clock: Clock = MONOTONIC,
    keep_first_batch: Callable[[Any], None] | None = None,
    teardown: TearDown | None = None,
) -> PipelineBenchmark:
    """Benchmark a `tf.data.Dataset` alone, on a fresh iterator of its own.

    `keep_first_batch` receives the first batch read (the warm-up batch, untimed): the
    compute-alone phase trains on it (`training/compute_alone.py`), so it costs no extra read.
    `teardown` releases the spent iterator off the main thread (`bench/teardown.py`); with
    None a private one is drained before returning, so no thread outlives the call.
    """
    stages = stage_names(dataset)
    result = _benchmark(
        dataset,
        " <- ".join(stages),
        stages,
        max_batches,
        max_seconds,
        clock,
        keep_first_batch,
        teardown,
    )
    return dataclasses.replace(result, cache_ends_each_epoch=cache_ends_each_epoch(stages))


def _benchmark(
    dataset: Any,
    description: str,
    stages: list[str],
    max_batches: int,
    max_seconds: float,
    clock: Clock,
    keep_first_batch: Callable[[Any], None] | None,
    teardown: TearDown | None,
) -> PipelineBenchmark:
    from pipediag.bench.isolate import (
        IsolationError,
        isolated_copy,
        preserved_variables,
        shared_stream_stage,
    )

    shared = shared_stream_stage(dataset)
    if shared is not None:
        return PipelineBenchmark(
            measured=False,
            reason=Reason(DISTRIBUTED_FEED, detail=shared),
            dataset=description,
        )
    notes: list[str] = []
    try:
        target, notes = isolated_copy(dataset)
    except IsolationError as exc:
        if has_shared_state(stages):
            return PipelineBenchmark(
                measured=False,
                reason=Reason(NOT_READ_ALONE, detail=str(exc)),
                dataset=description,
            )
        target = dataset
    with (
        owned(teardown) as releaser,
        preserved_variables(dataset, releaser, copies=target is not dataset),
    ):
        raw = iter(target)
        iterator = raw if keep_first_batch is None else _handing_over_first(raw, keep_first_batch)
        try:
            timing = time_iterator(
                iterator, max_batches=max_batches, max_seconds=max_seconds, clock=clock
            )
        finally:
            releaser.discard(raw)
            del iterator, raw
    if not timing.latencies_s:
        reason = Reason(EMPTY_DATASET if timing.first_batch_s is None else ONE_BATCH)
        return PipelineBenchmark(
            measured=False,
            reason=reason,
            dataset=description,
            first_batch_s=timing.first_batch_s,
            exhausted=True,
            notes=notes,
        )
    return PipelineBenchmark(
        measured=True,
        dataset=description,
        batches=len(timing.latencies_s),
        duration_s=timing.duration_s,
        first_batch_s=timing.first_batch_s,
        batches_per_s=timing.batches_per_s,
        cpu_s_per_batch=timing.cpu_s_per_batch,
        latency=latency_stats(timing.latencies_s),
        exhausted=timing.exhausted,
        notes=notes,
        pass_batches=_pass_batches(dataset),
    )


def _pass_batches(dataset: Any) -> int | None:
    """The dataset's batches per pass, where it is finite and knows it."""
    from pipediag.bench.cache_sizing import cardinality

    batches = cardinality(dataset)
    return batches if batches is not None and batches > 0 else None


def _handing_over_first(iterator: Iterator[Any], keep: Callable[[Any], None]) -> Iterator[Any]:
    first = next(iterator, _END)
    if first is _END:
        return
    keep(first)
    yield first
    yield from iterator


_END = object()


def stage_names(dataset: Any, limit: int = 32) -> list[str]:
    """The dataset's stages by class, outermost first: `["Prefetch", "Batch", "Map", "Range"]`."""
    names: list[str] = []
    node = dataset
    while node is not None and len(names) < limit:
        names.append(type(node).__name__.lstrip("_").removesuffix("Dataset") or type(node).__name__)
        node = getattr(node, "_input_dataset", None)
    return names


def describe_chain(dataset: Any, limit: int = 32) -> str:
    """The dataset's class chain, outermost first, e.g. `Prefetch <- Batch <- Map <- Range`."""
    return " <- ".join(stage_names(dataset, limit))


def has_shared_state(stages: list[str]) -> bool:
    """Whether a stage keeps state the user's iterators share (a shuffle's seeds, a cache)."""
    return any(word in stage for stage in stages for word in SHARED_STATE_STAGES)


def cache_ends_each_epoch(stages: list[str]) -> bool:
    """A `cache()` whose stream ends each epoch (no `repeat()` after it), so a later epoch
    reads the filled cache on a new iterator. `stages` is outermost first."""
    if "Cache" not in stages:
        return False
    return "Repeat" not in stages[: stages.index("Cache")]
