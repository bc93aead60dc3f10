"""What-if pipelines: each fix applied to a copy of the dataset graph and read alone, in turn
with the unedited copy (docs/design.md, "Fixes timed on the pipeline alone")."""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from statistics import median
from typing import Any

from pipediag.analysis.paired import (
    PIPELINE_SLICE_MAX_BATCHES,
    PIPELINE_SLICE_SHARE,
    PIPELINE_SLICES,
    TRIAL_MIN_ROUNDS,
    planned_slice_s,
)
from pipediag.bench.candidate import Candidate
from pipediag.bench.fix_candidates import (
    device_prefetch_candidate,
    fix_candidates,
    thread_cap_candidate,
)
from pipediag.bench.graph_edit import PipelineGraph, RewriteError
from pipediag.bench.interleaved import Rounds, run_rounds
from pipediag.bench.isolate import preserved_variables
from pipediag.bench.pipeline import BatchTiming, time_iterator
from pipediag.bench.structure import WalkedPipeline
from pipediag.bench.teardown import TearDown, owned
from pipediag.clock import MONOTONIC, Clock
from pipediag.errors import describe_error
from pipediag.report.model import PipelineOptions
from pipediag.report.reasons import Reason, error_reason
from pipediag.report.stages import StageStats
from pipediag.report.trials import FixTrial
from pipediag.report.vocabulary import SemanticsChange

# Total time for all trials: about the phase-1 benchmark (3 s) per fix, for a typical two or three.
DEFAULT_BUDGET_S = 8.0
# A run stopped this far over the budget leaves the remaining fixes unmeasured.
BUDGET_OVERRUN = 1.5


@dataclass(frozen=True)
class FixPipelines:
    """A fix's two pipeline copies, kept for its trial on training, and what `compose.py` needs."""

    fix: str
    stage_index: int | None
    baseline: Any
    variant: Any
    fill_batches: int = 0  # for a cache: batches of `variant` to read before it is full
    pipeline_speedup: float = 1.0  # measured on the pipeline alone: a first look
    tried_on_training: bool = False  # whatever the pipeline alone measured
    stage: str = ""  # the stage's name, as the trial's
    candidate: Candidate | None = None  # the rewrite: its edit or options
    graph: Any = None  # the user's GraphDef, unedited, that `candidate` edits
    element_spec: Any = None
    baseline_fill_batches: int = 0  # as `fill_batches`, for a cache among the fixes kept
    # What the fixes in `variant` change in what it yields.
    semantics: tuple[SemanticsChange, ...] = ()
    applied: tuple[str, ...] = ()  # the fixes in `variant`, in order: those kept, then this


@dataclass(frozen=True)
class ForTraining:
    """The search on training: it keeps every fix built here (`keep`), and asks for the fixes
    only it can judge (a thread cap, `prefetch_to_device`). The caller restores the pipeline's
    variables around any later read of the kept pipelines (`bench.isolate.preserved_variables`)."""

    keep: list[FixPipelines]
    thread_cap: int | None = None
    prefetch_device: str | None = None


def verify_fixes(
    walked: WalkedPipeline,
    stages: Sequence[StageStats] | None = None,
    *,
    clock: Clock = MONOTONIC,
    budget_s: float | None = DEFAULT_BUDGET_S,
    deadline: float | None = None,
    teardown: TearDown | None = None,
    training: ForTraining | None = None,
) -> list[FixTrial]:
    """One `FixTrial` per applicable fix, in stage order, timed on copies of the dataset;
    `stages` (None: unmeasured) order the trials by own cost. `budget_s` (a run may overrun
    it by half) and `deadline` both bound the trials; both None: `DEFAULT_BUDGET_S`."""
    candidates = _candidates(walked, stages, training)
    dataset, graph, error = walked.dataset, walked.graph, walked.graph_error
    baseline = None
    notes: list[Reason] = []
    if error is None and graph is not None:
        try:
            isolated, notes = walked.isolated  # isolated once: the stage holds rebuild it too
            baseline = isolated.rebuild(dataset.element_spec)
        except Exception as exc:
            error = Reason("graph-not-rebuilt", detail=describe_error(exc))
    if error is not None or baseline is None or graph is None:
        why = error or Reason("no-dataset-graph")
        return [_unverified(c, c.reason or why) for c in candidates]
    for candidate in candidates:
        candidate.facts = replace(candidate.facts, isolation=notes)
    end_s, hard_end_s = _time_window(clock, budget_s, deadline)
    keep = training.keep if training is not None else None
    with owned(teardown) as releaser, preserved_variables(dataset, releaser, graph_def=graph):
        trials = _Trials(graph, baseline, dataset, clock, releaser, end_s, hard_end_s, keep)
        return trials.run_all(candidates)


