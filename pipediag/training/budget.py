"""A custom loop at its step budget: what pipediag serves it until the budget ends the script.

Part of `training/`, and the one place that state lives: once the measured steps are done,
the loop's hook (`hooks/tfdata.py`) answers each pull on the training dataset from here. The
loop is served the alternation's blocks, then the stage holds and the rewrites' copies
(`LoopSearch`), and the session is told three times (`concluded`, `held`, `tried`). Then the
budget ends the script. Order and rationale: (docs/design.md, "The flow of one diagnosis").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pipediag.bench.teardown import TearDown
from pipediag.clock import Clock
from pipediag.report.model import ComputeAlone
from pipediag.report.model_side import JIT_COMPILE, ModelTrial
from pipediag.report.vocabulary import (
    CACHED_BATCH_LOOP,
    STEP_ALONE_BLOCK,
    TRAINING_BLOCK,
    RateBlockKind,
)
from pipediag.training.alternation import WARMUP_STEPS, Alternation
from pipediag.training.loop_profile import LoopProfile, OpsFound, Profiler, keras_layer_names
from pipediag.training.loop_search import HoldPlan, LoopSearch
from pipediag.training.loop_xla import LoopStep, LoopXlaTrial
from pipediag.training.stage_cost import Searched, StageSearch

if TYPE_CHECKING:
    from pipediag.training.prescription import PipelineSearch, SearchPlan


@dataclass(frozen=True)
class LoopWork:
    """What the loop is served after the alternation: the stage-hold search, then the
    rewrites' (none of either: the budget ends the script)."""

    holds: HoldPlan | None = None
    search: SearchPlan | None = None
    # Seconds for XLA on the loop's own train step, tried last (None: not tried).
    model_s: float | None = None


# The alternation is over: what to serve the loop next.
Concluded = Callable[[ComputeAlone], LoopWork]
# The rewrites' search is over (or the loop stopped during it), and when it began.
Tried = Callable[["PipelineSearch", float], None]
# The stage holds are over: what they measured, and when they began.
Held = Callable[[Searched, float], None]
# The model-side trial on the loop's step is over: what it measured, and when it began.
ModelTried = Callable[[ModelTrial, float], None]
# The profiler window over the loop's steps is over: what it found, and when it began.
OpsProfiled = Callable[[OpsFound, float], None]


@dataclass(frozen=True)
class CachedBatch:
    """The batch the loop pulled last, served for the step-alone blocks, and a pull from an
    iterator over that batch alone, which each step-alone step pays in place of the loop's
    own pull: a step of the script's loop pays an iterator's `next()` even where input is
    free (about 0.7 ms a pull in eager mode on a 2-core host, 2% of a 35 ms step), and
    FastFlow's T, the script fed `take(1).cache().repeat()`, pays it too (docs/design.md,
    "Rates in alternation"). None where no such iterator could be made."""

    batch: Any
    pull: Callable[[], object] | None = None


class _Pull:
    """The answer that lets a pull through to the loop's own pipeline (a training block)."""


PULL = _Pull()


class Phase(Protocol):
    """The session's progress line (`redraw=False` here: the user's code runs and prints)."""

    def __call__(
        self, what: str, budget_s: float | None = None, *, redraw: bool = True
    ) -> None: ...


