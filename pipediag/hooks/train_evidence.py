"""Whether a train step ran between two pulls: `tf.GradientTape.gradient` is wrapped to learn
which variables the script takes gradients for, and a few of the smallest are compared from
one pull to the next (docs/design.md, "Finding the training")."""

from __future__ import annotations

import contextlib
import math
import weakref
from dataclasses import dataclass
from typing import Any

from pipediag.hooks.patching import Patches

# How many of the watched variables are read at each undecided pull: the smallest, so the
# read is cheap whatever the model's size; several, so one that a step leaves unchanged (a
# frozen or gradient-free variable) does not hide the step.
WATCHED_VARIABLES = 4
# Sources past this many in one `gradient` call go unsized (still watched through the first).
MAX_SOURCES_SIZED = 4096


class GradientWatch:
    """The variables the script's gradients are taken for, and their values at a pull."""

    def __init__(self) -> None:
        self._variables: list[weakref.ref[Any]] = []
        self._known: set[int] = set()
        self.gradients_seen = 0
        self.watching = True  # off once every loop is decided: the wrapper then only counts

    def saw_gradient(self, sources: Any) -> None:
        self.gradients_seen += 1
        if not self.watching:
            return
        new = [s for s in _flatten(sources)[:MAX_SOURCES_SIZED] if id(s) not in self._known]
        sized = [(size, s) for s in new if _is_variable(s) and (size := _size(s)) is not None]
        if not sized:
            return
        alive = [(s, v) for ref in self._variables if (v := ref()) is not None and (s := _size(v))]
        chosen = sorted([*alive, *sized], key=lambda pair: pair[0])[:WATCHED_VARIABLES]
        self._variables = [weakref.ref(v) for _, v in chosen]
        self._known = {id(v) for _, v in chosen}

    def snapshot(self) -> tuple[Any, ...] | None:
        """The watched variables' values now; None while no gradient named any."""
        values = []
        for ref in self._variables:
            if (variable := ref()) is None:
                continue
            try:
                values.append(variable.numpy().copy())
            except Exception:  # noqa: S112 - a variable that cannot be read now is skipped
                continue
        return tuple(values) if values else None


def changed(before: tuple[Any, ...] | None, after: tuple[Any, ...] | None) -> bool:
    if before is None or after is None or len(before) != len(after):
        return False
    import numpy as np

    return any(not np.array_equal(a, b) for a, b in zip(before, after, strict=True))


def _flatten(sources: Any) -> list[Any]:
    if isinstance(sources, (list, tuple)):
        return [leaf for item in sources for leaf in _flatten(item)]
    return _flatten(list(sources.values())) if isinstance(sources, dict) else [sources]


def _is_variable(value: Any) -> bool:
    # tf.Variable and Keras 3 variables have `assign` and `numpy`; a watched tensor has no `assign`.
    return hasattr(value, "assign") and hasattr(value, "numpy")


def _size(variable: Any) -> int | None:
    """The element count; Keras 3 variables have a tuple for a shape."""
    try:
        shape = variable.shape
        size = shape.num_elements() if hasattr(shape, "num_elements") else math.prod(shape)
    except Exception:
        return None
    return int(size) if size is not None and size > 0 else None


@dataclass(eq=False)
class GradientTapePatch(Patches):
    """Wraps `tf.GradientTape.gradient`."""

    watch: GradientWatch

    def install(self) -> None:
        if self.installed:
            return
        from tensorflow.python.eager import backprop

        owner = backprop.GradientTape
        original, saw_gradient = owner.__dict__["gradient"], self.watch.saw_gradient

        def gradient(tape: Any, target: Any, sources: Any, *args: Any, **kwargs: Any) -> Any:
            # Watching must never break the user's step.
            with contextlib.suppress(Exception):
                saw_gradient(sources)
            return original(tape, target, sources, *args, **kwargs)

        self.replace(owner, "gradient", gradient)
