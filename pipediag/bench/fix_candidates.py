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
from typing import Any

from pipediag.bench.graph_edit import PipelineGraph
from pipediag.bench.stages import elements_per_output_batch
from pipediag.bench.structure import Stage
from pipediag.bench.teardown import TearDown
from pipediag.bench.vectorize_check import VECTORIZE_SAMPLE_MAX_ELEMENTS, vectorize_check
from pipediag.report.model import StageStats, TrialFacts
from pipediag.report.names import stage_name
from pipediag.report.stage_facts import (
    VECTORIZE_MAX_ELEMENT_S,
    cache_point,
    downstream_batch_size,
    prefix_cost_s,
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

# Fixes are tried on stages adding at least this share of the time per batch; below it a
# fix moves the rate by less than run-to-run noise on a shared 2-core machine (~5%).
TRIAL_MIN_SHARE = 0.05
# A cache must fit in half the memory available now (psutil): the rest of the training
# process (model, framework, shuffle buffers) also needs room.
CACHE_MAX_MEMORY_SHARE = 0.5
# Elements read to estimate the size of elements whose shapes are not static.
CACHE_SIZE_SAMPLE = 8
# Filling a cache takes one epoch of the prefix; verify only when it takes at most this long,
# the length of the phase-1 benchmark (bench/pipeline.py DEFAULT_MAX_SECONDS).
CACHE_FILL_MAX_S = 3.0
# Extra output batches pulled after the estimated end of the filling epoch: shuffle buffers
# and prefetches downstream read ahead, so the epoch boundary is not exact.
CACHE_FILL_MARGIN_BATCHES = 4


@dataclass
class Candidate:
    """A fix to try: how to build its variant from the baseline graph, or why it cannot be."""

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


def fix_candidates(
    walked: list[Stage],
    stages: list[StageStats],
    nodes: dict[int, str],
    options: dict[str, str],
    cores: int,
) -> list[Candidate]:
    """The fixes that apply to this pipeline, in stage order (the prefetch and autotune last)."""
    total_s = _time_per_batch(stages)
    found: list[Candidate] = []
    for stats in stages:
        if stats.tf_internal or not _costly(stats, total_s):
            continue
        node = nodes.get(stats.index)
        if runs_sequential_map(stats, cores):
            found.append(_map_candidate(stats, node))
        if runs_sequential_interleave(stats, cores):
            found.append(_interleave_candidate(stats, node, cores))
        if vectorizable(stats, stages) and _cheap_per_element(stats, stages):
            found.append(_vectorize_candidate(stats, walked, stages, nodes))
    cache = _cache_candidate(walked, stages, nodes, total_s)
    if cache is not None:
        found.append(cache)
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

    candidate.check = lambda graph_def, teardown: vectorize_check(
        graph_def, map_node, batch_node, input_spec, batch_spec, sample_size, teardown
    )
    candidate.edit = lambda graph: graph.vectorize(map_node, batch_node)
    return candidate


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
    walked: list[Stage], stages: list[StageStats], nodes: dict[int, str], total_s: float | None
) -> Candidate | None:
    """Cache after the costliest deterministic prefix, when the pipeline has no cache yet."""
    if any(s.kind == KIND_CACHE for s in stages):
        return None
    point = cache_point(stages)
    if point is None:
        return None
    stats = stages[point]
    prefix_s = prefix_cost_s(stages, point)
    if total_s is not None and prefix_s < TRIAL_MIN_SHARE * total_s:
        return None
    candidate = Candidate(FIX_CACHE, point, stage_name(stats), cost_s=prefix_s)
    candidate.facts = TrialFacts(prefix_s_per_batch=prefix_s)
    prefix = walked[point].dataset
    elements = _cardinality(prefix)
    if elements is None or elements < 0:
        candidate.reason = "the dataset is infinite or of unknown size at this point: no cache"
        return candidate
    size = _dataset_bytes(prefix, elements)
    available = _available_memory_bytes()
    candidate.facts = replace(
        candidate.facts, elements=elements, cache_bytes=size, available_bytes=available
    )
    fits = size is not None and available is not None and size <= CACHE_MAX_MEMORY_SHARE * available
    candidate.fits_in_memory = fits
    if not fits:
        candidate.reason = (
            "the cache size is unknown"
            if size is None or available is None
            else "the cache would not fit comfortably in memory"
        )
        return candidate
    rate = stats.elements_per_s
    fill_s = elements / rate if rate else None
    if fill_s is not None:
        candidate.facts = replace(candidate.facts, fill_s=fill_s)
    factor = elements_per_output_batch(walked)[point]
    node = nodes.get(point)
    if node is None:
        candidate.reason = "the stage was not found in the dataset graph"
    elif fill_s is None or factor is None:
        candidate.reason = "cannot tell how long filling the cache takes: estimated only"
    elif fill_s > CACHE_FILL_MAX_S:
        candidate.reason = (
            f"filling the cache takes about {fill_s:.0f} s (one epoch): estimated only"
        )
    else:
        candidate.fill_batches = math.ceil(elements / factor) + CACHE_FILL_MARGIN_BATCHES
        candidate.edit = lambda graph: graph.cache_after(node, repeat=True)
    return candidate


