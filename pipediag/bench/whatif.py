"""What-if pipelines: apply a fix to a copy of the dataset graph and time it beside the original.

Advice read off a checklist is often wrong on tf.data (docs/design.md, "tf.data behaviours"):
an added prefetch measured 0.99x because `inject_prefetch` had added one; a map written
sequentially was parallelised by `map_parallelization`. So each fix is *measured* on the
user's own pipeline:

1. the dataset's GraphDef is taken (`ds._as_serialized_graph`), as TF would run it;
2. a copy is edited: `MapDataset` -> `ParallelMapDatasetV2` (AUTOTUNE), a sequential
   interleave/flat_map -> `ParallelInterleaveDatasetV4` with `cycle_length` = cores, a
   `PrefetchDataset(AUTOTUNE)` at the end, a `CacheDataset` after the costly deterministic
   prefix, autotune turned back on, or a map moved after its batch (vectorised);
3. both the unedited copy and the variant are rebuilt with `DatasetFromGraph` and read
   *alone*, alternately (A B B A ...), each on a fresh iterator for a short slice; the medians
   of the rates give the speedup, so drift on a noisy machine hits both sides alike. A trial
   stops once the interval of its per-round ratios is clear (`bench/interleaved.py`: a clear
   gain, clear no gain, or unable to beat the best trial so far), or its time is spent;
   `rounds` and `details["stopped"]` say which, `details["speedup_low"/"speedup_high"]` give
   the interval.

Time: the trials share `budget_s`, or run until a `deadline` on the injected clock (shared
with stage timing before them: whatever time the stages left). Costliest stage first; each
trial plans its slices for `MIN_ROUNDS` rounds in an equal share of the time left, so a
trial that stops early leaves its time to the next. Spent iterators are released off the
main thread (`bench/teardown.py`).

What is never touched, and why (docs/design.md, "Rules of the house"):

- The user's dataset is not iterated here and the user's iterator is never used. The baseline
  is the rebuilt copy, not the user's object.
- **Per-iterator state is private** (`bench.isolate.isolate_graph_def`, shared with phase 1):
  a rebuilt graph otherwise shares the user's in-memory cache resource (checked on TF 2.21:
  reading the copy to the end filled the user's `cache()`) and shuffle seed generators; both
  get private replacements, and captured variables are restored after the trials.
- **File caches are never written**: one not complete on disk is bypassed in the copies, as
  in phase 1 (the note is kept in each trial's `details["isolation"]`).

A vectorised map sees a whole batch, which is only right for a function that works element
by element. Before it is timed, the user's function is run both ways on a sample of the
user's own elements (read from an isolated copy): map then batch, and batch then map. Any
difference, or an error on the batch, and the fix is refused with the reason, and marked
`unsafe` so the advisor drops it; equal results on the sample are evidence, not proof.

A fix that cannot be rewritten (unknown op, a function whose state cannot be serialised)
comes back with `verified=False` and a reason; the advisor then shows it as estimated.
TensorFlow is imported inside the functions only.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from pipediag.analysis.advisor import (
    VECTORIZE_MAX_ELEMENT_S,
    VERIFIED_MIN_GAIN,
    cache_point,
    downstream_batch_size,
    prefix_cost_s,
    runs_sequential_interleave,
    runs_sequential_map,
    vectorizable,
)
from pipediag.bench.interleaved import MIN_ROUNDS, Rounds, median_rate, run_rounds
from pipediag.bench.pipeline import BatchTiming, time_iterator
from pipediag.bench.stages import elements_per_output_batch
from pipediag.bench.structure import Stage, effective_options, walk_pipeline
from pipediag.bench.teardown import TearDown, owned
from pipediag.clock import MONOTONIC, Clock
from pipediag.report.model import FixTrial, StageStats
from pipediag.report.names import stage_name

# Fix ids: the advisor's rules look their trials up by these.
FIX_PARALLEL_MAP = "parallel-map"
FIX_PARALLEL_INTERLEAVE = "parallel-interleave"
FIX_PREFETCH = "prefetch-end"
FIX_CACHE = "cache"
FIX_VECTORIZE = "vectorize"
FIX_AUTOTUNE = "autotune-on"
FIX_THREAD_CAP = "thread-cap"

# Total time for all trials: about the phase-1 pipeline benchmark (bench/pipeline.py, 3 s)
# per fix, for the two or three fixes a pipeline typically has.
DEFAULT_BUDGET_S = 8.0
# Below this a slice is mostly its first batch (thread start, buffers filling): no rate.
MIN_SLICE_S = 0.15
# Above this, slices only delay a clear result: 0.4 s is ~30 batches of the input-bound
# example, and 5 rounds of two slices stop a clear trial in about 4.5 s.
MAX_SLICE_S = 0.4
# Share of a trial's time planned as timed reads; building iterators, first batches and
# the budget checks take the rest.
SLICE_SHARE = 0.8
# Per-run batch cap: fast pipelines reach a stable rate long before it.
MAX_BATCHES_PER_RUN = 2000
# A run stopped this far over the budget leaves the remaining fixes unmeasured.
BUDGET_OVERRUN = 1.5
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

# Elements of the user's data a vectorised function is checked on (two batches at most),
# and the most memory the sample may take.
VECTORIZE_SAMPLE_MAX_ELEMENTS = 512
VECTORIZE_SAMPLE_MAX_BYTES = 64 * 2**20
# A vectorised float result may differ from the per-element one by rounding (another
# reduction order), not more.
VECTORIZE_RTOL = 1e-5
VECTORIZE_ATOL = 1e-6
# Batching ops a map can move behind: plain batches (padding or sparse batching would
# change what the function sees).
_BATCH_OPS = frozenset({"BatchDatasetV2", "ParallelBatchDataset"})
_MAP_OPS = frozenset({"MapDataset", "ParallelMapDatasetV2"})

# tf.data's AUTOTUNE value for parallelism and buffer sizes.
AUTOTUNE = -1
# DataType enum values (tensorflow/core/framework/types.proto).
_DT_STRING = 7
_DT_INT64 = 9

_PARALLEL_MAP_OPS = frozenset({"ParallelMapDatasetV2"})
_PARALLEL_INTERLEAVE_OPS = frozenset({"ParallelInterleaveDatasetV3", "ParallelInterleaveDatasetV4"})
# Attributes of a MapDataset that ParallelMapDatasetV2 does not have.
_SEQUENTIAL_ONLY_ATTRS = ("force_synchronous",)
_PASS_THROUGH_OPS = frozenset({"OptionsDataset"})


@dataclass(frozen=True)
class FixPipelines:
    """A fix measured to speed the pipeline up: its two copies, kept so that the fix can be
    tried on training itself (`hooks/training_trial.py`)."""

    fix: str
    stage_index: int | None
    baseline: Any
    variant: Any
    fill_batches: int = 0  # for a cache: batches to read before it is full
    pipeline_speedup: float = 1.0
    tried_on_training: bool = False  # whatever the pipeline alone measured


class RewriteError(Exception):
    """A fix that cannot be applied to this graph; the message is shown to the user."""


@dataclass
class _Candidate:
    """A fix to try: how to build its variant from the baseline graph, or why it cannot be."""

    fix: str
    stage_index: int | None
    stage: str
    cost_s: float = 0.0
    edit: Callable[[_Graph], None] | None = None
    with_options: Callable[[Any], Any] | None = None
    reason: str | None = None
    details: dict[str, str] = field(default_factory=dict)
    fill_batches: int = 0  # for a cache: output batches to read before the cache is full
    # Run before timing, on the unedited graph (spent iterators go to the `TearDown`):
    # (why the fix is not timed, whether that is because it is unsafe), or (None, False).
    check: Callable[[Any, TearDown], tuple[str | None, bool]] | None = None
    # Tried on training whatever the pipeline alone measured: a prefetch where none runs
    # (its gain, overlap with the train step, only shows there), or a cap on the
    # pipeline's threads (slower alone, it leaves the train step its cores).
    tried_on_training: bool = False


def verify_fixes(
    dataset: Any,
    stages: Sequence[StageStats] | None = None,
    *,
    clock: Clock = MONOTONIC,
    budget_s: float | None = DEFAULT_BUDGET_S,
    fixes: Sequence[str] | None = None,
    run: bool = True,
    deadline: float | None = None,
    teardown: TearDown | None = None,
    keep: list[FixPipelines] | None = None,
    thread_cap: int | None = None,
) -> list[FixTrial]:
    """Try each applicable fix on a copy of `dataset` and measure its pipeline speedup.

    Args:
        dataset: the training `tf.data.Dataset`; it is serialised, never iterated.
        stages: its stages as `measure_stages` returned them (own costs order the trials and
            skip stages too cheap to matter); None describes the pipeline here, unmeasured.
        clock: the clock the runs are timed with.
        budget_s: time for all trials together (a run may overrun it by half); None: no
            limit but `deadline` (both None: `DEFAULT_BUDGET_S`).
        fixes: only these fix ids (all by default).
        run: False lists the candidate fixes, with the facts the advisor needs (a cache's
            size), without running anything (`--no-verify`).
        deadline: a time on `clock` no trial runs past (e.g. the end of a budget shared with
            `measure_stages`): the trials get whatever time is left, capped by `budget_s`.
        teardown: where spent iterators are released (`bench/teardown.py`); None uses a
            private one drained before returning, so no thread outlives the call.
        keep: where the two copies of each fix measured at `VERIFIED_MIN_GAIN` or more are
            put, for a trial on training; the caller restores the pipeline's variables
            around any later read of them (`bench.isolate.preserved_variables`).
        thread_cap: where the pipeline's threads take the train step's cores (contention),
            a trial of the pipeline capped at this many threads, kept for training.

    Returns:
        One `FixTrial` per candidate fix, in stage order; unverified ones say why.
    """
    walked = walk_pipeline(dataset)
    if stages is None or [s.kind for s in stages] != [s.stats.kind for s in walked]:
        stages = [s.stats for s in walked]
    try:
        options = effective_options(dataset)
    except Exception:  # options unreadable: assume TF's defaults
        options = {}
    cores = _int(options.get("cpu_count")) or os.cpu_count() or 1
    graph, nodes_by_stage, error = graph_and_nodes(dataset, walked)
    candidates = _candidates(walked, list(stages), nodes_by_stage, options, cores)
    if thread_cap is not None:
        candidates.append(_thread_cap_candidate(thread_cap))
    if fixes is not None:
        candidates = [c for c in candidates if c.fix in fixes]
    if not run:
        return [_unverified(c, c.reason or "not run (--no-verify)") for c in candidates]
    baseline = None
    notes: list[str] = []
    if error is None and graph is not None:
        try:
            baseline_graph = _Graph.copy_of(graph)
            notes = baseline_graph.isolate()
            baseline = baseline_graph.rebuild(dataset.element_spec)
        except Exception as exc:
            error = f"the dataset graph cannot be rebuilt: {_describe(exc)}"
    if error is not None or baseline is None or graph is None:
        return [_unverified(c, c.reason or error or "no dataset graph") for c in candidates]
    for candidate in candidates:
        if notes:
            candidate.details["isolation"] = "; ".join(notes)
    from pipediag.bench.isolate import preserved_variables

    end_s, hard_end_s = _time_window(clock, budget_s, deadline)
    # Variables the pipeline's functions update (a tf.random.Generator, a counter) are
    # shared by every copy: put them back so the user's first epoch is unchanged.
    with owned(teardown) as releaser, preserved_variables(dataset, releaser):
        trials = _Trials(graph, baseline, dataset, clock, releaser, end_s, hard_end_s, keep)
        return trials.run_all(candidates)


def _time_window(
    clock: Clock, budget_s: float | None, deadline: float | None
) -> tuple[float, float]:
    """When the trials plan to end, and the latest any of their rounds may end."""
    now = clock.now()
    if budget_s is None and deadline is None:
        budget_s = DEFAULT_BUDGET_S
    planned = [] if deadline is None else [deadline]
    hard = [] if deadline is None else [deadline]
    if budget_s is not None:
        planned.append(now + budget_s)
        hard.append(now + budget_s * BUDGET_OVERRUN)
    return min(planned), min(hard)


@dataclass
class _Trials:
    """The trials of one dataset: what they share, and the best interval seen so far."""

    graph: Any
    baseline: Any
    dataset: Any
    clock: Clock
    teardown: TearDown
    end_s: float
    hard_end_s: float
    keep: list[FixPipelines] | None = None
    best_low: float | None = None

    def run_all(self, candidates: list[_Candidate]) -> list[FixTrial]:
        """Costliest stage first, so an exhausted budget leaves the cheap fixes unmeasured;
        each gets an equal share of the time left."""
        left = sum(c.reason is None for c in candidates)
        results: dict[int, FixTrial] = {}
        for position in sorted(range(len(candidates)), key=lambda i: -candidates[i].cost_s):
            candidate = candidates[position]
            if candidate.reason is not None:
                results[position] = _unverified(candidate, candidate.reason)
                continue
            now = self.clock.now()
            if now + 2 * MIN_SLICE_S > self.hard_end_s:
                results[position] = _unverified(
                    candidate, "not measured: verification budget spent"
                )
            else:
                results[position] = self.trial(candidate, max(0.0, self.end_s - now) / left)
            left -= 1
        return [results[i] for i in range(len(candidates))]

    def trial(self, candidate: _Candidate, share_s: float) -> FixTrial:
        """Check and build the variant, then time it beside the baseline; never raises."""
        refusal = self._refusal(candidate)
        if refusal is not None:
            return _unverified(candidate, refusal)
        try:
            variant = _build_variant(candidate, self.graph, self.baseline, self.dataset)
        except RewriteError as exc:
            return _unverified(candidate, f"cannot rewrite: {exc}")
        except Exception as exc:
            return _unverified(candidate, f"cannot rewrite: {_describe(exc)}")
        try:
            rounds = self._rounds(candidate, variant, share_s)
        except Exception as exc:  # the user's function failed in the copy: report, do not raise
            return _unverified(candidate, f"the rewritten pipeline failed: {_describe(exc)}")
        trial = self._measured(candidate, rounds)
        gain = trial.speedup or 0.0
        if self.keep is not None and (gain >= VERIFIED_MIN_GAIN or candidate.tried_on_training):
            self.keep.append(
                FixPipelines(
                    fix=candidate.fix,
                    stage_index=candidate.stage_index,
                    baseline=self.baseline,
                    variant=variant,
                    fill_batches=candidate.fill_batches,
                    pipeline_speedup=trial.speedup or 1.0,
                    tried_on_training=candidate.tried_on_training,
                )
            )
        return trial

    def _refusal(self, candidate: _Candidate) -> str | None:
        if candidate.check is None:
            return None
        try:
            refusal, unsafe = candidate.check(self.graph, self.teardown)
        except Exception as exc:
            refusal, unsafe = f"could not be checked: {_describe(exc)}", False
        if unsafe:
            candidate.details["unsafe"] = "true"
        return refusal

    def _rounds(self, candidate: _Candidate, variant: Any, share_s: float) -> Rounds:
        """A/B rounds with slices planned for `MIN_ROUNDS` rounds in `share_s` (less the time
        a cache takes to fill), stopped as `bench/interleaved.py` says."""
        until_s = self.clock.now() + share_s
        fill_s = float(candidate.details.get("fill_s", "0") or 0)
        planned_s = SLICE_SHARE * (share_s - fill_s) / (2 * MIN_ROUNDS)
        baseline = TrialSide(self.baseline, self.teardown, self.clock)
        fixed = TrialSide(variant, self.teardown, self.clock, candidate.fill_batches)
        try:
            return run_rounds(
                baseline.run,
                fixed.run,
                slice_s=max(MIN_SLICE_S, min(MAX_SLICE_S, planned_s)),
                until_s=until_s,
                hard_until_s=self.hard_end_s,
                clock=self.clock,
                best_low=self.best_low,
            )
        finally:
            fixed.close()

    def _measured(self, candidate: _Candidate, rounds: Rounds) -> FixTrial:
        base, fixed = median_rate(rounds.baseline), median_rate(rounds.variant)
        if base is None or fixed is None:
            return _unverified(candidate, "too few batches to time")
        details = dict(candidate.details, stopped=rounds.stopped)
        if rounds.interval is not None:
            low, high = rounds.interval
            details.update(speedup_low=f"{low:.3g}", speedup_high=f"{high:.3g}")
            self.best_low = low if self.best_low is None else max(self.best_low, low)
        return FixTrial(
            fix=candidate.fix,
            stage_index=candidate.stage_index,
            stage=candidate.stage,
            verified=True,
            baseline_batches_per_s=base,
            variant_batches_per_s=fixed,
            speedup=fixed / base if base > 0 else None,
            rounds=len(rounds.ratios),
            details=details,
            baseline_cpu_s_per_batch=_median_cpu(rounds.baseline),
            variant_cpu_s_per_batch=_median_cpu(rounds.variant),
        )


class TrialSide:
    """One side of a trial: a fresh iterator per run, or, for a cache, one iterator kept past
    its filling epoch, so every run measures the epochs after the first.

    `read` times one run on an iterator: the pipeline alone by default; the training trials
    (`hooks/training_trial.py`) read with the user's train step instead.
    """

    def __init__(
        self,
        dataset: Any,
        teardown: TearDown,
        clock: Clock,
        fill_batches: int = 0,
        read: Callable[[Iterator[Any], float], BatchTiming] | None = None,
    ) -> None:
        self._dataset = dataset
        self._teardown = teardown
        self._clock = clock
        self._read = read or self._alone
        self._kept: Iterator[Any] | None = None
        if fill_batches > 0:
            self._kept = iter(dataset)
            for _ in range(fill_batches):
                next(self._kept)

    def run(self, max_seconds: float) -> BatchTiming:
        iterator = self.open()
        try:
            return self._read(iterator, max_seconds)
        finally:
            self.release(iterator)
            del iterator

    def open(self) -> Iterator[Any]:
        """The iterator for the next run: the kept one, or a fresh one."""
        return self._kept if self._kept is not None else iter(self._dataset)

    def release(self, iterator: Iterator[Any]) -> None:
        """A run is over: a fresh iterator is torn down off the main thread."""
        if iterator is not self._kept:
            self._teardown.discard(iterator)

    def close(self) -> None:
        if self._kept is not None:
            self._teardown.discard(self._kept)
            self._kept = None

    def _alone(self, iterator: Iterator[Any], max_seconds: float) -> BatchTiming:
        return time_iterator(
            iterator, max_batches=MAX_BATCHES_PER_RUN, max_seconds=max_seconds, clock=self._clock
        )


# --- choosing fixes --------------------------------------------------------------------------


def _candidates(
    walked: list[Stage],
    stages: list[StageStats],
    nodes: dict[int, str],
    options: dict[str, str],
    cores: int,
) -> list[_Candidate]:
    """The fixes that apply to this pipeline, in stage order (the prefetch and autotune last)."""
    total_s = _time_per_batch(stages)
    found: list[_Candidate] = []
    for stats in stages:
        if stats.settings.get("tf_internal") == "true" or not _costly(stats, total_s):
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
        prefetch.tried_on_training = "existing_buffer" not in prefetch.details and (
            options.get("inject_prefetch") == "false" or options.get("autotune") == "false"
        )
        found.append(prefetch)
    if options.get("autotune") == "false":
        found.append(
            _Candidate(FIX_AUTOTUNE, None, "options", cost_s=0.0, with_options=_autotune_on)
        )
    return found


def _map_candidate(stats: StageStats, node: str | None) -> _Candidate:
    candidate = _Candidate(FIX_PARALLEL_MAP, stats.index, stage_name(stats), cost_s=_cost(stats))
    if node is None:
        candidate.reason = "the stage was not found in the dataset graph"
    else:
        candidate.edit = lambda graph: graph.parallelize_map(node)
    return candidate


def _interleave_candidate(stats: StageStats, node: str | None, cores: int) -> _Candidate:
    candidate = _Candidate(
        FIX_PARALLEL_INTERLEAVE,
        stats.index,
        stage_name(stats),
        cost_s=_cost(stats),
        details={"cycle_length": str(cores)},
    )
    if node is None:
        candidate.reason = "the stage was not found in the dataset graph"
    else:
        candidate.edit = lambda graph: graph.parallelize_interleave(node, cores)
    return candidate


def _vectorize_candidate(
    stats: StageStats, walked: list[Stage], stages: list[StageStats], nodes: dict[int, str]
) -> _Candidate:
    """Move the map after the batch it feeds, once its function is checked on a sample."""
    candidate = _Candidate(FIX_VECTORIZE, stats.index, stage_name(stats), cost_s=_cost(stats))
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
    candidate.details["sample_elements"] = str(sample_size)

    candidate.check = lambda graph_def, teardown: _vectorize_check(
        graph_def, map_node, batch_node, input_spec, batch_spec, sample_size, teardown
    )
    candidate.edit = lambda graph: graph.vectorize(map_node, batch_node)
    return candidate


def _python_input(dataset: Any) -> Any | None:
    from pipediag.bench import structure

    inputs = structure._python_inputs(structure._unwrap(dataset))
    return inputs[0] if len(inputs) == 1 else None


def _prefetch_candidate(stages: list[StageStats]) -> _Candidate | None:
    """Add a prefetch at the end, or raise a fixed-size one to AUTOTUNE; measured either way."""
    last = _last_real_stage(stages)
    if last is None:
        return None
    if last.kind == "prefetch" and last.settings.get("buffer_size") in ("AUTOTUNE", None):
        return None
    return _Candidate(
        FIX_PREFETCH,
        last.index,
        stage_name(last),
        cost_s=0.0,
        edit=lambda graph: graph.prefetch_at_end(),
        details={"existing_buffer": last.settings.get("buffer_size", "")}
        if last.kind == "prefetch"
        else {},
    )


def _cache_candidate(
    walked: list[Stage], stages: list[StageStats], nodes: dict[int, str], total_s: float | None
) -> _Candidate | None:
    """Cache after the costliest deterministic prefix, when the pipeline has no cache yet."""
    if any(s.kind == "cache" for s in stages):
        return None
    point = cache_point(stages)
    if point is None:
        return None
    stats = stages[point]
    prefix_s = prefix_cost_s(stages, point)
    if total_s is not None and prefix_s < TRIAL_MIN_SHARE * total_s:
        return None
    candidate = _Candidate(FIX_CACHE, point, stage_name(stats), cost_s=prefix_s)
    candidate.details["prefix_s_per_batch"] = f"{prefix_s:.6g}"
    prefix = walked[point].dataset
    elements = _cardinality(prefix)
    if elements is None or elements < 0:
        candidate.reason = "the dataset is infinite or of unknown size at this point: no cache"
        candidate.details["elements"] = "infinite" if elements == -1 else "unknown"
        return candidate
    size = _dataset_bytes(prefix, elements)
    available = _available_memory_bytes()
    candidate.details["elements"] = str(elements)
    if size is not None:
        candidate.details["cache_bytes"] = str(size)
    if available is not None:
        candidate.details["available_bytes"] = str(available)
    fits = size is not None and available is not None and size <= CACHE_MAX_MEMORY_SHARE * available
    candidate.details["fits"] = "true" if fits else "false"
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
        candidate.details["fill_s"] = f"{fill_s:.3g}"
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
        if stats.kind != "options":
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


def _thread_cap_candidate(threads: int) -> _Candidate:
    def capped(dataset: Any) -> Any:
        import tensorflow as tf

        options = tf.data.Options()
        options.threading.private_threadpool_size = threads
        return dataset.with_options(options)

    return _Candidate(
        FIX_THREAD_CAP,
        None,
        "options",
        cost_s=0.0,
        with_options=capped,
        details={"threads": str(threads)},
        tried_on_training=True,
    )


def _autotune_on(dataset: Any) -> Any:
    import tensorflow as tf

    options = tf.data.Options()
    options.autotune.enabled = True
    return dataset.with_options(options)


# --- running trials --------------------------------------------------------------------------


def _median_cpu(runs: Sequence[BatchTiming]) -> float | None:
    cpu = [c for c in (t.cpu_s_per_batch for t in runs) if c is not None]
    return median(cpu) if cpu else None


def _vectorize_check(
    graph_def: Any,
    map_node: str,
    batch_node: str,
    input_spec: Any,
    batch_spec: Any,
    sample_size: int,
    teardown: TearDown | None = None,
) -> tuple[str | None, bool]:
    """Run the map's function per element and on whole batches over a sample of the user's
    elements; (why not, whether it is unsafe rather than unchecked), (None, False) if equal.
    Spent iterators go to `teardown` (None: released in place)."""
    import tensorflow as tf

    if not all(isinstance(c, tf.TensorSpec) for c in tf.nest.flatten(input_spec)):
        return "not checked: the map's input has ragged or sparse parts; estimated only", False
    sample_graph = _Graph.copy_of(graph_def)
    map_def = sample_graph.node(map_node)
    sample_graph.set_output(sample_graph.data_inputs(map_def)[0].split(":")[0])
    sample_graph.isolate()
    sample = _read_sample(sample_graph.rebuild(input_spec), input_spec, sample_size, teardown)
    if sample is None:
        return "not checked: no sample of the map's input could be read; estimated only", False
    count = len(sample[0])
    results = []
    for vectorized in (False, True):
        check_graph = _Graph.copy_of(graph_def)
        source = check_graph.tensor_slices(sample, input_spec)
        map_def = check_graph.node(map_node)
        map_def.input[0] = source
        if vectorized:
            check_graph.vectorize(map_node, batch_node)
        check_graph.set_output(map_node if vectorized else batch_node)
        try:
            results.append(_numpy_batches(check_graph.rebuild(batch_spec), teardown))
        except Exception as exc:
            if not vectorized:
                raise
            return (
                f"unsafe: the function fails on a batch ({_tf_error_text(exc)}); keep the map "
                "before the batch",
                True,
            )
    difference = _first_difference(results[0], results[1])
    if difference is not None:
        return (
            f"unsafe: on {count} of your elements the function gives other results on a batch "
            f"({difference}): it is not elementwise; keep the map before the batch",
            True,
        )
    return None, False


def _read_sample(
    dataset: Any, spec: Any, size: int, teardown: TearDown | None = None
) -> list[Any] | None:
    """Up to `size` elements, one stacked NumPy array per component (memory-capped)."""
    import numpy as np
    import tensorflow as tf

    columns: list[list[Any]] = [[] for _ in tf.nest.flatten(spec)]
    used = 0
    for element in _elements(dataset.take(size), teardown):
        values = [t.numpy() for t in tf.nest.flatten(element)]
        used += sum(getattr(v, "nbytes", 0) for v in values)
        if used > VECTORIZE_SAMPLE_MAX_BYTES:
            break
        for column, value in zip(columns, values, strict=True):
            column.append(value)
    if not columns or not columns[0]:
        return None
    return [np.stack(column) for column in columns]


def _numpy_batches(dataset: Any, teardown: TearDown | None = None) -> list[list[Any]]:
    import tensorflow as tf

    return [[t.numpy() for t in tf.nest.flatten(batch)] for batch in _elements(dataset, teardown)]


def _elements(dataset: Any, teardown: TearDown | None) -> Iterator[Any]:
    """The dataset's elements, read on an iterator that `teardown` releases (None: here)."""
    iterator = iter(dataset)
    try:
        yield from iterator
    finally:
        if teardown is not None:
            teardown.discard(iterator)
        del iterator


