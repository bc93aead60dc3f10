"""A custom loop's budget server built as the session builds it, with a recorder in place of
the session's fold of what each plan measured (`training/budget.py`, `LoopResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipediag.bench.teardown import TearDown
from pipediag.clock import Clock
from pipediag.report.model import ComputeAlone
from pipediag.report.model_side import ModelTrial
from pipediag.training.alternation import Alternation
from pipediag.training.budget import (
    AlternatedBlocks,
    BudgetServer,
    CachedBatch,
    Fold,
    Held,
    LoopResult,
    LoopWork,
    Serving,
    Tried,
    loop_plans,
)
from pipediag.training.loop_profile import OpsFound, Profiler
from pipediag.training.loop_xla import LoopStep
from pipediag.training.stage_cost import Searched


@dataclass
class RecordedResults:
    """Each plan's result as the session would get it, in order; `work` is what the
    alternation's end hands on."""

    work: LoopWork = field(default_factory=LoopWork)
    concluded: list[ComputeAlone] = field(default_factory=list)
    held: list[Searched] = field(default_factory=list)
    tried: list[Any] = field(default_factory=list)
    profiled: list[OpsFound] = field(default_factory=list)
    model_trials: list[ModelTrial] = field(default_factory=list)
    order: list[str] = field(default_factory=list)

    def __call__(self, result: LoopResult) -> LoopWork:
        if isinstance(result, ComputeAlone):
            self.concluded.append(result)
            self.order.append("concluded")
        elif isinstance(result, Held):
            self.held.append(result.searched)
            self.order.append("held")
        elif isinstance(result, Tried):
            self.tried.append(result.search)
            self.order.append("tried")
        elif isinstance(result.found, ModelTrial):
            self.model_trials.append(result.found)
            self.order.append("xla")
        else:
            self.profiled.append(result.found)
            self.order.append("profiled")
        return self.work


def loop_server(
    clock: Clock,
    results: Fold,
    *,
    cached: CachedBatch | None = None,
    alternation: Alternation | None = None,
    step_s: float = 0.01,
    step: LoopStep | str | None = None,
    lockstep: bool = False,
    profiler: Profiler | None = None,
) -> BudgetServer:
    """The server for a loop at its budget, on `clock` (by default: blocks of 4 steps after
    a lead of four 20 ms steps)."""
    alternation = alternation or Alternation(
        clock=clock, origin=0.0, block_steps=4, lead=(0.0, [0.02] * 4)
    )
    blocks = AlternatedBlocks(
        cached or CachedBatch("cached"), alternation, clock=clock, lockstep=lockstep
    )
    serving = Serving(
        clock,
        step_s,
        lambda *args, **kwargs: None,
        TearDown(),
        None if profiler is None else (lambda: profiler),
    )
    return BudgetServer(loop_plans(blocks, step, serving, results))
