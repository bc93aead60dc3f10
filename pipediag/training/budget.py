"""A custom loop at its step budget: what pipediag serves it until the budget ends the script.
`loop_plans` makes the plans in turn (alternation, stage holds, rewrites, profiler window,
XLA), each result folded in before the next (docs/design.md, "The flow of one diagnosis")."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pipediag.bench.teardown import TearDown
from pipediag.clock import Clock
from pipediag.progress import ProgressStep
from pipediag.report.model import ComputeAlone
from pipediag.report.model_side import ModelTrial
from pipediag.report.reasons import Reason
from pipediag.report.vocabulary import RateBlockKind
from pipediag.training.alternation import Alternation
from pipediag.training.compute_alone import WARMUP_STEPS
from pipediag.training.loop_profile import LoopProfile, OpsFound, Profiler, keras_layer_names
from pipediag.training.loop_search import HoldPlan, LoopSearch
from pipediag.training.loop_xla import LoopStep, LoopXlaTrial
from pipediag.training.op_profile import profiled_steps
from pipediag.training.stage_cost import Searched, StageSearch

if TYPE_CHECKING:
    from pipediag.training.prescription import PipelineSearch, SearchPlan


@dataclass(frozen=True)
class LoopWork:
    """What the loop is served after the alternation (none: the budget ends the script)."""

    holds: HoldPlan | None = None
    search: SearchPlan | None = None
    # Seconds for XLA on the loop's own train step, tried last (None: not tried).
    model_s: float | None = None


@dataclass(frozen=True)
class CachedBatch:
    """The batch the loop pulled last, and a pull each step-alone step pays in place of the
    loop's own, as FastFlow's T does (docs/design.md, "Rates in alternation")."""

    batch: Any
    pull: Callable[[], object] | None = None


# The answer that lets a pull through to the loop's own pipeline (a training block).
PULL = object()


class Phase(Protocol):
    """The session's progress line (`redraw=False`: the user's code prints meanwhile)."""

    def __call__(
        self, step: ProgressStep, budget_s: float | None = None, *, redraw: bool = True
    ) -> None: ...


class LoopPlan(Protocol):
    """One measurement served to the loop: a batch or `PULL` for each pull, None once over."""

    def next_batch(self) -> Any | None: ...


@dataclass(frozen=True)
class Held:
    """The stage holds' result; `began` on the session's clock (as below)."""

    searched: Searched
    began: float


@dataclass(frozen=True)
class Tried:
    """The rewrites' search on training, for the prescription."""

    search: PipelineSearch
    began: float


@dataclass(frozen=True)
class ModelSide:
    """The profiler window's top ops, or XLA's trial, on the loop's own step."""

    found: OpsFound | ModelTrial
    began: float


LoopResult = ComputeAlone | Held | Tried | ModelSide
Fold = Callable[[LoopResult], LoopWork | None]


@dataclass(frozen=True)
class Serving:
    """What the plans served to one loop share (`profiler`: None for no profiler window)."""

    clock: Clock
    step_s: float
    phase: Phase
    teardown: TearDown
    profiler: Callable[[], Profiler] | None = None


class AlternatedBlocks:
    """The alternation served to a loop; `sync` for JAX's device work; `lockstep`: every step."""

    def __init__(
        self,
        cached: CachedBatch,
        alternation: Alternation,
        *,
        clock: Clock,
        sync: Callable[[], None] | None = None,
        lockstep: bool = False,
    ) -> None:
        self._alternation, self._clock = alternation, clock
        self._sync, self._lockstep = sync, lockstep
        self.batch: Any = cached.batch
        self._pull = cached.pull
        self._warmup_left = WARMUP_STEPS

    def next_batch(self) -> Any | None:
        """Ends the step that ran on the last answer, starts the next; None once done."""
        alternation, now = self._alternation, self._synced_now()
        if alternation.open_kind is not None and not alternation.step_ended(now):
            return self._answer(alternation.open_kind)
        if alternation.next == "done":
            return None
        kind: RateBlockKind = alternation.next
        if kind == "step-alone" and self._warmup_left > 0:
            self._warmup_left -= 1  # the first block's first steps are not timed
        else:
            alternation.start_block(kind, now)
        return self._answer(kind)

    def pull_ended_an_epoch(self) -> None:
        """The step across the epoch's end (the next iterator's start-up) is not timed."""
        if not self._lockstep:
            self._alternation.skip_step()

    def result(self) -> ComputeAlone:
        """The blocks so far (an open one ended now); the cached batch is released."""
        self.batch = self._pull = None
        return self._alternation.result("cached-batch-loop")

    def _synced_now(self) -> float:
        """Synced where a block starts or ends: dispatch is not speed (docs/design.md, "JAX")."""
        alternation = self._alternation
        if self._sync is not None and (
            alternation.open_kind is None or alternation.closes_with_next_step
        ):
            self._sync()
        return self._clock.now()

    def _answer(self, kind: str) -> Any:
        if kind != "step-alone":
            return PULL
        if self._pull is not None:
            self._pull()
        return self.batch