def _first_difference(expected: list[list[Any]], actual: list[list[Any]]) -> str | None:
    """Where two lists of batches differ, in words; None when equal (floats to rounding)."""
    import numpy as np

    if len(expected) != len(actual):
        return f"{len(actual)} batches instead of {len(expected)}"
    for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
        for part, (a, b) in enumerate(zip(want, got, strict=True)):
            where = f"batch {index}, output {part}"
            if a.shape != b.shape:
                return f"{where}: shape {b.shape} instead of {a.shape}"
            if np.issubdtype(a.dtype, np.inexact):
                if not np.allclose(a, b, rtol=VECTORIZE_RTOL, atol=VECTORIZE_ATOL, equal_nan=True):
                    return f"{where}: values differ by up to {float(np.max(np.abs(a - b))):.3g}"
            elif not np.array_equal(a, b):
                return f"{where}: values differ"
    return None


def _build_variant(candidate: _Candidate, graph: Any, baseline: Any, dataset: Any) -> Any:
    if candidate.with_options is not None:
        return candidate.with_options(baseline)
    if candidate.edit is None:
        raise RewriteError("no rewrite for this fix")
    edited = _Graph.copy_of(graph)
    edited.isolate()
    candidate.edit(edited)
    return edited.rebuild(dataset.element_spec)


