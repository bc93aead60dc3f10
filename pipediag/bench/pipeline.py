"""Phase 1: read the training dataset alone, on a private copy (`bench/isolate.py`), and time
each batch. Neither the user's iterator nor the state their future iterators draw on moves."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pipediag.analysis.stats import latency_stats
from pipediag.bench.cache_sizing import cardinality
from pipediag.bench.isolate import (
    IsolationError,
    isolated_copy,
    preserved_variables,
    shared_stream_stage,
)
from pipediag.bench.teardown import TearDown, owned
from pipediag.clock import MONOTONIC, Clock
from pipediag.config import DEFAULT_BENCH_BATCHES, DEFAULT_BENCH_SECONDS
from pipediag.report.model import PipelineBenchmark
from pipediag.report.reasons import Reason

# Python-chain stage names whose per-iterator state the user's iterators share.
SHARED_STATE_STAGES = ("Shuffle", "Cache", "Random", "DirectedInterleave")


@dataclass(frozen=True)
class BatchTiming:
    """Raw timing of one bounded read: the first batch apart, then one latency per batch."""

    first_batch_s: float | None
    latencies_s: list[float]
    duration_s: float
    exhausted: bool
    # CPU time of the whole process (every thread) over the timed batches.
    cpu_s: float | None = None
    # How long making the read's iterator took (None: kept from an earlier read).
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
    max_batches: int = DEFAULT_BENCH_BATCHES,
    max_seconds: float = DEFAULT_BENCH_SECONDS,
    clock: Clock = MONOTONIC,
) -> BatchTiming:
    """Pull up to `max_batches` batches (after warm-up) or for `max_seconds`, timing each."""
    start = clock.now()
    try:
        next(iterator)  # starts worker threads and fills buffers: timed apart
    except StopIteration:
        return BatchTiming(None, [], 0.0, exhausted=True)
    first_s = clock.now() - start
    cpu_from = time.process_time()
    ends = [clock.now()]  # one more than the batches timed
    deadline, exhausted = start + max_seconds, False
    while len(ends) <= max_batches and ends[-1] < deadline:
        try:
            next(iterator)
        except StopIteration:
            exhausted = True
            break
        ends.append(clock.now())
    cpu_s = time.process_time() - cpu_from
    return from_ends(ends, first_s=first_s, exhausted=exhausted, cpu_s=cpu_s)


def from_ends(
    ends: Sequence[float],
    *,
    per_call: int = 1,
    first_s: float | None = None,
    exhausted: bool = False,
    cpu_s: float | None = None,
    opened_s: float | None = None,
) -> BatchTiming:
    """A run's timing from its calls' ends: a latency per batch at its call's mean."""
    latencies = [
        (b - a) / per_call for a, b in zip(ends, ends[1:], strict=False) for _ in range(per_call)
    ]
    return BatchTiming(first_s, latencies, ends[-1] - ends[0], exhausted, cpu_s, opened_s)


def benchmark_dataset(
    dataset: Any,
    *,
    max_batches: int = DEFAULT_BENCH_BATCHES,
    max_seconds: float = DEFAULT_BENCH_SECONDS,
    clock: Clock = MONOTONIC,
    keep_first_batch: Callable[[Any], None] | None = None,
    teardown: TearDown | None = None,
) -> PipelineBenchmark:
    """Benchmark a `tf.data.Dataset` alone, on a fresh iterator over a private copy.
    `keep_first_batch` receives the untimed warm-up batch, for the compute-alone phase."""
    stages = stage_names(dataset)
    description, ends = " <- ".join(stages), cache_ends_each_epoch(stages)

    def unmeasured(reason: Reason, **found: Any) -> PipelineBenchmark:
        return PipelineBenchmark(
            measured=False, reason=reason, dataset=description, cache_ends_each_epoch=ends, **found
        )

    if (shared := shared_stream_stage(dataset)) is not None:
        return unmeasured(Reason("distributed-feed", detail=shared))
    notes: list[Reason] = []
    try:
        target, notes = isolated_copy(dataset)
    except IsolationError as exc:
        if has_shared_state(stages):
            return unmeasured(Reason("not-read-alone", detail=str(exc)))
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
        why = Reason("empty-dataset" if timing.first_batch_s is None else "one-batch")
        return unmeasured(why, first_batch_s=timing.first_batch_s, exhausted=True, notes=notes)
    pass_batches = cardinality(dataset)  # batches per pass, where finite and known
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
        pass_batches=pass_batches if pass_batches is not None and pass_batches > 0 else None,
        cache_ends_each_epoch=ends,
    )


def _handing_over_first(iterator: Iterator[Any], keep: Callable[[Any], None]) -> Iterator[Any]:
    try:
        first = next(iterator)
    except StopIteration:
        return
    keep(first)
    yield first
    yield from iterator


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
    """A `cache()` with no `repeat()` after it (`stages` outermost first): its stream ends each
    epoch, so a later epoch reads the filled cache on a new iterator."""
    return "Cache" in stages and "Repeat" not in stages[: stages.index("Cache")]
