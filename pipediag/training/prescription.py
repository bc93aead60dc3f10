"""The pipeline pipediag would write: every rewrite that applies, tried on the user's own training
one at a time on top of those already kept (docs/design.md, "The pipeline pipediag would write")."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from pipediag.analysis.pipeline_code import rewritten_chain
from pipediag.analysis.stage_bisect import Freed
from pipediag.bench.compose import compose_fixes
from pipediag.bench.interleaved import Rounds
from pipediag.bench.whatif import FixPipelines
from pipediag.clock import Clock
from pipediag.report import stage_facts
from pipediag.report.fixes import fix_facts
from pipediag.report.model import PipelineBenchmark
from pipediag.report.names import fix_words_at, stage_name
from pipediag.report.prescription import PrescribedChange, Prescription, StageChange
from pipediag.report.reasons import Reason, ReasonCode, error_reason
from pipediag.report.stages import StageStats
from pipediag.report.trials import FixTrial, TrialFacts
from pipediag.training import stage_cost
from pipediag.training.training_trial import TrialResults, gain_on_training, with_training

# Builds a trial's pipelines: the kept rewrites (baseline) and those with one more (variant).
Compose = Callable[[Sequence[FixPipelines], FixPipelines], FixPipelines]
# The fix id of the last trial: every kept rewrite against the user's pipeline.
COMBINED = "combined"


def bounded_out(fix: FixPipelines, stages: Sequence[StageStats]) -> Reason | None:
    """Why a rewrite cannot gain on training: its bounding stage's hold gained under 1.05x."""
    if not fix_facts(fix.fix).bounded_by_hold:
        return None  # a held stage is held on the host: the copy it moves is still paid
    bound = stage_facts.if_free_bound(stages, fix.stage_index)
    if bound is None or not stage_facts.if_free_clearly_under(bound):
        return None
    return Reason("bounded-out", detail=stage_name(bound), value=bound.training_speedup_if_free)


def kept_by(freed: Freed | None) -> bool:
    if freed is None:
        return False
    return freed.speedup >= stage_facts.VERIFIED_MIN_GAIN and (freed.low or 0.0) > 1.0


@dataclass(frozen=True)
class SearchPlan:
    """The rewrites to try on training after the stage holds, until `until_s`."""

    dataset: Any
    fixes: Sequence[FixPipelines]
    stages: Sequence[StageStats]
    until_s: float
    ceiling: float | None = None
    # How a trial's pipelines are built (None: `bench.compose.compose_fixes` over `dataset`).
    compose: Compose | None = None

    def start(self, clock: Clock, held: stage_cost.Searched | None = None) -> PipelineSearch:
        """The search (`held`: a loop's stage holds, not in `stages` yet)."""
        stages = self.stages
        bounded = stage_cost.with_freed(stages, held) if held is not None else list(stages)
        fixes, skipped = order_for_search(self.fixes, bounded)
        return PipelineSearch(
            fixes,
            compose=self.compose or functools.partial(compose_fixes, self.dataset),
            clock=clock,
            until_s=self.until_s,
            ceiling=stage_cost.held_ceiling(bounded, self.ceiling),
            skipped=skipped,
            stages=stages,
        )


@dataclass
class SearchOutcome:
    """Each rewrite's trial, every rewrite tried or skipped, and the kept ones' together."""

    results: TrialResults = field(default_factory=dict)
    tried: list[PrescribedChange] = field(default_factory=list)
    combined: Rounds | None = None
    combined_reason: Reason | None = None
    # The step-alone ceiling a trial's variant ran above (`at_ceiling`), by trial key.
    capped: dict[tuple[str, int | None], float] = field(default_factory=dict)
    combined_ceiling: float | None = None


