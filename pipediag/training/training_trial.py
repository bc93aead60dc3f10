"""A fix tried on training itself: the user's train step fed by the original pipeline and by the
fixed one in alternating slices, every variable it writes put back; a loop's slices are timed by its
pulls (`PullSlice`). (docs/design.md, "Fixes tried on training", "Epoch starts in the gains")."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from statistics import median
from typing import Any

from pipediag.analysis import paired
from pipediag.analysis.stage_bisect import Freed
from pipediag.bench.interleaved import RoundPlan, Rounds, median_rate, run_slices
from pipediag.bench.pipeline import BatchTiming, from_ends, time_iterator
from pipediag.bench.teardown import TearDown
from pipediag.bench.whatif import FixPipelines, TrialSide
from pipediag.clock import Clock
from pipediag.report.prescription import GainOnTraining
from pipediag.report.reasons import Reason, error_line
from pipediag.report.trials import FixTrial
from pipediag.training.compute_alone import sync_logs
from pipediag.training.driver import TrainDriver, as_is, fit_driver
from pipediag.training.function_loop import TrainCalls
from pipediag.training.step_rounds import round_plan

# A slice never times more steps than this (sub-millisecond steps).
MAX_STEPS_PER_SLICE = 2000
# What a fix measured on training: its rounds, or why none.
Trial = tuple[Rounds | None, Reason | None]
# Each fix's, by (fix, stage index).
TrialResults = dict[tuple[str, int | None], Trial]


def slice_seconds(step_s: float, share_s: float) -> float:
    """A slice of at most `TRAINING_SLICE_STEPS` steps, short enough for five rounds a share."""
    at_most_s = paired.TRAINING_SLICE_STEPS * step_s
    return paired.planned_slice_s(
        share_s, slices=paired.SLICES_PER_SHARE, bounds=paired.TRAINING_SLICES, at_most_s=at_most_s
    )


def with_training(
    trial: FixTrial, rounds: Rounds | None, reason: Reason | None, *, ceiling: float | None = None
) -> FixTrial:
    """`trial` with what its fix measured on training (or why not); a fixed rate above
    `ceiling` is taken at it, its interval scaled and `at_step_alone` set."""
    if rounds is None:
        return replace(trial, training_reason=reason)
    base, fixed = rounds.rates()  # a base rate is above 0
    if base is None or fixed is None:
        return replace(trial, training_reason=reason or Reason("too-few-steps"))
    low, high = rounds.interval or (None, None)
    at_step_alone = ceiling is not None and fixed > ceiling
    if ceiling is not None and at_step_alone:
        scale = ceiling / fixed
        low = None if low is None else low * scale
        high = None if high is None else high * scale
        fixed = ceiling
    freed = Freed(fixed / base, low=low, high=high, held_steps_per_s=fixed)
    return replace(trial, training=gain_on_training(freed, rounds, at_step_alone=at_step_alone))


def gain_on_training(
    freed: Freed | None, rounds: Rounds | None, *, at_step_alone: bool, after: Sequence[str] = ()
) -> GainOnTraining:
    """A trial's gain on training; its baseline rate, epoch starts and rounds from `rounds`."""
    return GainOnTraining(
        training_speedup=freed.speedup if freed else None,
        training_speedup_low=freed.low if freed else None,
        training_speedup_high=freed.high if freed else None,
        baseline_steps_per_s=median_rate(rounds.baseline) if rounds else None,
        variant_steps_per_s=freed.held_steps_per_s if freed else None,
        at_step_alone=at_step_alone and freed is not None,
        baseline_start_s=epoch_start_s(rounds.baseline) if rounds else None,
        variant_start_s=epoch_start_s(rounds.variant) if rounds else None,
        rounds=len(rounds.ratios) if rounds else 0,
        stopped=rounds.stopped if rounds else "",
        after=list(after),  # type: ignore[arg-type]
    )


def epoch_start_s(runs: Sequence[BatchTiming]) -> float | None:
    """What starting an epoch costs one side beyond a steady step, its first slice (which may
    have traced) left out (docs/design.md, "Epoch starts in the gains")."""
    starts = [
        run.opened_s + run.first_batch_s - median(run.latencies_s)
        for run in runs
        if run.opened_s is not None and run.first_batch_s is not None and run.latencies_s
    ]
    if len(starts) >= 2:
        starts = starts[1:]
    return max(0.0, median(starts)) if starts else None


def try_at_once(
    trainer: Any,
    fix: FixPipelines,
    *,
    clock: Clock,
    step_s: float,
    budget_s: float = paired.TRAINING_TRIAL_S,
    teardown: TearDown,
) -> Trial:
    """The fix's rounds on fit's train function or a loop's tf.function, or why not tried;
    the trained variables are put back after the trial, the caller keeps the pipeline's own."""
    calls = trainer if isinstance(trainer, TrainCalls) else None
    driver = calls.driver() if calls is not None else fit_driver(trainer, "backend-no-fix-trial")
    if isinstance(driver, Reason):
        return None, driver
    with driver.restoring():
        if calls is not None:
            # Its warm-up call trains: within the put-back.
            calls.trace_for_trials(driver.train)
        plan = FixRounds(
            fix,
            clock=clock,
            step_s=step_s * driver.batches_per_call,
            budget_s=budget_s,
            teardown=teardown,
            read=_FitSteps(driver, clock).read,
            distribute=driver.distribute,
        )
        run_slices(plan, plan.run_at_once)
        return plan.result()


