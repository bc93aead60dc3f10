"""The rewrites no stage rule proposes: a deterministic map hoisted above its shuffle and
cached, consecutive maps fused, a `from_generator` source read once and held in memory, the
batches prefetched to the GPU at the end where there is one.

Each is a `Candidate` like those of `bench/fix_candidates.py`, with its change in semantics
named (docs/design.md, "Every applicable rewrite").
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from pipediag.bench import cache_sizing
from pipediag.bench.candidate import Candidate, Once, check_python_repeats, size_cache
from pipediag.bench.graph_edit import PipelineGraph, RewriteError
from pipediag.bench.isolate import kept_random_states
from pipediag.bench.structure import Stage
from pipediag.report.fixes import FIXES
from pipediag.report.model import StageStats
from pipediag.report.names import stage_name
from pipediag.report.stage_facts import MAP_KINDS, deterministic, upstream_of
from pipediag.report.vocabulary import (
    FIX_DEVICE_PREFETCH,
    FIX_HOIST_CACHE,
    FIX_MAP_FUSION,
    FIX_MATERIALISE,
    KIND_SHUFFLE,
    KIND_SOURCE,
    FixName,
)

# Reading a generator's epoch to hold it stops past this long: the time a cache may take to
# fill (`candidate.CACHE_FILL_MAX_S`), so a trial is not spent waiting for Python.
GENERATOR_READ_MAX_S = 3.0
# And past this size: the elements become constants of a GraphDef, a protobuf capped at 2 GiB.
GENERATOR_MAX_BYTES = 1 << 30
# The stage `copy_to_device` (and so `prefetch_to_device`) makes, as the walk names it.
KIND_COPY_TO_DEVICE = "copy-to-device"
_TFRECORD_ROUTE = (
    "write its elements once to TFRecord files (tf.io.TFRecordWriter) and read them with "
    "tf.data.TFRecordDataset"
)


def hoist_candidate(
    stats: StageStats, walked: list[Stage], stages: list[StageStats], nodes: dict[int, str]
) -> Candidate | None:
    """source -> shuffle -> map -> ... becomes source -> map -> cache -> shuffle -> ...: the
    deterministic map runs once per element instead of once per epoch (TF guide, "Better
    performance with the tf.data API", "Caching")."""
    if stats.kind not in MAP_KINDS or len(stats.inputs) != 1 or not deterministic(stats):
        return None
    shuffle = stages[stats.inputs[0]]
    if shuffle.kind != KIND_SHUFFLE or len(shuffle.inputs) != 1:
        return None
    if sum(stats.index in s.inputs for s in stages) > 1 or _consumers(stages, shuffle) != 1:
        return None
    upstream = upstream_of(stages, shuffle.inputs[0])
    if not all(deterministic(stages[i]) for i in upstream):
        return None  # a shuffle or a random stage further up: a cache would freeze it
    candidate = _at_stage(FIX_HOIST_CACHE, stats)
    map_node, shuffle_node = nodes.get(stats.index), nodes.get(shuffle.index)
    # One epoch of the mapped data: the map's output has the shuffle's cardinality; sizes
    # are sampled, if need be, from the map over the shuffle's input, never through the
    # user's shuffle (a fresh iterator on it would move its seed: the user's order).
    sample = _unshuffled_map(walked, stats.index, shuffle.inputs[0])
    size_cache(
        candidate, walked, walked[stats.index].dataset, stats.index, stats.elements_per_s, sample
    )
    kept = sorted(upstream | {stats.index, shuffle.index})
    python = [stage_name(stages[i]) for i in kept if stages[i].uses_py_function]
    check_python_repeats(candidate, sample, python)
    if candidate.reason is None and (map_node is None or shuffle_node is None):
        candidate.reason = "the map or its shuffle was not found in the dataset graph"
    if candidate.reason is None and map_node is not None and shuffle_node is not None:
        candidate.edit = lambda graph: graph.hoist_above_shuffle(map_node, shuffle_node)
    return candidate


def fusion_candidate(
    stats: StageStats, stages: list[StageStats], options: dict[str, str]
) -> Candidate | None:
    """A map read only by another map: tf.data's `map_fusion` option fuses them into one
    function, one call per element instead of two. The option rather than a graph edit:
    tf.data's rewrite already composes the two functions, their captured inputs and their
    parallelism, which an edit of the FunctionDefs would have to redo."""
    if stats.kind not in MAP_KINDS or options.get("map_fusion") == "true":
        return None
    readers = [s for s in stages if stats.index in s.inputs]
    if len(readers) != 1 or readers[0].kind not in MAP_KINDS or readers[0].tf_internal:
        return None
    return Candidate(
        FIX_MAP_FUSION,
        stats.index,
        f"{stage_name(stats)} + {stage_name(readers[0])}",
        cost_s=(stats.own_s_per_batch or 0.0) + (readers[0].own_s_per_batch or 0.0),
        with_options=_fused,
    )


def generator_candidate(
    stats: StageStats, walked: list[Stage], node: str | None
) -> Candidate | None:
    """A `from_generator` source read once, in this process, into arrays that become a
    `from_tensor_slices` source: what a user writes when one epoch fits in memory."""
    from pipediag.bench import python_chain

    if stats.kind != KIND_SOURCE or stats.name != "from_generator":
        return None
    candidate = _at_stage(FIX_MATERIALISE, stats)
    dataset = walked[stats.index].dataset
    generator = python_chain.generator_function(dataset)
    if node is None or generator is None:
        candidate.reason = "the generator was not found in the dataset graph"
        return candidate
    spec = dataset.element_spec
    read = Once(lambda: read_generator(generator, spec))

    def check(_graph_def: Any, _teardown: Any) -> tuple[str | None, bool]:
        columns, reason = read()
        if columns is not None:
            return None, False
        candidate.facts = replace(
            candidate.facts, available_bytes=cache_sizing.available_memory_bytes()
        )
        return reason, False

    def edit(graph: PipelineGraph) -> None:
        columns, reason = read()
        if columns is None:
            raise RewriteError(reason or "the generator could not be read")
        graph.replace_source(node, columns, spec)

    candidate.check, candidate.edit = check, edit
    return candidate


def device_prefetch_candidate(device: str, stages: list[StageStats]) -> Candidate | None:
    """The pipeline ended with `prefetch_to_device(device)`, unless it already copies its
    batches to a device: the next batches are copied to the device while the step runs.
    Applied after every other rewrite and option, as tf.data requires it to be the last
    transformation (`bench/compose.py`); tried on training whatever the pipeline alone
    measured, since the copy it moves is the train step's (docs/design.md, "The
    host-to-device copy")."""

    def prefetched(dataset: Any) -> Any:
        import tensorflow as tf

        return dataset.apply(tf.data.experimental.prefetch_to_device(device))

    if any(s.kind == KIND_COPY_TO_DEVICE for s in stages):
        return None
    return Candidate(
        FIX_DEVICE_PREFETCH,
        None,
        f"the end of the pipeline, to {device}",
        cost_s=0.0,
        with_options=prefetched,
        tried_on_training=True,
    )


def read_generator(generator: Any, spec: Any) -> tuple[list[Any] | None, str | None]:
    """One epoch of the generator as one stacked array per component, or why not. Python's
    and NumPy's global random states are put back: the user's own epochs draw the numbers
    they would have drawn."""
    import numpy as np
    import tensorflow as tf

    components = tf.nest.flatten(spec)
    if not all(isinstance(c, tf.TensorSpec) for c in components):
        return None, f"its elements are ragged or sparse: {_TFRECORD_ROUTE}"
    available = cache_sizing.available_memory_bytes()
    limit = GENERATOR_MAX_BYTES
    if available is not None:
        limit = min(limit, int(cache_sizing.CACHE_MAX_MEMORY_SHARE * available))
    columns: list[list[Any]] = [[] for _ in components]
    used = 0
    began = time.perf_counter()
    try:
        with kept_random_states():
            for element in generator():
                values = [np.asarray(v) for v in tf.nest.flatten(element)]
                used += sum(v.nbytes for v in values)
                if used > limit:
                    return None, f"one epoch does not fit in memory: {_TFRECORD_ROUTE}"
                if time.perf_counter() - began > GENERATOR_READ_MAX_S:
                    return None, (
                        f"one epoch takes over {GENERATOR_READ_MAX_S:.0f} s to read, or never "
                        f"ends: not held here; {_TFRECORD_ROUTE}"
                    )
                for column, value, component in zip(columns, values, components, strict=True):
                    column.append(value.astype(component.dtype.as_numpy_dtype, copy=False))
    except Exception as exc:
        return None, f"the generator failed when read ({type(exc).__name__}: {exc})"
    if not columns or not columns[0]:
        return None, "the generator yielded nothing"
    try:
        return [np.stack(column) for column in columns], None
    except ValueError:
        return None, f"its elements differ in shape: {_TFRECORD_ROUTE}"


def _unshuffled_map(walked: list[Stage], map_index: int, input_index: int) -> Any | None:
    from pipediag.bench import python_chain

    func = python_chain.user_function(walked[map_index].dataset)
    if func is None:
        return None
    try:
        return walked[input_index].dataset.map(func)
    except Exception:
        return None


def _fused(dataset: Any) -> Any:
    import tensorflow as tf

    options = tf.data.Options()
    options.experimental_optimization.map_fusion = True
    return dataset.with_options(options)


def _at_stage(fix: FixName, stats: StageStats) -> Candidate:
    """A rewrite of one stage, costed at what the stage itself adds per batch, with the
    change in semantics its fix names."""
    return Candidate(
        fix,
        stats.index,
        stage_name(stats),
        cost_s=stats.own_s_per_batch or 0.0,
        semantics=FIXES[fix].semantics,
    )


def _consumers(stages: list[StageStats], stats: StageStats) -> int:
    return sum(stats.index in s.inputs for s in stages)