class PipelineSearch:
    """The greedy search's trials one at a time, each decided from the last one's result."""

    def __init__(
        self,
        fixes: Sequence[FixPipelines],
        *,
        compose: Compose,
        clock: Clock,
        until_s: float,
        ceiling: float | None = None,
        skipped: Sequence[PrescribedChange] = (),
        stages: Sequence[StageStats] = (),
    ) -> None:
        self._queue = list(fixes)
        self._stages = list(stages)
        self._compose, self._clock = compose, clock
        self._until_s, self._ceiling = until_s, ceiling
        self._kept: list[FixPipelines] = []
        self._pending: FixPipelines | None = None  # the trial's pipelines, composed
        self._pending_fix: FixPipelines | None = None  # the rewrite they try
        self._combined_due = True
        self.outcome = SearchOutcome(tried=list(skipped))

    def next_trial(self) -> tuple[FixPipelines, float] | None:
        while self._queue:
            fix = self._queue[0]
            share_s = self._share_s(planned=len(self._queue) + (1 if self._kept else 0))
            if share_s is None:
                self._skip_rest(Reason("training-out-of-time"))
                break
            self._queue.pop(0)
            try:
                pipelines = self._compose(self._kept, fix)
            except Exception as exc:
                code: ReasonCode = "not-built-on-top" if self._kept else "not-built"
                self._add(fix, reason=error_reason(code, exc))
                continue
            self._pending, self._pending_fix = pipelines, fix
            return pipelines, share_s
        if len(self._kept) >= 2 and self._combined_due:
            self._combined_due = False
            if (share_s := self._share_s(planned=1)) is None:
                self.outcome.combined_reason = Reason("training-out-of-time")
                return None
            try:
                last = self._compose(self._kept[:-1], self._kept[-1])
            except Exception as exc:  # built before, so not expected
                self.outcome.combined_reason = error_reason("not-built", exc)
                return None
            baseline = self._kept[0].baseline
            combined = replace(
                last, fix=COMBINED, stage_index=None, baseline=baseline, baseline_fill_batches=0
            )
            self._pending = combined
            return combined, share_s
        return None

    def record(self, rounds: Rounds | None, reason: Reason | None = None) -> None:
        """The pending trial's rounds (None: none, and `reason` says why)."""
        pending, self._pending = self._pending, None
        fix, self._pending_fix = self._pending_fix, None
        if pending is None:
            return
        capped = self._ceiling if stage_cost.above_ceiling(rounds, self._ceiling) else None
        if pending.fix == COMBINED:
            self.outcome.combined = rounds
            self.outcome.combined_ceiling = capped
            self.outcome.combined_reason = reason
            return
        freed = at_ceiling(stage_cost.freed_from(rounds), capped)
        keep = kept_by(freed)
        why = _not_kept(freed) if reason is None and not keep else reason
        key = (pending.fix, pending.stage_index)
        self.outcome.results[key] = (rounds, reason)
        if capped is not None:
            self.outcome.capped[key] = capped
        tried, at_step_alone = fix or pending, capped is not None
        self._add(
            tried, freed=freed, rounds=rounds, kept=keep, reason=why, at_step_alone=at_step_alone
        )
        if keep:
            self._kept.append(tried)
            self._drop_covered(tried)

    def prescription(self, stages: Sequence[StageStats] = ()) -> Prescription:
        """The prescription as it stands, with the user's chain (`stages`) rewritten."""
        self.record(None, Reason("training-stopped"))  # a trial cut short, if one is pending
        self._skip_rest(Reason("training-out-of-time"))
        prescription = self._measured()
        if not self._kept or not stages:
            return prescription
        return replace(prescription, code=rewritten_chain(stages, self.changes()))

    def changes(self) -> list[StageChange]:
        """The kept rewrites, as the code writer takes them."""
        changes = []
        for fix in self._kept:
            candidate = fix.candidate
            facts = candidate.facts if candidate is not None else TrialFacts()
            changes.append(
                StageChange(
                    fix=fix.fix,  # type: ignore[arg-type]
                    stage_index=fix.stage_index,
                    semantics=candidate.semantics if candidate is not None else (),
                    value=facts.cycle_length or facts.threads or facts.elements,
                    vectorized_map=facts.vectorized_map,
                    element_unpacked=facts.element_unpacked,
                    cached_in_batches=facts.cached_in_batches,
                )
            )
        return changes

    def _measured(self) -> Prescription:
        kept, combined = [c for c in self.outcome.tried if c.kept], self.outcome.combined
        if len(kept) == 1:
            key = (kept[0].fix, kept[0].stage_index)
            rates = self.outcome.results.get(key, (None, None))[0]
            return self._prescribed(rates, None, self.outcome.capped.get(key))
        if len(kept) >= 2 and self._fell_back(kept, combined):
            return self._measured()
        if len(kept) >= 2:
            reason = None if combined else self.outcome.combined_reason
            return self._prescribed(combined, reason, self.outcome.combined_ceiling)
        reason = Reason("no-rewrite-helped" if self.outcome.tried else "no-rewrite-tried")
        return Prescription(tried=list(self.outcome.tried), reason=reason)

    def _fell_back(self, kept: list[PrescribedChange], combined: Rounds | None) -> bool:
        """Whether the kept rewrites together gained less than the first alone (then kept)."""
        together = at_ceiling(stage_cost.freed_from(combined), self.outcome.combined_ceiling)
        first = kept[0]
        if together is None or first.training_speedup is None:
            return False
        if together.speedup >= first.training_speedup:
            return False
        fell_back = Reason("fell-back", detail=fix_words_at(first.fix, first.stage))
        dropped = set(map(id, kept[1:]))
        self.outcome.tried = [
            replace(change, kept=False, reason=fell_back) if id(change) in dropped else change
            for change in self.outcome.tried
        ]
        self._kept = self._kept[:1]
        return True

    def _share_s(self, *, planned: int) -> float | None:
        return stage_cost.trial_share_s(self._until_s - self._clock.now(), planned)

    def _drop_covered(self, kept: FixPipelines) -> None:
        """The queued rewrites a kept cache makes moot, reported with why."""
        if (reason := covered_by_cache(kept, self._stages)) is None or kept.stage_index is None:
            return
        covered = stage_facts.upstream_of(self._stages, kept.stage_index)
        # A cheaper stage under the cache changes only the first epoch (`FixFacts.stage_work`).
        moot = [f for f in self._queue if fix_facts(f.fix).stage_work and f.stage_index in covered]
        self._queue = [f for f in self._queue if f not in moot]
        for fix in moot:
            self._add(fix, reason=reason, covered_by_cache=True)

    def _skip_rest(self, reason: Reason) -> None:
        for fix in self._queue:
            self._add(fix, reason=reason)
        self._queue = []

    def _add(
        self,
        fix: FixPipelines,
        *,
        freed: Freed | None = None,
        rounds: Rounds | None = None,
        kept: bool = False,
        reason: Reason | None = None,
        at_step_alone: bool = False,
        covered_by_cache: bool = False,
    ) -> None:
        shown = rounds if freed else None  # a rewrite with no gain shows no rates either
        after = [k.fix for k in self._kept]
        gain = gain_on_training(freed, shown, at_step_alone=at_step_alone, after=after)
        tried = _prescribed_change(
            fix, reason, kept=kept, covered_by_cache=covered_by_cache, **asdict(gain)
        )
        self.outcome.tried.append(tried)

    def _prescribed(
        self, rounds: Rounds | None, reason: Reason | None, ceiling: float | None = None
    ) -> Prescription:
        freed = at_ceiling(stage_cost.freed_from(rounds), ceiling)
        gain = gain_on_training(freed, rounds, at_step_alone=ceiling is not None)
        return Prescription(
            tried=list(self.outcome.tried), reason=reason if freed is None else None, **asdict(gain)
        )


