"""Per-stage rates: benchmark each prefix of the pipeline alone, and find the costly stage.

Part of `bench/`, which reads the pipeline alone: every stage's dataset object is the prefix
that ends there, and a stage's own cost is its prefix's time per output batch less its inputs'
(after Plumber, MLSys 2022). The bottleneck is the stage with the largest own cost. Prefixes
are read in `ROUNDS` slices, forwards then backwards, until a deadline shared with the fix
trials; the stage costs on training and the advisor start from these figures. Method and
caveats: (docs/design.md, "Stage timing").
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any

from pipediag.bench.pipeline import BatchTiming, time_iterator
from pipediag.bench.structure import Stage, WalkedPipeline
from pipediag.bench.teardown import TearDown, owned
from pipediag.clock import MONOTONIC, Clock
from pipediag.report.model import StageStats
from pipediag.report.reasons import (
    CANNOT_ITERATE,
    FAILED,
    PARTIAL_FILE_CACHE,
    STAGE_NOT_READ_ALONE,
    STAGE_OUT_OF_TIME,
    STAGES_CAPPED,
    TOO_FEW_STAGE_ELEMENTS,
    Reason,
)
from pipediag.report.stage_facts import BATCHING_KINDS, MAP_KINDS, SHUFFLE_KINDS, upstream_of
from pipediag.report.vocabulary import (
    KIND_CACHE,
    KIND_FILTER,
    KIND_OPTIONS,
    KIND_PARALLEL_FILTER,
    KIND_PREFETCH,
    KIND_REPEAT,
    KIND_SCAN,
    KIND_SNAPSHOT,
)

# Half a second per prefix gives hundreds of elements for any stage fast enough to matter,
# and keeps a 6-stage pipeline under ~5 s (2-core CI machine).
DEFAULT_SECONDS_PER_STAGE = 0.5
# Enough reads for a stable rate; cheap prefixes (microseconds per element) stop here early.
MAX_ELEMENTS_PER_STAGE = 2000
# Time spent measuring the cost of one eager `next()` on a trivial dataset.
OVERHEAD_CALIBRATION_S = 0.1
OVERHEAD_CALIBRATION_ELEMENTS = 500
# Slices per prefix (see "Noise" above); the per-stage budget is shared between them.
ROUNDS = 3
# Largest group an element-level prefix is read in (see the per-element overhead above).
MAX_GROUP = 256
# Beyond this many stages, later ones are left unmeasured (the time would grow unbounded).
MAX_MEASURED_STAGES = 24

# Stages that emit one element per input element (or, for filter/take/unique, at most one:
# assumed one, see the module docstring).
ONE_TO_ONE_KINDS: frozenset[str] = frozenset(
    {
        *MAP_KINDS,
        *SHUFFLE_KINDS,
        KIND_FILTER,
        KIND_PARALLEL_FILTER,
        KIND_CACHE,
        KIND_PREFETCH,
        KIND_REPEAT,
        KIND_OPTIONS,
        KIND_SCAN,
        KIND_SNAPSHOT,
        # Kinds with no constant of their own in the vocabulary.
        "assert-cardinality",
        "choose",
        "concatenate",
        "ignore-errors",
        "shard",
        "skip",
        "take",
        "take-while",
        "unique",
        "zip",
    }
)
# Zip pulls one element from each input in turn, on one thread: the input costs add up.
SUMMED_INPUT_KINDS = frozenset({"zip"})
# Stages that only carry options: measuring them would re-measure their input.
PASS_THROUGH_KINDS = frozenset({KIND_OPTIONS})


def measure_stages(
    walked: WalkedPipeline,
    *,
    max_seconds_per_stage: float = DEFAULT_SECONDS_PER_STAGE,
    max_elements_per_stage: int = MAX_ELEMENTS_PER_STAGE,
    clock: Clock = MONOTONIC,
    deadline: float | None = None,
    teardown: TearDown | None = None,
) -> list[StageStats]:
    """Describe the pipeline and measure every stage's rate and own cost.

    Args:
        walked: the `tf.data.Dataset` to measure, walked (`structure.walk`); it is never
            iterated itself, only fresh iterators over its prefixes (and, for the last stage,
            over the whole of it).
        max_seconds_per_stage: read budget for each prefix, after its first element.
        max_elements_per_stage: stop a prefix earlier once this many elements were read.
        clock: the clock `time_iterator` reads.
        deadline: a time on `clock` after which no prefix read ends (None: no limit); the
            stages not read by then are listed without rates (see the module docstring).
        teardown: where spent iterators are released (`bench/teardown.py`); None uses a
            private one drained before returning, so no thread outlives the call.

    Returns:
        The walked stages, with `elements_per_s`, `batches_per_s` (in the pipeline's output
        batches), `own_s_per_batch` and one `bottleneck=True` where any stage adds measurable
        cost. Unmeasured stages say why in `not_measured`.
    """
    stages = walked.stages
    if not stages:
        return []
    with owned(teardown) as releaser:
        reader = _Reader(_options(walked.dataset), 0.0, clock, releaser, deadline)
        if reader.has_time(OVERHEAD_CALIBRATION_S + max_seconds_per_stage / ROUNDS):
            reader = dataclasses.replace(reader, overhead_s=_iteration_overhead_s(reader))
        return _measure(stages, reader, max_seconds_per_stage, max_elements_per_stage)


@dataclass(frozen=True)
class _Reader:
    """How every prefix is read: the user's options, the per-`next()` cost to subtract, the
    clock, where spent iterators go, and the time no read may end after."""

    options: Any
    overhead_s: float
    clock: Clock
    teardown: TearDown
    deadline: float | None = None

    def has_time(self, seconds: float) -> bool:
        return self.deadline is None or self.clock.now() + seconds <= self.deadline


def _measure(
    stages: list[Stage], reader: _Reader, max_seconds: float, max_elements: int
) -> list[StageStats]:
    factors = elements_per_output_batch(stages)
    reasons: dict[int, Reason | None] = {}
    for stage in stages:
        index = stage.stats.index
        reason = _why_not_measured(stage, stages)
        if reason is None and index >= MAX_MEASURED_STAGES:
            reason = Reason(STAGES_CAPPED, limit=MAX_MEASURED_STAGES)
        reasons[index] = reason
    measured = [
        s
        for s in stages
        if reasons[s.stats.index] is None
        and not (s.stats.kind in PASS_THROUGH_KINDS and len(s.stats.inputs) == 1)
    ]
    groups = {s.stats.index: group_size(factors[s.stats.index]) for s in measured}
    rates = _measure_in_rounds(
        measured, reader, reasons, groups, max_seconds=max_seconds, max_elements=max_elements
    )
    per_batch_s: list[float | None] = [None] * len(stages)
    updated: list[StageStats] = []
    for stage in stages:
        stats = stage.stats
        index = stats.index
        factor = factors[index]
        elements_per_s: float | None = None
        if stats.kind in PASS_THROUGH_KINDS and len(stats.inputs) == 1:
            elements_per_s = updated[stats.inputs[0]].elements_per_s
        elif rates.get(index):
            elements_per_s = median(rates[index])
        batches_per_s: float | None = None
        if elements_per_s is not None and factor is not None and factor > 0:
            batches_per_s = elements_per_s / factor
            per_batch_s[index] = 1.0 / batches_per_s if batches_per_s > 0 else None
        not_measured = stats.not_measured
        if reasons[index] is not None and elements_per_s is None:
            not_measured = reasons[index]
        updated.append(
            dataclasses.replace(
                stats,
                not_measured=not_measured,
                elements_per_s=elements_per_s,
                batches_per_s=batches_per_s,
            )
        )
    own = own_costs(updated, per_batch_s)
    spread = [_per_batch_spread(rates.get(s.index), factors[s.index]) for s in updated]
    clear = clear_of_noise(updated, [low for low, _ in spread], [high for _, high in spread], own)
    bottleneck = pick_bottleneck(own, clear)
    return [
        dataclasses.replace(s, own_s_per_batch=own[s.index], bottleneck=s.index == bottleneck)
        for s in updated
    ]


def elements_per_output_batch(stages: Sequence[Stage]) -> list[float | None]:
    """How many of each stage's elements make one output batch; None where unknown.

    Walks from the output back to the sources: a batch stage multiplies by its batch size,
    one-to-one stages keep the ratio, an unbatch divides by its input's static batch size, and
    anything else (interleave, flat_map, window) leaves its inputs' ratio unknown.
    """
    factors: list[float | None] = [None] * len(stages)
    if not stages:
        return factors
    factors[-1] = 1.0
    for stage in reversed(stages):
        own = factors[stage.stats.index]
        if own is None:
            continue
        ratio = _input_elements_per_element(stage, stages)
        for input_index in stage.stats.inputs:
            if factors[input_index] is None:
                factors[input_index] = None if ratio is None else own * ratio
    return factors


def own_costs(
    stages: Sequence[StageStats], per_batch_s: Sequence[float | None]
) -> list[float | None]:
    """Time per output batch each stage adds over its inputs (never negative).

    Zip reads its inputs one after another on one thread, so their costs add up; other
    multi-input stages (concatenate, choose) read one input per element, so the mean is
    used. An input with no known per-batch time counts as free: the stage then owns the whole
    time, right for interleave, whose reading of files is its own work.
    """
    result: list[float | None] = []
    for stats in stages:
        total = per_batch_s[stats.index]
        if total is None:
            result.append(None)
            continue
        result.append(max(0.0, total - _inputs_s(stats, per_batch_s)))
    return result


def _inputs_s(stats: StageStats, per_batch_s: Sequence[float | None]) -> float:
    """What a stage's inputs take per output batch (`own_costs`): summed for zip, else their
    mean; an input with no known time counts as free."""
    inputs_s = [v for v in (per_batch_s[i] for i in stats.inputs) if v is not None]
    if not inputs_s:
        return 0.0
    if stats.kind in SUMMED_INPUT_KINDS:
        return sum(inputs_s)
    return sum(inputs_s) / len(inputs_s)


def clear_of_noise(
    stages: Sequence[StageStats],
    low_s: Sequence[float | None],
    high_s: Sequence[float | None],
    own_s_per_batch: Sequence[float | None],
) -> list[bool]:
    """Whether each stage's own cost stands clear of its prefix's noise: its fastest
    reading per batch is slower than its inputs' slowest. A batch after a 15 ms map owns a
    difference of two ~15 ms readings, whose noise on a busy host is milliseconds: one run
    of the bundled example put 3.9 ms on the batch (docs/design.md, "Stage timing")."""
    clear = []
    for stats in stages:
        own, low = own_s_per_batch[stats.index], low_s[stats.index]
        if own is None or own <= 0 or low is None:
            clear.append(False)
            continue
        clear.append(low > _inputs_s(stats, high_s))
    return clear


def pick_bottleneck(
    own_s_per_batch: Sequence[float | None], clear: Sequence[bool] | None = None
) -> int | None:
    """The index of the stage with the largest own cost, of those clear of noise where any
    is (`clear_of_noise`); None when nothing costs anything."""
    candidates = list(range(len(own_s_per_batch)))
    if clear is not None and any(clear):
        candidates = [i for i in candidates if clear[i]]
    best: int | None = None
    best_s = 0.0
    for index in candidates:
        cost = own_s_per_batch[index]
        if cost is not None and cost > best_s:
            best, best_s = index, cost
    return best


def _per_batch_spread(
    rates: Sequence[float] | None, elements_per_batch: float | None
) -> tuple[float | None, float | None]:
    """A prefix's fastest and slowest reading, in seconds per output batch."""
    if not rates or elements_per_batch is None or elements_per_batch <= 0 or min(rates) <= 0:
        return None, None
    return elements_per_batch / max(rates), elements_per_batch / min(rates)


