"""Per-stage rates: each prefix of the pipeline read alone; a stage's own cost is its prefix's
time per output batch less its inputs' (docs/design.md, "Stage timing")."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any

from pipediag.analysis.paired import STAGE_ROUNDS, ratio_figure
from pipediag.bench.isolate import IsolationError, isolated_copy
from pipediag.bench.pipeline import BatchTiming, has_shared_state, stage_names, time_iterator
from pipediag.bench.structure import Stage, WalkedPipeline
from pipediag.bench.teardown import TearDown, owned
from pipediag.clock import MONOTONIC, Clock
from pipediag.report.reasons import Reason
from pipediag.report.stage_facts import (
    BATCHING_KINDS,
    MAP_KINDS,
    NO_OWN_WORK_KINDS,
    SHUFFLE_KINDS,
    upstream_of,
)
from pipediag.report.stages import StageStats

# Half a second per prefix: hundreds of elements a stage, a 6-stage pipeline under ~5 s (2 cores).
DEFAULT_SECONDS_PER_STAGE = 0.5
# Enough reads for a stable rate; cheap prefixes (microseconds per element) stop here early.
MAX_ELEMENTS_PER_STAGE = 2000
# Time spent measuring the cost of one eager `next()` on a trivial dataset.
OVERHEAD_CALIBRATION_S = 0.1
OVERHEAD_CALIBRATION_ELEMENTS = 500
MAX_GROUP = 256
MAX_MEASURED_STAGES = 24

# Stages that emit one element per input element (filter, take, unique: at most one, assumed
# one). The stages that do no work of their own each emit at most one per input too.
ONE_TO_ONE_KINDS: frozenset[str] = frozenset(
    {
        *NO_OWN_WORK_KINDS,
        *MAP_KINDS,
        *SHUFFLE_KINDS,
        "filter",
        "parallel-filter",
        "cache",
        "scan",
        "snapshot",
        # Kinds with no constant of their own in the vocabulary.
        "choose",
        "concatenate",
        "unique",
        "zip",
    }
)
# Zip pulls one element from each input in turn, on one thread: the input costs add up.
SUMMED_INPUT_KINDS = frozenset({"zip"})
# Stages that only carry options: measuring them would re-measure their input.
PASS_THROUGH_KINDS = frozenset({"options"})
# Of the stages' summed own time, for a clear cost to name the bottleneck: a judgement call.
BOTTLENECK_MIN_SHARE = 0.1


def measure_stages(
    walked: WalkedPipeline,
    *,
    max_seconds_per_stage: float = DEFAULT_SECONDS_PER_STAGE,
    clock: Clock = MONOTONIC,
    deadline: float | None = None,
    teardown: TearDown | None = None,
) -> list[StageStats]:
    """Every stage's rate and own cost, read on fresh iterators over its prefix (never the
    dataset's own); no prefix read ends past `deadline`, and unmeasured stages say why."""
    if not walked.stages:
        return []
    options = None
    with contextlib.suppress(Exception):
        options = walked.dataset.options()
    with owned(teardown) as releaser:
        reader = _Reader(options, 0.0, clock, releaser, deadline)
        if reader.has_time(OVERHEAD_CALIBRATION_S + max_seconds_per_stage / STAGE_ROUNDS):
            reader = dataclasses.replace(reader, overhead_s=_iteration_overhead_s(reader))
        return _measure(walked.stages, reader, max_seconds_per_stage)


@dataclass(frozen=True)
class _Reader:
    """How every prefix is read: options, per-`next()` cost, clock, tear-down and deadline."""

    options: Any
    overhead_s: float
    clock: Clock
    teardown: TearDown
    deadline: float | None = None

    def has_time(self, seconds: float) -> bool:
        return self.deadline is None or self.clock.now() + seconds <= self.deadline


def _measure(stages: list[Stage], reader: _Reader, max_seconds: float) -> list[StageStats]:
    factors, every = elements_per_output_batch(stages), [s.stats for s in stages]
    reasons: dict[int, Reason | None] = {stats.index: None for stats in every}
    for stats in every:
        # Reading through a file cache not complete on disk would write the user's file.
        if any(_partial_file_cache(every[i]) for i in upstream_of(every, stats.index)):
            reasons[stats.index] = Reason("partial-file-cache")
        elif stats.index >= MAX_MEASURED_STAGES:
            reasons[stats.index] = Reason("stages-capped", limit=MAX_MEASURED_STAGES)
    measured = [s for s in stages if reasons[s.stats.index] is None and not _pass_through(s.stats)]
    groups = {s.stats.index: group_size(factors[s.stats.index]) for s in measured}
    rates = _measure_in_rounds(measured, reader, reasons, groups, max_seconds=max_seconds)
    updated: list[StageStats] = []
    for stats in every:
        index = stats.index
        factor = factors[index]
        elements_per_s: float | None = None
        if _pass_through(stats):
            elements_per_s = updated[stats.inputs[0]].elements_per_s
        elif rates.get(index):
            elements_per_s = median(rates[index])
        batches_per_s: float | None = None
        if elements_per_s is not None and factor is not None and factor > 0:
            batches_per_s = elements_per_s / factor
        not_measured = reasons[index] if elements_per_s is None else None
        updated.append(
            dataclasses.replace(
                stats,
                not_measured=not_measured or stats.not_measured,
                elements_per_s=elements_per_s,
                batches_per_s=batches_per_s,
            )
        )
    own = own_costs(updated, [1.0 / s.batches_per_s if s.batches_per_s else None for s in updated])
    clear = clear_of_noise(updated, _per_batch_rounds(updated, rates, factors), own)
    bottleneck = pick_bottleneck(own, clear, kinds=[s.kind for s in updated])
    return [
        dataclasses.replace(s, own_s_per_batch=own[s.index], bottleneck=s.index == bottleneck)
        for s in updated
    ]


