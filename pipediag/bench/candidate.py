"""A candidate rewrite (its edit or options, its check, its facts), and what a cache candidate
needs: its size, fill time and batches, and whether the Python stages it would cache give the
same elements when read twice. `bench/fix_candidates.py` builds them."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pipediag.bench import cache_sizing
from pipediag.bench.graph_edit import PipelineGraph
from pipediag.bench.isolate import kept_random_states
from pipediag.bench.stages import elements_per_output_batch
from pipediag.bench.structure import Stage
from pipediag.bench.teardown import TearDown
from pipediag.config import DEFAULT_BENCH_SECONDS
from pipediag.report.names import stage_name
from pipediag.report.reasons import Reason
from pipediag.report.stage_facts import MAP_KINDS
from pipediag.report.stages import StageStats
from pipediag.report.trials import TrialFacts
from pipediag.report.vocabulary import FixName, SemanticsChange

# Filling a cache takes one epoch of the prefix; verify only when it takes at most twice the
# phase-1 benchmark (docs/design.md, "Fixes timed on the pipeline alone").
CACHE_FILL_MAX_S = 2 * DEFAULT_BENCH_SECONDS
# Extra batches read past the filling epoch's estimated end: buffers downstream read ahead.
CACHE_FILL_MARGIN_BATCHES = 4
# Elements read in each pass: enough for a random augmentation to show (a coin flip leaving
# one alone is caught by the seven others), few enough for a decode of tens of ms.
CHECK_ELEMENTS = 8
# Both passes stop past this long: the check is not to hold up the trials.
CHECK_MAX_S = 3.0


@dataclass
class Candidate:
    """A fix to try: how to build its variant from the baseline graph, or why it cannot be."""

    fix: FixName
    stage_index: int | None
    stage: str
    cost_s: float = 0.0
    edit: Callable[[PipelineGraph], None] | None = None
    with_options: Callable[[Any], Any] | None = None
    reason: Reason | None = None
    facts: TrialFacts = field(default_factory=TrialFacts)
    fill_batches: int = 0  # for a cache: output batches to read before the cache is full
    # Run before timing on the unedited graph: (why not timed, whether unsafe), or (None, False).
    check: Callable[[Any, TearDown], tuple[Reason | None, bool]] | None = None
    # Tried on training whatever the pipeline alone measured: a prefetch where none runs (its
    # overlap with the step shows only there), a thread cap (slower alone, frees the step's cores).
    tried_on_training: bool = False
    unsafe: bool = False  # the vectorise check refused the function
    fits_in_memory: bool | None = None  # a cache's data, in the memory available
    # What the rewrite changes in what the pipeline yields; empty: nothing.
    semantics: tuple[SemanticsChange, ...] = ()


def check_python_repeats(
    candidate: Candidate, dataset: Any | None, stages: list[StageStats], indices: set[int]
) -> None:
    """No cache over the Python stages among `indices` where `dataset` differs when read twice."""
    python = [stage_name(stages[i]) for i in sorted(indices) if stages[i].uses_py_function]
    if not python or dataset is None:
        return
    repeats = same_elements_twice(dataset)
    candidate.facts = replace(candidate.facts, python_repeatable=repeats)
    if repeats is False and candidate.reason is None:
        candidate.reason = Reason(
            "python-not-repeatable", detail=", ".join(python), value=CHECK_ELEMENTS
        )


def same_elements_twice(dataset: Any, elements: int = CHECK_ELEMENTS) -> bool | None:
    """Whether two passes over the first elements agree; None where unreadable in time."""
    began = time.perf_counter()
    try:
        with kept_random_states():
            first = _first_values(dataset, elements, began)
            second = _first_values(dataset, elements, began) if first is not None else None
    except Exception:  # a check that cannot run says nothing: the caller keeps its default
        return None
    if first is None or second is None or len(first) != len(second):
        return None
    return all(_equal(a, b) for a, b in zip(first, second, strict=True))


def _first_values(dataset: Any, elements: int, began: float) -> list[Any] | None:
    """The values of the first `elements` elements, flattened; None past `CHECK_MAX_S`."""
    import tensorflow as tf

    values: list[Any] = []
    for element in dataset.take(elements):
        values.extend(
            v.numpy() if hasattr(v, "numpy") else v
            for v in tf.nest.flatten(element, expand_composites=True)
        )
        if time.perf_counter() - began > CHECK_MAX_S:
            return None
    return values


def _equal(a: Any, b: Any) -> bool:
    import numpy as np

    left, right = np.asarray(a), np.asarray(b)
    if left.shape != right.shape or left.dtype != right.dtype:
        return False
    # NaN equals NaN only where a NaN can be: np.array_equal refuses it on other types.
    return bool(np.array_equal(left, right, equal_nan=left.dtype.kind in "fc"))


def size_cache(
    candidate: Candidate,
    walked: list[Stage],
    stats: StageStats,
    sample: Any | None = None,
    counter: Counter | None = None,
) -> None:
    """Fill in a cache after `stats`' stage: its size, fill time and fill batches, or
    `candidate.reason`. Sizes not static are read from `sample`; a length tf.data does not
    know is counted (`counter`) when the candidate is checked, and the cache sized then."""
    elements = cache_sizing.cardinality(walked[stats.index].dataset)
    if elements == cache_sizing.UNKNOWN and counter is not None:

        def check(graph_def: Any, teardown: TearDown) -> tuple[Reason | None, bool]:
            if (counted := counter(graph_def, teardown)) is None:
                return Reason("count-too-long", limit=cache_sizing.COUNT_MAX_S), False
            _sized(candidate, walked, stats, sample, counted)
            return candidate.reason, False

        candidate.check = check
        return
    if elements is None or elements < 0:
        candidate.reason = Reason("infinite-or-unknown-size")
        return
    _sized(candidate, walked, stats, sample, elements)


# Counts the elements at a cache point on a graph copy; None where not counted in time.
Counter = Callable[[Any, TearDown], "int | None"]


def element_counter(walked: list[Stage], nodes: dict[int, str], point: int) -> Counter | None:
    """How to count one pass at stage `point`: at the first stage above it that is not a map
    (its input counts the same, no slower), on an isolated copy; None where not in the graph."""
    index = point
    while walked[index].stats.kind in MAP_KINDS and len(walked[index].stats.inputs) == 1:
        index = walked[index].stats.inputs[0]
    if (node := nodes.get(index)) is None:
        return None
    spec = walked[index].dataset.element_spec

    def count(graph_def: Any, teardown: TearDown) -> int | None:
        graph = PipelineGraph.copy_of(graph_def)
        graph.set_output(node)
        graph.isolate()
        return cache_sizing.counted_elements(graph.rebuild(spec), teardown)

    return count


def _sized(
    candidate: Candidate, walked: list[Stage], stats: StageStats, sample: Any | None, elements: int
) -> None:
    prefix = walked[stats.index].dataset
    size = cache_sizing.dataset_bytes(
        prefix if sample is None else sample, elements, prefix.element_spec
    )
    available = cache_sizing.available_memory_bytes()
    candidate.facts = replace(
        candidate.facts, elements=elements, cache_bytes=size, available_bytes=available
    )
    candidate.fits_in_memory = cache_sizing.fits_in_memory(size, available)
    if not candidate.fits_in_memory:
        candidate.reason = Reason(
            "cache-size-unknown" if size is None or available is None else "cache-too-big"
        )
        return
    fill_s = elements / stats.elements_per_s if stats.elements_per_s else None
    candidate.facts = replace(candidate.facts, fill_s=fill_s)
    factor = elements_per_output_batch(walked)[stats.index]
    if fill_s is None or factor is None:
        candidate.reason = Reason("fill-time-unknown")
    elif fill_s > CACHE_FILL_MAX_S:
        candidate.reason = Reason("fill-too-long", value=fill_s)
    else:
        candidate.fill_batches = math.ceil(elements / factor) + CACHE_FILL_MARGIN_BATCHES