def _candidates(
    walked: WalkedPipeline, stages: Sequence[StageStats] | None, training: ForTraining | None
) -> list[Candidate]:
    """The fixes that apply to the walked pipeline, with those training asks for."""
    if stages is None or [s.kind for s in stages] != [s.stats.kind for s in walked.stages]:
        stages = [s.stats for s in walked.stages]
    options = walked.options or PipelineOptions()  # unreadable: TF's defaults
    cores = options.cpu_count or os.cpu_count() or 1
    candidates = fix_candidates(walked.stages, list(stages), walked.nodes, options, cores)
    if training is not None and training.thread_cap is not None:
        candidates.append(thread_cap_candidate(training.thread_cap))
    if training is not None and training.prefetch_device is not None:
        device_prefetch = device_prefetch_candidate(training.prefetch_device, list(stages))
        if device_prefetch is not None:
            candidates.append(device_prefetch)
    for candidate in candidates:
        candidate.facts = replace(candidate.facts, semantics=list(candidate.semantics))
    return candidates


def _time_window(
    clock: Clock, budget_s: float | None, deadline: float | None
) -> tuple[float, float]:
    """When the trials plan to end, and the latest any of their rounds may end."""
    now = clock.now()
    if budget_s is None and deadline is None:
        budget_s = DEFAULT_BUDGET_S
    end = math.inf if deadline is None else deadline
    if budget_s is None:
        return end, end
    return min(end, now + budget_s), min(end, now + budget_s * BUDGET_OVERRUN)


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

    def run_all(self, candidates: list[Candidate]) -> list[FixTrial]:
        """Costliest stage first, each an equal share of the time left."""
        left = sum(c.reason is None for c in candidates)
        results: dict[int, FixTrial] = {}
        for position in sorted(range(len(candidates)), key=lambda i: -candidates[i].cost_s):
            candidate = candidates[position]
            if candidate.reason is not None:
                results[position] = _unverified(candidate, candidate.reason)
                continue
            now = self.clock.now()
            if now + 2 * PIPELINE_SLICES.shortest_s > self.hard_end_s:
                results[position] = self.untimed(candidate)
            else:
                results[position] = self.trial(candidate, max(0.0, self.end_s - now) / left)
            left -= 1
        return [results[i] for i in range(len(candidates))]

    def trial(self, candidate: Candidate, share_s: float) -> FixTrial:
        """Check and build the variant, then time it beside the baseline; never raises."""
        built = self._built(candidate)
        if isinstance(built, FixTrial):
            return built
        try:
            rounds = self._rounds(candidate, built, share_s)
        except Exception as exc:  # the user's function failed in the copy: report, do not raise
            return _unverified(candidate, Reason("rewritten-failed", detail=describe_error(exc)))
        trial = self._measured(candidate, rounds)
        self._keep(candidate, built, trial.speedup)
        return trial

    def untimed(self, candidate: Candidate) -> FixTrial:
        """Past the budget: the variant checked and built, not timed, kept for training."""
        if self.keep is None:
            return _unverified(candidate, Reason("verification-budget-spent"))
        built = self._built(candidate)
        if isinstance(built, FixTrial):
            return built
        self._keep(candidate, built, None)
        return _unverified(candidate, Reason("left-to-training"))

    def _built(self, candidate: Candidate) -> Any:
        """The variant, or the unverified trial that says why there is none."""
        refusal = self._refusal(candidate)
        if refusal is not None:
            return _unverified(candidate, refusal)
        try:
            if candidate.with_options is not None:
                return candidate.with_options(self.baseline)
            if candidate.edit is None:
                raise RewriteError("no-rewrite-for-fix")
            edited = PipelineGraph.copy_of(self.graph)
            edited.isolate()
            candidate.edit(edited)
            return edited.rebuild(self.dataset.element_spec)
        except RewriteError as exc:
            return _unverified(candidate, Reason("cannot-rewrite", because=exc.reason))
        except Exception as exc:
            return _unverified(candidate, Reason("cannot-rewrite", detail=describe_error(exc)))

    def _keep(self, candidate: Candidate, variant: Any, speedup: float | None) -> None:
        if self.keep is None:  # every fix built and safe: the search on training decides
            return
        self.keep.append(
            FixPipelines(
                fix=candidate.fix,
                stage_index=candidate.stage_index,
                baseline=self.baseline,
                variant=variant,
                fill_batches=candidate.fill_batches,
                pipeline_speedup=speedup or 1.0,
                tried_on_training=candidate.tried_on_training,
                stage=candidate.stage,
                candidate=candidate,
                graph=self.graph,
                element_spec=self.dataset.element_spec,
                semantics=candidate.semantics,
                applied=(candidate.fix,),
            )
        )

    def _refusal(self, candidate: Candidate) -> Reason | None:
        if candidate.check is None:
            return None
        try:
            refusal, unsafe = candidate.check(self.graph, self.teardown)
        except Exception as exc:
            refusal, unsafe = error_reason("check-failed", exc, describe_error), False
        candidate.unsafe |= unsafe
        return refusal

    def _rounds(self, candidate: Candidate, variant: Any, share_s: float) -> Rounds:
        """A/B rounds, slices planned for `TRIAL_MIN_ROUNDS` rounds in `share_s` less the fill."""
        until_s = self.clock.now() + share_s
        timed_s = PIPELINE_SLICE_SHARE * (share_s - (candidate.facts.fill_s or 0.0))
        baseline = TrialSide(self.baseline, self.teardown, self.clock)
        fixed = TrialSide(variant, self.teardown, self.clock, candidate.fill_batches)
        return run_rounds(
            baseline.run,
            fixed.run,
            slice_s=planned_slice_s(timed_s, slices=2 * TRIAL_MIN_ROUNDS, bounds=PIPELINE_SLICES),
            until_s=until_s,
            hard_until_s=self.hard_end_s,
            clock=self.clock,
            best_low=self.best_low,
        )

    def _measured(self, candidate: Candidate, rounds: Rounds) -> FixTrial:
        base, fixed = rounds.rates()
        if base is None or fixed is None:
            return _unverified(candidate, Reason("too-few-batches"))
        facts = replace(candidate.facts, stopped=rounds.stopped)
        if rounds.interval is not None:
            low, high = rounds.interval
            facts = replace(facts, speedup_low=low, speedup_high=high)
            self.best_low = low if self.best_low is None else max(self.best_low, low)
        return replace(
            _trial_of(candidate),
            verified=True,
            baseline_batches_per_s=base,
            variant_batches_per_s=fixed,
            speedup=fixed / base if base > 0 else None,
            rounds=len(rounds.ratios),
            facts=facts,
            baseline_cpu_s_per_batch=_median_cpu(rounds.baseline),
            variant_cpu_s_per_batch=_median_cpu(rounds.variant),
        )