class BudgetServer:
    """Serves a custom loop at its step budget: its last batch and its own pulls in turn,
    then the fixes' copies, then the held copies.

    Args:
        cached: the batch the loop pulled last, served for the step-alone blocks, with the
            pull each of their steps pays.
        alternation: the schedule of training and step-alone blocks it serves first (its
            block size, its lead, its rounds).
        clock: the session's clock.
        origin: the session's start on that clock (the blocks' spans are relative to it).
        step_s: the measured steps' median, which sizes the blocks and the trials.
        lockstep: a multi-worker job: every step counted (a step across an epoch's end is
            otherwise not timed).
        phase: the session's progress line.
        concluded: called once the alternation is over; returns what to serve next.
        tried: called once the trials are over, or the loop stopped pulling during them.
        teardown: where the trial copies' spent iterators are released.
        held: called once the stage holds are over, or the loop stopped during them.
        sync: waits for the device's work in flight (a JAX loop's, `training/jax_sync.py`),
            called where a block starts or ends; None where steps end when they return.
        model_tried: called once XLA was tried on the loop's train step (`found_step`),
            or the loop stopped during it.
        ops_profiled: called once the profiler window over the loop's steps, served right
            before XLA, is over (or the loop stopped during it).
        profiler: makes the window's profiler session.
    """

    def __init__(
        self,
        cached: CachedBatch,
        alternation: Alternation,
        *,
        clock: Clock,
        origin: float,
        step_s: float,
        lockstep: bool,
        phase: Phase,
        concluded: Concluded,
        tried: Tried,
        teardown: TearDown,
        held: Held | None = None,
        sync: Callable[[], None] | None = None,
        model_tried: ModelTried | None = None,
        ops_profiled: OpsProfiled | None = None,
        profiler: Callable[[], Profiler] | None = None,
    ) -> None:
        self._clock = clock
        self._model_tried = model_tried
        self._ops_profiled = ops_profiled
        self._profiler = profiler
        self._profile: LoopProfile | None = None
        self._xla_s: float | None = None
        self._step: LoopStep | str | None = None
        self._model_s: float | None = None
        self._xla: LoopXlaTrial | None = None
        self._last_batch: Any = None  # kept past the alternation only for XLA
        self._sync = sync
        self._origin = origin
        self._step_s = step_s
        self._phase = phase
        self._concluded = concluded
        self._tried = tried
        self._held = held
        self._teardown = teardown
        self._batch: Any = cached.batch
        self._held_pull = cached.pull
        self._lockstep = lockstep
        self._alternation: Alternation | None = alternation
        self._warmup_left = WARMUP_STEPS
        self._work = LoopWork()
        self._holds: tuple[LoopSearch, StageSearch] | None = None
        self._rewrites: tuple[LoopSearch, PipelineSearch] | None = None
        self._searched: Searched | None = None
        phase("measuring training and the train step alone in turn", redraw=False)

    def next_batch(self) -> Any | None:
        """What answers the loop's pull: a batch, `PULL` (pull from the loop's own pipeline),
        or None once the budget should end the script."""
        alternation = self._alternation
        if alternation is not None:
            answer = self._alternate(alternation)
            if answer is not None:
                return answer
            kept = self._batch
            self._alternation = self._batch = self._held_pull = None  # released with it
            self._work = self._concluded(alternation.result(CACHED_BATCH_LOOP))
            self._model_s = self._work.model_s
            if self._model_s is not None:
                self._last_batch = kept
            if self._work.holds is not None:
                plan = self._work.holds
                self._phase("holding each stage in memory on training", plan.seconds, redraw=False)
                stages = plan.start(self._clock)
                self._holds = (self._serve(stages), stages)
        if (batch := _next_served(self._holds)) is not None:
            return batch
        self._end_holds()
        plan_search, self._work = self._work.search, LoopWork()
        if plan_search is not None:
            self._phase(
                "trying the rewrites on training",
                max(0.0, plan_search.until_s - self._clock.now()),
                redraw=False,
            )
            rewrites = plan_search.start(self._clock, held=self._searched)
            self._rewrites = (self._serve(rewrites), rewrites)
        if (batch := _next_served(self._rewrites)) is not None:
            return batch
        self._end_rewrites()
        return self._model_side_batch()

    def found_step(self, step: LoopStep | str) -> None:
        """The train step the loop calls once a step (or why none was found), for XLA."""
        self._step = step

    def _model_side_batch(self) -> Any | None:
        """The model side on the loop's own step, last (docs/design.md, "When the model
        sets the rate"): a profiler window over a few steps on the cached batch, then XLA
        with the seconds left."""
        seconds, self._model_s = self._model_s, None
        if seconds is not None:
            self._xla_s = seconds
            self._start_profile()
        if self._profile is not None:
            batch = self._profile.next_batch()
            if batch is not None:
                return batch
            spent = self._end_profile()
            if self._xla_s is not None:
                self._xla_s = max(0.0, self._xla_s - spent)
        return self._xla_batch()

    def _start_profile(self) -> None:
        if self._ops_profiled is None or self._profiler is None or self._last_batch is None:
            return
        from pipediag.training.op_profile import profiled_steps

        step = self._step
        self._phase("profiling where the loop's step time goes", redraw=False)
        self._profile = LoopProfile(
            self._last_batch,
            steps=profiled_steps(self._step_s),
            clock=self._clock,
            profiler=self._profiler(),
            layer_names=keras_layer_names(step.function) if isinstance(step, LoopStep) else [],
        )

    def _end_profile(self) -> float:
        """Ends the window, its reading to the session; the seconds it took."""
        window, self._profile = self._profile, None
        if window is None:
            return 0.0
        found = window.result()
        if self._ops_profiled is not None:
            self._ops_profiled(found, window.began)
        return self._clock.now() - window.began

    def _xla_batch(self) -> Any | None:
        """XLA on the loop's own step: the cached batch while the step's calls alternate
        with its twin's."""
        seconds, self._xla_s = self._xla_s, None
        if seconds is not None and self._model_tried is not None:
            step, batch = self._step, self._last_batch
            if isinstance(step, LoopStep) and batch is not None:
                self._phase("trying XLA on the loop's train step", seconds, redraw=False)
                self._xla = LoopXlaTrial(
                    step, batch, clock=self._clock, step_s=self._step_s, budget_s=seconds
                )
            else:
                reason = step if isinstance(step, str) else "not measured: no train step found"
                self._model_tried(ModelTrial(JIT_COMPILE, reason=reason), self._clock.now())
        if self._xla is not None:
            batch = self._xla.next_batch()
            if batch is not None:
                return batch
            self._end_xla()
        self._last_batch = None
        return None

    def _end_xla(self) -> None:
        trial, self._xla = self._xla, None
        if trial is not None and self._model_tried is not None:
            self._model_tried(trial.result(), trial.began)

    def _serve(self, search: StageSearch | PipelineSearch) -> LoopSearch:
        return LoopSearch(search, clock=self._clock, step_s=self._step_s, teardown=self._teardown)

    def _alternate(self, alternation: Alternation) -> Any | None:
        """The pull during the alternation: it ends the step that ran on the last answer and
        starts the next; None once the alternation is done."""
        now = self._synced_now(alternation)
        if alternation.open_kind is not None and not alternation.step_ended(now):
            return self._answer(alternation.open_kind)
        following = alternation.next
        if following == "done":
            return None
        kind: RateBlockKind = STEP_ALONE_BLOCK if following == "step-alone" else TRAINING_BLOCK
        if kind == STEP_ALONE_BLOCK and self._warmup_left > 0:
            self._warmup_left -= 1  # the first block's first steps are not timed
            return self._answer(kind)
        alternation.start_block(kind, now)
        return self._answer(kind)

    def _synced_now(self, alternation: Alternation) -> float:
        """The pull's time, after the device's work in flight where this pull ends or starts
        a block: asynchronous dispatch is not counted as speed (docs/design.md, "JAX")."""
        if self._sync is not None and (
            alternation.open_kind is None or alternation.closes_with_next_step
        ):
            self._sync()
        return self._clock.now()

    def _answer(self, kind: str) -> Any:
        if kind != STEP_ALONE_BLOCK:
            return PULL
        if self._held_pull is not None:
            self._held_pull()
        return self._batch

    def pull_ended_an_epoch(self) -> None:
        """A training block's pull ran out of data: the step across the epoch's end (the next
        iterator's start-up) is not timed."""
        if self._alternation is not None and not self._lockstep:
            self._alternation.skip_step()

    def finish(self) -> None:
        """The script ended: the alternation's blocks so far, the trials' and the holds'
        results go to the session once. Safe to call more than once."""
        alternation, self._alternation = self._alternation, None
        if alternation is not None:
            self._batch = self._held_pull = None
            alternation.end_block()
            self._concluded(alternation.result(CACHED_BATCH_LOOP))
        self._end_holds()
        self._work = LoopWork()  # not started: nothing to report
        self._end_rewrites()
        self._end_profile()
        self._end_xla()
        self._last_batch = None

    def _end_holds(self) -> None:
        holds, self._holds = self._holds, None
        if holds is not None:
            served, stages = holds
            served.close()
            self._searched = stages.searched
            if self._held is not None:
                self._held(stages.searched, served.began)

    def _end_rewrites(self) -> None:
        rewrites, self._rewrites = self._rewrites, None
        if rewrites is not None:
            served, search = rewrites
            served.close()
            self._tried(search, served.began)


def _next_served(serving: tuple[LoopSearch, object] | None) -> Any | None:
    """The next batch of the search being served, if any; None once it is over."""
    return None if serving is None else serving[0].next_batch()
