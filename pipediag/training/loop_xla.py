"""XLA tried on a custom loop's own train step, driven by the loop's pulls on its cached
batch, every captured variable put back (docs/design.md, "When the model sets the rate")."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pipediag.bench.interleaved import RoundPlan
from pipediag.clock import Clock
from pipediag.report.model_side import ModelTrial
from pipediag.report.reasons import Reason
from pipediag.training.driver import captured_variables, variables_put_back
from pipediag.training.model_variants import xla_failure
from pipediag.training.step_rounds import fewest_rounds_s, round_plan, slice_seconds, trial_result
from pipediag.training.training_trial import PullSlice


@dataclass(frozen=True)
class LoopStep:
    """The `Function` the loop calls once a step, and the table redirecting its calls (by id)."""

    function: Any
    name: str
    where: str | None
    redirects: dict[int, Callable[..., Any]] = field(default_factory=dict, compare=False)

    @property
    def code(self) -> str:
        site = f" ({self.where})" if self.where else ""
        return f"@tf.function(jit_compile=True)  # on {self.name}{site}"


def xla_twin(function: Any) -> Any | Reason:
    """`function`'s Python function as a new `tf.function` with `jit_compile=True`, or why not."""
    if getattr(function, "_jit_compile", None):
        return Reason("already-xla")
    if getattr(function, "_run_functions_eagerly", False):
        return Reason("functions-eager")
    if (python_function := getattr(function, "_python_function", None)) is None:
        return Reason("no-python-function")
    from tensorflow.python.eager.polymorphic_function import polymorphic_function

    return polymorphic_function.Function(
        python_function=python_function,
        name=f"{getattr(function, '_name', 'train_step')}_xla",
        input_signature=function.input_signature,
        autograph=getattr(function, "_autograph", True),
        jit_compile=True,
        reduce_retracing=getattr(function, "_reduce_retracing", False),
        experimental_attributes=getattr(function, "_attributes", None),
        experimental_autograph_options=getattr(function, "_experimental_autograph_options", None),
    )


class LoopXlaTrial:
    """Serves the loop its cached batch, its step's calls going to the original or the twin."""

    def __init__(
        self,
        step: LoopStep,
        batch: Any,
        *,
        clock: Clock,
        step_s: float,
        budget_s: float,
        make_twin: Callable[[Any], Any] = xla_twin,
        variables_of: Callable[[Any], list[Any]] = captured_variables,
    ) -> None:
        self._step, self._batch = step, batch
        self._clock, self._step_s = clock, step_s
        self.began = clock.now()
        self._end_s = self.began + budget_s
        self._plan: RoundPlan | None = None
        self._slice: PullSlice | None = None
        self._failure: Reason | None = None
        self._result: ModelTrial | None = None
        self._warm = 0  # untimed steps served before the rounds: the twin's, then the original's
        twin = make_twin(step.function)
        self._put_back = contextlib.ExitStack()
        if isinstance(twin, Reason):
            self._failure = twin
            return
        self._twin = twin
        # From the first served step to the last: the loop calls its step between pulls.
        self._put_back.enter_context(variables_put_back(variables_of(step.function)))

    def next_batch(self) -> Any | None:
        if self._failure is not None or self._result is not None:
            return None
        now = self._clock.now()
        if self._warm < 2:
            return self._warm_step(now)
        current = self._slice
        assert self._plan is not None
        if current is not None:
            current.pull(now)
            if not current.over(now):
                return self._batch
            self._slice = None
            self._plan.record(current.side, current.timing())
        if (due := self._plan.next_slice()) is None:
            return None
        side, seconds = due
        self._redirect(self._twin if side == 1 else None)
        # Every step timed, the first too: both functions are warm on the same cached batch.
        self._slice = PullSlice(side, seconds, now)
        self._slice.pull(now)
        return self._batch

    def result(self) -> ModelTrial:
        if self._result is not None:
            return self._result
        self._redirect(None)
        self._put_back.close()
        code, seconds = self._step.code, self._clock.now() - self.began
        if self._failure is not None or self._plan is None:
            reason = self._failure if self._failure is not None else Reason("loop-stopped")
            trial = ModelTrial("jit_compile", reason=reason, code=code, seconds=seconds)
        else:
            self._slice = None  # cut short by the loop: not timed
            rounds = self._plan.rounds()
            trial = trial_result("jit_compile", rounds, fit_per_s=None, seconds=seconds)
            trial = replace(trial, code=code, setting="True")
        self._result = trial
        return trial

    def _warm_step(self, now: float) -> Any:
        """The twin's first step compiles it (untimed), the original's runs once."""
        if self._warm == 0:
            self._warm = 1
            self._redirect(self._compiling)
            return self._batch
        self._warm = 2
        if self._failure is not None:
            return None
        self._redirect(None)
        # A long compilation still leaves the rounds twice their fewest: the fewest leave no slack.
        left = max(self._end_s - now, 2 * fewest_rounds_s(self._step_s))
        # The original's warm step is served with this pull; the rounds begin at the next.
        self._plan = round_plan(slice_seconds(self._step_s, left), left, now=now, clock=self._clock)
        return self._batch

    def _redirect(self, to: Callable[..., Any] | None) -> None:
        key = id(self._step.function)
        if to is None:
            self._step.redirects.pop(key, None)
        else:
            self._step.redirects[key] = to

    def _compiling(self, *args: Any, **kwargs: Any) -> Any:
        """The twin's first call, which compiles it; on failure the original runs."""
        try:
            return self._twin(*args, **kwargs)
        except Exception as exc:
            self._failure = xla_failure(exc)
            self._redirect(None)
            return self._step.function(*args, **kwargs)
