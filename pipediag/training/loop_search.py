"""A custom loop at its step budget, served a search of trials on training one at a time:
the stage holds (docs/design.md, "Stage costs on training"), then the rewrites
(docs/design.md, "The pipeline pipediag would write").

Under fit a search calls the train function itself; a loop's train step runs only when the
loop pulls, so here the search is driven by its pulls: each of its trials is one
`LoopTrials` over two copies, and when that trial's rounds are over its result decides the
next trial. Everything served here runs before the budget ends the script, so nothing the
loop would save sees these steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipediag.bench.hold import HeldCopies
from pipediag.bench.teardown import TearDown
from pipediag.clock import Clock
from pipediag.training.search import Search
from pipediag.training.stage_cost import StageSearch
from pipediag.training.training_trial import LoopTrials


@dataclass(frozen=True)
class HoldPlan:
    """The stage-hold search a loop is to run after its alternation: the held copies, the
    seconds it may take, and the step-alone ceiling (None: not measured)."""

    copies: HeldCopies
    seconds: float
    ceiling: float | None = None

    def start(self, clock: Clock) -> StageSearch:
        return StageSearch(
            self.copies, clock=clock, until_s=clock.now() + self.seconds, ceiling=self.ceiling
        )


class LoopSearch:
    """Serves a custom loop a search's trials, one after another.

    `next_batch()` answers each pull (None once the search is over or its time is spent);
    `close()` records a trial the loop cut short, as it stands.
    """

    def __init__(self, search: Search, *, clock: Clock, step_s: float, teardown: TearDown):
        self._search = search
        self._clock = clock
        self._step_s = step_s
        self._teardown = teardown
        self._trial: LoopTrials | None = None
        self._key: tuple[str, int | None] | None = None
        self.began = clock.now()

    def next_batch(self) -> Any | None:
        while True:
            if self._trial is None:
                due = self._search.next_trial()
                if due is None:
                    return None
                pipelines, share_s = due
                self._key = (pipelines.fix, pipelines.stage_index)
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

    def close(self) -> None:
        """A trial under way is read as it stands."""
        if self._trial is not None:
            self._record()

    def _record(self) -> None:
        trial, self._trial = self._trial, None
        assert trial is not None and self._key is not None
        rounds, reason = trial.results().get(self._key, (None, None))
        self._search.record(rounds, reason)
