"""A fix tried on training itself: the user's train step fed by the original pipeline and by
the fixed one, in turn.

Part of `training/`: under `fit` the compiled `train_function` runs on the unedited and the
fixed copy in alternating slices, every variable it writes put back; a custom loop is served
the two copies at its step budget (`LoopTrials`). Both sides run in the rounds of
`bench/interleaved.py`; a slice's first step, with its `iter()`, is the side's epoch start.
Method: (docs/design.md, "Fixes tried on training"), (docs/design.md, "Epoch starts in the
gains").
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from statistics import median
from typing import Any

from pipediag.analysis.paired import OVERRUN, SLICES_PER_SHARE, TRAINING_SLICES
from pipediag.bench.interleaved import (
    RoundPlan,
    Rounds,
)
from pipediag.bench.pipeline import BatchTiming
from pipediag.bench.teardown import TearDown
from pipediag.bench.whatif import FixPipelines, TrialSide
from pipediag.clock import Clock
from pipediag.report.model import FixTrial
from pipediag.report.reasons import (
    BACKEND_NO_FIX_TRIAL,
    FIX_TRIAL_BUDGET_SPENT,
    FIXED_PIPELINE_FAILED,
    LOOP_STOPPED_FIRST,
    NO_COMPILED_TRAIN_FUNCTION,
    STATEFUL_RANDOM_OP,
    TOO_FEW_STEPS,
    Reason,
    error_line,
)
from pipediag.training.compute_alone import (
    stateful_random_op,
    step_variables,
    sync_logs,
    variables_put_back,
)
from pipediag.training.function_loop import TrainCalls
from pipediag.training.loop_xla import captured_variables
from pipediag.training.pull_slice import MAX_STEPS_PER_SLICE, PullSlice

# A trial's time where the caller gives none: five rounds of two slices of ~0.25 s.
BUDGET_S = 3.0
# Steps per timed slice: enough for the scheduler's noise to average out within a slice,
# bounded in time so that five rounds fit a share of the budget.
SLICE_STEPS = 8

# What each fix measured on training, by (fix, stage index): its rounds, or why none.
TrialResults = dict[tuple[str, int | None], tuple[Rounds | None, Reason | None]]


def slice_seconds(step_s: float, share_s: float) -> float:
    """A slice long enough for `SLICE_STEPS` steps, short enough for five rounds in `share_s`."""
    by_share = max(share_s / SLICES_PER_SHARE, TRAINING_SLICES.shortest_s)
    return TRAINING_SLICES.clamp(min(SLICE_STEPS * step_s, by_share))


def with_training(trial: FixTrial, rounds: Rounds | None, reason: Reason | None) -> FixTrial:
    """`trial` with what its fix measured on training (or why it was not tried)."""
    if rounds is None:
        return replace(trial, training_reason=reason)
    base, fixed = rounds.rates()
    if base is None or fixed is None:
        return replace(trial, training_reason=reason or Reason(TOO_FEW_STEPS))
    facts = replace(trial.facts, training_stopped=rounds.stopped)
    if rounds.interval is not None:
        low, high = rounds.interval
        facts = replace(facts, training_speedup_low=low, training_speedup_high=high)
    return replace(
        trial,
        training_baseline_steps_per_s=base,
        training_variant_steps_per_s=fixed,
        training_speedup=fixed / base if base > 0 else None,
        training_rounds=len(rounds.ratios),
        training_baseline_start_s=epoch_start_s(rounds.baseline),
        training_variant_start_s=epoch_start_s(rounds.variant),
        facts=facts,
    )


def epoch_start_s(runs: Sequence[BatchTiming]) -> float | None:
    """What starting an epoch costs one side of a trial beyond a steady step: making a fresh
    iterator, and its first step over the side's median step, the median over the side's
    slices after its first, which may have traced the train function for the side's
    pipeline (docs/design.md, "Epoch starts in the gains").

    None where no slice tells.
    """
    starts = [s for s in (_start_s(run) for run in runs) if s is not None]
    if len(starts) >= 2:
        starts = starts[1:]
    return max(0.0, median(starts)) if starts else None


def _start_s(run: BatchTiming) -> float | None:
    if run.opened_s is None or run.first_batch_s is None or not run.latencies_s:
        return None
    return run.opened_s + run.first_batch_s - median(run.latencies_s)


# --- Keras fit -------------------------------------------------------------------------------


def try_on_fit(
    model: Any,
    fixes: Sequence[FixPipelines],
    *,
    clock: Clock,
    step_s: float,
    budget_s: float = BUDGET_S,
    teardown: TearDown,
) -> TrialResults:
    """Each fix's rounds on the model's train function, or why it was not tried.

    Every variable the steps write is put back afterwards; the caller keeps the pipeline's
    own variables (`bench.isolate.preserved_variables`). The JAX backend's step runs on a
    copy of fit's state instead (docs/design.md, "JAX").
    """
    from pipediag.training.fit_backend import on_jax, undriven

    backend = undriven(model)
    if backend is not None:
        blocked = Reason(BACKEND_NO_FIX_TRIAL, detail=backend)
        return {(f.fix, f.stage_index): (None, blocked) for f in fixes}
    per_call = max(1, int(getattr(model, "steps_per_execution", 1) or 1))
    # Each fix's sides read with one call of the train function, `per_call` steps.
    trials = functools.partial(
        trials_on,
        fixes,
        clock=clock,
        step_s=step_s * per_call,
        budget_s=budget_s,
        teardown=teardown,
    )
    if on_jax(model):
        # fit's jitted step on one copy of fit's state for all the fixes (docs/design.md, "JAX")
        from pipediag.training.jax_fit import JaxFitSteps, trainable

        blocked_by = trainable(model)
        if blocked_by is not None:
            return {(f.fix, f.stage_index): (None, blocked_by) for f in fixes}
        return trials(_FitSteps(JaxFitSteps(model).call, per_call, clock).read)
    train_function = getattr(model, "train_function", None)
    blocker = None if train_function is None else stateful_random_op(train_function)
    if train_function is None or blocker is not None:
        why = (
            Reason(NO_COMPILED_TRAIN_FUNCTION)
            if train_function is None
            else Reason(STATEFUL_RANDOM_OP, detail=blocker or "")
        )
        return {(f.fix, f.stage_index): (None, why) for f in fixes}
    distribute = _distributor(model)
    steps = _FitSteps(train_function, per_call, clock)
    with variables_put_back(step_variables(model)):
        return trials(steps.read, distribute=distribute)


def try_on_calls(
    calls: TrainCalls,
    fixes: Sequence[FixPipelines],
    *,
    clock: Clock,
    step_s: float,
    budget_s: float = BUDGET_S,
    teardown: TearDown,
) -> TrialResults:
    """Each fix's rounds on the tf.function a loop trains in, or why it was not tried: the
    function is called on a fresh tf.data iterator over each side (in place of the loop's
    own, a tf.distribute one included), its steps a call as the loop's last call ran; every
    variable it captures is put back afterwards (the optimizer's step counter with them).
    The caller keeps the pipeline's own variables (`bench.isolate.preserved_variables`)."""
    train = calls.trained_on()
    if isinstance(train, Reason):
        return {(f.fix, f.stage_index): (None, train) for f in fixes}
    per_call = max(1, calls.steps_per_call)
    steps = _FitSteps(train, per_call, clock)
    with variables_put_back(captured_variables(calls.function)):
        calls.trace_for_trials(train)
        return trials_on(
            fixes,
            steps.read,
            clock=clock,
            step_s=step_s * per_call,
            budget_s=budget_s,
            teardown=teardown,
        )


def trials_on(
    fixes: Sequence[FixPipelines],
    read: Callable[[Iterator[Any], float], BatchTiming],
    *,
    clock: Clock,
    step_s: float,
    budget_s: float,
    teardown: TearDown,
    distribute: Callable[[Any], Any] = lambda dataset: dataset,
) -> TrialResults:
    """Each fix's rounds, each side read with `read` (a train function's calls), or why it
    was not tried (`FixRounds`). `step_s`: one read call."""
    plan = FixRounds(
        fixes,
        clock=clock,
        step_s=step_s,
        budget_s=budget_s,
        teardown=teardown,
        read=read,
        distribute=distribute,
    )
    while (due := plan.next_slice()) is not None:
        side, seconds = due
        try:
            timing = plan.side(side).run(seconds)
        except Exception as exc:
            plan.fail(exc)
            continue
        plan.record(side, timing)
    return plan.results()


class FixRounds:
    """The fixes' rounds on training, one fix after another, each in an equal share of what
    is left of `budget_s`: which side of which fix runs next, for how long, and what each
    fix measured, or why it was not tried. Fit runs the slices itself (`trials_on`); a
    custom loop's pulls run them (`LoopTrials`).

    `read` times a side's run on an iterator (fit: the train function's calls; None where
    the loop's own steps are timed); `distribute` hands a copy to the train function as fit
    would (through the strategy).
    """

    def __init__(
        self,
        fixes: Sequence[FixPipelines],
        *,
        clock: Clock,
        step_s: float,
        budget_s: float,
        teardown: TearDown,
        read: Callable[[Iterator[Any], float], BatchTiming] | None = None,
        distribute: Callable[[Any], Any] = lambda dataset: dataset,
    ) -> None:
        self._fixes = list(fixes)
        self._clock = clock
        self._step_s = step_s
        self._teardown = teardown
        self._read = read
        self._distribute = distribute
        self._end_s = clock.now() + budget_s
        self._position = -1
        self._plan: RoundPlan | None = None
        self._sides: list[TrialSide] = []
        self._results: TrialResults = {}

    def next_slice(self) -> tuple[int, float] | None:
        """The side due next (0 the copy as it is, 1 the fixed one) and its seconds, moving
        on to the next fix when one's rounds are over; None once every fix is done. A side
        that fails to be made (a cache that cannot fill) fails its fix."""
        while True:
            if self._plan is not None:
                due = self._plan.next_slice()
                if due is not None:
                    return due
                self._close_fix()
            self._position += 1
            if self._position >= len(self._fixes):
                return None
            left = len(self._fixes) - self._position
            share_s = max(0.0, self._end_s - self._clock.now()) / left
            fix = self._fixes[self._position]
            if share_s < 4 * TRAINING_SLICES.shortest_s:
                self._results[(fix.fix, fix.stage_index)] = (None, Reason(FIX_TRIAL_BUDGET_SPENT))
                continue
            try:
                self._sides = [
                    TrialSide(self._distribute(d), self._teardown, self._clock, f, self._read)
                    for d, f in (
                        (fix.baseline, fix.baseline_fill_batches),
                        (fix.variant, fix.fill_batches),
                    )
                ]
            except Exception as exc:
                self.fail(exc)
                continue
            # The share starts once a held copy or a cache is filled.
            now = self._clock.now()
            self._plan = RoundPlan(
                slice_s=slice_seconds(self._step_s, share_s),
                until_s=now + share_s,
                hard_until_s=now + share_s * OVERRUN,
                clock=self._clock,
            )

    def side(self, index: int) -> TrialSide:
        """The current fix's side `index`."""
        return self._sides[index]

    def record(self, side: int, timing: BatchTiming) -> None:
        """The timing of the slice `next_slice` gave."""
        if self._plan is not None:
            self._plan.record(side, timing)

    def fail(self, exc: BaseException) -> None:
        """The current fix failed on training: not measured, and the next one goes on."""
        fix = self._fixes[self._position]
        self._results[(fix.fix, fix.stage_index)] = (None, _failure(exc))
        self._plan = None
        self._close_sides()

    def results(self) -> TrialResults:
        """What each fix measured; where the loop stopped pulling first, the fix under way
        as it stands and the rest unmeasured."""
        if self._plan is not None and 0 <= self._position < len(self._fixes):
            self._close_fix()
        for fix in self._fixes:
            self._results.setdefault((fix.fix, fix.stage_index), (None, Reason(LOOP_STOPPED_FIRST)))
        return self._results

    def _close_fix(self) -> None:
        fix = self._fixes[self._position]
        assert self._plan is not None
        self._results.setdefault((fix.fix, fix.stage_index), (self._plan.rounds(), None))
        self._plan = None
        self._close_sides()

    def _close_sides(self) -> None:
        for side in self._sides:
            side.close()
        self._sides = []


def _distributor(model: Any) -> Callable[[Any], Any]:
    """How fit hands a dataset to its train function: through the strategy (a plain
    dataset under the default one)."""
    strategy = getattr(model, "distribute_strategy", None)
    if strategy is None or getattr(strategy, "num_replicas_in_sync", 1) <= 1:
        return lambda dataset: dataset
    distribute: Callable[[Any], Any] = strategy.experimental_distribute_dataset
    return distribute


class _FitSteps:
    """Reads a run with the model's train function: one timed call after an untimed one."""

    def __init__(self, train_function: Callable[[Any], Any], per_call: int, clock: Clock) -> None:
        self._train = train_function
        self._per_call = per_call
        self._clock = clock

    def read(self, iterator: Iterator[Any], max_seconds: float) -> BatchTiming:
        start = self._clock.now()
        if not self._step(iterator):
            return BatchTiming(None, [], 0.0, exhausted=True)
        first_s = self._clock.now() - start
        cpu_from = time.process_time()
        ends = [self._clock.now()]
        deadline = start + max_seconds
        exhausted = False
        while len(ends) <= MAX_STEPS_PER_SLICE and ends[-1] < deadline:
            if not self._step(iterator):
                exhausted = True
                break
            ends.append(self._clock.now())
        cpu_s = time.process_time() - cpu_from
        # One call trains `per_call` batches: a latency per batch, as fit counts steps.
        latencies = [
            (b - a) / self._per_call for a, b in zip(ends, ends[1:], strict=False)
        ] * self._per_call
        if latencies and self._per_call > 1:
            # The first batch's time, as a loop's is: the call's other batches at the steady step.
            first_s -= (self._per_call - 1) * median(latencies)
        return BatchTiming(first_s, latencies, ends[-1] - ends[0], exhausted, cpu_s)

    def _step(self, iterator: Iterator[Any]) -> bool:
        """One call of the train function; False when the iterator is spent."""
        import tensorflow as tf

        try:
            sync_logs(self._train(iterator))
        except (StopIteration, tf.errors.OutOfRangeError):
            return False
        return True


def _failure(exc: BaseException) -> Reason:
    """In one line: Keras wraps a layer's error in a generic first line, so the lines that
    say what went wrong are joined."""
    return Reason(FIXED_PIPELINE_FAILED, detail=error_line(exc, 240))


# --- custom loops ----------------------------------------------------------------------------


class LoopTrials:
    """Serves a custom loop from the copies of each fix in turn, timing its steps
    (`FixRounds` decides which side of which fix is due).

    The loop's iterator hook calls `next_batch()` on each pull; it returns a batch from the
    side that is due, and None once every fix has been tried (the hook then ends the script
    at the step budget). `results()` gives each fix's rounds.
    """

    def __init__(
        self,
        fixes: Sequence[FixPipelines],
        *,
        clock: Clock,
        step_s: float,
        teardown: TearDown,
        budget_s: float = BUDGET_S,
    ) -> None:
        self._clock = clock
        self._rounds = FixRounds(
            fixes, clock=clock, step_s=step_s, budget_s=budget_s, teardown=teardown
        )
        self._slice: PullSlice | None = None
        self.began = clock.now()

    def next_batch(self) -> Any | None:
        now = self._clock.now()
        while True:
            current = self._slice
            if current is not None:
                current.pull(now)
                if not current.over(now):
                    try:
                        return self._pull(current)
                    except _SideSpent:
                        continue  # the slice ended with its data; the next one is due
                    except Exception as exc:
                        self._fail(exc)
                        continue
                self._finish_slice(current)
            due = self._rounds.next_slice()
            if due is None:
                return None
            side, seconds = due
            opening = self._clock.now()
            try:
                iterator = self._rounds.side(side).open()
            except Exception as exc:
                self._fail(exc)
                continue
            now = self._clock.now()
            opened_s = now - opening
            self._slice = PullSlice(side, seconds, now, True, iterator, opened_s)

    def results(self) -> TrialResults:
        """What each fix measured; a loop that stopped pulling leaves the rest unmeasured."""
        if self._slice is not None:
            self._finish_slice(self._slice, timed=False)
        return self._rounds.results()

    def _fail(self, exc: BaseException) -> None:
        """The fixed pipeline failed in the loop: this fix is not measured, the next goes on."""
        if self._slice is not None:
            self._rounds.side(self._slice.side).release(self._slice.iterator)
            self._slice = None
        self._rounds.fail(exc)

    # -- one slice --
    def _pull(self, current: PullSlice) -> Any:
        try:
            return next(current.iterator)
        except StopIteration:
            current.exhausted = True
            self._finish_slice(current)
            raise _SideSpent from None

    def _finish_slice(self, current: PullSlice, *, timed: bool = True) -> None:
        self._slice = None
        self._rounds.side(current.side).release(current.iterator)
        if timed:
            self._rounds.record(current.side, current.timing())


class _SideSpent(Exception):
    """A side's iterator ran out within its slice: the slice ends there."""
