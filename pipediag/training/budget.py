"""A custom loop at its step budget: what pipediag serves it until the budget ends the script.

Once the measured steps are done, the loop's hook (`hooks/tfdata.py`) answers each pull on the
training dataset from a `BudgetServer`: one plan after another, each answering pulls until it
is over. `loop_plans` makes them in turn and hands each one's result, a value, to one fold (the
session's) before it makes the next: the alternation, the stage holds, the rewrites, a profiler
window over the loop's step and XLA on it. Then the budget ends the script. Order and
rationale: docs/design.md, "The flow of one diagnosis".
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pipediag.bench.teardown import TearDown
from pipediag.clock import Clock
from pipediag.report.model import ComputeAlone
from pipediag.report.model_side import JIT_COMPILE, ModelTrial
from pipediag.report.reasons import NO_TRAIN_STEP_FOUND, Reason
from pipediag.report.vocabulary import (
    CACHED_BATCH_LOOP,
    STEP_ALONE_BLOCK,
    RateBlockKind,
)
from pipediag.training.alternation import Alternation
from pipediag.training.compute_alone import WARMUP_STEPS
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


class LoopPlan(Protocol):
    """One measurement served to the loop: a batch for each pull, `PULL` to let the pull
    through to the loop's own pipeline, None once it is over."""

    def next_batch(self) -> Any | None: ...


@dataclass(frozen=True)
class Held:
    """The stage holds are over: what holding each stage freed; `began`: when they started,
    on the session's clock (as for each result below)."""

    searched: Searched
    began: float


@dataclass(frozen=True)
class Tried:
    """The rewrites' search on training is over: its trials, for the prescription."""

    search: PipelineSearch
    began: float


@dataclass(frozen=True)
class ModelSide:
    """A model-side plan on the loop's own step is over: the profiler window's top ops, or
    XLA's trial."""

    found: OpsFound | ModelTrial
    began: float


# What a plan hands back once it is over (`ComputeAlone`: the alternation's), and the one
# place each goes: after the alternation, it answers what the verdict leaves to serve.
LoopResult = ComputeAlone | Held | Tried | ModelSide
Fold = Callable[[LoopResult], LoopWork | None]


@dataclass(frozen=True)
class Serving:
    """What the plans served to one loop share: the session's clock and progress line, the
    measured steps' median (which sizes the blocks and the trials), where the trial copies'
    spent iterators are released, and what makes the profiler window's session (None: no
    window)."""

    clock: Clock
    step_s: float
    phase: Phase
    teardown: TearDown
    profiler: Callable[[], Profiler] | None = None


class AlternatedBlocks:
    """The alternation served: the loop's own pulls in training blocks, the cached batch in
    step-alone blocks (`training/alternation.py`).

    `sync` waits for the device's work in flight (a JAX loop's, `training/jax_sync.py`),
    called where a block starts or ends; None where steps end when they return. `lockstep`:
    a multi-worker job, every step counted (a step across an epoch's end is otherwise not
    timed).
    """

    def __init__(
        self,
        cached: CachedBatch,
        alternation: Alternation,
        *,
        clock: Clock,
        sync: Callable[[], None] | None = None,
        lockstep: bool = False,
    ) -> None:
        self._alternation = alternation
        self._clock = clock
        self._sync = sync
        self._lockstep = lockstep
        self.batch: Any = cached.batch
        self._pull = cached.pull
        self._warmup_left = WARMUP_STEPS

    def next_batch(self) -> Any | None:
        """The pull during the alternation: it ends the step that ran on the last answer and
        starts the next; None once the alternation is done."""
        alternation = self._alternation
        now = self._synced_now()
        if alternation.open_kind is not None and not alternation.step_ended(now):
            return self._answer(alternation.open_kind)
        following = alternation.next
        if following == "done":
            return None
        kind: RateBlockKind = following
        if kind == STEP_ALONE_BLOCK and self._warmup_left > 0:
            self._warmup_left -= 1  # the first block's first steps are not timed
            return self._answer(kind)
        alternation.start_block(kind, now)
        return self._answer(kind)

    def pull_ended_an_epoch(self) -> None:
        """A training block's pull ran out of data: the step across the epoch's end (the next
        iterator's start-up) is not timed."""
        if not self._lockstep:
            self._alternation.skip_step()

    def result(self) -> ComputeAlone:
        """The blocks so far (an open one ended now); the cached batch and its pull are
        released with it."""
        self.batch = self._pull = None
        self._alternation.end_block()
        return self._alternation.result(CACHED_BATCH_LOOP)

    def _synced_now(self) -> float:
        """The pull's time, after the device's work in flight where this pull ends or starts
        a block: asynchronous dispatch is not counted as speed (docs/design.md, "JAX")."""
        alternation = self._alternation
        if self._sync is not None and (
            alternation.open_kind is None or alternation.closes_with_next_step
        ):
            self._sync()
        return self._clock.now()

    def _answer(self, kind: str) -> Any:
        if kind != STEP_ALONE_BLOCK:
            return PULL
        if self._pull is not None:
            self._pull()
        return self.batch


