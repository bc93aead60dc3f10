"""Keras 3 `fit` on the JAX backend: its jitted train step, whose state argument is donated, run on
a copy of fit's state, so fit's own arrays are never written; and the sync that ends a JAX loop's
timed blocks, a jitted step returning once dispatched (docs/design.md, "JAX"). JAX is imported only
for a JAX model; the loop's sync takes it from `sys.modules`."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

from pipediag.clock import Clock, run_block
from pipediag.report.reasons import Reason
from pipediag.report.vocabulary import ComputeAloneMethod
from pipediag.timeline import StepTimeline
from pipediag.training.fit_backend import fit_batches_per_call

# The order of `train_step`'s state tuple, as `fit` builds it (`JAXTrainer._get_jax_state`).
STATE_KEYS = (
    "trainable_variables",
    "non_trainable_variables",
    "optimizer_variables",
    "metrics_variables",
)


def fit_state(model: Any) -> tuple[list[Any], ...] | Reason:
    """fit's state as its next step would get it (mid-fit: `model._jax_state`), or why not."""
    live = getattr(model, "_jax_state", None)
    if isinstance(live, dict) and all(live.get(key) is not None for key in STATE_KEYS):
        state = tuple(list(live[key]) for key in STATE_KEYS)
    else:
        state = tuple([v.value for v in group] for group in variable_groups(model))
    if any(value is None for group in state for value in group):
        return Reason("jax-state-purged")
    return state


def variable_groups(model: Any) -> list[Any]:
    """A model's variables a train step writes, in the order of fit's state (`STATE_KEYS`)."""
    return [
        getattr(model, "trainable_variables", []),
        getattr(model, "non_trainable_variables", []),
        getattr(getattr(model, "optimizer", None), "variables", []) or [],
        getattr(model, "metrics_variables", []),
    ]


class JaxFitSteps:
    """fit's train function on a private copy of fit's current state; each call synced."""

    def __init__(self, model: Any) -> None:
        import jax
        import jax.numpy as jnp

        if isinstance(state := fit_state(model), Reason):
            raise RuntimeError("fit's training state could not be read (its variables were purged)")
        self._jax: Any = jax  # typed loosely: jax is optional, and partly untyped
        self._train: Callable[[Any, Iterator[Any]], tuple[Any, Any]] = model.train_function
        # Copies: the step donates (consumes) the state it is given.
        self._state = jax.tree.map(jnp.copy, state)

    def call(self, iterator: Iterator[Any], *, as_fit_feeds: bool = True) -> None:
        """One call on `iterator`'s next batches; StopIteration once it is spent."""
        feeds = map(as_numpy, iterator) if as_fit_feeds else iterator
        logs, self._state = self._train(self._state, feeds)
        self._jax.block_until_ready((logs, self._state))


def as_numpy(element: Any) -> Any:
    """A dataset element's tensors as NumPy arrays, as fit hands them to the JAX train step."""
    import numpy as np
    import tensorflow as tf

    def convert(value: Any) -> Any:
        return value.numpy() if hasattr(value, "numpy") else np.asarray(value)

    return tf.nest.map_structure(convert, element)


def trainable(model: Any) -> Reason | None:
    """Why fit's JAX train step cannot run alone, or None."""
    if getattr(model, "train_function", None) is None:
        return Reason("no-compiled-train-function")
    state = fit_state(model)
    return state if isinstance(state, Reason) else None


class JaxStepAlone:
    """fit's JAX train step on the cached batch, each block on a fresh copy of fit's state."""

    method: ComputeAloneMethod = "keras-train-function"

    def __init__(self, model: Any, batch: Any) -> None:
        import jax

        self._model = model
        self.per_call = fit_batches_per_call(model)
        self._batch = jax.device_put(as_numpy(batch))
        state = fit_state(model)
        # The state arrays the step ran on copies of: none of fit's was written.
        self.restored_variables = 0 if isinstance(state, Reason) else sum(len(g) for g in state)

    def block(self, step_ended: Callable[[float], bool], *, clock: Clock, warmup: int) -> None:
        steps = JaxFitSteps(self._model)
        # Not fit's NumPy feed: it would time a copy the step never makes.
        run_block(lambda: steps.call(self._feed(), as_fit_feeds=False), step_ended, clock, warmup)

    def _feed(self) -> Iterator[Any]:
        for _ in range(self.per_call):
            yield self._batch


def device_sync() -> Callable[[], None] | None:
    """What waits for the JAX work in flight, or None where the script has not imported JAX."""
    if (jax := sys.modules.get("jax")) is None or not hasattr(jax, "live_arrays"):
        return None
    return lambda: jax.block_until_ready(jax.live_arrays())


def synced_step_s(timeline: StepTimeline, sync: Callable[[], None], clock: Clock) -> float | None:
    """The measured steps' mean up to the end of their device work (durations are dispatch)."""
    if not (measured := timeline.steps[timeline.warmup_steps :]):
        return None
    sync()
    return max(0.0, clock.now() - measured[0].start) / sum(s.count for s in measured)
