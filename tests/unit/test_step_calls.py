"""A custom loop's train step, found between its pulls (`hooks/step_calls.py`), and the XLA
trial driven by its pulls (`training/loop_xla.py`), on stand-in functions and a fake clock
(docs/design.md, "When the model sets the rate")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loop_serving import RecordedResults, loop_server
from synthetic_reports import FakeClock

from pipediag.hooks.step_calls import StepCalls, definition_site
from pipediag.renderers.reason_words import reason_words
from pipediag.report.model import ComputeAlone
from pipediag.report.model_side import ModelTrial
from pipediag.report.reasons import Reason
from pipediag.training.budget import LoopWork
from pipediag.training.loop_xla import LoopStep, LoopXlaTrial


def train_step(a: Any) -> Any:
    return a


def log_metrics(a: Any) -> Any:
    return a


class _Function:
    """What the patch sees of a `tf.function`: its Python function."""

    def __init__(self, python_function: Callable[..., Any]) -> None:
        self._python_function = python_function


def _framework_function() -> _Function:
    namespace: dict[str, Any] = {}
    code = compile("def update(a):\n    return a\n", "/x/site-packages/keras/src/opt.py", "exec")
    exec(code, namespace)  # noqa: S102 - a function whose code claims to be Keras'
    return _Function(namespace["update"])


def _counted(calls: StepCalls, per_step: list[list[_Function]]) -> LoopStep | str:
    """The loop's steps: each pull, then the functions its step calls."""
    calls.recording = True
    calls.pull(counted=False)
    for called in per_step:
        for function in called:
            calls.called(function)
        calls.pull()
    return calls.train_step()


def test_the_function_called_once_between_pulls_is_the_train_step() -> None:
    step, logging = _Function(train_step), _Function(log_metrics)
    # a metric logger every fifth step, and Keras' own function each step, are not it
    keras_update = _framework_function()
    steps = [[step, keras_update] + ([logging] if n % 5 == 0 else []) for n in range(20)]
    found = _counted(StepCalls(), steps)
    assert isinstance(found, LoopStep)
    assert found.function is step and found.name == "train_step"
    assert found.where is not None and found.where.startswith("test_step_calls.py:")
    assert found.where == definition_site(step)
    assert found.code == f"@tf.function(jit_compile=True)  # on train_step ({found.where})"


def test_a_loop_that_calls_no_tf_function_is_told_its_step_runs_eagerly() -> None:
    assert _counted(StepCalls(), [[] for _ in range(10)]) == Reason("no-function")
    keras_now_and_then = _framework_function()
    steps = [[keras_now_and_then] if n % 3 == 0 else [] for n in range(10)]
    assert _counted(StepCalls(), steps) == Reason("no-function")
    assert "its step runs eagerly" in reason_words(Reason("no-function"))


def test_a_loop_stepping_through_keras_own_function_is_told_the_model_s_setting() -> None:
    # `model.train_on_batch` in a loop: the function called each step is Keras'
    keras_train_function = _framework_function()
    reason = _counted(StepCalls(), [[keras_train_function] for _ in range(10)])
    assert reason == Reason("framework-step", detail="update")
    words = reason_words(reason)
    assert "framework's own (update)" in words
    assert "model.compile(..., jit_compile=True)" in words


def test_the_loop_s_trial_shows_under_what_to_change_in_the_model_with_its_code() -> None:
    from pipediag.renderers.model_words import change_lines

    code = "@tf.function(jit_compile=True)  # on train_step (train.py:12)"
    trial = ModelTrial("jit_compile", 100.0, 140.0, 1.4, [1.2, 1.6], 5, "clear gain", code=code)
    lines = change_lines(ComputeAlone(measured=True, trials=[trial]))
    assert any(line.startswith(" 1. XLA (jit_compile=True): 1.40x") for line in lines)
    assert f"      {code}" in lines


def test_several_functions_once_a_step_or_one_called_twice_get_a_reason() -> None:
    step, other = _Function(train_step), _Function(log_metrics)
    several = _counted(StepCalls(), [[step, other] for _ in range(10)])
    assert isinstance(several, Reason) and "several tf.functions" in reason_words(several)
    assert "(log_metrics, train_step)" in reason_words(several)
    twice = _counted(StepCalls(), [[step, step] for _ in range(10)])
    assert isinstance(twice, Reason)
    assert "train_step several times between pulls" in reason_words(twice)