# What the server sends each plan's generator when it moves on: True while the loop is still
# pulling, False once the script has ended (the plan's result is folded in, nothing new starts).
Plans = Generator[LoopPlan, bool, None]


def loop_plans(
    blocks: AlternatedBlocks,
    step: LoopStep | Reason | None,
    serving: Serving,
    fold: Fold,
) -> Plans:
    """The plans served to a loop at its budget, each made once the one before it is over
    and its result folded in (`step`: the train step the loop calls once a step, or why none
    was found, for the model side)."""
    serving.phase("measuring training and the train step alone in turn", redraw=False)
    running = yield blocks
    batch = blocks.batch
    work = fold(blocks.result()) or LoopWork()
    # The cached batch stays only for the model side, last.
    kept, batch = (batch if work.model_s is not None else None), None
    if not running:
        return
    searched: Searched | None = None
    if work.holds is not None:
        serving.phase("holding each stage in memory on training", work.holds.seconds, redraw=False)
        stages = work.holds.start(serving.clock)
        served = _served(stages, serving)
        running = yield served
        served.close()
        searched = stages.searched
        fold(Held(searched, served.began))
        del served, stages
        if not running:
            return
    if work.search is not None:
        left_s = max(0.0, work.search.until_s - serving.clock.now())
        serving.phase("trying the rewrites on training", left_s, redraw=False)
        rewrites = work.search.start(serving.clock, held=searched)
        served = _served(rewrites, serving)
        running = yield served
        served.close()
        fold(Tried(rewrites, served.began))
        del served, rewrites
        if not running:
            return
    if work.model_s is not None:
        yield from _model_side(work.model_s, kept, step, serving, fold)


def _model_side(
    seconds: float,
    batch: Any,
    step: LoopStep | Reason | None,
    serving: Serving,
    fold: Fold,
) -> Plans:
    """The model side on the loop's own step, last (docs/design.md, "When the model sets the
    rate"): a profiler window over a few steps on the cached batch, then XLA with the seconds
    left."""
    clock = serving.clock
    if serving.profiler is not None and batch is not None:
        from pipediag.training.op_profile import profiled_steps

        serving.phase("profiling where the loop's step time goes", redraw=False)
        window = LoopProfile(
            batch,
            steps=profiled_steps(serving.step_s),
            clock=clock,
            profiler=serving.profiler(),
            layer_names=keras_layer_names(step.function) if isinstance(step, LoopStep) else [],
        )
        running = yield window
        fold(ModelSide(window.result(), window.began))
        seconds = max(0.0, seconds - (clock.now() - window.began))
        del window
        if not running:
            return
    if not isinstance(step, LoopStep) or batch is None:
        reason = step if isinstance(step, Reason) else Reason(NO_TRAIN_STEP_FOUND)
        fold(ModelSide(ModelTrial(JIT_COMPILE, reason=reason), clock.now()))
        return
    serving.phase("trying XLA on the loop's train step", seconds, redraw=False)
    trial = LoopXlaTrial(step, batch, clock=clock, step_s=serving.step_s, budget_s=seconds)
    yield trial
    fold(ModelSide(trial.result(), trial.began))


def _served(search: StageSearch | PipelineSearch, serving: Serving) -> LoopSearch:
    return LoopSearch(search, clock=serving.clock, step_s=serving.step_s, teardown=serving.teardown)


class BudgetServer:
    """Serves a custom loop at its step budget: each plan in turn answers the loop's pulls
    until it is over; `finish()`, once the script has ended, folds in the result of the plan
    under way and starts nothing new."""

    def __init__(self, plans: Plans) -> None:
        self._plans = plans
        self._plan: LoopPlan | None = next(plans, None)

    def next_batch(self) -> Any | None:
        """What answers the loop's pull: a batch, `PULL` (pull from the loop's own pipeline),
        or None once the budget should end the script."""
        while self._plan is not None:
            batch = self._plan.next_batch()
            if batch is not None:
                return batch
            self._advance(running=True)
        return None

    def pull_ended_an_epoch(self) -> None:
        """A training block's pull ran out of data (`AlternatedBlocks.pull_ended_an_epoch`)."""
        if isinstance(self._plan, AlternatedBlocks):
            self._plan.pull_ended_an_epoch()

    def finish(self) -> None:
        """The script ended: the results so far are folded in once. Safe to call more
        than once."""
        while self._plan is not None:
            self._advance(running=False)

    def _advance(self, *, running: bool) -> None:
        self._plan = None  # a result that fails to be folded in serves nothing more
        with contextlib.suppress(StopIteration):
            self._plan = self._plans.send(running)
