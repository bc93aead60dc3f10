"""Loops that pull inside a `tf.function`: each call of the training function is timed.

A hook (`hooks/`): such a loop pulls in the graph, where no iterator hook runs, so
`Function.__call__` (wrapped by `hooks/step_calls.py`) hands every eager call of a script's
own `tf.function` here until training is found. A call given an iterator (or a dataset it
iterates) whose optimizer step counter moves (`training/function_loop.py::step_counter`)
trains; each later call is timed as that many steps. Method: (docs/design.md, "Loops that
pull inside a tf.function").
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipediag.hooks.host import HookHost
from pipediag.hooks.step_calls import definition_site, function_name, is_framework_function
from pipediag.report.vocabulary import CUSTOM_LOOP, NO_TRAINING
from pipediag.timeline import StepBudgetReached
from pipediag.training.function_loop import (
    TrainCalls,
    captured_data,
    data_handle,
    is_dataset,
    iterator_dataset,
    step_counter,
)

_NO_COUNTER = -1
# Iterators and datasets kept known before the dead ones are first swept (a loop makes an
# iterator an epoch; a pipeline, a dataset a stage); then whenever the live ones double.
_MADE_KEPT = 256


@dataclass
class _Candidate:
    """A tf.function seen given data (or closing over it): its optimizer's step counter,
    that counter's last value, and the iterator or dataset it closes over."""

    function: weakref.ref[Any]
    counter: Any = None
    count: int = _NO_COUNTER
    captured: weakref.ref[Any] | None = None
    # The script's eager pulls by its last call, and whether it was given its data.
    pulls: int = 0
    given_data: bool = True


