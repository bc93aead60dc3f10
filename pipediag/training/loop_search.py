"""A custom loop at its step budget, served a search's trials one at a time, each timed from
pull to pull; all before the budget ends the script, so nothing the loop saves sees them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipediag.bench.hold import HeldCopies
from pipediag.bench.teardown import TearDown
from pipediag.clock import Clock
from pipediag.training.search import Search
from pipediag.training.stage_cost import StageSearch
from pipediag.training.training_trial import FixRounds, PullSlice


@dataclass(frozen=True)
class HoldPlan:
    """The stage-hold search a loop is to run after its alternation."""

    copies: HeldCopies
    seconds: float
    ceiling: float | None = None
    output_s: float = 0.0  # the least the output's hold is given (`StageSearch`)

    def start(self, clock: Clock) -> StageSearch:
        until_s = clock.now() + self.seconds
        return StageSearch(
            self.copies, clock=clock, until_s=until_s, ceiling=self.ceiling, output_s=self.output_s
        )


class LoopSearch:
    """Serves a custom loop a search's trials, each from its two copies in turn."""

    def __init__(self, search: Search, *, clock: Clock, step_s: float, teardown: TearDown):
        self._search, self._clock = search, clock
        self._step_s, self._teardown = step_s, teardown
        self._trial: FixRounds | None = None
        self._slice: PullSlice | None = None
        self.began = clock.now()

    def next_batch(self) -> Any | None:
        while True:
            if self._trial is None:
                if (due := self._search.next_trial()) is None:
                    return None
                pipelines, share_s = due
                self._trial = FixRounds(
                    pipelines,
                    clock=self._clock,
                    step_s=self._step_s,
                    budget_s=share_s,
                    teardown=self._teardown,
                )
            if (batch := self._serve(self._trial)) is not None:
                return batch
            self.close()

    def close(self) -> None:
        """The trial served goes to the search; a slice the loop cut short is not timed."""
        trial, self._trial = self._trial, None
        if trial is not None:
            self._drop_slice(trial)
            self._search.record(*trial.result())

    def _serve(self, trial: FixRounds) -> Any | None:
        """A batch from the side that is due; None once the trial is over."""
        now = self._clock.now()
        while True:
            if (current := self._slice) is not None:
                current.pull(now)
                if not current.over(now):
                    try:
                        return next(current.iterator)
                    except StopIteration:
                        current.exhausted = True  # the slice ends with its data
                    except Exception as exc:
                        self._fail(trial, exc)
                        continue
                self._drop_slice(trial)
                trial.record(current.side, current.timing())
            if (due := trial.next_slice()) is None:
                return None
            side, seconds = due
            opening = self._clock.now()
            try:
                iterator = trial.side(side).open()
            except Exception as exc:
                self._fail(trial, exc)
                continue
            now = self._clock.now()
            self._slice = PullSlice(side, seconds, now, True, iterator, now - opening)

    def _fail(self, trial: FixRounds, exc: BaseException) -> None:
        """The fixed pipeline failed in the loop: this trial is not measured."""
        self._drop_slice(trial)
        trial.fail(exc)

    def _drop_slice(self, trial: FixRounds) -> None:
        if self._slice is not None:
            trial.side(self._slice.side).release(self._slice.iterator)
            self._slice = None