# The server sends True while the loop still pulls, False once the script has ended.
Plans = Generator[LoopPlan, bool, None]


def loop_plans(
    blocks: AlternatedBlocks, step: LoopStep | Reason | None, serving: Serving, fold: Fold
) -> Plans:
    """The plans served to a loop at its budget, each made once the last is folded in."""
    serving.phase(ProgressStep("alternation"), redraw=False)
    running = yield blocks
    batch, work = blocks.batch, fold(blocks.result()) or LoopWork()
    # The cached batch stays only for the model side, last.
    kept, batch = (batch if work.model_s is not None else None), None
    if not running:
        return
    searched: Searched | None = None
    if work.holds is not None:
        serving.phase(ProgressStep("stage-holds"), work.holds.seconds, redraw=False)
        stages = work.holds.start(serving.clock)
        running, began = yield from _searched(stages, serving)
        searched = stages.searched
        fold(Held(searched, began))
        del stages
        if not running:
            return
    if work.search is not None:
        left_s = max(0.0, work.search.until_s - serving.clock.now())
        serving.phase(ProgressStep("rewrites-on-training"), left_s, redraw=False)
        rewrites = work.search.start(serving.clock, held=searched)
        running, began = yield from _searched(rewrites, serving)
        fold(Tried(rewrites, began))
        del rewrites
        if not running:
            return
    if work.model_s is not None:
        yield from _model_side(work.model_s, kept, step, serving, fold)


def _model_side(
    seconds: float, batch: Any, step: LoopStep | Reason | None, serving: Serving, fold: Fold
) -> Plans:
    """A profiler window on the cached batch, then XLA with the seconds left."""
    clock = serving.clock
    if serving.profiler is not None and batch is not None:
        serving.phase(ProgressStep("loop-profile"), redraw=False)
        steps = profiled_steps(serving.step_s)
        layers = keras_layer_names(step.function) if isinstance(step, LoopStep) else []
        window = LoopProfile(
            batch, steps=steps, clock=clock, profiler=serving.profiler(), layer_names=layers
        )
        running = yield window
        fold(ModelSide(window.result(), window.began))
        seconds = max(0.0, seconds - (clock.now() - window.began))
        del window
        if not running:
            return
    if not isinstance(step, LoopStep) or batch is None:
        reason = step if isinstance(step, Reason) else Reason("no-train-step-found")
        fold(ModelSide(ModelTrial("jit_compile", reason=reason), clock.now()))
        return
    serving.phase(ProgressStep("loop-xla"), seconds, redraw=False)
    trial = LoopXlaTrial(step, batch, clock=clock, step_s=serving.step_s, budget_s=seconds)
    yield trial
    fold(ModelSide(trial.result(), trial.began))


def _searched(
    search: StageSearch | PipelineSearch, serving: Serving
) -> Generator[LoopPlan, bool, tuple[bool, float]]:
    """Serves the search's trials; whether the loop still runs, and when they began."""
    served = LoopSearch(
        search, clock=serving.clock, step_s=serving.step_s, teardown=serving.teardown
    )
    running = yield served
    served.close()
    return running, served.began


class BudgetServer:
    """Serves a custom loop at its step budget, one plan after another."""

    def __init__(self, plans: Plans) -> None:
        self._plans = plans
        self._plan: LoopPlan | None = next(plans, None)

    def next_batch(self) -> Any | None:
        """A batch, `PULL`, or None once the budget should end the script."""
        while self._plan is not None:
            if (batch := self._plan.next_batch()) is not None:
                return batch
            self._advance(running=True)
        return None

    def pull_ended_an_epoch(self) -> None:
        if isinstance(self._plan, AlternatedBlocks):
            self._plan.pull_ended_an_epoch()

    def finish(self) -> None:
        """The script ended: the results so far are folded in, once."""
        while self._plan is not None:
            self._advance(running=False)

    def _advance(self, *, running: bool) -> None:
        self._plan = None  # a result that fails to be folded in serves nothing more
        with contextlib.suppress(StopIteration):
            self._plan = self._plans.send(running)