class FunctionLoopTracker:
    """Finds the tf.function that trains on an iterator or a dataset it is given, and times
    its calls.

    `watching` is cleared once the session diagnoses training some other way; `call` then
    is never reached. `on_found` runs once training is found (the eager loop hook stops
    timing pulls then).
    """

    def __init__(
        self,
        session: HookHost,
        on_found: Callable[[], None] = lambda: None,
        pulls: Callable[[], int] = lambda: 0,
    ) -> None:
        self._session = session
        self._on_found = on_found
        self._pulls = pulls  # the script's eager pulls so far
        self.watching = True
        self._data_types: tuple[type, ...] | None = None
        self._counts: dict[int, _Candidate] = {}
        # The iterators and datasets the script made eagerly, by the id of their handle.
        self._made: dict[int, weakref.ref[Any]] = {}
        self._sweep_at = _MADE_KEPT
        self.train: TrainCalls | None = None
        self._fed: weakref.ref[Any] | None = None
        self._count = 0
        self._epoch = -1
        self._alternation: Any = None
        self.seen: list[str] = []  # candidates that never trained, for the no-verdict text

    def call(self, function: Any, call: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        """One eager call of a `tf.function`: run it, and time it when it is the one that
        trains."""
        train = self.train
        if train is not None:
            if function is train.function:
                return self._timed(train, args, kwargs)
            return call(function, *args, **kwargs)
        if self._session.style != NO_TRAINING:
            self.watching = False
            return call(function, *args, **kwargs)
        slot = self._data_slot(args, kwargs)
        if slot is None and not self._made:
            return call(function, *args, **kwargs)  # no data it could close over
        return self._probe(function, call, slot, args, kwargs)

    def data_made(self, fed: Any) -> None:
        """The script made a tf.data iterator or dataset eagerly: known by its handle, for a
        function that closes over it (`captured_data`). Never raises into the script."""
        if self.train is not None or not self.watching:
            return
        try:
            if len(self._made) > self._sweep_at:
                self._made = {k: v for k, v in self._made.items() if v() is not None}
                self._sweep_at = max(_MADE_KEPT, 2 * len(self._made))
            self._made[id(data_handle(fed))] = weakref.ref(fed)
        except Exception:
            return

    def _made_data(self, handle_id: int) -> Any | None:
        known = self._made.get(handle_id)
        return known() if known is not None else None

    def _data_slot(self, args: Any, kwargs: Any) -> int | str | None:
        """Where among the arguments the call is given an iterator over its data, or a
        dataset it iterates; None where it is given neither."""
        types = self._data_types
        if types is None:
            import tensorflow as tf
            from tensorflow.python.data.ops.iterator_ops import OwnedIterator
            from tensorflow.python.distribute.input_lib import DistributedIteratorBase

            types = self._data_types = (OwnedIterator, DistributedIteratorBase, tf.data.Dataset)
        for position, value in enumerate(args):
            if isinstance(value, types):
                return position
        for key, value in kwargs.items():
            if isinstance(value, types):
                return str(key)
        return None

    def _probe(
        self,
        function: Any,
        call: Callable[..., Any],
        slot: int | str | None,
        args: Any,
        kwargs: Any,
    ) -> Any:
        """A candidate's call: its counter (and, given no data, the iterator or dataset it
        closes over) is found after its first (tracing) call; a later call that moves it
        shows the function trains."""
        known = self._counts.get(id(function))
        if known is not None and (
            known.function() is not function or (slot is not None and not known.given_data)
        ):
            known = None  # a new function, or one now given the data it was not before
        if known is None and is_framework_function(function):
            return call(function, *args, **kwargs)
        if known is not None and slot is None and known.captured is None:
            return call(function, *args, **kwargs)  # given no data, and closes over none
        result = call(function, *args, **kwargs)
        pulls = self._pulls()
        if known is None:
            self._first_call(function, call, slot, args, kwargs, pulls)
            return result
        counter, before = known.counter, known.count
        if counter is None:
            return result
        after = int(counter.numpy())
        known.count = after
        captured = known.captured() if known.captured is not None else None
        if slot is None and pulls != known.pulls:
            # The script pulled eagerly between the calls: its eager loop trains, and this
            # step only reads a second iterator it closes over.
            known.captured = None
            return result
        known.pulls = pulls
        if after > before and (slot is not None or captured is not None):
            found = self._calls(
                function, call, slot, counter, after - before, args, kwargs, captured
            )
            self._found(found, after)
        return result

    def _first_call(
        self,
        function: Any,
        call: Callable[..., Any],
        slot: int | str | None,
        args: Any,
        kwargs: Any,
        pulls: int,
    ) -> None:
        """After a function's first call (its trace): what it is given or closes over, and
        its counter; a function named as training without a counter is taken at once."""
        captured = None
        if slot is None:
            try:
                captured = captured_data(function, self._made_data)
            except Exception:  # TensorFlow's private attributes moved: no closure found
                captured = None
            if captured is None:
                self._counts[id(function)] = _Candidate(weakref.ref(function), given_data=False)
                return
        counter = step_counter(function)
        named = function_name(function) == self._session.config.train_function
        if counter is None and named:
            steps = _steps_a_pass(captured if slot is None else _argument(slot, args, kwargs))
            if steps is not None:
                found = self._calls(function, call, slot, None, steps, args, kwargs, captured)
                self._found(found, 0)
                return
            self.seen.append(
                _seen_text(
                    function,
                    "is named by --train-function, but iterates a dataset of unknown length: "
                    "its steps a call cannot be counted",
                )
            )
            return
        before = int(counter.numpy()) if counter is not None else _NO_COUNTER
        self._counts[id(function)] = _Candidate(
            weakref.ref(function),
            counter,
            before,
            weakref.ref(captured) if captured is not None else None,
            pulls=pulls,
        )
        if counter is None:
            self.seen.append(
                _seen_text(
                    function,
                    "takes the data it trains on, but steps no optimizer with a step counter "
                    "(Keras' `iterations`); if it trains, run with --train-function "
                    f"{function_name(function)} to count its steps by its calls",
                )
            )

    @staticmethod
    def _calls(
        function: Any,
        call: Callable[..., Any],
        slot: int | str | None,
        counter: Any,
        steps: int,
        args: Any,
        kwargs: Any,
        captured: Any,
    ) -> TrainCalls:
        name, where = function_name(function), definition_site(function)
        return TrainCalls(
            function, call, slot, counter, name, where, steps, tuple(args), dict(kwargs), captured
        )

    def _found(self, train: TrainCalls, count: int) -> None:
        """`train` trains: its calls are timed from the next one on (`count`: its counter)."""
        session = self._session
        if not session.mark_style(CUSTOM_LOOP):
            self.watching = False
            return
        self._counts.clear()
        self._made.clear()
        self.train = train
        self._count = count
        self._on_found()
        site = f" ({train.where})" if train.where else ""
        per_call = f"{train.steps_per_call} steps a call"
        if train.counter is None:
            per_call += (
                " (named by --train-function: it steps no optimizer with a step counter, so a "
                "call counts one step, or its dataset's length)"
            )
        session.note(
            f"the loop pulls inside the tf.function {train.name}{site}, {per_call}: "
            "each call is timed and its time spread over its steps; input waits inside it "
            "are not measured"
        )
        session.train_calls(train)
        dataset = iterator_dataset(train.fed())
        if dataset is not None:
            session.benchmark_pipeline(dataset)

    def _timed(self, train: TrainCalls, args: Any, kwargs: Any) -> Any:
        session = self._session
        train.args, train.kwargs = tuple(args), dict(kwargs)
        fed = train.fed()
        each_call = train.passes_per_call()
        if each_call or self._fed is None or self._fed() is not fed:
            self._fed = weakref.ref(fed)
            self._epoch += 1
            # A new iterator's first step is not timed in the alternation; where each call
            # iterates its dataset anew, its start-up is inside the call, spread over its
            # steps, on both sides alike (the held dataset is iterated anew too).
            if self._alternation is not None and not each_call:
                self._alternation.skip_step()
        clock = session.clock
        start = clock.now()
        result = train.run(args, kwargs)
        count = train.count()
        end = clock.now()
        steps, self._count = count - self._count, count
        if steps <= 0:
            return result
        train.steps_per_call = steps
        span = (end - start) / steps
        ends = [start + span * k for k in range(1, steps + 1)]
        if self._alternation is not None:
            self._alternated(start, ends)
            return result
        timeline = session.timeline
        reached = False
        for step_start, step_end in zip([start, *ends], ends, strict=False):
            reached = timeline.add(step_start, step_end, None, self._epoch) or reached
        if reached and not session.keep_measuring():
            self._at_budget()
        return result

    def _at_budget(self) -> None:
        """Training and the function alone on the cached batch in turn, then the end."""
        alternation = self._session.alternate_fit(lead=True, steps_left=None)
        if alternation is None:
            self._session.conclude()
            raise StepBudgetReached
        self._alternation = alternation
        if alternation.wants_step_alone:
            alternation.step_alone_block()
        self._over()

    def _alternated(self, start: float, ends: list[float]) -> None:
        alternation = self._alternation
        for step_start, step_end in zip([start, *ends], ends, strict=False):
            if alternation.training_step(step_start, step_end):
                # The call's later steps ran before the step-alone block that follows:
                # they belong to no block.
                if alternation.wants_step_alone:
                    alternation.step_alone_block()
                break
        self._over()

    def _over(self) -> None:
        alternation = self._alternation
        if alternation is None or not alternation.done:
            return
        self._alternation = None
        self._session.conclude()
        raise StepBudgetReached


def _seen_text(function: Any, why: str) -> str:
    site = definition_site(function)
    return f"{function_name(function)}{f' ({site})' if site else ''} {why}"


def _argument(slot: int | str, args: Any, kwargs: Any) -> Any:
    return args[slot] if isinstance(slot, int) else kwargs[slot]


def _steps_a_pass(fed: Any) -> int | None:
    """The steps one call runs where a step counter cannot say: one for an iterator (a call
    a step), a dataset's length for a dataset it iterates (None where unknown)."""
    if not is_dataset(fed):
        return 1
    try:
        length = int(fed.cardinality())
    except Exception:
        return None
    return length if length > 0 else None
