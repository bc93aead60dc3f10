"""Loops that pull inside a `tf.function`: the script's own functions' eager calls come here
(from `hooks/step_calls.py`) until one given (or closing over) its data moves its optimizer's
step counter; its calls are then timed (docs/design.md, "Loops that pull inside a tf.function")."""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipediag.hooks.host import HookHost
from pipediag.hooks.step_calls import is_framework_function
from pipediag.report.reasons import Reason, ReasonCode
from pipediag.timeline import StepBudgetReached
from pipediag.training.alternation import FitAlternation
from pipediag.training.function_loop import (
    TrainCalls,
    captured_data,
    data_handle,
    definition_site,
    function_name,
    is_dataset,
    iterator_dataset,
    step_counter,
)

_NO_COUNTER = -1
# Iterators and datasets kept known before the dead ones are first swept (a loop makes an
# iterator an epoch; a pipeline, a dataset a stage); then whenever the live ones double.
_MADE_KEPT = 256
_Call = Callable[..., Any]
_Slot = int | str | None  # the data's position among the arguments, or its keyword


@dataclass
class _Candidate:
    """A tf.function seen given data (or closing over it), and its step counter's last value."""

    function: weakref.ref[Any]
    counter: Any = None
    count: int = _NO_COUNTER
    captured: weakref.ref[Any] | None = None
    pulls: int = 0  # the script's eager pulls by its last call
    given_data: bool = True