def _unverified(candidate: _Candidate, reason: str) -> FixTrial:
    return FixTrial(
        fix=candidate.fix,
        stage_index=candidate.stage_index,
        stage=candidate.stage,
        verified=False,
        reason=reason,
        details=dict(candidate.details),
    )


# --- the graph -------------------------------------------------------------------------------


def graph_and_nodes(
    dataset: Any, walked: Sequence[Stage]
) -> tuple[Any | None, dict[int, str], str | None]:
    """The dataset's GraphDef, each stage's node name in it, or why there is no graph."""
    try:
        import tensorflow as tf

        serialized = dataset._as_serialized_graph(
            external_state_policy=tf.data.experimental.ExternalStatePolicy.WARN
        )
        graph = tf.compat.v1.GraphDef()
        graph.ParseFromString(serialized.numpy())
    except Exception as exc:
        return None, {}, f"the dataset graph is unavailable: {_describe(exc)}"
    return graph, _stage_nodes(dataset, walked, graph), None


def _stage_nodes(dataset: Any, walked: Sequence[Stage], graph: Any) -> dict[int, str]:
    """Match stages to graph nodes: the walk `structure.walk_pipeline` does, kept by name.

    A stage is matched only when its recorded op (`StageStats.name`) is the node's op, so a
    disagreement between the Python chain and the graph leaves the stage unmatched (and its
    fix estimated) rather than rewriting another stage.
    """
    from pipediag.bench import structure

    nodes = {node.name: node for node in graph.node}
    by_object = {id(stage.dataset): stage.stats for stage in walked}
    found: dict[int, str] = {}

    def visit(ds: Any, node: Any | None, depth: int) -> None:
        ds = structure._skip_passthrough(ds)
        stats = by_object.get(id(ds))
        if stats is None or node is None or stats.index in found or depth > len(walked):
            return
        if stats.name != node.op:
            return
        found[stats.index] = node.name
        if structure._generator_function(ds) is not None:
            return
        inputs = [
            structure._skip_passthrough(structure._unwrap(i)) for i in structure._python_inputs(ds)
        ]
        children = [
            nodes[name.split(":")[0]]
            for name in node.input
            if not name.startswith("^")
            and name.split(":")[0] in nodes
            and "Dataset" in nodes[name.split(":")[0]].op
        ]
        if len(children) == len(inputs):
            for child, child_node in zip(inputs, children, strict=True):
                visit(child, child_node, depth + 1)

    visit(structure._unwrap(dataset), structure._graph_root(graph, nodes), 0)
    return found


