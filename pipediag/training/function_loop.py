"""A loop that pulls inside a `tf.function`: the training function, and it run alone on a feed
of the cached batch, its steps counted by the optimizer's step counter (docs/design.md, "Loops
that pull inside a tf.function")."""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pipediag.clock import Clock
from pipediag.report.reasons import Reason
from pipediag.report.vocabulary import ComputeAloneMethod
from pipediag.training.driver import (
    TrainDriver,
    captured_variables,
    graph_defs,
    ops_in,
    stateful_random_op_in,
)

# The optimizer's step counter among the variables a function captures: Keras 3's
# `iteration`, tf_keras' `iter`, other optimizers' `iterations` (a scalar integer).
_COUNTER_NAME = re.compile(r"(^|/)(iteration|iterations|iter|global_step)(:\d+)?$")


def step_counter(function: Any) -> Any | None:
    for variable in captured_variables(function):
        integer = getattr(getattr(variable, "dtype", None), "is_integer", False)
        name = str(getattr(variable, "name", ""))
        if integer and tuple(variable.shape) == () and _COUNTER_NAME.search(name):
            return variable
    return None


def function_name(function: Any) -> str:
    python = getattr(function, "_python_function", None)
    name = getattr(python, "__qualname__", None) or getattr(function, "__name__", None)
    return str(name or getattr(function, "_name", "tf.function"))


def code_of(function: Any) -> Any:
    if (python := getattr(function, "_python_function", None)) is None:
        return None
    python = getattr(python, "__func__", python)
    with contextlib.suppress(Exception):  # a chain that cannot be followed: the outer one
        python = inspect.unwrap(python)
    return getattr(python, "__code__", None)


def definition_site(function: Any) -> str | None:
    """`file.py:line` where the script defines the function, if its code can be read."""
    code = code_of(function)
    return None if code is None else f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}"


def iterator_dataset(fed: Any) -> Any | None:
    """The dataset `fed` is or reads (a distributed iterator's first worker's); None if unknown."""
    if is_dataset(fed):
        return fed
    workers = getattr(fed, "_iterators", None)
    return getattr(workers[0] if workers else fed, "_dataset", None)


def is_dataset(value: Any) -> bool:
    import tensorflow as tf

    return isinstance(value, tf.data.Dataset)


