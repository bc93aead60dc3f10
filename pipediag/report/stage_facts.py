"""Facts about a pipeline's stages that the what-if trials and the advisor share, below both
so the trials measure what the advisor suggests (docs/design.md, "Architecture")."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from pipediag.report.stages import AUTOTUNE, UNBOUNDED, StageStats
from pipediag.report.vocabulary import StageKind

# A stage must add at least this share of the pipeline's time per batch to be worth a fix:
# below it a fix changes the pipeline rate by under ~10%, within run-to-run noise on a shared
# 2-core machine (pipediag's own repeated benchmarks vary by 5-10%).
STAGE_MIN_SHARE = 0.10

# The worth-it gain: under it a fix is not recommended (docs/design.md, "The paired engine").
VERIFIED_MIN_GAIN = 1.05

# A map is "cheap" per element below this cost: its time is mostly tf.data's per-element
# function-call overhead, which batching first pays once per batch (TF guide "Better
# performance with the tf.data API", section "Vectorizing mapping"). Measured through a
# prefix read in batch-sized groups (bench/stages.py), a 12-op elementwise parallel map costs
# ~33 us per element on 2 cores, nearly all of it that overhead.
VECTORIZE_MAX_ELEMENT_S = 200e-6

BATCHING_KINDS: frozenset[StageKind] = frozenset(
    {"batch", "padded-batch", "map-and-batch", "sparse-batch"}
)
MAP_KINDS: frozenset[StageKind] = frozenset({"map", "parallel-map"})
SHUFFLE_KINDS: frozenset[StageKind] = frozenset({"shuffle", "shuffle-and-repeat"})
# Stages that do work worth caching after (bench/structure.py kinds).
CACHE_POINT_KINDS: frozenset[StageKind] = frozenset(
    {
        *MAP_KINDS,
        "interleave",
        "parallel-interleave",
        "flat-map",
        "filter",
        "parallel-filter",
        "map-and-batch",
        "scan",
    }
)
# Stages that compute nothing of their own: they buffer elements or pass them on, at most one
# per input (`bench/stages.ONE_TO_ONE_KINDS` counts on it).
NO_OWN_WORK_KINDS: frozenset[str] = frozenset(
    {
        "prefetch",
        "options",
        "repeat",
        "assert-cardinality",
        "ignore-errors",
        "shard",
        "skip",
        "take",
        "take-while",
    }
)
# Stages that make a prefix non-deterministic, or unfit to cache (repeat: infinite).
NOT_CACHEABLE_KINDS: frozenset[StageKind] = frozenset(
    {*SHUFFLE_KINDS, "repeat", "cache", "snapshot"}
)


def runs_sequential_map(stats: StageStats, cores: int) -> bool:
    """A map that really runs one element at a time: `map_parallelization` parallelises
    stateless maps, so `auto_parallel` decides (docs/design.md, "tf.data behaviours")."""
    if stats.kind == "map":
        return stats.auto_parallel is not True
    if stats.kind == "parallel-map":
        calls = stats.settings.num_parallel_calls
        return calls is not None and 0 < calls < cores
    return False


def runs_sequential_interleave(stats: StageStats, cores: int) -> bool:
    """Sequential interleave/flat_map, or a parallel one that does not run in parallel: the
    default (AUTOTUNE) `cycle_length` did not (docs/design.md, "tf.data behaviours")."""
    if stats.kind in ("interleave", "flat-map"):
        return True
    if stats.kind != "parallel-interleave":
        return False
    cycle, calls = stats.settings.cycle_length, stats.settings.num_parallel_calls
    return (
        cycle == AUTOTUNE
        or (cycle is not None and cycle < cores)
        or (calls is not None and 0 < calls < cores)
    )


def rewrite_site(stats: StageStats) -> bool:
    """Whether rewrites are tried on this stage: its hold's gain on training reaches the worth-it
    gain, or was not measured or used (docs/design.md, "Every applicable rewrite")."""
    return stats.training_speedup_if_free_unused is not None or not if_free_clearly_under(stats)


def if_free_clearly_under(stats: StageStats) -> bool:
    """Whether holding this stage in memory gained training under `VERIFIED_MIN_GAIN`, its
    interval too where it has one (one hold is one noisy trial): then no change up to it can
    gain more (docs/design.md, "Every applicable rewrite")."""
    if (gain := stats.training_speedup_if_free) is None or gain >= VERIFIED_MIN_GAIN:
        return False
    high = stats.training_speedup_if_free_high
    return high is None or high < VERIFIED_MIN_GAIN


def vectorizable(stats: StageStats, stages: Sequence[StageStats]) -> bool:
    """A stateless, TF-only map whose output goes straight into a batch."""
    if stats.kind not in MAP_KINDS or stats.uses_py_function or stats.stateful or stats.tf_internal:
        return False
    consumers = [s for s in stages if stats.index in s.inputs]
    return len(consumers) == 1 and consumers[0].kind in BATCHING_KINDS


def deterministic(stats: StageStats) -> bool:
    """Gives the same output every epoch: no shuffle/repeat/cache, no random or stateful op
    (Python calls are assumed to read data, and are allowed)."""
    if stats.kind in NOT_CACHEABLE_KINDS or stats.random:
        return False
    return not (stats.stateful and not stats.uses_py_function)


def cache_point(stages: Sequence[StageStats]) -> int | None:
    """The stage after which a cache keeps the most work: the end of the deterministic prefix, at
    a stage that does work (after batch/prefetch/take a cache stores the same data, only moved);
    a later one wins only by `STAGE_MIN_SHARE` more, so the cache goes right after costly work."""
    clean: dict[int, bool] = {}
    endless: dict[int, bool] = {}
    for stats in stages:
        # A repeat replays its input: the same elements each epoch, only endless, and a zip
        # with a finite input ends with it (Keras's timeseries_dataset_from_array zips a
        # range with its data repeated; docs/design.md, "Every applicable rewrite").
        same = deterministic(stats) or stats.kind == "repeat"
        clean[stats.index] = same and all(clean.get(i, False) for i in stats.inputs)
        endless[stats.index] = _endless(stats, endless)
    best: int | None = None
    best_s = 0.0
    for stats in stages:
        if not clean[stats.index] or endless[stats.index]:
            continue
        if stats.kind not in CACHE_POINT_KINDS or not stats.inputs:
            continue
        cost = prefix_cost_s(stages, stats.index)
        if best is None or cost > best_s * (1 + STAGE_MIN_SHARE):
            best, best_s = stats.index, cost
    return best


def _endless(stats: StageStats, endless: dict[int, bool]) -> bool:
    """Whether one pass of the stage's output never ends, from its inputs' (sources end)."""
    ends, count = [endless.get(i, True) for i in stats.inputs], stats.settings.count
    if stats.kind in ("repeat", "shuffle-and-repeat"):
        return count in (UNBOUNDED, None) or any(ends)
    if stats.kind == "take" and count is not None and count != UNBOUNDED:
        return False
    if stats.kind == "zip":
        return bool(ends) and all(ends)
    return any(ends)


def batch_caching(stages: Sequence[StageStats], point: int) -> int | None:
    """The batch to put a cache after instead of stage `point`: `point`'s only reader, a
    deterministic plain or padded batch (docs/design.md, "Every applicable rewrite")."""
    if len(readers := [s for s in stages if point in s.inputs]) != 1:
        return None
    batch = readers[0]
    if batch.kind not in ("batch", "padded-batch") or len(batch.inputs) != 1:
        return None
    return batch.index if deterministic(batch) else None


def prefix_cost_s(stages: Sequence[StageStats], index: int) -> float:
    """Own cost per batch of a stage and everything upstream of it (unknown counts as 0)."""
    return sum((stages[i].own_s_per_batch or 0.0 for i in _walk_upstream(stages, index)), 0.0)


def downstream_batch_size(stages: Sequence[StageStats], index: int) -> int | None:
    current = index
    for _ in range(len(stages)):
        if not (consumers := [s for s in stages if current in s.inputs]):
            return None
        current = consumers[0].index
        if consumers[0].kind in BATCHING_KINDS:
            return consumers[0].settings.batch_size
    return None


def if_free_bound(stages: Sequence[StageStats], index: int | None) -> StageStats | None:
    """The held stage whose training speedup bounds any change at stage `index` (None: the
    options or the end), or None (docs/design.md, "The pipeline pipediag would write").
    Downstream means reading it: in a zip a later index on the other branch holds nothing of it."""
    last = max((s.index for s in stages), default=0)
    reach = {last} if index is None else {index} | downstream_of(stages, index)
    held = [
        s
        for s in stages
        if s.training_speedup_if_free is not None and s.kind != "options" and s.index in reach
    ]
    return min(held, key=lambda s: s.index, default=None)


def output_stage(stages: Sequence[StageStats]) -> StageStats | None:
    """The stage whose elements the pipeline yields, its options aside: holding it in memory
    frees training of all its input's work."""
    return next((s for s in reversed(stages) if s.kind != "options"), None)


