"""A custom loop's own train step: one wrapper around `Function.__call__` counts, during the
measured steps, the functions called eagerly between two pulls, and redirects an instance's
calls to its XLA twin during a trial (docs/design.md, "When the model sets the rate")."""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pipediag.hooks.patching import Patches
from pipediag.report.reasons import Reason
from pipediag.training.function_loop import code_of, definition_site, function_name
from pipediag.training.loop_xla import LoopStep


class CallWatcher(Protocol):
    """`hooks/function_loop.py`'s tracker: `call` runs the function, and may time it."""

    watching: bool

    def call(self, function: Any, call: Callable[..., Any], args: Any, kwargs: Any) -> Any: ...


# The train step is called once in at least this share of the counted steps (a first step
# after an epoch's end may show an extra call of a function that runs once an epoch).
ONCE_SHARE = 0.9
MIN_STEPS = 3  # too few steps to tell which function the loop calls each step
# Functions defined in these installed packages (or in pipediag) are never the train step.
FRAMEWORK_PACKAGES = ("tensorflow", "keras", "tf_keras", "tensorflow_probability")
_PIPEDIAG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class _Tally:
    function: weakref.ref[Any]
    name: str
    steps_once: int = 0  # steps in which it was called exactly once
    steps_more: int = 0  # steps in which it was called more than once


class StepCalls:
    """Which user `tf.function`s the loop calls between consecutive pulls: `called` on every
    eager call while `recording`; `pull` closes a step (`counted=False` drops it)."""

    def __init__(self) -> None:
        self.recording = False
        self._since: dict[int, list[Any]] = {}  # id -> [function, calls]
        self._tallies: dict[int, _Tally] = {}
        self._framework: dict[int, bool] = {}
        self._framework_steps: dict[int, int] = {}  # id -> steps calling it (Keras' own)
        self._framework_names: dict[int, str] = {}
        self.steps = 0
        # id(function) -> what its calls go to instead (the XLA twin during a trial's slice).
        self.redirects: dict[int, Callable[..., Any]] = {}

    def called(self, function: Any) -> None:
        if (entry := self._since.get(id(function))) is None:
            self._since[id(function)] = [function, 1]
        else:
            entry[1] += 1

    def pull(self, *, counted: bool = True) -> None:
        since, self._since = self._since, {}
        if not counted:
            return
        self.steps += 1
        for key, (function, calls) in since.items():
            if (framework := self._framework.get(key)) is None:
                framework = self._framework[key] = is_framework_function(function)
            if framework:
                self._framework_steps[key] = self._framework_steps.get(key, 0) + 1
                self._framework_names.setdefault(key, function_name(function))
                continue
            if (tally := self._tallies.get(key)) is None or tally.function() is not function:
                tally = self._tallies[key] = _Tally(weakref.ref(function), function_name(function))
            if calls == 1:
                tally.steps_once += 1
            else:
                tally.steps_more += 1

    def stop(self) -> None:
        """The measured steps are over; what was counted stays."""
        self.recording, self._since = False, {}

    def train_step(self) -> LoopStep | Reason:
        """The function called exactly once in nearly every counted step, or why none is."""
        if self.steps < MIN_STEPS:
            return Reason("steps-too-few-to-find", value=self.steps)
        live = [t for t in self._tallies.values() if t.function() is not None]
        needed = ONCE_SHARE * self.steps
        if not live:
            if keras_own := [k for k, n in self._framework_steps.items() if n >= needed]:
                return Reason("framework-step", detail=self._framework_names[keras_own[0]])
            return Reason("no-function")
        if len(once := [t for t in live if t.steps_once >= needed]) == 1:
            function = once[0].function()
            return LoopStep(function, once[0].name, definition_site(function), self.redirects)
        if len(once) > 1:
            return Reason("several-once", detail=", ".join(sorted(t.name for t in once)))
        busiest = max(live, key=lambda t: t.steps_once + t.steps_more)
        if busiest.steps_more >= needed:
            return Reason("called-several", detail=busiest.name)
        return Reason("none-once", detail=busiest.name, value=busiest.steps_once, limit=self.steps)


def is_framework_function(function: Any) -> bool:
    """Defined inside pipediag, or in an installed TensorFlow or Keras (by its code's file)."""
    if (code := code_of(function)) is None:
        return True
    path = os.path.normpath(code.co_filename)
    if path.startswith(_PIPEDIAG_DIR + os.sep):
        return True
    parts = path.split(os.sep)
    return any(
        part in ("site-packages", "dist-packages") and parts[n + 1] in FRAMEWORK_PACKAGES
        for n, part in enumerate(parts[:-1])
    )


@dataclass(eq=False)
class FunctionCallPatch(Patches):
    """Wraps `Function.__call__`: counts eager calls, sends an instance's to its redirect if set."""

    calls: StepCalls
    bypassed: Callable[[], bool]
    function_loop: CallWatcher | None = None

    def install(self, _module: object = None) -> None:
        if self.installed:
            return
        try:
            from tensorflow.python.eager import context
            from tensorflow.python.eager.polymorphic_function import polymorphic_function
        except Exception:  # an unusual TF build: no train step found, nothing else changes
            return
        owner = polymorphic_function.Function
        original = owner.__dict__["__call__"]
        calls, redirects, bypassed = self.calls, self.calls.redirects, self.bypassed
        loop, executing_eagerly = self.function_loop, context.executing_eagerly

        def __call__(function: Any, *args: Any, **kwargs: Any) -> Any:
            if redirects and (twin := redirects.get(id(function))) is not None:
                return twin(*args, **kwargs)
            if (calls.recording or (loop is not None and loop.watching)) and (
                executing_eagerly() and not bypassed()
            ):
                if calls.recording:
                    calls.called(function)
                if loop is not None and loop.watching:
                    return loop.call(function, original, args, kwargs)
            return original(function, *args, **kwargs)

        self.replace(owner, "__call__", __call__)

    def uninstall(self) -> None:
        self.calls.redirects.clear()
        super().uninstall()
