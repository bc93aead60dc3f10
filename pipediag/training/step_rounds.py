"""A change measured on the train step alone: interleaved rounds of a synced call of each
side's train function, read as a whole run's gain with fit's own time around the train
function (docs/design.md, "When the model sets the rate")."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from pipediag.analysis import paired
from pipediag.analysis.run_terms import fit_added_s, in_run_terms
from pipediag.bench.interleaved import RoundPlan, Rounds, run_slices
from pipediag.bench.pipeline import BatchTiming, from_ends
from pipediag.clock import Clock
from pipediag.report.model_side import ModelChange, ModelTrial
from pipediag.report.reasons import Reason

# One call of a side's train function, synced.
Call = Callable[[], None]


@dataclass(frozen=True)
class Side:
    """One side of a trial: a call of its train function and the batches a call trains."""

    call: Call
    batches_per_call: int = 1


def timed(side: Side, clock: Clock) -> Callable[[float], BatchTiming]:
    """A side's read: calls until `seconds` have passed, all timed (both sides are warm)."""

    def run(seconds: float) -> BatchTiming:
        start, cpu_from = clock.now(), time.process_time()
        ends = [start]
        while len(ends) == 1 or ends[-1] < start + seconds:
            side.call()
            ends.append(clock.now())
        return from_ends(ends, per_call=side.batches_per_call, cpu_s=time.process_time() - cpu_from)

    return run


def round_plan(slice_s: float, share_s: float, *, now: float, clock: Clock) -> RoundPlan:
    """A share's rounds from `now`, fit's or a loop's: none starts past `OVERRUN` shares."""
    hard_until_s = now + share_s * paired.OVERRUN
    return RoundPlan(slice_s=slice_s, until_s=now + share_s, hard_until_s=hard_until_s, clock=clock)


def slice_seconds(call_s: float, share_s: float) -> float:
    """A slice for `SLICES_PER_SHARE` in the share, and never shorter than one call."""
    return paired.planned_slice_s(
        share_s, slices=paired.SLICES_PER_SHARE, bounds=paired.STEP_SLICES, at_least_s=call_s
    )


def trial_result(
    change: ModelChange,
    rounds: Rounds,
    *,
    fit_per_s: float | None,
    shared_by: int = 1,
    seconds: float = 0.0,
    around_s: float | None = None,
) -> ModelTrial:
    """A trial's rates and gain from its rounds, in the run's terms (`in_run_terms`)."""
    base, variant = rounds.rates()
    if base is None or variant is None or base <= 0 or variant <= 0:
        return ModelTrial(change, reason=Reason("too-few-steps"), seconds=seconds)
    added_s, interval = fit_added_s(around_s, fit_per_s, base), None
    if rounds.interval is not None:
        interval = [
            in_run_terms(base, base * r, added_s, shared_by=shared_by) for r in rounds.interval
        ]
    return ModelTrial(
        change,
        baseline_steps_per_s=base,
        variant_steps_per_s=variant,
        speedup=in_run_terms(base, variant, added_s, shared_by=shared_by),
        interval=interval,
        rounds=len(rounds.ratios),
        stopped=rounds.stopped,
        seconds=seconds,
    )


def measure(
    change: ModelChange,
    baseline: Side,
    variant: Side,
    facts: FitFacts,
    *,
    clock: Clock,
    share_s: float,
    shared_by: int = 1,
    built_from: float | None = None,
) -> ModelTrial:
    """The rounds of one change within `share_s`, both sides warmed first; `shared_by`: the
    variant's steps a call. `built_from`: its build's start, counted in the trial's seconds."""
    built_s = None if built_from is None else clock.now() - built_from
    call_s = facts.step_s * shared_by
    if built_s is not None:
        share_s = max(share_s - built_s, fewest_rounds_s(call_s))
    began = clock.now()
    baseline.call()
    variant.call()
    now = clock.now()
    left = max(0.0, began + share_s - now)
    plan = round_plan(slice_seconds(call_s, left), left, now=now, clock=clock)
    sides = (timed(baseline, clock), timed(variant, clock))
    run_slices(plan, lambda side, seconds: sides[side](seconds))
    return trial_result(
        change,
        plan.rounds(),
        fit_per_s=facts.fit_steps_per_s,
        shared_by=shared_by,
        seconds=clock.now() - began + (built_s or 0.0),
        around_s=facts.fit_overhead_s,
    )


@dataclass(frozen=True)
class FitFacts:
    """What the trials need to know of the run (`fit_overhead_s`: fit's own time a step)."""

    step_s: float
    fit_steps_per_s: float | None
    gpu: bool
    policy: str
    policy_reason: Reason | None = None
    fit_overhead_s: float | None = None


def fewest_rounds_s(call_s: float) -> float:
    """The time a trial's fewest rounds take, at the shortest slices."""
    return 2 * paired.TRIAL_MIN_ROUNDS * max(call_s, paired.STEP_SLICES.shortest_s)
