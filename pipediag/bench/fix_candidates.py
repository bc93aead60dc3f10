"""Which fixes to try on a pipeline, and how each is built: the what-if candidates.

Each candidate names the fix (the advisor looks its trial up by the id), the stage, how to
edit the graph copy (`bench/graph_edit.py`) or the options, and, for a cache, whether it
fits in memory and how many batches fill it. The stage predicates are the advisor's own
(`report/stage_facts.py`), so a fix is measured exactly where a rule would suggest it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from pipediag.bench import cache_sizing
from pipediag.bench.graph_edit import PipelineGraph
from pipediag.bench.stages import elements_per_output_batch
from pipediag.bench.structure import Stage
from pipediag.bench.teardown import TearDown
from pipediag.bench.vectorize_check import (
    VECTORIZE_SAMPLE_MAX_ELEMENTS,
    trace_on_batches,
    vectorize_check,
)
from pipediag.report.model import StageStats, TrialFacts
from pipediag.report.names import stage_name
from pipediag.report.prescription import SEMANTICS_BATCHED, SEMANTICS_CACHE
from pipediag.report.stage_facts import (
    cache_point,
    downstream_batch_size,
    prefix_cost_s,
    rewrite_site,
    runs_sequential_interleave,
    runs_sequential_map,
    vectorizable,
)
from pipediag.report.vocabulary import (
    FIX_AUTOTUNE,
    FIX_CACHE,
    FIX_PARALLEL_INTERLEAVE,
    FIX_PARALLEL_MAP,
    FIX_PREFETCH,
    FIX_THREAD_CAP,
    FIX_VECTORIZE,
    KIND_CACHE,
    KIND_OPTIONS,
    KIND_PREFETCH,
    FixName,
)

# Fix ids (`report/vocabulary.py`): the advisor's rules look their trials up by these.

# Filling a cache takes one epoch of the prefix; verify only when it takes at most this long,
# the length of the phase-1 benchmark (bench/pipeline.py DEFAULT_MAX_SECONDS).
CACHE_FILL_MAX_S = 3.0
# Extra output batches pulled after the estimated end of the filling epoch: shuffle buffers
# and prefetches downstream read ahead, so the epoch boundary is not exact.
CACHE_FILL_MARGIN_BATCHES = 4

T = TypeVar("T")


@dataclass
class Candidate:
    """A fix to try: how to build its variant from the baseline graph, or why it cannot be.

    `edit` and `with_options` are re-applied, in order, when fixes are composed
    (`bench/compose.py`): an edit finds its nodes by the names they had in the user's graph,
    and every edit keeps those names, so edits compose in any order."""

    fix: FixName
    stage_index: int | None
    stage: str
    cost_s: float = 0.0
    edit: Callable[[PipelineGraph], None] | None = None
    with_options: Callable[[Any], Any] | None = None
    reason: str | None = None
    facts: TrialFacts = field(default_factory=TrialFacts)
    fill_batches: int = 0  # for a cache: output batches to read before the cache is full
    # Run before timing, on the unedited graph (spent iterators go to the `TearDown`):
    # (why the fix is not timed, whether that is because it is unsafe), or (None, False).
    check: Callable[[Any, TearDown], tuple[str | None, bool]] | None = None
    # Tried on training whatever the pipeline alone measured: a prefetch where none runs
    # (its gain, overlap with the train step, only shows there), or a cap on the
    # pipeline's threads (slower alone, it leaves the train step its cores).
    tried_on_training: bool = False
    unsafe: bool = False  # the vectorise check refused the function
    fits_in_memory: bool | None = None  # a cache's data, in the memory available
    # What the rewrite changes in what the pipeline yields, in words; None: nothing.
    semantics: str | None = None


class Once(Generic[T]):
    """A value computed on first use and kept: a trace or a read shared by check and edit."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._done = False
        self._value: T | None = None

    def __call__(self) -> T:
        if not self._done:
            self._value, self._done = self._make(), True
        return self._value  # type: ignore[return-value]