def elements_per_output_batch(stages: Sequence[Stage]) -> list[float | None]:
    """Each stage's elements per output batch, from the output back (None: unknown)."""
    factors: list[float | None] = [None] * len(stages)
    if not stages:
        return factors
    factors[-1] = 1.0
    for stage in reversed(stages):
        if (own := factors[stage.stats.index]) is None:
            continue
        ratio = _input_elements_per_element(stage, stages)
        for input_index in stage.stats.inputs:
            if factors[input_index] is None:
                factors[input_index] = None if ratio is None else own * ratio
    return factors


def own_costs(
    stages: Sequence[StageStats], per_batch_s: Sequence[float | None]
) -> list[float | None]:
    """Time per output batch each stage adds over its inputs (never negative)."""
    totals = [(s, per_batch_s[s.index]) for s in stages]
    return [None if t is None else max(0.0, t - _inputs_s(s, per_batch_s)) for s, t in totals]


def _inputs_s(stats: StageStats, per_batch_s: Sequence[float | None]) -> float:
    """Summed for zip, else the mean (concatenate and choose read one input per element); an
    input with no known time counts as free, so an interleave owns its whole time."""
    if not (inputs_s := [v for v in (per_batch_s[i] for i in stats.inputs) if v is not None]):
        return 0.0
    total = sum(inputs_s)
    return total if stats.kind in SUMMED_INPUT_KINDS else total / len(inputs_s)


def clear_of_noise(
    stages: Sequence[StageStats],
    rounds_s: Sequence[Sequence[float]],
    own_s_per_batch: Sequence[float | None],
) -> list[bool]:
    """Whether each stage's time per batch over its inputs', paired by round, is above 1 beyond
    noise (docs/design.md, "Stage timing"); one with no input read is clear where it owns any."""
    clear = []
    for stats in stages:
        own, mine = own_s_per_batch[stats.index], rounds_s[stats.index]
        read = [i for i in stats.inputs if rounds_s[i]]
        if own is None or own <= 0 or not mine or not read:
            clear.append(own is not None and own > 0 and bool(mine))  # all its time its own
            continue
        ratios = [
            time_s / _inputs_s(stats, [r[k] if k < len(r) else None for r in rounds_s])
            for k, time_s in enumerate(mine)
            if all(k < len(rounds_s[i]) for i in read)
        ]
        if (figure := ratio_figure(ratios)) is None:
            clear.append(False)
            continue
        # One pair has no interval: it is read as it stands (docs/design.md, "Stage timing").
        clear.append((figure.speedup if figure.low is None else figure.low) > 1.0)
    return clear


def pick_bottleneck(
    own_s_per_batch: Sequence[float | None],
    clear: Sequence[bool] | None = None,
    kinds: Sequence[str] | None = None,
) -> int | None:
    """The largest own cost, among those clear of noise owning `BOTTLENECK_MIN_SHARE` of the time
    where any do; never a stage with no work of its own (a prefetch adds its input's time)."""
    costs = {
        i: cost
        for i, cost in enumerate(own_s_per_batch)
        if cost is not None and cost > 0 and (kinds is None or kinds[i] not in NO_OWN_WORK_KINDS)
    }
    total = sum(costs.values())
    # A sliver clear of noise is no bottleneck beside a large cost inside it.
    sure = [
        i
        for i, cost in costs.items()
        if clear is not None and clear[i] and cost >= BOTTLENECK_MIN_SHARE * total
    ]
    return max(sure or costs, key=costs.__getitem__) if costs else None