# --- measuring -----------------------------------------------------------------------------


def group_size(elements_per_output_batch: float | None) -> int:
    """How many elements of a prefix to read per `next()`: one output batch's worth."""
    if elements_per_output_batch is None or elements_per_output_batch < 2:
        return 1
    return int(min(MAX_GROUP, round(elements_per_output_batch)))


def _measure_in_rounds(
    stages: Sequence[Stage],
    reader: _Reader,
    reasons: dict[int, Reason | None],
    groups: dict[int, int],
    *,
    max_seconds: float,
    max_elements: int,
) -> dict[int, list[float]]:
    """Each prefix's rate in `ROUNDS` slices, forwards then backwards, until the deadline;
    failures and prefixes the deadline left unread in `reasons`."""
    slice_s = max_seconds / ROUNDS
    slice_elements = max(1, max_elements // ROUNDS)
    rates: dict[int, list[float]] = {s.stats.index: [] for s in stages}
    done: set[int] = set()
    read_s = slice_s  # what a read takes, set-up included: the last one's, once measured
    for round_index in range(ROUNDS):
        order = list(stages) if round_index % 2 == 0 else list(reversed(stages))
        for stage in order:
            index = stage.stats.index
            if index in done:
                continue
            if not reader.has_time(read_s):
                _out_of_time(rates, reasons)
                return rates
            began = reader.clock.now()
            rate, reason, first_s, groups[index] = _measure_prefix(
                stage.dataset,
                reader,
                group=groups[index],
                max_seconds=slice_s,
                max_elements=slice_elements,
            )
            read_s = max(slice_s, reader.clock.now() - began)
            slow_start = first_s is not None and first_s > slice_s / 2
            if rate is None and slow_start and round_index == 0:
                # The first element ate the slice: read once more, with the whole budget.
                rate, reason, _, groups[index] = (
                    _measure_prefix(
                        stage.dataset,
                        reader,
                        group=groups[index],
                        max_seconds=max_seconds + (first_s or 0.0),
                        max_elements=max_elements,
                    )
                    if reader.has_time(max_seconds + (first_s or 0.0))
                    else (None, Reason(STAGE_OUT_OF_TIME), None, groups[index])
                )
            if rate is None:
                reasons[index] = reason
                done.add(index)
                continue
            rates[index].append(rate)
            if slow_start:
                done.add(index)
    return rates


def _out_of_time(rates: dict[int, list[float]], reasons: dict[int, Reason | None]) -> None:
    """Prefixes not read once yet get the deadline as their reason; the others keep theirs."""
    for index, found in rates.items():
        if not found and reasons.get(index) is None:
            reasons[index] = Reason(STAGE_OUT_OF_TIME)


def _measure_prefix(
    prefix: Any,
    reader: _Reader,
    *,
    group: int,
    max_seconds: float,
    max_elements: int,
) -> tuple[float | None, Reason | None, float | None, int]:
    """Elements per second of one prefix, on a fresh iterator, read `group` elements per
    `next()`, or why there is no rate; how long its first read took; and the group size it
    was read in (1 when its elements cannot be batched, so later slices need not try)."""
    from pipediag.bench.isolate import IsolationError, isolated_copy
    from pipediag.bench.pipeline import has_shared_state, stage_names

    options = reader.options
    try:
        runnable = prefix.with_options(options) if options is not None else prefix
    except Exception as exc:  # e.g. a prefix that cannot stand alone
        return None, Reason(CANNOT_ITERATE, detail=type(exc).__name__), None, group
    try:
        # A private copy: iterating the prefix itself would advance the user's shuffle
        # seeds and fill the user's caches (bench/isolate.py).
        runnable, _ = isolated_copy(runnable)
    except IsolationError as exc:
        if has_shared_state(stage_names(prefix)):
            return None, Reason(STAGE_NOT_READ_ALONE, detail=str(exc)), None, group
    timing = None
    if group > 1:
        try:
            timing = _time_fresh_iterator(runnable.batch(group), max_elements, max_seconds, reader)
        except Exception:  # shapes that vary, nested datasets: read one by one instead
            group = 1
    if timing is None:
        try:
            timing = _time_fresh_iterator(runnable, max_elements, max_seconds, reader)
        except _CannotIterate as exc:
            failure = Reason(CANNOT_ITERATE, detail=type(exc.__cause__).__name__)
            return None, failure, None, group
        except Exception as exc:  # the user's function failed: report, do not raise
            failure = Reason(FAILED, detail=f"{type(exc).__name__}: {exc}"[:192])
            return None, failure, None, group
    if not timing.latencies_s or timing.duration_s <= 0:
        return None, Reason(TOO_FEW_STAGE_ELEMENTS), timing.first_batch_s, group
    per_read_s = timing.duration_s / len(timing.latencies_s)
    # Remove the consumer's own cost per `next()`, but never all of it: a stage cheaper than
    # the overhead is reported as very fast, not infinitely fast.
    corrected_s = max(per_read_s - reader.overhead_s, per_read_s * 0.05)
    return group / corrected_s, None, timing.first_batch_s, group


class _CannotIterate(Exception):
    """`iter()` itself failed on a prefix (raised from the original error)."""


def _time_fresh_iterator(
    dataset: Any, max_reads: int, max_seconds: float, reader: _Reader
) -> BatchTiming:
    try:
        iterator = iter(dataset)
    except Exception as exc:
        raise _CannotIterate from exc
    try:
        return time_iterator(
            iterator, max_batches=max_reads, max_seconds=max_seconds, clock=reader.clock
        )
    finally:
        reader.teardown.discard(iterator)
        del iterator


def _iteration_overhead_s(reader: _Reader) -> float:
    """The median cost of one eager `next()` on a trivial dataset, to subtract per element."""
    try:
        import tensorflow as tf

        timing = _time_fresh_iterator(
            tf.data.Dataset.range(10**9),
            OVERHEAD_CALIBRATION_ELEMENTS,
            OVERHEAD_CALIBRATION_S,
            reader,
        )
    except Exception:  # calibration is a refinement; without it rates are slightly low
        return 0.0
    return median(timing.latencies_s) if timing.latencies_s else 0.0


def _options(dataset: Any) -> Any:
    try:
        return dataset.options()
    except Exception:
        return None


def _why_not_measured(stage: Stage, stages: Sequence[Stage]) -> Reason | None:
    """A reason to skip a prefix, or None: file caches that reading would write."""
    every = [s.stats for s in stages]
    for index in upstream_of(every, stage.stats.index):
        stats = every[index]
        filename = stats.settings.filename
        if stats.kind == KIND_CACHE and filename and not os.path.exists(f"{filename}.index"):
            return Reason(PARTIAL_FILE_CACHE)
    return None


def _input_elements_per_element(stage: Stage, stages: Sequence[Stage]) -> float | None:
    kind = stage.stats.kind
    if kind in ONE_TO_ONE_KINDS:
        return 1.0
    if kind in BATCHING_KINDS:
        return float(stage.batch_size) if stage.batch_size else None
    if kind == "unbatch" and len(stage.stats.inputs) == 1:
        size = _leading_dimension(stages[stage.stats.inputs[0]].dataset)
        return 1.0 / size if size else None
    return None


def _leading_dimension(dataset: Any) -> int | None:
    """The static batch size of a dataset's elements (first component), if known."""
    try:
        import tensorflow as tf

        specs = tf.nest.flatten(dataset.element_spec)
        dim = specs[0].shape[0] if specs and specs[0].shape.rank else None
    except Exception:
        return None
    return int(dim) if dim else None
