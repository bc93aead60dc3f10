"""What the hooks need of the diagnosis they feed: a narrow interface, not the session.

The hooks sit under the session: it installs them, and they report to it through this
Protocol only (`session.DiagnosticSession` implements it). A hook can then be read, and
tested with a stand-in, without the whole session and what it imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pipediag.clock import Clock
from pipediag.config import RunConfig
from pipediag.report.model import ComputeAlone, DataPass, PipelineBenchmark, TrainStyle
from pipediag.timeline import StepTimeline

if TYPE_CHECKING:
    from pipediag.hooks.training_trial import LoopTrials


class HookHost(Protocol):
    """The diagnosis, as the fit and custom-loop hooks see it."""

    clock: Clock
    config: RunConfig
    timeline: StepTimeline
    origin: float
    pipeline: PipelineBenchmark
    # Set while pipediag runs its own reads (the hooks then pass calls straight through),
    # and while `fit` runs (its own hooks time the steps, not the iterator's).
    paused: bool
    in_fit: bool

    # -- what training is --
    def mark_style(self, style: TrainStyle) -> bool: ...
    def data_pass(self, record: DataPass) -> None: ...
    def training_model(self, model: Any) -> None: ...
    def training_log_dir(self, log_dir: str) -> None: ...
    def benchmark_pipeline(self, dataset: Any) -> None: ...
    def benchmark_fit_input(self, x: Any) -> bool: ...

    # -- the measured steps and after --
    def keep_measuring(self) -> bool: ...
    def conclude(
        self,
        compute_alone: ComputeAlone | None = None,
        *,
        deep: bool = True,
        loop_serving: bool = False,
    ) -> None: ...
    def add_compute_alone_phase(self, result: ComputeAlone) -> None: ...
    def lockstep_steps(self) -> int | None: ...
    def serve_fix_trials(self) -> LoopTrials | None: ...
    def fix_trials_served(self, served: LoopTrials) -> None: ...

    # -- what the user reads --
    def note(self, message: str) -> None: ...
    def note_once(self, message: str) -> None: ...
    def phase(self, what: str, budget_s: float | None = None, *, redraw: bool = True) -> None: ...
