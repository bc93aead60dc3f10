"""What `fit` adds around its train function, timed during the measured steps only: a fix tried
under `fit` times the train function alone, so its gain must carry it (docs/design.md, "Fixes
tried on training")."""

from __future__ import annotations

from collections.abc import Callable
from statistics import median
from typing import Any

from pipediag.clock import Clock


class TrainFunctionTimer:
    """Times the calls of `model.train_function` made inside fit's steps. `sync` waits for a
    result where the call only dispatches (JAX): Keras waits right after anyway, for the logs;
    unsynced, the step's work would read as fit's time, which the step alone then pays twice."""

    def __init__(self, model: Any, clock: Clock, sync: Callable[[Any], Any] | None = None) -> None:
        self._model = model
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
        """One of fit's steps took `step_s`: keep what it took beyond its call."""
        call_s, self._call_s = self._call_s, None
        if call_s is not None:
            self.overheads_s.append(max(0.0, step_s - call_s))

    def remove(self) -> None:
        if self._wrapper is not None and self._model.train_function is self._wrapper:
            self._model.train_function = self._original
        self._wrapper = None

    def overhead_s(self) -> float | None:
        return median(self.overheads_s) if self.overheads_s else None