@dataclass
class TrainCalls:
    """The tf.function that trains and its last arguments. `call`: `Function.__call__`; `slot`: its
    data's place (None: `captured`); `counter`: the step counter (None: a call a step)."""

    function: Any
    call: Callable[..., Any]
    slot: int | str | None
    counter: Any
    name: str
    where: str | None
    steps_per_call: int
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    captured: Any = None
    calls_made: int = 0  # counted steps where there is no counter: calls x steps a call
    held_batch: Any = None
    traced_for_trials: bool = False
    # `trained_on`'s answer, found once: it reads every traced graph
    _trained: Callable[[Any], Any] | Reason | None = field(default=None, init=False, repr=False)

    @classmethod
    def found(
        cls,
        function: Any,
        call: Callable[..., Any],
        slot: int | str | None,
        args: Any,
        kwargs: Any,
        *,
        counter: Any,
        steps: int,
        captured: Any,
    ) -> TrainCalls:
        """The training function found; `counter` None: each call counts `steps`."""
        name, where = function_name(function), definition_site(function)
        return cls(
            function, call, slot, counter, name, where, steps, tuple(args), dict(kwargs), captured
        )

    def fed(self) -> Any:
        """The iterator or dataset the last call was given, or the one it closes over."""
        if self.slot is None:
            return self.captured
        return self.args[self.slot] if isinstance(self.slot, int) else self.kwargs[self.slot]

    def passes_per_call(self) -> bool:
        """Each call iterates a dataset from its start."""
        return is_dataset(self.fed())

    def run(self, args: Any, kwargs: Any) -> Any:
        result = self.call(self.function, *args, **kwargs)
        if self.counter is None:
            self.calls_made += self.steps_per_call
        return result

    def count(self) -> int:
        """The steps so far (reading the counter waits for the call's work to end)."""
        return self.calls_made if self.counter is None else int(self.counter.numpy())

    @property
    def batches_per_call(self) -> int:
        return max(1, self.steps_per_call)

    def trained_on(self) -> Callable[[Any], Any] | Reason:
        """How the fixes' trials train this function: a call given a tf.data iterator in place
        of the loop's own (a one-replica tf.distribute one too), waited for; or why not."""
        if self._trained is None:
            self._trained = self._train_at_once()
        return self._trained

    def driver(self) -> TrainDriver | Reason:
        """This function as the fixes' trials drive it (`trained_on`), or why they cannot."""
        train = self.trained_on()
        return train if isinstance(train, Reason) else self._driver(train)

    def _driver(self, train: Callable[..., Any]) -> TrainDriver:
        variables = captured_variables(self.function)
        return TrainDriver(train=train, batches_per_call=self.batches_per_call, variables=variables)

    def _train_at_once(self) -> Callable[[Any], Any] | Reason:
        import tensorflow as tf

        replicas = getattr(getattr(self.fed(), "_strategy", None), "num_replicas_in_sync", 1)
        if self.slot is None or replicas > 1 or self.passes_per_call():
            return Reason("calls-no-fix-trial")
        if reads_to_end(self.function):
            return Reason("reads-iterator-to-end")
        if (blocker := stateful_random_op_in(graph_defs(self.function))) is not None:
            return Reason("stateful-random-op", detail=blocker)
        slot, args, kwargs = self.slot, self.args, self.kwargs

        def train(iterator: Any) -> Any:
            given_args, given_kwargs = list(args), dict(kwargs)
            if isinstance(slot, int):
                given_args[slot] = iterator
            else:
                given_kwargs[slot] = iterator
            result = self.call(self.function, *given_args, **given_kwargs)
            # the call's work is done once its counter, or else its first output, reads
            waited = [self.counter] if self.counter is not None else tf.nest.flatten(result)
            if waited and hasattr(waited[0], "numpy"):
                waited[0].numpy()
            return result

        return train

    def trace_for_trials(self, train: Callable[[Any], Any]) -> None:
        """Once, for a tf.distribute loop: a call of `train` on the cached batch, so that the
        new trace falls off the clock (a failure is left to the trials)."""
        if self.traced_for_trials or getattr(self.fed(), "_strategy", None) is None:
            return
        self.traced_for_trials = True
        if self.held_batch is None:
            return
        held = held_feed(self.fed(), self.held_batch, self.steps_per_call, plain=True)
        if isinstance(held, Reason):
            return
        with contextlib.suppress(Exception):
            train(held)

    def step_alone(self, batch: Any) -> CallStepAlone | Reason:
        if batch is None:
            return Reason("no-batch-kept")
        if (blocker := stateful_random_op_in(graph_defs(self.function))) is not None:
            return Reason("stateful-random-op", detail=blocker)
        if not self.passes_per_call() and reads_to_end(self.function):
            return Reason("reads-iterator-to-end")
        if isinstance(held := held_feed(self.fed(), batch, self.steps_per_call), Reason):
            return held
        self.held_batch = batch
        args, kwargs = list(self.args), dict(self.kwargs)
        swap = None
        if self.slot is None:
            swap = (data_handle(self.captured), data_handle(held))
        elif isinstance(self.slot, int):
            args[self.slot] = held
        else:
            kwargs[self.slot] = held
        on_held = functools.partial(self.run, tuple(args), kwargs)
        return CallStepAlone(self, self._driver(on_held), swap=swap, held=held)