def fix_candidates(
    walked: list[Stage],
    stages: list[StageStats],
    nodes: dict[int, str],
    options: dict[str, str],
    cores: int,
) -> list[Candidate]:
    """Every rewrite that applies to this pipeline, in stage order (prefetch, autotune last).

    No timing threshold decides whether a rewrite exists: a stage is a site for rewrites
    unless its cost to training was measured under `VERIFIED_MIN_GAIN`
    (`stage_facts.rewrite_site`); the trials and the search on training decide the rest
    (docs/design.md, "Every applicable rewrite")."""
    from pipediag.bench.rewrite_candidates import (
        fusion_candidate,
        generator_candidate,
        hoist_candidate,
    )

    found: list[Candidate] = []
    for stats in stages:
        if stats.tf_internal or not rewrite_site(stats):
            continue
        node = nodes.get(stats.index)
        generator = generator_candidate(stats, walked, node)
        if generator is not None:
            found.append(generator)
        if runs_sequential_map(stats, cores):
            found.append(_map_candidate(stats, node))
        if runs_sequential_interleave(stats, cores):
            found.append(_interleave_candidate(stats, node, cores))
        if vectorizable(stats, stages):
            found.append(_vectorize_candidate(stats, walked, stages, nodes))
        hoist = hoist_candidate(stats, walked, stages, nodes)
        if hoist is not None:
            found.append(hoist)
        fusion = fusion_candidate(stats, stages, options)
        if fusion is not None:
            found.append(fusion)
    cache = _cache_candidate(walked, stages, nodes)
    if cache is not None:
        found.append(cache)
    last = _last_real_stage(stages)
    if last is not None and not rewrite_site(last):
        return found  # the whole pipeline held in memory gains nothing: no end-of-chain fix
    prefetch = _prefetch_candidate(stages)
    if prefetch is not None:
        prefetch.tried_on_training = prefetch.facts.existing_buffer is None and (
            options.get("inject_prefetch") == "false" or options.get("autotune") == "false"
        )
        found.append(prefetch)
    if options.get("autotune") == "false":
        found.append(
            Candidate(FIX_AUTOTUNE, None, "options", cost_s=0.0, with_options=_autotune_on)
        )
    return found


def _map_candidate(stats: StageStats, node: str | None) -> Candidate:
    candidate = Candidate(FIX_PARALLEL_MAP, stats.index, stage_name(stats), cost_s=_cost(stats))
    if node is None:
        candidate.reason = "the stage was not found in the dataset graph"
    else:
        candidate.edit = lambda graph: graph.parallelize_map(node)
    return candidate


def _interleave_candidate(stats: StageStats, node: str | None, cores: int) -> Candidate:
    candidate = Candidate(
        FIX_PARALLEL_INTERLEAVE,
        stats.index,
        stage_name(stats),
        cost_s=_cost(stats),
        facts=TrialFacts(cycle_length=cores),
    )
    if node is None:
        candidate.reason = "the stage was not found in the dataset graph"
    else:
        candidate.edit = lambda graph: graph.parallelize_interleave(node, cores)
    return candidate


def _vectorize_candidate(
    stats: StageStats, walked: list[Stage], stages: list[StageStats], nodes: dict[int, str]
) -> Candidate:
    """Move the map after the batch it feeds, once its function is checked on a sample."""
    candidate = Candidate(FIX_VECTORIZE, stats.index, stage_name(stats), cost_s=_cost(stats))
    consumer = next((s for s in stages if stats.index in s.inputs), None)
    map_node = nodes.get(stats.index)
    batch_node = nodes.get(consumer.index) if consumer is not None else None
    batch = downstream_batch_size(stages, stats.index)
    if map_node is None or batch_node is None or consumer is None or not batch:
        candidate.reason = "the map or its batch was not found in the dataset graph"
        return candidate
    map_input = _python_input(walked[stats.index].dataset)
    if map_input is None:
        candidate.reason = "the map's input dataset is unknown"
        return candidate
    input_spec = map_input.element_spec
    batch_spec = walked[consumer.index].dataset.element_spec
    sample_size = min(2 * batch, VECTORIZE_SAMPLE_MAX_ELEMENTS)
    candidate.facts = replace(candidate.facts, sample_elements=sample_size)

    lead = _leading_dim(batch_spec)
    traced = Once(lambda: trace_on_batches(walked[stats.index].dataset, batch, lead is not None))
    candidate.check = lambda graph_def, teardown: vectorize_check(
        graph_def, map_node, batch_node, input_spec, batch_spec, sample_size, teardown, traced
    )
    candidate.edit = lambda graph: graph.vectorize(map_node, batch_node, traced())
    candidate.semantics = SEMANTICS_BATCHED
    return candidate


def _leading_dim(spec: Any) -> int | None:
    """The static batch size of a batched spec (None when the last batch may be short)."""
    import tensorflow as tf

    components = tf.nest.flatten(spec)
    shape = getattr(components[0], "shape", None) if components else None
    if shape is None or shape.rank is None or shape.rank == 0:
        return None
    return None if shape[0] is None else int(shape[0])


def _python_input(dataset: Any) -> Any | None:
    from pipediag.bench import python_chain

    inputs = python_chain.python_inputs(python_chain.unwrap(dataset))
    return inputs[0] if len(inputs) == 1 else None


