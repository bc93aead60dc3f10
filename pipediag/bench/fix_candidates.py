"""Which fixes to try on a pipeline, and how each is built, with the advisor's own stage
predicates (`report/stage_facts.py`): a fix is measured where a rule would suggest it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pipediag.bench import cache_sizing, python_chain
from pipediag.bench.candidate import Candidate, check_python_repeats, element_counter, size_cache
from pipediag.bench.generator_source import read_generator
from pipediag.bench.graph_edit import PipelineGraph, RewriteError
from pipediag.bench.stages import leading_dimension
from pipediag.bench.structure import Stage
from pipediag.bench.teardown import TearDown
from pipediag.bench.vectorize_check import (
    VECTORIZE_SAMPLE_MAX_ELEMENTS,
    CheckSample,
    VectorizeForms,
    trace_on_batches,
)
from pipediag.bench.vectorized_map import unpacks_element
from pipediag.report.fixes import (
    FIX_AUTOTUNE,
    FIX_CACHE,
    FIX_DEVICE_PREFETCH,
    FIX_HOIST_CACHE,
    FIX_MAP_FUSION,
    FIX_MATERIALISE,
    FIX_PARALLEL_INTERLEAVE,
    FIX_PARALLEL_MAP,
    FIX_PREFETCH,
    FIX_THREAD_CAP,
    FIX_VECTORIZE,
    FIXES,
)
from pipediag.report.model import PipelineOptions
from pipediag.report.names import stage_name
from pipediag.report.reasons import Reason
from pipediag.report.stage_facts import (
    MAP_KINDS,
    batch_caching,
    cache_point,
    deterministic,
    downstream_batch_size,
    prefix_cost_s,
    rewrite_site,
    runs_sequential_interleave,
    runs_sequential_map,
    upstream_of,
    vectorizable,
)
from pipediag.report.stages import AUTOTUNE, StageStats
from pipediag.report.trials import TrialFacts
from pipediag.report.vocabulary import FixName

# The stage `copy_to_device` (and so `prefetch_to_device`) makes, as the walk names it.
KIND_COPY_TO_DEVICE = "copy-to-device"


def fix_candidates(
    walked: list[Stage],
    stages: list[StageStats],
    nodes: dict[int, str],
    options: PipelineOptions,
    cores: int,
) -> list[Candidate]:
    """Every rewrite that applies to this pipeline, in stage order (prefetch, autotune last);
    no timing threshold decides (docs/design.md, "Every applicable rewrite")."""
    found: list[Candidate] = []
    for stats in stages:
        if stats.tf_internal or not rewrite_site(stats):
            continue
        node = nodes.get(stats.index)
        if runs_sequential_map(stats, cores):
            found.append(_in_place(FIX_PARALLEL_MAP, stats, node, PipelineGraph.parallelize_map))
        if runs_sequential_interleave(stats, cores):
            edit = functools.partial(PipelineGraph.parallelize_interleave, cycle_length=cores)
            interleave = _in_place(FIX_PARALLEL_INTERLEAVE, stats, node, edit)
            interleave.facts = TrialFacts(cycle_length=cores)
            found.append(interleave)
        if vectorizable(stats, stages):
            found.append(_vectorize_candidate(stats, walked, stages, nodes))
        # A generator candidate is for a source stage only, where no other applies: order unchanged.
        optional = (
            generator_candidate(stats, walked, node),
            hoist_candidate(stats, walked, stages, nodes),
            fusion_candidate(stats, stages, options),
        )
        found.extend(candidate for candidate in optional if candidate is not None)
    if (cache := _cache_candidate(walked, stages, nodes)) is not None:
        found.append(cache)
    last = next((s for s in reversed(stages) if s.kind != "options"), None)
    if last is not None and not rewrite_site(last):
        return found  # the whole pipeline held in memory gains nothing: no end-of-chain fix
    prefetch = None if last is None else _prefetch_candidate(last)
    # tf.data injects that prefetch itself after a synchronous last stage: a gain measured for
    # adding it is noise (time series tutorial: 1.08-1.20x on training, 0.99-1.01x alone)
    injected = (
        options.inject_prefetch and options.autotune and last is not None and not _runs_ahead(last)
    )
    if prefetch is not None and (prefetch.facts.existing_buffer is not None or not injected):
        prefetch.tried_on_training = prefetch.facts.existing_buffer is None
        found.append(prefetch)
    if not options.autotune:
        autotune = _set_option("autotune", "enabled", True)
        found.append(Candidate(FIX_AUTOTUNE, None, "options", with_options=autotune))
    return found


def _in_place(
    fix: FixName, stats: StageStats, node: str | None, edit: Callable[[PipelineGraph, str], None]
) -> Candidate:
    candidate = _at_stage(fix, stats)
    if node is None:
        candidate.reason = Reason("stage-not-in-graph")
    else:
        candidate.edit = lambda graph: edit(graph, node)
    return candidate


def _vectorize_candidate(
    stats: StageStats, walked: list[Stage], stages: list[StageStats], nodes: dict[int, str]
) -> Candidate:
    """Move the map after its batch, once its function is checked on a sample."""
    cost_s = stats.own_s_per_batch or 0.0
    candidate = Candidate(FIX_VECTORIZE, stats.index, stage_name(stats), cost_s=cost_s)
    consumer = next((s for s in stages if stats.index in s.inputs), None)
    map_node = nodes.get(stats.index)
    batch_node = nodes.get(consumer.index) if consumer is not None else None
    batch = downstream_batch_size(stages, stats.index)
    if map_node is None or batch_node is None or consumer is None or not batch:
        candidate.reason = Reason("map-or-batch-not-in-graph")
        return candidate
    mapped = walked[stats.index].dataset
    if len(map_inputs := python_chain.python_inputs(python_chain.unwrap(mapped))) != 1:
        candidate.reason = Reason("map-input-unknown")
        return candidate
    input_spec, batch_spec = map_inputs[0].element_spec, walked[consumer.index].dataset.element_spec
    sample_size = min(2 * batch, VECTORIZE_SAMPLE_MAX_ELEMENTS)
    candidate.facts = replace(candidate.facts, sample_elements=sample_size)
    # A static batch size: the pipeline drops the remainder.
    drop = leading_dimension(walked[consumer.index].dataset) is not None
    # Each form traced once, on first use, for both the check and the edit.
    forms = VectorizeForms(
        plain=functools.cache(lambda: trace_on_batches(mapped, batch, drop)),
        per_element=functools.cache(
            lambda: trace_on_batches(mapped, batch, drop, vectorized_map=True)
        ),
    )

    def check(graph_def: Any, teardown: TearDown) -> tuple[Reason | None, bool]:
        sample = CheckSample.read(graph_def, map_node, input_spec, sample_size, teardown)
        result = forms.check(sample, batch_node, batch_spec)
        if forms.through_vectorized_map:
            candidate.facts = replace(
                candidate.facts,
                vectorized_map=True,
                batch_refusal=forms.plain_refusal,
                element_unpacked=unpacks_element(input_spec),
            )
            candidate.semantics = ("vectorized-map",)
        return result

    candidate.check = check
    candidate.edit = lambda graph: graph.vectorize(map_node, batch_node, forms.chosen())
    candidate.semantics = FIXES[FIX_VECTORIZE].semantics
    return candidate


def hoist_candidate(
    stats: StageStats, walked: list[Stage], stages: list[StageStats], nodes: dict[int, str]
) -> Candidate | None:
    """source -> shuffle -> map becomes source -> map -> cache -> shuffle: the map runs once."""
    if stats.kind not in MAP_KINDS or len(stats.inputs) != 1 or not deterministic(stats):
        return None
    shuffle = stages[stats.inputs[0]]
    if (
        shuffle.kind != "shuffle"
        or len(shuffle.inputs) != 1
        or sum(stats.index in s.inputs for s in stages) > 1
        or sum(shuffle.index in s.inputs for s in stages) != 1
    ):
        return None
    upstream = upstream_of(stages, shuffle.inputs[0])
    if not all(deterministic(stages[i]) for i in upstream):
        return None  # a shuffle or a random stage further up: a cache would freeze it
    candidate = _at_stage(FIX_HOIST_CACHE, stats)
    map_node, shuffle_node = nodes.get(stats.index), nodes.get(shuffle.index)
    # Sizes are sampled from the map over the shuffle's input, never through the user's
    # shuffle (a fresh iterator on it would move its seed: the user's order).
    sample = _unshuffled_map(walked, stats.index, shuffle.inputs[0])
    size_cache(candidate, walked, stats, sample)
    check_python_repeats(candidate, sample, stages, upstream | {stats.index, shuffle.index})
    if candidate.reason is None:
        if map_node is None or shuffle_node is None:
            candidate.reason = Reason("map-or-shuffle-not-in-graph")
        else:
            candidate.edit = lambda graph: graph.hoist_above_shuffle(map_node, shuffle_node)
    return candidate


def fusion_candidate(
    stats: StageStats, stages: list[StageStats], options: PipelineOptions
) -> Candidate | None:
    """A map read only by another map, fused by tf.data's `map_fusion` option: one call per
    element instead of two (docs/design.md, "Every applicable rewrite")."""
    if stats.kind not in MAP_KINDS or options.map_fusion:
        return None
    readers = [s for s in stages if stats.index in s.inputs]
    if len(readers) != 1 or readers[0].kind not in MAP_KINDS or readers[0].tf_internal:
        return None
    return Candidate(
        FIX_MAP_FUSION,
        stats.index,
        f"{stage_name(stats)} + {stage_name(readers[0])}",
        cost_s=(stats.own_s_per_batch or 0.0) + (readers[0].own_s_per_batch or 0.0),
        with_options=_set_option("experimental_optimization", "map_fusion", True),
    )


def generator_candidate(
    stats: StageStats, walked: list[Stage], node: str | None
) -> Candidate | None:
    """A `from_generator` source read once into arrays that become a `from_tensor_slices` one."""
    if stats.kind != "source" or stats.name != "from_generator":
        return None
    candidate, dataset = _at_stage(FIX_MATERIALISE, stats), walked[stats.index].dataset
    generator = python_chain.generator_function(dataset)
    if node is None or generator is None:
        candidate.reason = Reason("generator-not-in-graph")
        return candidate
    spec = dataset.element_spec
    read = functools.cache(lambda: read_generator(generator, spec))  # one read: check and edit

    def check(_graph_def: Any, _teardown: Any) -> tuple[Reason | None, bool]:
        columns, reason = read()
        if columns is not None:
            return None, False
        candidate.facts = replace(
            candidate.facts, available_bytes=cache_sizing.available_memory_bytes()
        )
        return reason, False

    def edit(graph: PipelineGraph) -> None:
        columns, why = read()
        if columns is None:
            raise RewriteError("generator-unread", detail=why.detail if why else "")
        graph.replace_source(node, columns, spec)

    candidate.check, candidate.edit = check, edit
    return candidate


def device_prefetch_candidate(device: str, stages: list[StageStats]) -> Candidate | None:
    """The pipeline ended with `prefetch_to_device(device)` (applied last, as tf.data requires),
    unless it already copies to a device (docs/design.md, "The host-to-device copy")."""

    def prefetched(dataset: Any) -> Any:
        import tensorflow as tf

        return dataset.apply(tf.data.experimental.prefetch_to_device(device))

    if any(s.kind == KIND_COPY_TO_DEVICE for s in stages):
        return None
    return Candidate(
        FIX_DEVICE_PREFETCH,
        None,
        f"the end of the pipeline, to {device}",
        with_options=prefetched,
        tried_on_training=True,
    )


def _prefetch_candidate(last: StageStats) -> Candidate | None:
    """A prefetch added after the last stage, or a fixed-size one raised to AUTOTUNE."""
    buffer = last.settings.buffer_size
    if last.kind == "prefetch" and buffer in (AUTOTUNE, None):
        return None
    return Candidate(
        FIX_PREFETCH,
        last.index,
        stage_name(last),
        edit=lambda graph: graph.prefetch_at_end(),
        facts=TrialFacts(existing_buffer=str(buffer)) if last.kind == "prefetch" else TrialFacts(),
    )


def _cache_candidate(
    walked: list[Stage], stages: list[StageStats], nodes: dict[int, str]
) -> Candidate | None:
    """Cache after the costliest deterministic prefix, when the pipeline has no cache yet."""
    if any(s.kind == "cache" for s in stages):
        return None
    if (point := cache_point(stages)) is None or not rewrite_site(stages[point]):
        return None
    stats, prefix_s = stages[point], prefix_cost_s(stages, point)
    candidate = _at_stage(FIX_CACHE, stats, cost_s=prefix_s)
    candidate.facts = TrialFacts(prefix_s_per_batch=prefix_s)
    node = nodes.get(point)
    size_cache(candidate, walked, stats, counter=element_counter(walked, nodes, point))
    check_python_repeats(candidate, walked[point].dataset, stages, upstream_of(stages, point))
    if candidate.reason is None and node is None:
        candidate.reason = Reason("stage-not-in-graph")
    batch = batch_caching(stages, point)
    batch_node = nodes.get(batch) if batch is not None else None
    if batch_node is not None:  # whole batches cached: read without batching them again
        candidate.facts = replace(candidate.facts, cached_in_batches=True)
    if candidate.reason is None and node is not None:

        def edit(graph: PipelineGraph) -> None:
            """After the stage, or after the batch that reads it; where a kept vectorise has
            moved the stage after its batch, after the stage, which then yields batches."""
            target = node
            if batch_node is not None:
                reads = graph.data_inputs(graph.node(node))
                moved = bool(reads) and reads[0].split(":")[0] == batch_node
                target = node if moved else batch_node
            graph.cache_after(target, repeat=True)

        candidate.edit = edit
    return candidate


def _runs_ahead(stats: StageStats) -> bool:
    """Whether the stage runs ahead in threads of its own: tf.data injects no prefetch after it."""
    parallel_batch = stats.kind == "batch" and stats.settings.num_parallel_calls is not None
    return parallel_batch or stats.kind in ("parallel-map", "parallel-interleave", "map-and-batch")


def thread_cap_candidate(threads: int) -> Candidate:
    return Candidate(
        FIX_THREAD_CAP,
        None,
        "options",
        with_options=_set_option("threading", "private_threadpool_size", threads),
        facts=TrialFacts(threads=threads),
        tried_on_training=True,
    )


def _set_option(group: str, name: str, value: Any) -> Callable[[Any], Any]:
    """The rewrite that sets `tf.data.Options().<group>.<name> = value` on a dataset."""

    def with_option(dataset: Any) -> Any:
        import tensorflow as tf

        options = tf.data.Options()
        setattr(getattr(options, group), name, value)
        return dataset.with_options(options)

    return with_option


def _unshuffled_map(walked: list[Stage], map_index: int, input_index: int) -> Any | None:
    if (func := python_chain.user_function(walked[map_index].dataset)) is None:
        return None
    try:
        return walked[input_index].dataset.map(func)
    except Exception:
        return None


def _at_stage(fix: FixName, stats: StageStats, cost_s: float | None = None) -> Candidate:
    cost = (stats.own_s_per_batch or 0.0) if cost_s is None else cost_s
    return Candidate(
        fix, stats.index, stage_name(stats), cost_s=cost, semantics=FIXES[fix].semantics
    )
