"""Where the step's time goes: a TF profiler window over a few steps on the cached batch.

Part of `training/`: at a custom loop's step budget, right before XLA is tried, the loop is
served its cached batch while the profiler runs from one pull to `steps` pulls later, its own
code between pulls included, and no train step needs to be found; under fit, calls of the
train function drive the same window (`training/model_side.py`). Read and grouped by
`training/op_profile.py` and `analysis/op_time.py`. Method: (docs/design.md, "When the model
sets the rate").
"""

from __future__ import annotations

from typing import Any, Protocol

from pipediag.analysis.op_time import ProfiledWindow, top_ops
from pipediag.clock import Clock
from pipediag.report.model_side import TopOp
from pipediag.report.reasons import ERROR, NO_OP_EVENTS, PROFILE_STOPPED, Reason


class Profiler(Protocol):
    """The profiler session the window drives (`op_profile.ProfilerSession`)."""

    def start(self) -> Reason | None: ...

    def stop(self) -> None: ...

    def read(self, steps: int, wall_ns: int) -> ProfiledWindow | Reason: ...

    def discard(self) -> None: ...


# The window's reading: the step's top ops, or why there are none.
OpsFound = tuple[list[TopOp], Reason | None]


class LoopProfile:
    """Serves the loop its cached batch for `steps` steps under the profiler. `next_batch()`
    answers each pull (None once over); `result()` ends the window (the profiler stopped,
    even where the loop stopped first) and says what it found."""

    def __init__(
        self,
        batch: Any,
        *,
        steps: int,
        clock: Clock,
        profiler: Profiler,
        layer_names: list[str],
    ) -> None:
        self._batch = batch
        self._steps = max(1, steps)
        self._clock = clock
        self._profiler = profiler
        self._layer_names = layer_names
        self.began = clock.now()
        self._started_at: float | None = None
        self._served = 0
        self._result: OpsFound | None = None

    def next_batch(self) -> Any | None:
        if self._result is not None:
            return None
        if self._started_at is None:
            failed = self._start()
            if failed is not None:
                self._result = ([], failed)
                return None
        elif self._served >= self._steps:
            self._result = self._read(self._clock.now() - self._started_at)
            return None
        self._served += 1
        return self._batch

    def result(self) -> OpsFound:
        """The window's reading, once; a window the loop cut short is stopped unread."""
        if self._result is None:
            self._profiler.discard()
            self._result = ([], Reason(PROFILE_STOPPED))
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
        return found, None if found else Reason(NO_OP_EVENTS)


def window_failure(exc: Exception) -> Reason:
    """Why the window, or a step in it, raised: in one line."""
    return Reason(ERROR, detail=f"{type(exc).__name__}: {str(exc)[:160]}")


def keras_layer_names(function: Any) -> list[str]:
    """The layer names of the Keras model whose step `function` is: the instance a method is
    bound to, or a model the step's Python function closes over; [] where there is none."""
    python_function = getattr(function, "_python_function", function)
    cells = getattr(python_function, "__closure__", None) or ()
    candidates = [getattr(python_function, "__self__", None), *map(_cell_contents, cells)]
    for candidate in candidates:
        layers = getattr(candidate, "layers", None)
        if isinstance(layers, list) and layers:
            return [str(getattr(layer, "name", "")) for layer in layers]
    return []


def _cell_contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None