class TrialSide:
    """One side of a trial: a fresh iterator per run, starting as an epoch does; a cache's filling
    epoch read first. `read` times one run (default: the pipeline alone)."""

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
        if fill_batches > 0:
            filling = iter(dataset)
            # A pass read to its end stops early: a cache in it is then complete.
            for _ in itertools.islice(filling, fill_batches):
                pass
            teardown.discard(filling)

    def run(self, max_seconds: float) -> BatchTiming:
        began = self._clock.now()
        iterator = self.open()
        opened_s = self._clock.now() - began
        try:
            return replace(self._read(iterator, max_seconds), opened_s=opened_s)
        finally:
            self.release(iterator)
            del iterator

    def open(self) -> Iterator[Any]:
        return iter(self._dataset)

    def release(self, iterator: Iterator[Any]) -> None:
        """A run is over: its iterator is torn down off the main thread."""
        self._teardown.discard(iterator)

    def _alone(self, iterator: Iterator[Any], max_seconds: float) -> BatchTiming:
        return time_iterator(
            iterator,
            max_batches=PIPELINE_SLICE_MAX_BATCHES,
            max_seconds=max_seconds,
            clock=self._clock,
        )


def _median_cpu(runs: Sequence[BatchTiming]) -> float | None:
    cpu = [c for c in (t.cpu_s_per_batch for t in runs) if c is not None]
    return median(cpu) if cpu else None


def _unverified(candidate: Candidate, reason: Reason) -> FixTrial:
    return replace(_trial_of(candidate), reason=reason, unsafe=candidate.unsafe)


def _trial_of(candidate: Candidate) -> FixTrial:
    """What every trial of `candidate` says, timed or not: the fix, its stage, its facts."""
    return FixTrial(
        candidate.fix,
        candidate.stage_index,
        candidate.stage,
        facts=candidate.facts,
        fits_in_memory=candidate.fits_in_memory,
    )