def call_stages_after(stages: Sequence[StageStats], index: int) -> list[StageStats]:
    """The stages the library call that made stage `index` adds after it (none for the
    script's own stage, or a call's output)."""
    made = stages[index]
    if made.made_by is None:
        return []
    return [
        stages[i]
        for i in sorted(downstream_of(stages, index))
        if (stages[i].made_by, stages[i].created_at) == (made.made_by, made.created_at)
    ]


def downstream_of(stages: Sequence[StageStats], index: int) -> set[int]:
    """Every stage that reads stage `index`, however far on (not `index` itself)."""
    return set(_walk(index, lambda i: [s.index for s in stages if i in s.inputs])) - {index}


def upstream_of(stages: Sequence[StageStats], index: int) -> set[int]:
    """Stage `index` and every stage it reads, however far back."""
    return set(_walk_upstream(stages, index))


def _walk_upstream(stages: Sequence[StageStats], index: int) -> Iterator[int]:
    """`upstream_of`'s stages in one fixed order, so sums over them round alike every run."""
    return _walk(index, lambda i: stages[i].inputs)


def _walk(start: int, neighbours: Callable[[int], Iterable[int]]) -> Iterator[int]:
    seen: set[int] = set()
    pending = [start]
    while pending:
        if (i := pending.pop()) not in seen:
            seen.add(i)
            yield i
            pending.extend(neighbours(i))
