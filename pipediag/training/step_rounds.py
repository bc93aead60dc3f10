"""A change measured on the train step alone: its two sides (a synced call of each train
function), their interleaved rounds within a share of the budget, and their rates read as a
whole run's gain, with fit's own time around the train function on both sides
(`analysis/run_terms.py`; docs/design.md, "When the model sets the rate").

Shared by the model-side trials under fit (`model_side.py`), the host-to-device copy
(`device_copy.py`) and XLA on a custom loop's step (`loop_xla.py`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from pipediag.analysis.paired import OVERRUN, SLICES_PER_SHARE, STEP_SLICES, TRIAL_MIN_ROUNDS
from pipediag.analysis.run_terms import fit_added_s, in_run_terms
from pipediag.bench.interleaved import (
    Rounds,
    run_rounds,
)
from pipediag.bench.pipeline import BatchTiming
from pipediag.clock import Clock
from pipediag.report.model_side import ModelChange, ModelTrial
from pipediag.report.reasons import TOO_FEW_STEPS, Reason
from pipediag.training.pull_slice import from_ends

# One call of a side's train function, synced; the batches it trains.
Call = Callable[[], None]


@dataclass(frozen=True)
class Side:
    """One side of a trial: a call of its train function and the batches a call trains."""

    call: Call
    batches_per_call: int = 1


def timed(side: Side, clock: Clock) -> Callable[[float], BatchTiming]:
    """A side's read for the rounds: calls until `seconds` have passed (one at least), a
    latency per batch. Both sides are warm before the rounds, so no call is left untimed."""

    def run(seconds: float) -> BatchTiming:
        start = clock.now()
        cpu_from = time.process_time()
        ends = [start]
        while True:
            side.call()
            ends.append(clock.now())
            if ends[-1] >= start + seconds:
                break
        cpu_s = time.process_time() - cpu_from
        return from_ends(ends, per_call=side.batches_per_call, cpu_s=cpu_s)

    return run


def slice_seconds(call_s: float, share_s: float) -> float:
    """A slice for `SLICES_PER_SHARE` in the share, and never shorter than one call."""
    return max(call_s, STEP_SLICES.clamp(share_s / SLICES_PER_SHARE))


def trial_result(
    change: ModelChange,
    rounds: Rounds,
    *,
    fit_per_s: float | None,
    shared_by: int = 1,
    seconds: float = 0.0,
    around_s: float | None = None,
) -> ModelTrial:
    """A trial's rates and gain from its rounds, in the run's terms (`in_run_terms`, with
    fit's time around the train function from `around_s` or `fit_per_s`); the interval's
    ends go through the same arithmetic (it rises with the variant's rate)."""
    base, variant = rounds.rates()
    if base is None or variant is None or base <= 0 or variant <= 0:
        return ModelTrial(change, reason=Reason(TOO_FEW_STEPS), seconds=seconds)
    added_s = fit_added_s(around_s, fit_per_s, base)
    interval = None
    if rounds.interval is not None:
        low, high = rounds.interval
        interval = [
            in_run_terms(base, base * ratio, added_s, shared_by=shared_by) for ratio in (low, high)
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
) -> ModelTrial:
    """The rounds of one change within `share_s` seconds, both sides warmed first; read in
    the run's terms with fit's rate and its time around the train function from `facts`.
    The slices are sized on the measured step, `shared_by` of them a call where the variant
    runs several steps a call (steps_per_execution)."""
    call_s = facts.step_s * shared_by
    began = clock.now()
    baseline.call()
    variant.call()
    now = clock.now()
    left = max(0.0, began + share_s - now)
    rounds = run_rounds(
        timed(baseline, clock),
        timed(variant, clock),
        slice_s=slice_seconds(call_s, left),
        until_s=now + left,
        hard_until_s=now + left * OVERRUN,
        clock=clock,
    )
    return trial_result(
        change,
        rounds,
        fit_per_s=facts.fit_steps_per_s,
        shared_by=shared_by,
        seconds=clock.now() - began,
        around_s=facts.fit_overhead_s,
    )


@dataclass(frozen=True)
class FitFacts:
    """What the trials need to know of the run: the measured step, fit's rate (A), whether
    there is a GPU, the dtype policy to try with the reason where none fits, and what fit's
    steps took beyond their train function where it was measured."""

    step_s: float
    fit_steps_per_s: float | None
    gpu: bool
    policy: str
    policy_reason: Reason | None = None
    fit_overhead_s: float | None = None


def fewest_rounds_s(call_s: float) -> float:
    """The time a trial's fewest rounds take, at the shortest slices."""
    return 2 * TRIAL_MIN_ROUNDS * max(call_s, STEP_SLICES.shortest_s)