def at_ceiling(freed: Freed | None, ceiling: float | None) -> Freed | None:
    """A rewrite's gain, the variant's rate taken at `ceiling` where it ran above: no pipeline
    feeds a step faster than it runs (docs/design.md, "The pipeline pipediag would write")."""
    held = None if freed is None else freed.held_steps_per_s
    if freed is None or ceiling is None or held is None or held <= ceiling:
        return freed
    scale = ceiling / held
    low = None if freed.low is None else freed.low * scale
    high = None if freed.high is None else freed.high * scale
    return Freed(freed.speedup * scale, low, high, ceiling)


def covered_by_cache(kept: FixPipelines, stages: Sequence[StageStats]) -> Reason | None:
    """Why the rewrites at and before a kept cache are not tried; None for no cache."""
    index = kept.stage_index
    if not fix_facts(kept.fix).caches or index is None or not 0 <= index < len(stages):
        return None
    return Reason("covered-by-cache", detail=kept.stage or stages[index].name or stages[index].kind)


def _not_kept(freed: Freed | None) -> Reason:
    """Why a measured rewrite was not kept, without its figure (the report shows it)."""
    if freed is None:
        return Reason("too-few-steps")
    if freed.low is None:
        return Reason("too-few-rounds")
    if freed.high is not None and freed.high < 1.0:
        return Reason("slower")  # not "under the worth-it 1.05x": 0.71x (0.64-0.78x) is a loss
    if freed.speedup < stage_facts.VERIFIED_MIN_GAIN:
        return Reason("under-worth-it", limit=stage_facts.VERIFIED_MIN_GAIN)
    return Reason("interval-reaches-one")


