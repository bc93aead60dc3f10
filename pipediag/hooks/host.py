"""What the hooks need of the diagnosis they feed: a Protocol (`session.DiagnosticSession`
implements it), so a hook can be read, and tested with a stand-in, without the session."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from pipediag.clock import Clock
from pipediag.config import RunConfig
from pipediag.report.model import DataPass
from pipediag.report.reasons import Reason
from pipediag.report.vocabulary import TrainStyle
from pipediag.timeline import StepTimeline

if TYPE_CHECKING:
    from pipediag.training.alternation import FitAlternation
    from pipediag.training.budget import BudgetServer, CachedBatch
    from pipediag.training.function_loop import TrainCalls
    from pipediag.training.loop_xla import LoopStep


class HookGate:
    """Whether hooks let calls pass untimed: while pipediag reads the data, and while `fit` runs."""

    __slots__ = ("_fit", "_pipediag")

    def __init__(self) -> None:
        self._pipediag = self._fit = False

    def bypassed(self) -> bool:
        return self._pipediag or self._fit

    def pipediag_is_reading(self) -> bool:
        return self._pipediag

    def pipediag_reading(self) -> contextlib.AbstractContextManager[None]:
        return self._raised("_pipediag")

    def fit_running(self) -> contextlib.AbstractContextManager[None]:
        return self._raised("_fit")

    @contextlib.contextmanager
    def _raised(self, flag: str) -> Iterator[None]:
        """`flag` set for the block, then put back (the blocks nest)."""
        was = getattr(self, flag)
        setattr(self, flag, True)
        try:
            yield
        finally:
            setattr(self, flag, was)


class HookHost(Protocol):
    """The diagnosis, as the fit and custom-loop hooks see it."""

    clock: Clock
    config: RunConfig
    timeline: StepTimeline
    gate: HookGate

    @property
    def style(self) -> TrainStyle: ...
    def mark_style(self, style: TrainStyle) -> bool: ...  # False: fit is diagnosed instead
    # The loop's training dataset (`rebuilt`: made anew, as `ds.take(n)` each epoch).
    def benchmark_pipeline(self, dataset: Any, *, rebuilt: bool = False) -> None: ...
    def train_calls(self, calls: TrainCalls) -> None: ...  # a tf.function pulls inside
    # `dataset` None: fit was given a `given`, not a tf.data Dataset.
    def fit_called(self, model: Any, dataset: Any, *, given: str) -> None: ...
    def training_log_dir(self, log_dir: str) -> None: ...  # of its TensorBoard callback
    def data_pass(self, record: DataPass) -> None: ...  # a pass that was not training
    def keep_measuring(self) -> bool: ...  # at the step budget: True when it was extended
    def conclude(self, *, deep: bool = True) -> None: ...  # deep=False: a safe point mid-fit
    def note(self, reason: Reason) -> None: ...
    def note_once(self, reason: Reason) -> None: ...
    # At the budget under fit: what runs training and the step alone in turn, or None
    # (conclude); `steps_left`: fit's steps after this one, where known, bound the blocks.
    def alternate_fit(self, *, lead: bool, steps_left: int | None) -> FitAlternation | None: ...
    # At a loop's budget: what serves its pulls, or None (concluded); `step`: its step, or why none.
    def loop_at_budget(
        self, cached: CachedBatch, step: LoopStep | Reason | None
    ) -> BudgetServer | None: ...