def test_too_few_steps_and_calls_before_the_first_pull_do_not_count() -> None:
    calls = StepCalls()
    few = _counted(calls, [[_Function(train_step)]])
    assert isinstance(few, Reason) and "1 steps counted, too few" in reason_words(few)
    calls = StepCalls()
    calls.recording = True
    calls.called(_Function(log_metrics))  # before the pass's first pull: dropped
    step = _Function(train_step)
    found = _counted(calls, [[step] for _ in range(5)])
    assert isinstance(found, LoopStep) and found.function is step


# --- the trial, driven by the loop's pulls -----------------------------------------------


class _Variable:
    def __init__(self, value: float) -> None:
        self.value = value

    def numpy(self) -> float:
        return self.value

    def assign(self, value: float) -> None:
        self.value = value


class _Loop:
    """A loop whose step writes a variable and takes `original_s` (its twin `twin_s`) of
    fake time; its calls go through the redirect table as the patch sends them."""

    def __init__(self, clock: FakeClock, original_s: float, twin_s: float) -> None:
        self.clock = clock
        self.weight = _Variable(1.0)
        self.original_s, self.twin_s = original_s, twin_s
        self.function = _Function(train_step)
        self.step = LoopStep(self.function, "train_step", "train.py:3")
        self.twin_calls = 0

    def run(self, function_s: float, batch: Any) -> Any:
        self.clock.advance(function_s)
        self.weight.assign(self.weight.value + 1.0)
        return batch

    def call(self, batch: Any) -> Any:
        redirect = self.step.redirects.get(id(self.function))
        if redirect is not None:
            return redirect(batch)
        return self.run(self.original_s, batch)

    def twin(self, _function: Any) -> Callable[[Any], Any]:
        def run(batch: Any) -> Any:
            self.twin_calls += 1
            return self.run(self.twin_s, batch)

        return run

    def trial(self, make_twin: Callable[[Any], Any] | None = None) -> LoopXlaTrial:
        return LoopXlaTrial(
            self.step,
            "cached",
            clock=self.clock,
            step_s=self.original_s,
            budget_s=2.0,
            make_twin=make_twin or self.twin,
            variables_of=lambda function: [self.weight],
        )


def test_the_twin_twice_as_fast_measures_about_2x_and_the_variables_are_put_back() -> None:
    clock = FakeClock()
    loop = _Loop(clock, original_s=0.010, twin_s=0.005)
    trial = loop.trial()
    served = 0
    while (batch := trial.next_batch()) is not None:
        assert batch == "cached"
        loop.call(batch)
        served += 1
        assert served < 10_000
    result = trial.result()
    assert result.change == "jit_compile" and result.setting == "True"
    assert result.speedup is not None and 1.8 < result.speedup < 2.2
    assert result.interval is not None and result.interval[0] > 1.5
    assert result.code.endswith("# on train_step (train.py:3)")
    assert loop.twin_calls > 0 and not loop.step.redirects
    assert loop.weight.value == 1.0
    assert trial.result() is result  # once


def test_an_op_xla_cannot_compile_is_named_and_its_call_runs_the_original() -> None:
    clock = FakeClock()
    loop = _Loop(clock, original_s=0.010, twin_s=0.005)

    def failing(_function: Any) -> Callable[[Any], Any]:
        def run(batch: Any) -> Any:
            raise ValueError(
                "Detected unsupported operations when trying to compile graph on "
                "XLA_CPU_JIT: AsString (No registered 'AsString' OpKernel)"
            )

        return run

    # the fallback calls the function itself, which the stand-in makes a plain call
    def original(batch: Any) -> Any:
        return loop.run(loop.original_s, batch)

    loop.function = original  # type: ignore[assignment]
    loop.step = LoopStep(original, "train_step", None)
    trial = loop.trial(failing)
    answers = []
    while (batch := trial.next_batch()) is not None:
        answers.append(loop.call(batch))
    result = trial.result()
    assert answers == ["cached"]
    assert result.reason == Reason("xla-op", detail="AsString") and not result.measured
    assert loop.weight.value == 1.0 and not loop.step.redirects


def test_a_step_already_under_xla_is_not_tried() -> None:
    from pipediag.training.loop_xla import xla_twin

    function = _Function(train_step)
    function._jit_compile = True  # type: ignore[attr-defined]
    assert xla_twin(function) == Reason("already-xla")


def test_the_budget_server_reports_why_no_step_was_tried_once_the_rewrites_are_over() -> None:
    clock = FakeClock()
    results = RecordedResults(work=LoopWork(model_s=2.0))
    server = loop_server(clock, results, step=Reason("no-function"))
    while server.next_batch() is not None:
        clock.advance(0.01)
    server.finish()
    tried = results.model_trials
    assert [t.reason for t in tried] == [Reason("no-function")]