def _per_batch_rounds(
    stages: Sequence[StageStats], rates: dict[int, list[float]], factors: Sequence[float | None]
) -> list[list[float]]:
    """Each stage's seconds per output batch in each round it was read (a round's reading
    sits at its round's place: reads stop, never skip); a pass-through has its input's."""
    rounds: list[list[float]] = []
    for stats in stages:
        factor, found = factors[stats.index], rates.get(stats.index) or []
        if _pass_through(stats):
            rounds.append(rounds[stats.inputs[0]])
        elif factor is None or factor <= 0 or any(rate <= 0 for rate in found):
            rounds.append([])
        else:
            rounds.append([factor / rate for rate in found])
    return rounds


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
) -> dict[int, list[float]]:
    """Each prefix's rate in `STAGE_ROUNDS` slices, forwards then backwards, until the deadline."""
    slice_s = max_seconds / STAGE_ROUNDS
    slice_elements = max(1, MAX_ELEMENTS_PER_STAGE // STAGE_ROUNDS)
    rates: dict[int, list[float]] = {s.stats.index: [] for s in stages}
    done: set[int] = set()
    read_s = slice_s  # what a read takes, set-up included: the last one's, once measured
    for round_index in range(STAGE_ROUNDS):
        for stage in stages if round_index % 2 == 0 else reversed(stages):
            index = stage.stats.index
            if index in done:
                continue
            if not reader.has_time(read_s):  # prefixes never read get the deadline as reason
                for unread, found in rates.items():
                    if not found and reasons.get(unread) is None:
                        reasons[unread] = Reason("stage-out-of-time")
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
                whole_s = max_seconds + (first_s or 0.0)
                rate, reason = None, Reason("stage-out-of-time")
                if reader.has_time(whole_s):
                    rate, reason, _, groups[index] = _measure_prefix(
                        stage.dataset,
                        reader,
                        group=groups[index],
                        max_seconds=whole_s,
                        max_elements=MAX_ELEMENTS_PER_STAGE,
                    )
            if rate is None:
                reasons[index] = reason
                done.add(index)
                continue
            rates[index].append(rate)
            if slow_start:
                done.add(index)
    return rates


def _measure_prefix(
    prefix: Any, reader: _Reader, *, group: int, max_seconds: float, max_elements: int
) -> tuple[float | None, Reason | None, float | None, int]:
    """Elements per second of one prefix on a fresh iterator, `group` per `next()`, or why
    there is none; its first read's time; and the group size used (1 where it cannot batch)."""
    try:
        runnable = prefix if reader.options is None else prefix.with_options(reader.options)
    except Exception as exc:  # e.g. a prefix that cannot stand alone
        return None, Reason("cannot-iterate", detail=type(exc).__name__), None, group
    try:
        # A private copy: the prefix itself would move the user's shuffle seeds and caches.
        runnable, _ = isolated_copy(runnable)
    except IsolationError as exc:
        if has_shared_state(stage_names(prefix)):
            return None, Reason("stage-not-read-alone", detail=str(exc)), None, group
    timing = None
    if group > 1:
        try:
            timing = _time_and_release(
                iter(runnable.batch(group)), max_elements, max_seconds, reader
            )
        except Exception:  # shapes that vary, nested datasets: read one by one instead
            group = 1
    if timing is None:
        try:
            iterator = iter(runnable)
        except Exception as exc:
            return None, Reason("cannot-iterate", detail=type(exc).__name__), None, group
        try:
            timing = _time_and_release(iterator, max_elements, max_seconds, reader)
        except Exception as exc:  # the user's function failed: report, do not raise
            return None, Reason("failed", detail=f"{type(exc).__name__}: {exc}"[:192]), None, group
        finally:
            del iterator
    if not timing.latencies_s or timing.duration_s <= 0:
        return None, Reason("too-few-stage-elements"), timing.first_batch_s, group
    per_read_s = timing.duration_s / len(timing.latencies_s)
    # Remove the consumer's cost per `next()`, never all of it: very fast, not infinitely.
    corrected_s = max(per_read_s - reader.overhead_s, per_read_s * 0.05)
    return group / corrected_s, None, timing.first_batch_s, group


def _time_and_release(
    iterator: Any, max_reads: int, max_seconds: float, reader: _Reader
) -> BatchTiming:
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

        numbers = iter(tf.data.Dataset.range(10**9))
        timing = _time_and_release(
            numbers, OVERHEAD_CALIBRATION_ELEMENTS, OVERHEAD_CALIBRATION_S, reader
        )
    except Exception:  # calibration is a refinement; without it rates are slightly low
        return 0.0
    return median(timing.latencies_s) if timing.latencies_s else 0.0


def _partial_file_cache(stats: StageStats) -> bool:
    filename = stats.settings.filename
    return stats.kind == "cache" and bool(filename) and not os.path.exists(f"{filename}.index")


def _pass_through(stats: StageStats) -> bool:
    return stats.kind in PASS_THROUGH_KINDS and len(stats.inputs) == 1


def _input_elements_per_element(stage: Stage, stages: Sequence[Stage]) -> float | None:
    kind = stage.stats.kind
    if kind in ONE_TO_ONE_KINDS:
        return 1.0
    if kind in BATCHING_KINDS:
        return float(stage.batch_size) if stage.batch_size else None
    if kind == "unbatch" and len(stage.stats.inputs) == 1:
        size = leading_dimension(stages[stage.stats.inputs[0]].dataset)
        return 1.0 / size if size else None
    return None


def leading_dimension(dataset: Any) -> int | None:
    """The static batch size of a dataset's elements (first component), if known."""
    try:
        import tensorflow as tf

        specs = tf.nest.flatten(dataset.element_spec)
        dim = specs[0].shape[0] if specs and specs[0].shape.rank else None
    except Exception:
        return None
    return int(dim) if dim else None
