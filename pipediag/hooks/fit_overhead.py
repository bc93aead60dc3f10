"""What `fit` adds around its train function, measured on fit's own steps.

A hook (`hooks/`): a fix tried on training under `fit` times the compiled train function
alone, so its gain must carry what `fit` adds to every step. During the measured steps the
train function's calls are timed (it is wrapped only then, and put back before anything
else calls it), and what each step took beyond its call is the correction. Why not the
measured step time less the trial's: (docs/design.md, "Fixes tried on training").
"""

from __future__ import annotations

from collections.abc import Callable
from statistics import median
from typing import Any

from pipediag.clock import Clock


class TrainFunctionTimer:
    """Times the calls of `model.train_function` made inside fit's steps.

    Args:
        model: fit's model, its train function already made (at `on_train_begin`).
        clock: the session's clock, the one the steps are timed on.
        sync: waits for what a call returned, where the call only dispatches its work (JAX:
            `jax.block_until_ready`). Keras waits for it right after anyway, when it turns
            the step's logs into numbers for pipediag's callback, so the wait moves no time
            in fit's step; unsynced, the call times its dispatch and the step's own work
            reads as fit's time around it, which the step alone, synced, then pays twice.
    """

    def __init__(self, model: Any, clock: Clock, sync: Callable[[Any], Any] | None = None) -> None:
        self._model = model
        self._clock = clock
        self._original: Callable[..., Any] | None = getattr(model, "train_function", None)
        self._call_s: float | None = None
        self.overheads_s: list[float] = []
        self._wrapper: Callable[..., Any] | None = None
        if callable(self._original):
            original = self._original

            def timed(*args: Any, **kwargs: Any) -> Any:
                start = clock.now()
                try:
                    result = original(*args, **kwargs)
                    if sync is not None:
                        sync(result)
                    return result
                finally:
                    self._call_s = clock.now() - start

            self._wrapper = timed
            model.train_function = timed

    def step_ended(self, step_s: float) -> None:
        """One of fit's steps took `step_s` (its callback's begin to end): what it took
        beyond its train function's call."""
        call_s, self._call_s = self._call_s, None
        if call_s is not None:
            self.overheads_s.append(max(0.0, step_s - call_s))

    def remove(self) -> None:
        """Put the train function back (where nothing has replaced it since)."""
        if self._wrapper is not None and self._model.train_function is self._wrapper:
            self._model.train_function = self._original
        self._wrapper = None

    def overhead_s(self) -> float | None:
        """The median of what fit's steps took beyond their train function; None unmeasured."""
        return median(self.overheads_s) if self.overheads_s else None
