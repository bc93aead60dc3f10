"""A candidate rewrite: what a fix to try is (its edit of the graph copy or its options, its
check, its facts), and what a cache candidate needs (its size, fill time and batches). The
candidates themselves are built in `bench/fix_candidates.py`."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from pipediag.bench import cache_sizing
from pipediag.bench.graph_edit import PipelineGraph
from pipediag.bench.stages import elements_per_output_batch
from pipediag.bench.structure import Stage
from pipediag.bench.teardown import TearDown
from pipediag.config import DEFAULT_BENCH_SECONDS
from pipediag.report.model import TrialFacts
from pipediag.report.reasons import (
    CACHE_SIZE_UNKNOWN,
    CACHE_TOO_BIG,
    COUNT_TOO_LONG,
    FILL_TIME_UNKNOWN,
    FILL_TOO_LONG,
    INFINITE_OR_UNKNOWN_SIZE,
    PYTHON_NOT_REPEATABLE,
    Reason,
)
from pipediag.report.vocabulary import KIND_MAP, KIND_PARALLEL_MAP, FixName

# Filling a cache takes one epoch of the prefix; verify only when it takes at most this long,
# twice the phase-1 benchmark (bench/pipeline.py DEFAULT_MAX_SECONDS). At the benchmark's
# length the bundled input-bound example, whose cache fills in an estimated 3.1-3.6 s on 2
# cores, had its cache tried on training in some runs and not in others.
CACHE_FILL_MAX_S = 2 * DEFAULT_BENCH_SECONDS
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
    reason: Reason | None = None
    facts: TrialFacts = field(default_factory=TrialFacts)
    fill_batches: int = 0  # for a cache: output batches to read before the cache is full
    # Run before timing, on the unedited graph (spent iterators go to the `TearDown`):
    # (why the fix is not timed, whether that is because it is unsafe), or (None, False).
    check: Callable[[Any, TearDown], tuple[Reason | None, bool]] | None = None
    # Tried on training whatever the pipeline alone measured: a prefetch where none runs
    # (its gain, overlap with the train step, only shows there), or a cap on the
    # pipeline's threads (slower alone, it leaves the train step its cores).
    tried_on_training: bool = False
    unsafe: bool = False  # the vectorise check refused the function
    fits_in_memory: bool | None = None  # a cache's data, in the memory available
    # What the rewrite changes in what the pipeline yields, in words; None: nothing.
    semantics: str | None = None


def check_python_repeats(candidate: Candidate, dataset: Any | None, python: list[str]) -> None:
    """Where the cache would keep the output of Python stages (`python`, their names): read
    `dataset`, the elements the cache would hold, twice (`bench/repeatable.py`). Stages
    that gave other values the second time are random, and no cache is offered over them
    (`candidate.reason`); the facts say what was found."""
    if not python or dataset is None:
        return
    from pipediag.bench.repeatable import CHECK_ELEMENTS, same_elements_twice

    repeats = same_elements_twice(dataset)
    candidate.facts = replace(candidate.facts, python_repeatable=repeats)
    if repeats is False and candidate.reason is None:
        candidate.reason = Reason(
            PYTHON_NOT_REPEATABLE, detail=", ".join(python), value=CHECK_ELEMENTS
        )


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


def size_cache(
    candidate: Candidate,
    walked: list[Stage],
    prefix: Any,
    point: int,
    elements_per_s: float | None,
    sample: Any | None = None,
    counter: Counter | None = None,
) -> None:
    """Fill in what a cache of `prefix` (one epoch of stage `point`'s output) needs: its
    size against the memory available, how long it takes to fill, and how many output
    batches fill it; or set `candidate.reason` to why it cannot be timed. Sizes not static
    are read from `sample` (default: `prefix`), a dataset with the same elements. Where
    tf.data does not know the length (a file source), `counter` counts it at check time."""
    elements = cache_sizing.cardinality(prefix)
    if elements == cache_sizing.UNKNOWN and counter is not None:
        # A file source knows no length: the elements are counted on an isolated copy when
        # the candidate is checked, and the cache sized then.
        candidate.check = _counted_then_sized(
            candidate,
            counter,
            lambda n: _sized(candidate, walked, prefix, point, elements_per_s, sample, n),
        )
        return
    if elements is None or elements < 0:
        candidate.reason = Reason(INFINITE_OR_UNKNOWN_SIZE)
        return
    _sized(candidate, walked, prefix, point, elements_per_s, sample, elements)


# Stages that yield one element per input element.
_ONE_TO_ONE = (KIND_MAP, KIND_PARALLEL_MAP)
# Counts the elements at a cache point on a copy of the graph (`bench.cache_sizing`), or None
# where they could not be counted in time.
Counter = Callable[[Any, TearDown], "int | None"]


def element_counter(walked: list[Stage], nodes: dict[int, str], point: int) -> Counter | None:
    """How to count the elements of one pass at stage `point`: at the first stage above it
    that is not a map (a map yields one element per element, so its input counts the same
    and reads no faster), on an isolated copy of the graph, so no state of the user's
    dataset moves. None where that stage is not in the graph."""
    index = point
    while walked[index].stats.kind in _ONE_TO_ONE and len(walked[index].stats.inputs) == 1:
        index = walked[index].stats.inputs[0]
    node = nodes.get(index)
    if node is None:
        return None
    spec = walked[index].dataset.element_spec

    def count(graph_def: Any, teardown: TearDown) -> int | None:
        graph = PipelineGraph.copy_of(graph_def)
        graph.set_output(node)
        graph.isolate()
        return cache_sizing.counted_elements(graph.rebuild(spec), teardown)

    return count


def _counted_then_sized(
    candidate: Candidate, counter: Counter, sized: Callable[[int], None]
) -> Callable[[Any, TearDown], tuple[Reason | None, bool]]:
    earlier = candidate.check

    def check(graph_def: Any, teardown: TearDown) -> tuple[Reason | None, bool]:
        if earlier is not None:
            refusal, unsafe = earlier(graph_def, teardown)
            if refusal is not None:
                return refusal, unsafe
        elements = counter(graph_def, teardown)
        if elements is None:
            return Reason(COUNT_TOO_LONG, limit=cache_sizing.COUNT_MAX_S), False
        sized(elements)
        return candidate.reason, False

    return check


def _sized(
    candidate: Candidate,
    walked: list[Stage],
    prefix: Any,
    point: int,
    elements_per_s: float | None,
    sample: Any | None,
    elements: int,
) -> None:
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
        candidate.reason = Reason(
            CACHE_SIZE_UNKNOWN if size is None or available is None else CACHE_TOO_BIG
        )
        return
    fill_s = elements / elements_per_s if elements_per_s else None
    if fill_s is not None:
        candidate.facts = replace(candidate.facts, fill_s=fill_s)
    factor = elements_per_output_batch(walked)[point]
    if fill_s is None or factor is None:
        candidate.reason = Reason(FILL_TIME_UNKNOWN)
    elif fill_s > CACHE_FILL_MAX_S:
        candidate.reason = Reason(FILL_TOO_LONG, value=fill_s)
    else:
        candidate.fill_batches = math.ceil(elements / factor) + CACHE_FILL_MARGIN_BATCHES
