"""A custom loop at its step budget: what pipediag serves it until the budget ends the script.

Once the measured steps are done, the loop's hook (`hooks/tfdata.py`) answers each pull on
the training dataset from here. The loop's own train step then runs two phases: on its last
batch and on its real pulls in turn (the alternation of rates, `training/alternation.py`:
a step-alone block serves the cached batch, a training block lets the pull through), then,
where the deep analysis kept fixes worth trying, on each fix's two pipeline copies in turn
(`LoopTrials`). Then the budget ends the script, so nothing the loop would save sees those
steps.

What is being served lives here and nowhere else. The session is told twice: when compute
alone is over (`concluded`: it gives the verdict, runs the deep analysis, and returns the
fixes to try) and when the trials are over (`tried`: their results join the fix trials).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pipediag.bench.teardown import TearDown
from pipediag.clock import Clock
from pipediag.report.model import ComputeAlone
from pipediag.report.vocabulary import CACHED_BATCH_LOOP, STEP_ALONE_BLOCK, TRAINING_BLOCK
from pipediag.training.alternation import WARMUP_STEPS, Alternation
from pipediag.training.training_trial import BUDGET_S, LoopTrials, TrialResults

if TYPE_CHECKING:
    from pipediag.bench.whatif import FixPipelines

# The alternation is over: the fixes to try on the loop's training (none: the budget ends it).
Concluded = Callable[[ComputeAlone], Sequence["FixPipelines"]]
# The trials are over: what each fix measured, and when the trials began.
Tried = Callable[[TrialResults, float], None]


class _Pull:
    """The answer that lets a pull through to the loop's own pipeline (a training block)."""


PULL = _Pull()
# A multi-worker job's alternation: exactly this many rounds (docs/design.md, "Multi-worker
# jobs": every worker must run as many steps).
LOCKSTEP_ROUNDS = 3


class Phase(Protocol):
    """The session's progress line (`redraw=False` here: the user's code runs and prints)."""

    def __call__(
        self, what: str, budget_s: float | None = None, *, redraw: bool = True
    ) -> None: ...


class BudgetServer:
    """Serves a custom loop at its step budget: its last batch and its own pulls in turn,
    then the fixes' copies.

    Args:
        last_batch: the batch the loop pulled last, served for the step-alone blocks.
        clock: the session's clock.
        origin: the session's start on that clock (the blocks' spans are relative to it).
        step_s: the measured steps' median, which sizes the blocks and the trials.
        block_steps: the steps in each block of the alternation.
        lead: the measured steps' last block (start, durations), the first training block.
        lockstep: a multi-worker job: a fixed number of rounds, every step counted (rounds
            are otherwise added while the interval is wide, and a step across an epoch's
            end is not timed).
        phase: the session's progress line.
        concluded: called once the alternation is over; returns the fixes to try.
        tried: called once the trials are over, or the loop stopped pulling during them.
        teardown: where the trial copies' spent iterators are released.
    """

    def __init__(
        self,
        last_batch: Any,
        *,
        clock: Clock,
        origin: float,
        step_s: float,
        block_steps: int,
        lead: tuple[float, list[float]] | None,
        lockstep: bool,
        phase: Phase,
        concluded: Concluded,
        tried: Tried,
        teardown: TearDown,
    ) -> None:
        self._clock = clock
        self._origin = origin
        self._step_s = step_s
        self._phase = phase
        self._concluded = concluded
        self._tried = tried
        self._teardown = teardown
        self._batch: Any = last_batch
        self._lockstep = lockstep
        self._alternation: Alternation | None = Alternation(
            clock=clock,
            origin=origin,
            block_steps=block_steps,
            lead=lead,
            fixed_rounds=LOCKSTEP_ROUNDS if lockstep else None,
        )
        self._warmup_left = WARMUP_STEPS
        self._trials: LoopTrials | None = None
        phase("measuring training and the train step alone in turn", redraw=False)

    def next_batch(self) -> Any | None:
        """What answers the loop's pull: a batch, `PULL` (pull from the loop's own pipeline),
        or None once the budget should end the script."""
        alternation = self._alternation
        if alternation is not None:
            answer = self._alternate(alternation)
            if answer is not None:
                return answer
            self._alternation = self._batch = None  # the batch is released with it
            fixes = self._concluded(alternation.result(CACHED_BATCH_LOOP))
            if not fixes:
                return None
            self._phase("trying the fixes on training", BUDGET_S, redraw=False)
            self._trials = LoopTrials(
                fixes, clock=self._clock, step_s=self._step_s, teardown=self._teardown
            )
        trials = self._trials
        if trials is None:
            return None
        batch = trials.next_batch()
        if batch is None:
            self.finish()
        return batch

    def _alternate(self, alternation: Alternation) -> Any | None:
        """The pull during the alternation: it ends the step that ran on the last answer and
        starts the next; None once the alternation is done."""
        now = self._clock.now()
        if alternation.open_kind is not None and not alternation.step_ended(now):
            return self._answer(alternation.open_kind)
        following = alternation.next
        if following == "done":
            return None
        kind = STEP_ALONE_BLOCK if following == "step-alone" else TRAINING_BLOCK
        if kind == STEP_ALONE_BLOCK and self._warmup_left > 0:
            self._warmup_left -= 1  # the first block's first steps are not timed
            return self._batch
        alternation.start_block(kind, now)
        return self._answer(kind)

    def _answer(self, kind: str) -> Any:
        return self._batch if kind == STEP_ALONE_BLOCK else PULL

    def pull_ended_an_epoch(self) -> None:
        """A training block's pull ran out of data: the step across the epoch's end (the next
        iterator's start-up) is not timed."""
        if self._alternation is not None and not self._lockstep:
            self._alternation.skip_step()

    def finish(self) -> None:
        """The script ended: the alternation's blocks so far and the trials' results go to
        the session once. Safe to call more than once."""
        alternation, self._alternation = self._alternation, None
        if alternation is not None:
            self._batch = None
            alternation.end_block()
            self._concluded(alternation.result(CACHED_BATCH_LOOP))
        trials, self._trials = self._trials, None
        if trials is not None:
            self._tried(trials.results(), trials.began)