class _Graph:
    """A GraphDef being edited: adds nodes with unique names and rewires their consumers."""

    def __init__(self, graph_def: Any) -> None:
        self.graph_def = graph_def
        self._added = 0

    @classmethod
    def copy_of(cls, graph_def: Any) -> _Graph:
        import tensorflow as tf

        copy = tf.compat.v1.GraphDef()
        copy.CopyFrom(graph_def)
        return cls(copy)

    def rebuild(self, element_spec: Any) -> Any:
        """The edited graph as a dataset, with the original's element spec."""
        import tensorflow as tf

        variant = tf.raw_ops.DatasetFromGraph(graph_def=self.graph_def.SerializeToString())
        return tf.data.experimental.from_variant(variant, element_spec)

    # -- lookups -----------------------------------------------------------------------
    def node(self, name: str) -> Any:
        for node in self.graph_def.node:
            if node.name == name:
                return node
        raise RewriteError(f"no node {name!r}")

    def data_inputs(self, node: Any) -> list[str]:
        return [name for name in node.input if not name.startswith("^")]

    def retval(self) -> Any:
        """The `_Retval` node: its input is the dataset the graph returns."""
        for node in self.graph_def.node:
            if node.op == "_Retval" and node.input:
                return node
        raise RewriteError("the graph has no output node")

    def root(self) -> Any:
        """The dataset op below the trailing options: where an end stage goes."""
        current = self.node(self.retval().input[0].split(":")[0])
        while current.op in _PASS_THROUGH_OPS and current.input:
            current = self.node(current.input[0].split(":")[0])
        return current

    def consumers(self, name: str) -> list[Any]:
        """Nodes that read `name`'s output as data (its `_Retval` included)."""
        return [
            node
            for node in self.graph_def.node
            if any(i in (name, f"{name}:0") for i in self.data_inputs(node))
        ]

    def set_output(self, name: str) -> None:
        """Make `name` the dataset the graph returns (its `_Retval` input)."""
        self.retval().input[0] = name

    def redirect(self, old: str, new: str, *, keep: frozenset[str] = frozenset()) -> None:
        """Every node that reads `old` (except `new` and those in `keep`) reads `new`."""
        for other in self.graph_def.node:
            if other.name == new or other.name in keep:
                continue
            for position, name in enumerate(other.input):
                if name in (old, f"{old}:0"):
                    other.input[position] = new

    # -- building blocks ---------------------------------------------------------------
    def tensor_slices(self, columns: list[Any], spec: Any) -> str:
        """A `TensorSliceDataset` of the given stacked arrays; its node name."""
        import tensorflow as tf

        components = []
        for column in columns:
            const = self.graph_def.node.add()
            const.name = self._fresh("Const")
            const.op = "Const"
            proto = tf.make_tensor_proto(column)
            const.attr["dtype"].type = proto.dtype
            const.attr["value"].tensor.CopyFrom(proto)
            components.append(str(const.name))
        node = self.graph_def.node.add()
        node.name = self._fresh("TensorSliceDataset")
        node.op = "TensorSliceDataset"
        node.input.extend(components)
        for component in tf.nest.flatten(spec):
            node.attr["Toutput_types"].list.type.append(component.dtype.as_datatype_enum)
            node.attr["output_shapes"].list.shape.add().CopyFrom(component.shape.as_proto())
        node.attr["is_files"].b = False
        node.attr["metadata"].s = b""
        node.attr["replicate_on_split"].b = False
        return str(node.name)

    def const(self, value: int | str) -> str:
        node = self.graph_def.node.add()
        node.name = self._fresh("Const")
        node.op = "Const"
        dtype = _DT_STRING if isinstance(value, str) else _DT_INT64
        node.attr["dtype"].type = dtype
        tensor = node.attr["value"].tensor
        tensor.dtype = dtype
        if isinstance(value, str):
            tensor.string_val.append(value.encode())
        else:
            tensor.int64_val.append(value)
        return str(node.name)

    def insert_after(self, target: Any, op: str, extra_inputs: list[str]) -> Any:
        """A new unary dataset op reading `target`; every consumer of `target` reads it."""
        node = self.graph_def.node.add()
        node.name = self._fresh(op)
        node.op = op
        node.input.extend([target.name, *extra_inputs])
        for attr in ("output_types", "output_shapes"):
            node.attr[attr].CopyFrom(target.attr[attr])
        self.redirect(target.name, node.name)
        return node

    def set_input(self, node: Any, position: int, value: int) -> None:
        """Point a scalar input (negative positions count from the last data input) at a
        new Const, leaving a Const that other nodes may share untouched."""
        data = self.data_inputs(node)
        index = position if position >= 0 else len(data) + position
        if not 0 <= index < len(data):
            raise RewriteError(f"{node.op} has no input {position}")
        node.input[index] = self.const(value)

    # -- the fixes ---------------------------------------------------------------------
    def parallelize_map(self, name: str) -> None:
        node = self.node(name)
        if node.op in _PARALLEL_MAP_OPS:
            self.set_input(node, -1, AUTOTUNE)
            return
        if node.op != "MapDataset":
            raise RewriteError(f"{node.op} is not a map this rewrite knows")
        # ParallelMapDatasetV2(input, other_arguments..., num_parallel_calls): the new scalar
        # goes after the data inputs, before any control input.
        node.op = "ParallelMapDatasetV2"
        node.input.insert(len(self.data_inputs(node)), self.const(AUTOTUNE))
        for attr in _SEQUENTIAL_ONLY_ATTRS:
            if attr in node.attr:
                del node.attr[attr]
        node.attr["deterministic"].s = b"default"
        node.attr["use_unbounded_threadpool"].b = False

    def parallelize_interleave(self, name: str, cycle_length: int) -> None:
        node = self.node(name)
        if node.op == "ParallelInterleaveDatasetV4":
            self.set_input(node, -5, cycle_length)
            self.set_input(node, -1, AUTOTUNE)
            return
        if node.op == "ParallelInterleaveDatasetV3":
            self.set_input(node, -3, cycle_length)
            self.set_input(node, -1, AUTOTUNE)
            return
        data = self.data_inputs(node)
        controls = [n for n in node.input if n.startswith("^")]
        if node.op == "InterleaveDataset":
            head, block = data[:-2], data[-1]  # (input, other_arguments...), block_length
        elif node.op == "FlatMapDataset":
            head, block = data, self.const(1)
        else:
            raise RewriteError(f"{node.op} is not an interleave this rewrite knows")
        # ParallelInterleaveDatasetV4(input, other_arguments..., cycle_length, block_length,
        # buffer_output_elements, prefetch_input_elements, num_parallel_calls).
        tail = [
            self.const(cycle_length),
            block,
            self.const(AUTOTUNE),
            self.const(AUTOTUNE),
            self.const(AUTOTUNE),
        ]
        del node.input[:]
        node.input.extend([*head, *tail, *controls])
        node.op = "ParallelInterleaveDatasetV4"
        node.attr["deterministic"].s = b"default"

    def vectorize(self, map_name: str, batch_name: str) -> None:
        """`X -> map(f) -> batch(n) -> ...` becomes `X -> batch(n) -> map(f, AUTOTUNE) -> ...`."""
        mapped, batch = self.node(map_name), self.node(batch_name)
        if mapped.op not in _MAP_OPS:
            raise RewriteError(f"{mapped.op} is not a map this rewrite knows")
        if batch.op not in _BATCH_OPS:
            raise RewriteError(f"{batch.op} is not a plain batch: the map cannot move after it")
        if [n.name for n in self.consumers(map_name)] != [batch_name]:
            raise RewriteError("the map's output is read by more than its batch")
        if self.data_inputs(batch)[0].split(":")[0] != map_name:
            raise RewriteError("the batch does not read the map")
        source = self.node(self.data_inputs(mapped)[0].split(":")[0])
        lead = _leading_dim(batch)
        self.redirect(batch_name, map_name)  # the batch's readers now read the map
        batch.input[0] = source.name
        mapped.input[0] = batch.name
        # TensorSliceDataset names its types attribute differently.
        key = "output_types" if "output_types" in source.attr else "Toutput_types"
        types = source.attr[key]
        batch.attr["output_types"].CopyFrom(types)
        _set_batched_shapes(batch, source.attr["output_shapes"], lead)
        _set_batched_shapes(mapped, mapped.attr["output_shapes"], lead)
        if mapped.op == "MapDataset":
            self.parallelize_map(map_name)
        else:
            self.set_input(mapped, -1, AUTOTUNE)

    def prefetch_at_end(self) -> None:
        root = self.root()
        if root.op == "PrefetchDataset":
            self.set_input(root, 1, AUTOTUNE)
            return
        prefetch = self.insert_after(root, "PrefetchDataset", [self.const(AUTOTUNE)])
        prefetch.attr["slack_period"].i = 0
        prefetch.attr["legacy_autotune"].b = True
        prefetch.attr["buffer_size_min"].i = 0

    def cache_after(self, name: str, *, repeat: bool) -> None:
        """An in-memory cache after `name`; with `repeat`, read again from memory forever, so
        one iterator measures the epochs after the first."""
        target = self.node(name)
        cache = self.insert_after(target, "CacheDataset", [self.const("")])
        if repeat:
            self.insert_after(cache, "RepeatDataset", [self.const(-1)])

    def isolate(self) -> list[str]:
        """Private seed generators and memory caches, file caches bypassed
        (`bench.isolate`): the copy shares no per-iterator state with the user's dataset."""
        from pipediag.bench.isolate import isolate_graph_def

        return isolate_graph_def(self.graph_def)

    def _fresh(self, op: str) -> str:
        self._added += 1
        return f"pipediag_whatif/{op}_{self._added}"


