"""XLA tried on a custom loop's own train step, driven by the loop's pulls.

Part of `training/`, the custom loop's counterpart of `training/model_side.py`: at the step
budget the loop is served its cached batch, and in alternating slices its train step (found
by `hooks/step_calls.py`) goes to itself or to its XLA twin, in the rounds of
`bench/interleaved.py`. Every captured variable is put back and the redirect removed; a
twin XLA cannot compile falls back to the original and names the op. Method:
(docs/design.md, "When the model sets the rate").
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pipediag.analysis.paired import OVERRUN
from pipediag.bench.interleaved import RoundPlan
from pipediag.clock import Clock
from pipediag.report.model_side import JIT_COMPILE, ModelTrial
from pipediag.report.reasons import (
    ALREADY_XLA,
    FUNCTIONS_EAGER,
    LOOP_STOPPED,
    NO_PYTHON_FUNCTION,
    Reason,
)
from pipediag.training.compute_alone import variables_put_back
from pipediag.training.pull_slice import PullSlice
from pipediag.training.step_rounds import fewest_rounds_s, slice_seconds, trial_result


@dataclass(frozen=True)
class LoopStep:
    """The loop's train step: the `Function` it calls once a step, its name, where the
    script defines it, and the table through which its calls are redirected (by id)."""

    function: Any
    name: str
    where: str | None
    redirects: dict[int, Callable[..., Any]] = field(default_factory=dict, compare=False)

    @property
    def code(self) -> str:
        site = f" ({self.where})" if self.where else ""
        return f"@tf.function(jit_compile=True)  # on {self.name}{site}"


def xla_twin(function: Any) -> Any | Reason:
    """A new `tf.function` of `function`'s Python function with `jit_compile=True` and its
    input signature, autograph and retracing settings; or why there is none. A method's
    `Function` (from the descriptor) already holds the method bound to its instance."""
    if getattr(function, "_jit_compile", None):
        return Reason(ALREADY_XLA)
    if getattr(function, "_run_functions_eagerly", False):
        return Reason(FUNCTIONS_EAGER)
    python_function = getattr(function, "_python_function", None)
    if python_function is None:
        return Reason(NO_PYTHON_FUNCTION)
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


def captured_variables(function: Any) -> list[Any]:
    """Every variable the traced step captures (weights, optimizer slots and iterations,
    metrics, random generators' states), each once."""
    found: dict[int, Any] = {}
    for concrete in function._list_all_concrete_functions():
        for variable in concrete.variables:
            found.setdefault(id(variable), variable)
    return list(found.values())


class LoopXlaTrial:
    """Serves the loop its cached batch while its train step's calls go to the original and
    to the XLA twin in turn. `next_batch()` answers each pull (None once over); `result()`
    ends the trial (redirect removed, variables put back) and says what it measured."""

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
        self._step = step
        self._batch = batch
        self._clock = clock
        self._step_s = step_s
        self.began = clock.now()
        self._end_s = self.began + budget_s
        self._plan: RoundPlan | None = None
        self._slice: PullSlice | None = None
        self._failure: Reason | None = None
        self._result: ModelTrial | None = None
        self._warm = 0  # untimed steps served before the rounds: the twin's, then the original's
        twin = make_twin(step.function)
        # Closed by `result()`: the variables are put back there.
        self._put_back = contextlib.ExitStack()
        if isinstance(twin, Reason):
            self._failure = twin
            return
        self._twin = twin
        self._put_back.enter_context(variables_put_back(variables_of(step.function)))

    def next_batch(self) -> Any | None:
        if self._failure is not None or self._result is not None:
            return None
        now = self._clock.now()
        if self._warm < 2:
            return self._warm_step(now)
        current = self._slice
        if current is not None:
            current.pull(now)
            if not current.over(now):
                return self._batch
            self._finish_slice(current)
        assert self._plan is not None
        due = self._plan.next_slice()
        if due is None:
            return None
        side, seconds = due
        self._redirect(side == 1)
        # Every step timed, the first too: the batch is the same cached one and both
        # functions are warm, so a switch costs nothing to leave out.
        self._slice = PullSlice(side, seconds, now)
        self._slice.pull(now)
        return self._batch

    def result(self) -> ModelTrial:
        """The trial's reading, once; the redirect is removed and the variables put back."""
        if self._result is not None:
            return self._result
        self._step.redirects.pop(id(self._step.function), None)
        self._put_back.close()
        code = self._step.code
        seconds = self._clock.now() - self.began
        if self._failure is not None:
            trial = ModelTrial(JIT_COMPILE, reason=self._failure, code=code, seconds=seconds)
        elif self._plan is None:
            trial = ModelTrial(JIT_COMPILE, reason=Reason(LOOP_STOPPED), code=code, seconds=seconds)
        else:
            if self._slice is not None:
                self._slice = None  # cut short by the loop: not timed
            rounds = self._plan.rounds()
            trial = trial_result(JIT_COMPILE, rounds, fit_per_s=None, seconds=seconds)
            trial = replace(trial, code=code, setting="True")
        self._result = trial
        return trial

    # -- before the rounds --
    def _warm_step(self, now: float) -> Any:
        """The twin's first step compiles it (untimed), the original's runs once; then
        the rounds start with what is left of the budget."""
        if self._warm == 0:
            self._warm = 1
            self._redirect(True, first=True)
            return self._batch
        self._warm = 2
        if self._failure is not None:
            return None
        self._redirect(False)
        # A long compilation still leaves the rounds twice their fewest: the trial is the
        # loop's only model-side one, and five rounds at the shortest slices leave no slack.
        left = max(self._end_s - now, 2 * fewest_rounds_s(self._step_s))
        # The original's warm step is served with this pull; the rounds begin at the next.
        self._plan = RoundPlan(
            slice_s=slice_seconds(self._step_s, left),
            until_s=now + left,
            hard_until_s=now + left * OVERRUN,
            clock=self._clock,
        )
        return self._batch

    def _redirect(self, to_twin: bool, *, first: bool = False) -> None:
        key = id(self._step.function)
        if not to_twin:
            self._step.redirects.pop(key, None)
        elif first:
            self._step.redirects[key] = self._compiling
        else:
            self._step.redirects[key] = self._twin

    def _compiling(self, *args: Any, **kwargs: Any) -> Any:
        """The twin's first call: XLA compiles it. A failure names the op, and the call goes
        on to the original, whose step the loop then sees."""
        from pipediag.training.model_variants import xla_failure

        try:
            return self._twin(*args, **kwargs)
        except Exception as exc:
            self._failure = xla_failure(exc)
            self._step.redirects.pop(id(self._step.function), None)
            return self._step.function(*args, **kwargs)

    # -- one slice --
    def _finish_slice(self, current: PullSlice) -> None:
        self._slice = None
        assert self._plan is not None
        self._plan.record(current.side, current.timing())
