"""Each stage's cost to a custom loop's training: the stage-hold search served to the loop
at its step budget, after the fix trials (docs/design.md, "Stage costs on training").

Under fit the search calls the train function itself (`training/stage_cost.py`); a loop's
train step runs only when the loop pulls, so here the search is driven by its pulls: each
held stage is one `LoopTrials` over its two copies, and when that trial's rounds are over
its result decides the next stage to hold (`StageSearch`). Everything served here runs
before the budget ends the script, so nothing the loop would save sees these steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipediag.bench.hold import HOLD, HeldCopies
from pipediag.bench.teardown import TearDown
from pipediag.clock import Clock
from pipediag.training.stage_cost import Searched, StageSearch
from pipediag.training.training_trial import LoopTrials


@dataclass(frozen=True)
class HoldPlan:
    """The stage-hold search a loop is to run after its fix trials: the held copies, the
    seconds it may take, and the step-alone ceiling (None: not measured)."""

    copies: HeldCopies
    seconds: float
    ceiling: float | None = None


class LoopHolds:
    """Serves a custom loop the held copies, one stage's trial after another.

    `next_batch()` answers each pull (None once the search is over or its time is spent);
    `searched()` gives what was measured, a trial the loop cut short included.
    """

    def __init__(self, plan: HoldPlan, *, clock: Clock, step_s: float, teardown: TearDown):
        self._clock = clock
        self._step_s = step_s
        self._teardown = teardown
        self._search = StageSearch(
            plan.copies, clock=clock, until_s=clock.now() + plan.seconds, ceiling=plan.ceiling
        )
        self._trial: LoopTrials | None = None
        self._stage: int | None = None
        self.began = clock.now()

    def next_batch(self) -> Any | None:
        while True:
            if self._trial is None:
                due = self._search.next_trial()
                if due is None:
                    return None
                pipelines, share_s = due
                self._stage = pipelines.stage_index
                self._trial = LoopTrials(
                    [pipelines],
                    clock=self._clock,
                    step_s=self._step_s,
                    teardown=self._teardown,
                    budget_s=share_s,
                )
            batch = self._trial.next_batch()
            if batch is not None:
                return batch
            self._record()

    def searched(self) -> Searched:
        """What the held stages measured; a trial under way is read as it stands."""
        if self._trial is not None:
            self._record()
        return self._search.searched

    def _record(self) -> None:
        trial, self._trial = self._trial, None
        assert trial is not None
        rounds, _ = trial.results().get((HOLD, self._stage), (None, None))
        self._search.record(rounds)