class FunctionLoopTracker:
    """Finds and times the tf.function that trains on its data; `watching` till found elsewhere."""

    def __init__(
        self, session: HookHost, on_found: Callable[[], None], pulls: Callable[[], int]
    ) -> None:
        self._session, self._on_found = session, on_found
        self._pulls = pulls  # the script's eager pulls so far
        self.watching = True
        self._data_types: tuple[type, ...] | None = None
        self._counts: dict[int, _Candidate] = {}
        self._made: dict[int, weakref.ref[Any]] = {}  # made eagerly, by their handle's id
        self._sweep_at = _MADE_KEPT
        self.train: TrainCalls | None = None
        self._fed: weakref.ref[Any] | None = None
        self._count = 0
        self._epoch = -1
        self._alternation: FitAlternation | None = None
        self.seen: list[Reason] = []  # candidates that never trained, noted in the run's notes

    def call(self, function: Any, call: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        """One eager call of a `tf.function`: run, and timed when it trains."""
        if (train := self.train) is not None:
            if function is train.function:
                return self._timed(train, args, kwargs)
            return call(function, *args, **kwargs)
        if self._session.style != "none":
            self.watching = False
            return call(function, *args, **kwargs)
        if (slot := self._data_slot(args, kwargs)) is None and not self._made:
            return call(function, *args, **kwargs)  # no data it could close over
        return self._probe(function, call, slot, args, kwargs)

    def data_made(self, fed: Any) -> None:
        """A dataset or iterator made eagerly, known by handle (`captured_data`). Never raises."""
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

    def _data_slot(self, args: Any, kwargs: Any) -> _Slot:
        if (types := self._data_types) is None:
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

    def _probe(self, function: Any, call: _Call, slot: _Slot, args: Any, kwargs: Any) -> Any:
        """A candidate's call: a later call that moves its counter (found at the first) trains."""
        if (known := self._counts.get(id(function))) is not None and (
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
            # Eager pulls between the calls: the eager loop trains; this step reads a captured one.
            known.captured = None
            return result
        known.pulls = pulls
        if after > before and (slot is not None or captured is not None):
            steps = after - before
            train = TrainCalls.found(
                function, call, slot, args, kwargs, counter=counter, steps=steps, captured=captured
            )
            self._found(train, after)
        return result

    def _first_call(
        self, function: Any, call: _Call, slot: _Slot, args: Any, kwargs: Any, pulls: int
    ) -> None:
        """After the first call: its data, counter; one named by --train-function: taken at once."""
        captured = None
        if slot is None:
            # TensorFlow's private attributes moved: no closure found
            with contextlib.suppress(Exception):
                captured = captured_data(function, self._made_data)
            if captured is None:
                self._counts[id(function)] = _Candidate(weakref.ref(function), given_data=False)
                return
        counter = step_counter(function)
        named = function_name(function) == self._session.config.train_function
        if counter is None and named:
            # No counter: each call counts the steps a pass runs, set once the data is read.
            train = TrainCalls.found(
                function, call, slot, args, kwargs, counter=None, steps=1, captured=captured
            )
            if (steps := _steps_a_pass(train.fed())) is not None:
                train.steps_per_call = steps
                self._found(train, 0)
                return
            self._saw(function, "named-function-uncountable")
            return
        before = int(counter.numpy()) if counter is not None else _NO_COUNTER
        captured_ref = weakref.ref(captured) if captured is not None else None
        self._counts[id(function)] = _Candidate(
            weakref.ref(function), counter, before, captured_ref, pulls=pulls
        )
        if counter is None:
            self._saw(function, "function-without-step-counter")

    def _saw(self, function: Any, why: ReasonCode) -> None:
        site = _defined_at(definition_site(function))
        self.seen.append(Reason(why, detail=function_name(function), because=site))

    def _found(self, train: TrainCalls, count: int) -> None:
        """`train` trains: its calls are timed from the next one on (`count`: its counter)."""
        session = self._session
        if not session.mark_style("custom-loop"):
            self.watching = False
            return
        self._counts.clear()
        self._made.clear()
        self.train, self._count = train, count
        self._on_found()
        # The calls' input waits are not timed: the pairs are the only measure of the cost.
        session.timeline.measure_briefly()
        pulls_inside: ReasonCode = (
            "loop-pulls-inside" if train.counter is not None else "loop-pulls-inside-named"
        )
        site = _defined_at(train.where)
        session.note(
            Reason(pulls_inside, detail=train.name, value=train.steps_per_call, because=site)
        )
        session.train_calls(train)
        if (dataset := iterator_dataset(train.fed())) is not None:
            session.benchmark_pipeline(dataset)

    def _timed(self, train: TrainCalls, args: Any, kwargs: Any) -> Any:
        session = self._session
        train.args, train.kwargs = tuple(args), dict(kwargs)
        fed, each_call = train.fed(), train.passes_per_call()
        if each_call or self._fed is None or self._fed() is not fed:
            self._fed = weakref.ref(fed)
            self._epoch += 1
            # A new iterator's first step is left out of the alternation, unless each call
            # iterates its dataset anew: its start-up is then inside every call, both sides.
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
        timeline, reached = session.timeline, False
        for step_start, step_end in zip([start, *ends], ends, strict=False):
            reached = timeline.add(step_start, step_end, None, self._epoch) or reached
        if reached and not session.keep_measuring():
            self._at_budget()
        return result

    def _at_budget(self) -> None:
        """Training and the function alone on the cached batch in turn, then the end."""
        self._alternation = self._session.alternate_fit(lead=True, steps_left=None)
        self._block_ended()

    def _alternated(self, start: float, ends: list[float]) -> None:
        alternation = self._alternation
        assert alternation is not None
        for step_start, step_end in zip([start, *ends], ends, strict=False):
            if alternation.training_step(step_start, step_end):
                # The call's later steps ran before the next step-alone block: in no block.
                self._block_ended()
                return

    def _block_ended(self) -> None:
        """A training block ended (or none could start): the step alone's block, if due; once
        all are done, the verdict and the end of the loop's measured steps."""
        if self._alternation is None or self._alternation.after_training_block():
            self._alternation = None
            self._session.conclude()
            raise StepBudgetReached


def _steps_a_pass(fed: Any) -> int | None:
    """The steps a call runs without a counter: 1 for an iterator, a dataset's length, or None."""
    if not is_dataset(fed):
        return 1
    try:
        length = int(fed.cardinality())
    except Exception:
        return None
    return length if length > 0 else None


def _defined_at(site: str | None) -> Reason | None:
    return Reason("defined-at", detail=site) if site else None