class FixRounds:
    """One fix's rounds on training within `budget_s`. `read` times a side on an iterator
    (None: the loop's pulls time it); `distribute` hands fit a copy as fit would."""

    def __init__(
        self,
        fix: FixPipelines,
        *,
        clock: Clock,
        step_s: float,
        budget_s: float,
        teardown: TearDown,
        read: Callable[[Iterator[Any], float], BatchTiming] | None = None,
        distribute: Callable[[Any], Any] = as_is,
    ) -> None:
        self._fix, self._clock = fix, clock
        self._step_s, self._teardown = step_s, teardown
        self._read, self._distribute = read, distribute
        self._end_s = clock.now() + budget_s
        self._plan: RoundPlan | None = None
        self._sides: list[TrialSide] = []
        self._result: Trial | None = None

    def next_slice(self) -> tuple[int, float] | None:
        """The side due next (1: the fixed one) and its seconds; None once the fix is done."""
        if self._plan is None and self._result is None:
            self._start()
        if self._plan is None:
            return None
        if (due := self._plan.next_slice()) is None:
            self._finish((self._plan.rounds(), None))
        return due

    def side(self, index: int) -> TrialSide:
        return self._sides[index]

    def record(self, side: int, timing: BatchTiming) -> None:
        if self._plan is not None:
            self._plan.record(side, timing)

    def run_at_once(self, side: int, seconds: float) -> BatchTiming | None:
        """A slice run here, not by a loop's pulls; None where the fixed pipeline failed."""
        try:
            return self._sides[side].run(seconds)
        except Exception as exc:
            self.fail(exc)
            return None

    def fail(self, exc: BaseException) -> None:
        # Keras wraps a layer's error in a generic first line: the lines are joined.
        self._finish((None, Reason("fixed-pipeline-failed", detail=error_line(exc, 240))))

    def result(self) -> Trial:
        """What the fix measured; its rounds as they stand where the loop stopped first."""
        if self._plan is not None:
            self._finish((self._plan.rounds(), None))
        return self._result or (None, Reason("loop-stopped-first"))

    def _start(self) -> None:
        share_s = max(0.0, self._end_s - self._clock.now())
        if share_s < paired.TRIAL_MIN_SHARE_SLICES * paired.TRAINING_SLICES.shortest_s:
            self._result = (None, Reason("fix-trial-budget-spent"))
            return
        fix = self._fix
        inputs = ((fix.baseline, fix.baseline_fill_batches), (fix.variant, fix.fill_batches))
        try:
            self._sides = [
                TrialSide(self._distribute(d), self._teardown, self._clock, f, self._read)
                for d, f in inputs
            ]
        except Exception as exc:
            self.fail(exc)
            return
        # The share starts once a held copy or a cache is filled (a fill that fails, fails it).
        slice_s = slice_seconds(self._step_s, share_s)
        self._plan = round_plan(slice_s, share_s, now=self._clock.now(), clock=self._clock)

    def _finish(self, result: Trial) -> None:
        self._result = result
        self._plan = None
        self._sides = []  # nothing outlives a run: each run's iterator is torn down


@dataclass(eq=False)
class _FitSteps:
    """Reads a run with a train function, its first call timed apart (the epoch start)."""

    driver: TrainDriver
    clock: Clock

    def read(self, iterator: Iterator[Any], max_seconds: float) -> BatchTiming:
        calls = self._calls(iterator)
        timing = time_iterator(
            calls, max_batches=MAX_STEPS_PER_SLICE, max_seconds=max_seconds, clock=self.clock
        )
        if (per_call := self.driver.batches_per_call) == 1 or not timing.latencies_s:
            return timing
        latencies = [s / per_call for s in timing.latencies_s for _ in range(per_call)]
        # The first batch alone, as a loop's: the call's others at the steady step.
        first_s = (timing.first_batch_s or 0.0) - (per_call - 1) * median(latencies)
        return replace(timing, latencies_s=latencies, first_batch_s=first_s)

    def _calls(self, iterator: Iterator[Any]) -> Iterator[None]:
        """One call of the train function a `next()`, until the iterator is spent."""
        import tensorflow as tf

        while True:
            try:
                sync_logs(self.driver.train(iterator))
            except (StopIteration, tf.errors.OutOfRangeError):
                return
            yield


@dataclass
class PullSlice:
    """A side's slice; `first_untimed`: a fresh `iterator`'s first step, timed apart."""

    side: int
    seconds: float
    began: float
    first_untimed: bool = False
    iterator: Any = None
    opened_s: float | None = None
    pulls: list[float] = field(default_factory=list)
    cpu_from: float | None = None
    exhausted: bool = False

    def pull(self, now: float) -> None:
        """A pull at `now`: the step before it ends, the next begins."""
        self.pulls.append(now)
        if self.cpu_from is None and len(self.pulls) == 1 + self.first_untimed:
            self.cpu_from = time.process_time()

    def over(self, now: float) -> bool:
        timed = len(self.pulls) - 1 - self.first_untimed
        return timed >= MAX_STEPS_PER_SLICE or now >= self.began + self.seconds

    def timing(self) -> BatchTiming:
        """What the slice's timed steps took, and their process CPU."""
        start, pulls = int(self.first_untimed), self.pulls
        if len(pulls) <= start:
            return BatchTiming(None, [], 0.0, exhausted=True)
        return from_ends(
            pulls[start:],
            first_s=pulls[1] - pulls[0] if self.first_untimed else None,
            exhausted=self.exhausted,
            cpu_s=None if self.cpu_from is None else time.process_time() - self.cpu_from,
            opened_s=self.opened_s,
        )
