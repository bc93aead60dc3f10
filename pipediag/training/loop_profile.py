"""Where the step's time goes: a TF profiler window over a few steps on the cached batch, driven by
a custom loop's pulls or by fit's calls (docs/design.md, "When the model sets the rate")."""

from __future__ import annotations

from typing import Any, Protocol

from pipediag.analysis.op_time import ProfiledWindow, top_ops
from pipediag.bench.python_chain import closed_over
from pipediag.clock import Clock
from pipediag.report.model_side import TopOp
from pipediag.report.reasons import Reason


class Profiler(Protocol):
    """The profiler session the window drives (`op_profile.ProfilerSession`)."""

    def start(self) -> Reason | None: ...
    def stop(self) -> None: ...
    def read(self, steps: int, wall_ns: int) -> ProfiledWindow | Reason: ...
    def discard(self) -> None: ...


# The window's reading: the step's top ops, or why there are none.
OpsFound = tuple[list[TopOp], Reason | None]


class LoopProfile:
    """Serves the loop its cached batch for `steps` steps under the profiler."""

    def __init__(
        self, batch: Any, *, steps: int, clock: Clock, profiler: Profiler, layer_names: list[str]
    ) -> None:
        self._batch = batch
        self._steps = max(1, steps)
        self._clock, self._profiler = clock, profiler
        self._layer_names = layer_names
        self.began = clock.now()
        self._started_at: float | None = None
        self._served = 0
        self._result: OpsFound | None = None

    def next_batch(self) -> Any | None:
        if self._result is not None:
            return None
        if self._started_at is None:
            if (failed := self._start()) is not None:
                self._result = ([], failed)
                return None
        elif self._served >= self._steps:
            self._result = self._read(self._clock.now() - self._started_at)
            return None
        self._served += 1
        return self._batch

    def result(self) -> OpsFound:
        """The window's reading, once; one the loop cut short is discarded."""
        if self._result is None:
            self._profiler.discard()
            self._result = ([], Reason("profile-stopped"))
        return self._result

    def _start(self) -> Reason | None:
        try:
            failed = self._profiler.start()
        except Exception as exc:
            return window_failure(exc)
        if failed is None:
            self._started_at = self._clock.now()
        return failed

    def _read(self, wall_s: float) -> OpsFound:
        try:
            self._profiler.stop()
            window = self._profiler.read(self._steps, round(wall_s * 1e9))
        except Exception as exc:
            self._profiler.discard()
            return [], window_failure(exc)
        if isinstance(window, Reason):
            return [], window
        found = top_ops(window, self._layer_names)
        return found, None if found else Reason("no-op-events")


def window_failure(exc: Exception) -> Reason:
    return Reason("error", detail=f"{type(exc).__name__}: {str(exc)[:160]}")


def keras_layer_names(function: Any) -> list[str]:
    """The layer names of the Keras model `function` is bound to or closes over, if any."""
    python_function = getattr(function, "_python_function", function)
    for candidate in [getattr(python_function, "__self__", None), *closed_over(python_function)]:
        if isinstance(layers := getattr(candidate, "layers", None), list) and layers:
            return [str(getattr(layer, "name", "")) for layer in layers]
    return []