def _leading_dim(batch: Any) -> int:
    """The batch dimension a batch node declares (-1 when the last batch may be short)."""
    shapes = batch.attr["output_shapes"].list.shape
    if shapes and not shapes[0].unknown_rank and shapes[0].dim:
        return int(shapes[0].dim[0].size)
    return -1


def _set_batched_shapes(node: Any, element_shapes: Any, lead: int) -> None:
    """`node`'s output shapes: each of `element_shapes` with a leading batch dimension."""
    import tensorflow as tf

    dim = lead if lead >= 0 else None
    batched = [
        tf.TensorShape(None if shape.unknown_rank else [dim, *tf.TensorShape(shape)]).as_proto()
        for shape in element_shapes.list.shape
    ]
    del node.attr["output_shapes"].list.shape[:]
    for proto in batched:
        node.attr["output_shapes"].list.shape.add().CopyFrom(proto)


# --- sizes -----------------------------------------------------------------------------------


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


def _int(text: str | None) -> int | None:
    try:
        return None if text is None else int(text)
    except ValueError:
        return None


def _tf_error_text(exc: BaseException) -> str:
    """The part of a tf.data error that says what went wrong, without the iterator plumbing:
    `Incompatible shapes: [4] vs. [16]` rather than the function node and iterator path."""
    import re

    message = str(getattr(exc, "message", exc)).strip().splitlines()[0]
    message = re.sub(r"\{\{[^}]*\}\}\s*", "", message)
    inner = re.search(r"Iterator::[\w:]+: (.*)", message)
    return (inner.group(1) if inner else message)[:160]


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:200]