def _prefetch_candidate(stages: list[StageStats]) -> Candidate | None:
    """Add a prefetch at the end, or raise a fixed-size one to AUTOTUNE; measured either way."""
    last = _last_real_stage(stages)
    if last is None:
        return None
    if last.kind == KIND_PREFETCH and last.settings.get("buffer_size") in ("AUTOTUNE", None):
        return None
    return Candidate(
        FIX_PREFETCH,
        last.index,
        stage_name(last),
        cost_s=0.0,
        edit=lambda graph: graph.prefetch_at_end(),
        facts=TrialFacts(existing_buffer=last.settings.get("buffer_size", ""))
        if last.kind == KIND_PREFETCH
        else TrialFacts(),
    )


def _cache_candidate(
    walked: list[Stage], stages: list[StageStats], nodes: dict[int, str]
) -> Candidate | None:
    """Cache after the costliest deterministic prefix, when the pipeline has no cache yet."""
    if any(s.kind == KIND_CACHE for s in stages):
        return None
    point = cache_point(stages)
    if point is None or not rewrite_site(stages[point]):
        return None
    stats = stages[point]
    prefix_s = prefix_cost_s(stages, point)
    candidate = Candidate(
        FIX_CACHE, point, stage_name(stats), cost_s=prefix_s, semantics=SEMANTICS_CACHE
    )
    candidate.facts = TrialFacts(prefix_s_per_batch=prefix_s)
    node = nodes.get(point)
    size_cache(candidate, walked, walked[point].dataset, point, stats.elements_per_s)
    if candidate.reason is None and node is None:
        candidate.reason = "the stage was not found in the dataset graph"
    if candidate.reason is None and node is not None:
        candidate.edit = lambda graph: graph.cache_after(node, repeat=True)
    return candidate


def size_cache(
    candidate: Candidate,
    walked: list[Stage],
    prefix: Any,
    point: int,
    elements_per_s: float | None,
    sample: Any | None = None,
) -> None:
    """Fill in what a cache of `prefix` (one epoch of stage `point`'s output) needs: its
    size against the memory available, how long it takes to fill, and how many output
    batches fill it; or set `candidate.reason` to why it cannot be timed. Sizes not static
    are read from `sample` (default: `prefix`), a dataset with the same elements."""
    elements = cache_sizing.cardinality(prefix)
    if elements is None or elements < 0:
        candidate.reason = "the dataset is infinite or of unknown size at this point: no cache"
        return
    size = cache_sizing.dataset_bytes(
        prefix if sample is None else sample, elements, prefix.element_spec
    )
    available = cache_sizing.available_memory_bytes()
    candidate.facts = replace(
        candidate.facts, elements=elements, cache_bytes=size, available_bytes=available
    )
    fits = cache_sizing.fits_in_memory(size, available)
    candidate.fits_in_memory = fits
    if not fits:
        candidate.reason = (
            "the cache size is unknown"
            if size is None or available is None
            else "the cache would not fit comfortably in memory"
        )
        return
    fill_s = elements / elements_per_s if elements_per_s else None
    if fill_s is not None:
        candidate.facts = replace(candidate.facts, fill_s=fill_s)
    factor = elements_per_output_batch(walked)[point]
    if fill_s is None or factor is None:
        candidate.reason = "cannot tell how long filling the cache takes: estimated only"
    elif fill_s > CACHE_FILL_MAX_S:
        candidate.reason = (
            f"filling the cache takes about {fill_s:.0f} s (one epoch): estimated only"
        )
    else:
        candidate.fill_batches = math.ceil(elements / factor) + CACHE_FILL_MARGIN_BATCHES


def _last_real_stage(stages: Sequence[StageStats]) -> StageStats | None:
    for stats in reversed(stages):
        if stats.kind != KIND_OPTIONS:
            return stats
    return None


def _cost(stats: StageStats) -> float:
    return stats.own_s_per_batch or 0.0


def thread_cap_candidate(threads: int) -> Candidate:
    def capped(dataset: Any) -> Any:
        import tensorflow as tf

        options = tf.data.Options()
        options.threading.private_threadpool_size = threads
        return dataset.with_options(options)

    return Candidate(
        FIX_THREAD_CAP,
        None,
        "options",
        cost_s=0.0,
        with_options=capped,
        facts=TrialFacts(threads=threads),
        tried_on_training=True,
    )


def _autotune_on(dataset: Any) -> Any:
    import tensorflow as tf

    options = tf.data.Options()
    options.autotune.enabled = True
    return dataset.with_options(options)