def order_for_search(
    fixes: Sequence[FixPipelines], stages: Sequence[StageStats]
) -> tuple[list[FixPipelines], list[PrescribedChange]]:
    """The rewrites to try, largest pipeline-alone gain first, and those bounded out."""
    tried: list[FixPipelines] = []
    skipped: list[PrescribedChange] = []
    for fix in fixes:
        if (why := bounded_out(fix, stages)) is None:
            tried.append(fix)
        else:
            skipped.append(_prescribed_change(fix, why))
    tried.sort(key=lambda f: (-f.pipeline_speedup, -1 if f.stage_index is None else f.stage_index))
    return tried, skipped


def _prescribed_change(fix: FixPipelines, reason: Reason | None, **fields: Any) -> PrescribedChange:
    """A rewrite as the prescription lists it, tried (`fields`: its gain) or skipped."""
    return PrescribedChange(
        fix=fix.fix,  # type: ignore[arg-type]
        stage_index=fix.stage_index,
        stage=fix.stage,
        reason=reason,
        **fields,
    )


def with_prescription(
    pipeline: PipelineBenchmark, trials: PipelineSearch, *, ceiling: float | None
) -> PipelineBenchmark:
    """The pipeline with each rewrite's trial on training and the prescription."""
    prescription = trials.prescription(pipeline.stages)
    after = {(c.fix, c.stage_index): c.after for c in prescription.tried if c.after}
    untried = {
        (c.fix, c.stage_index): c
        for c in prescription.tried
        if c.training_speedup is None and c.reason
    }
    updated, ceiling = [], stage_cost.held_ceiling(pipeline.stages, ceiling)
    for trial in with_training_results(pipeline.trials, trials.outcome.results, ceiling=ceiling):
        key = (trial.fix, trial.stage_index)
        if trial.training is not None and key in after:
            trial = replace(trial, training=replace(trial.training, after=after[key]))
        change = untried.get(key)
        if change is not None and trial.training is None and not trial.training_reason:
            facts = replace(trial.facts, covered_by_cache=change.covered_by_cache)
            trial = replace(trial, training_reason=change.reason, facts=facts)
        updated.append(trial)
    return replace(pipeline, trials=updated, prescription=prescription)


def with_training_results(
    trials: list[FixTrial], results: TrialResults, *, ceiling: float | None
) -> list[FixTrial]:
    """The fix trials with what each measured on training, at most `ceiling` (`with_training`)."""
    found = [(trial, results.get((trial.fix, trial.stage_index))) for trial in trials]
    return [t if f is None else with_training(t, *f, ceiling=ceiling) for t, f in found]