def _last_real_stage(stages: Sequence[StageStats]) -> StageStats | None:
    for stats in reversed(stages):
        if stats.kind != KIND_OPTIONS:
            return stats
    return None


def _time_per_batch(stages: Sequence[StageStats]) -> float | None:
    last = stages[-1] if stages else None
    if last is None or not last.batches_per_s:
        return None
    return 1.0 / last.batches_per_s


def _costly(stats: StageStats, total_s: float | None) -> bool:
    if stats.own_s_per_batch is None or total_s is None:
        return True  # unmeasured: try it rather than guess it away
    return bool(stats.own_s_per_batch >= TRIAL_MIN_SHARE * total_s)


def _cheap_per_element(stats: StageStats, stages: list[StageStats]) -> bool:
    batch = downstream_batch_size(stages, stats.index)
    own = stats.own_s_per_batch
    return (
        own is not None
        and batch is not None
        and batch > 0
        and (own / batch <= VECTORIZE_MAX_ELEMENT_S)
    )


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


def _cardinality(dataset: Any) -> int | None:
    """Elements in one epoch; -1 infinite, -2 unknown (tf.data's constants), None on error."""
    try:
        return int(dataset.cardinality().numpy())
    except Exception:
        return None


def _dataset_bytes(dataset: Any, elements: int) -> int | None:
    """Memory of one epoch: from static shapes when known, else from a few sampled elements."""
    static = _static_element_bytes(dataset.element_spec)
    if static is not None:
        return static * elements
    sampled = _sampled_element_bytes(dataset)
    return None if sampled is None else int(sampled * elements)


def _static_element_bytes(spec: Any) -> int | None:
    import tensorflow as tf

    total = 0
    for component in tf.nest.flatten(spec):
        shape = getattr(component, "shape", None)
        dtype = getattr(component, "dtype", None)
        if shape is None or dtype is None or not shape.is_fully_defined() or dtype == tf.string:
            return None
        total += shape.num_elements() * dtype.size
    return total


def _sampled_element_bytes(dataset: Any) -> float | None:
    """Mean size of the first elements, read on a fresh iterator (the prefix has no cache)."""
    import tensorflow as tf

    sizes: list[int] = []
    try:
        for element in dataset.take(CACHE_SIZE_SAMPLE):
            size = 0
            for tensor in tf.nest.flatten(element):
                value = tensor.numpy()
                if value.dtype == object:
                    size += sum(len(v) for v in value.ravel())
                else:
                    size += value.nbytes
            sizes.append(size)
    except Exception:
        return None
    return sum(sizes) / len(sizes) if sizes else None


def _available_memory_bytes() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:
        return None
