"""What the hooks need of the diagnosis they feed: a narrow interface, not the session.

The hooks sit under the session: it installs them, and they report to it through this
Protocol only (`session.DiagnosticSession` implements it). A hook can then be read, and
tested with a stand-in, without the whole session and what it imports. They read three
facts (the clock, the configuration, the step timeline they fill), consult one gate, and
raise a few events.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from pipediag.clock import Clock
from pipediag.config import RunConfig
from pipediag.report.model import DataPass, TrainStyle
from pipediag.report.reasons import Reason
from pipediag.timeline import StepTimeline

if TYPE_CHECKING:
    from pipediag.training.alternation import FitAlternation
    from pipediag.training.budget import BudgetServer, CachedBatch
    from pipediag.training.function_loop import TrainCalls
    from pipediag.training.loop_xla import LoopStep


class HookGate:
    """Whether the hooks let calls pass straight through, untimed: while pipediag reads the
    data itself (its reads are not the user's steps), and while `fit` runs (its callback
    times the steps, not the iterator hook). Shared by the session and the hooks."""

    __slots__ = ("_fit", "_pipediag")

    def __init__(self) -> None:
        self._pipediag = False
        self._fit = False

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
        """`flag` set for the block, then put back as it was (the blocks nest)."""
        was = getattr(self, flag)
        setattr(self, flag, True)
        try:
            yield
        finally:
            setattr(self, flag, was)


class HookHost(Protocol):
    """The diagnosis, as the fit and custom-loop hooks see it."""

    @property
    def clock(self) -> Clock: ...
    @property
    def config(self) -> RunConfig: ...
    @property
    def timeline(self) -> StepTimeline: ...
    @property
    def gate(self) -> HookGate: ...

    @property
    def style(self) -> TrainStyle: ...

    # -- what training is --
    def mark_style(self, style: TrainStyle) -> bool:
        """A custom loop trains; False when fit is diagnosed instead."""

    def benchmark_pipeline(self, dataset: Any, *, rebuilt: bool = False) -> None:
        """The loop's training dataset, before its steps are timed (`rebuilt`: made anew
        for another pass, as `ds.take(n)` each epoch)."""

    def train_calls(self, calls: TrainCalls) -> None:
        """A loop trains in calls of a tf.function that pulls inside it."""

    def fit_called(self, model: Any, dataset: Any, *, given: str) -> None:
        """fit trains `model` on `dataset` (None: fit was given a `given`, not a tf.data
        Dataset)."""

    def training_log_dir(self, log_dir: str) -> None:
        """The log directory of the training's own TensorBoard callback."""

    def data_pass(self, record: DataPass) -> None:
        """A pass over the data that was not training."""

    # -- the measured steps and after --
    def keep_measuring(self) -> bool:
        """At the step budget: True when it was extended (measuring goes on)."""

    def conclude(self, *, deep: bool = True) -> None:
        """The measured steps are done (`deep=False`: a safe point mid-fit)."""

    def alternate_fit(self, *, lead: bool, steps_left: int | None) -> FitAlternation | None:
        """Under fit at the step budget: what runs training and the step alone in turn (the
        callback then hands it fit's next steps), or None (conclude at once). `steps_left`:
        fit's steps after this one, where known, which bound the blocks."""

    def loop_at_budget(
        self, cached: CachedBatch, step: LoopStep | Reason | None
    ) -> BudgetServer | None:
        """A custom loop at its budget: what serves its next pulls, or None (concluded).
        `step`: the train step the loop calls once a step, or why none was found."""

    # -- what the user reads --
    def note(self, message: str) -> None:
        """Something the user should know."""

    def note_once(self, message: str) -> None:
        """Something the user should know, once."""