@dataclass(eq=False)
class CallStepAlone:
    """The training function on the cached batch, each call's time spread over its steps."""

    calls: TrainCalls
    driver: TrainDriver  # `train`: a call on the held batch
    # A function that closes over its iterator reads the held one's in its place.
    swap: tuple[Any, Any] | None = None
    held: Any = None  # kept alive while its resource may be read
    per_call: int = field(default=1, init=False)  # steps are reported singly, not per call
    method: ComputeAloneMethod = field(default="training-function", init=False)
    restored_variables: int = field(init=False)

    def __post_init__(self) -> None:
        self.restored_variables = len(self.driver.variables)

    def block(self, step_ended: Callable[[float], bool], *, clock: Clock, warmup: int) -> None:
        calls, call = self.calls, self.driver.train
        counted = calls.calls_made  # put back too, as the counter is with the variables
        try:
            with self.driver.restoring(), captured_swapped(calls.function, self.swap):
                # `warmup` is in steps, a call runs several; the block starts where its first
                # call does, so no call's steps fall outside it (docs/design.md, "Loops that
                # pull inside a tf.function").
                for _ in range(math.ceil(warmup / calls.batches_per_call)):
                    call()
                count = calls.count()
                if step_ended(clock.now()):
                    return
                while True:
                    began = clock.now()
                    call()
                    after = calls.count()
                    ended = clock.now()
                    steps, count = after - count, after
                    if steps <= 0:
                        raise RuntimeError("the training function ran no step on the cached batch")
                    for k in range(1, steps + 1):
                        if step_ended(began + (ended - began) * k / steps):
                            return
        finally:
            calls.calls_made = counted


@contextlib.contextmanager
def captured_swapped(function: Any, swap: tuple[Any, Any] | None) -> Iterator[None]:
    """Within, `function`'s traced graphs read the handle `swap[1]` in place of `swap[0]`."""
    if swap is None:
        yield
        return
    old, new = swap
    saved = []
    for concrete in function._list_all_concrete_functions():
        captured = concrete._captured_inputs
        if any(value is old for value in captured):
            saved.append((concrete, captured))
            concrete._captured_inputs = [new if value is old else value for value in captured]
    try:
        yield
    finally:
        for concrete, captured in saved:
            concrete._captured_inputs = captured


def data_handle(fed: Any) -> Any:
    """The tensor a graph captures for an iterator or a dataset."""
    return fed._variant_tensor if is_dataset(fed) else fed._iterator_resource


def captured_data(function: Any, made: Callable[[int], Any | None]) -> Any | None:
    """The iterator or dataset `made` knows by handle id that `function` captures, if any."""
    for concrete in function._list_all_concrete_functions():
        for value in concrete._captured_inputs:
            if (fed := made(id(value))) is not None and data_handle(fed) is value:
                return fed
    return None


def held_feed(fed: Any, batch: Any, steps_per_call: int, *, plain: bool = False) -> Any | Reason:
    """What feeds `batch` in place of `fed`, of the same kind (tf.data with `plain`) and
    element spec, a dataset `steps_per_call` batches long; or why none can be made."""
    import tensorflow as tf

    if (spec := getattr(iterator_dataset(fed), "element_spec", None)) is None:
        return Reason("iterator-unreadable")
    flat_specs = tf.nest.flatten(spec)
    if not all(isinstance(s, tf.TensorSpec) for s in flat_specs):
        return Reason("not-plain-tensors")

    def relaxed(*parts: Any) -> Any:
        # The iterator's spec (a batch dimension of None) keeps the function from retracing.
        element = parts if len(parts) > 1 else parts[0]
        flat = [
            tf.compat.v1.placeholder_with_default(t, s.shape)
            for t, s in zip(tf.nest.flatten(element), flat_specs, strict=True)
        ]
        return tf.nest.pack_sequence_as(spec, flat)

    # As FastFlow's `take(1).cache().repeat()`: the map runs once, while the cache fills.
    held = tf.data.Dataset.from_tensors(batch).map(relaxed).cache().repeat()
    if is_dataset(fed):
        return held.take(steps_per_call)
    if (strategy := getattr(fed, "_strategy", None)) is None or plain:
        return iter(held)
    return iter(strategy.distribute_datasets_from_function(lambda _context: held))


def reads_to_end(function: Any) -> bool:
    """Whether `function` loops over an iterator to its end, which a held batch never has."""
    ops = {op for graph_def in graph_defs(function) for op in ops_in(graph_def)}
    through_optionals = "IteratorGetNextAsOptional" in ops and "IteratorGetNext" not in ops
    return through_optionals or "OptionalNone" in ops
