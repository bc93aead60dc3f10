"""The model-side variants built on the user's Keras model: each builder puts back what it
changed before it returns; a function built keeps the settings it was traced with
(docs/design.md, "When the model sets the rate")."""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from pipediag.bench.isolate import kept_random_states
from pipediag.report.reasons import Reason
from pipediag.training.op_profile import first_line

# Keras keeps what its train function was built with in these attributes.
TRAIN_SETTINGS = ("train_function", "_jit_compile", "steps_per_execution")
# XLA names the op it cannot compile in its error, e.g. "Detected unsupported operations
# when trying to compile graph ...: PyFunc (No registered 'PyFunc' OpKernel for XLA_CPU_JIT".
_XLA_UNSUPPORTED = re.compile(r"unsupported operations[^:]*:\s*([A-Za-z0-9_]+)")
_NO_KERNEL = re.compile(r"No registered '([A-Za-z0-9_]+)' OpKernel for XLA")


@contextlib.contextmanager
def kept_train_settings(model: Any) -> Iterator[None]:
    """The model's train function and its build settings, as they were, afterwards."""
    saved = {name: model.__dict__[name] for name in TRAIN_SETTINGS if name in model.__dict__}
    try:
        yield
    finally:
        for name, value in saved.items():
            # the attributes themselves, not the setters: Keras' jit_compile setter warns
            object.__setattr__(model, name, value)


def xla_train_function(model: Any) -> Callable[[Any], Any] | Reason:
    if getattr(model, "run_eagerly", False):
        return Reason("runs-eagerly")
    with kept_train_settings(model), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.jit_compile = True
        if not model.jit_compile:
            return Reason("no-jit-support")
        model.make_train_function(force=True)
        built: Callable[[Any], Any] = model.train_function
    return built


def multi_step_train_function(model: Any, steps: int) -> Callable[[Any], Any]:
    """The train function rebuilt for `steps` batches a call, to trace in `traced_with_steps`."""
    with traced_with_steps(model, steps):
        model.make_train_function(force=True)
        built: Callable[[Any], Any] = model.train_function
    return built


@contextlib.contextmanager
def traced_with_steps(model: Any, steps: int) -> Iterator[None]:
    with kept_train_settings(model):
        model.steps_per_execution = steps
        yield


def xla_failure(exc: BaseException) -> Reason:
    """An XLA compilation that failed: the op it could not compile, if named."""
    text = str(exc)
    if found := _XLA_UNSUPPORTED.search(text) or _NO_KERNEL.search(text):
        return Reason("xla-op", detail=found.group(1))
    return Reason("xla-failed", detail=first_line(exc, 200))


def policy_for(gpu: bool, cpu_flags: str) -> tuple[str, Reason | None]:
    """The dtype policy to try, and why none fits (emulated bfloat16 only slows a CPU step)."""
    if gpu:
        return "mixed_float16", None
    if any(flag in cpu_flags.split() for flag in ("avx512_bf16", "amx_bf16")):
        return "mixed_bfloat16", None
    return "mixed_bfloat16", Reason("no-bfloat16")


def cpu_flags() -> str:
    """The CPU's feature flags (Linux); empty where they cannot be read."""
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("flags"):
                return line.partition(":")[2]
    return ""


def clone_blocker(model: Any) -> Reason | None:
    """Why the model cannot be cloned under another policy, or None."""
    import keras

    if model.__class__ in (keras.Sequential, keras.Model) or type(model).__name__ == "Functional":
        return None
    return Reason("subclassed-model", detail=type(model).__name__)


def mixed_precision_clone(model: Any, policy: str) -> Any:
    """A clone of `model` under `policy`, output layers kept float32, with a fresh optimizer."""
    import keras

    outputs = output_layers(model)

    def rebuilt(layer: Any) -> Any:
        config = layer.get_config()
        if id(layer) not in outputs and "dtype" in config:
            config["dtype"] = policy
        return layer.__class__.from_config(config)

    previous = keras.mixed_precision.global_policy()
    try:
        with kept_random_states():
            keras.mixed_precision.set_global_policy(policy)
            clone = keras.models.clone_model(model, clone_function=rebuilt)
            clone.set_weights(model.get_weights())
            optimizer = model.optimizer
            inner = getattr(optimizer, "inner_optimizer", optimizer)
            fresh = inner.__class__.from_config(inner.get_config())
            clone.compile(optimizer=fresh, loss=model.loss)
    finally:
        keras.mixed_precision.set_global_policy(previous)
    return clone


def output_layers(model: Any) -> set[int]:
    """The ids of the output layers (kept float32, as the Keras mixed-precision guide advises)."""
    outputs = getattr(model, "outputs", None) or []
    histories = [getattr(tensor, "_keras_history", None) for tensor in outputs]
    found = {id(history[0]) for history in histories if history is not None}
    if not found and getattr(model, "layers", None):
        found.add(id(model.layers[-1]))
    return found
