"""A custom loop at its step budget: what pipediag serves it until the budget ends the script.

Once the measured steps are done, the loop's hook (`hooks/tfdata.py`) answers each pull on
the training dataset from here. The loop's own train step then runs two phases: on its last
batch, again and again (compute alone, `CachedBatchSteps`), then, where the deep analysis
kept fixes worth trying, on each fix's two pipeline copies in turn (`LoopTrials`). Then the
budget ends the script, so nothing the loop would save sees those steps.

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
from pipediag.training.compute_alone import MAX_SECONDS, CachedBatchSteps
from pipediag.training.training_trial import BUDGET_S, LoopTrials, TrialResults

if TYPE_CHECKING:
    from pipediag.bench.whatif import FixPipelines

# Compute alone is over: the fixes to try on the loop's training (none: the budget ends it).
Concluded = Callable[[ComputeAlone], Sequence["FixPipelines"]]
# The trials are over: what each fix measured, and when the trials began.
Tried = Callable[[TrialResults, float], None]


class Phase(Protocol):
    """The session's progress line (`redraw=False` here: the user's code runs and prints)."""

    def __call__(
        self, what: str, budget_s: float | None = None, *, redraw: bool = True
    ) -> None: ...


class BudgetServer:
    """Serves a custom loop at its step budget: its last batch, then the fixes' copies.

    Args:
        last_batch: the batch the loop pulled last, served for compute alone.
        clock: the session's clock.
        origin: the session's start on that clock (compute alone's span is relative to it).
        step_s: the measured steps' median, which sizes both phases.
        fixed_steps: compute alone's exact step count in a multi-worker job, else None.
        phase: the session's progress line.
        concluded: called once compute alone is over; returns the fixes to try.
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
        fixed_steps: int | None,
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
        self._cached: CachedBatchSteps | None = CachedBatchSteps(
            last_batch, clock=clock, step_s_hint=step_s, fixed_steps=fixed_steps
        )
        self._trials: LoopTrials | None = None
        phase("measuring the train step alone on a cached batch", MAX_SECONDS, redraw=False)

    def next_batch(self) -> Any | None:
        """The batch that answers the loop's pull; None once the budget should end the script."""
        cached = self._cached
        if cached is not None:
            batch = cached.next_step()
            if batch is not None:
                return batch
            self._cached = None  # the batch is released with it
            fixes = self._concluded(cached.result(self._origin))
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

    def finish(self) -> None:
        """The trials are over, or the script ended while they ran: their results go to the
        session once. Safe to call more than once."""
        trials, self._trials = self._trials, None
        if trials is not None:
            self._tried(trials.results(), trials.began)
