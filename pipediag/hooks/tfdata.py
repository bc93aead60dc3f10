"""Custom training loops: time every batch the loop pulls from the training dataset.

`for batch in dataset:`, `next(it)` and `it.get_next()` all end in
`OwnedIterator._next_internal`, which in eager mode fetches one batch synchronously. The
time spent in it is the step's input wait, measured directly. A step runs from one pull
to the next pull on the training dataset, so it includes the train step that the loop
runs on the batch.

Which dataset is the training one: the first dataset the loop pulls from. A peek (a
single batch, as in `for x in ds.take(1): print(x.shape)`) does not settle it: when
another dataset is pulled from after at most one batch, that one becomes the training
dataset instead. A training dataset rebuilt each epoch (`for x in ds.take(n)`) is
recognised by its stages and element types once the previous object is gone.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import Any

from pipediag.hooks.compute_alone import MAX_SECONDS, CachedBatchSteps
from pipediag.hooks.host import HookHost
from pipediag.hooks.training_trial import LoopTrials
from pipediag.timeline import StepBudgetReached

# A dataset that delivered at most this many batches before another one was read is a
# peek (`for x in ds.take(1): print(x.shape)`), not the training data.
PEEK_BATCHES = 1


class CustomLoopTracker:
    """Turns pulls on the training dataset's iterators into timed steps."""

    def __init__(self, session: HookHost) -> None:
        self._session = session
        self._timeline = session.timeline
        self._now = session.clock.now
        self._train_dataset: weakref.ref[Any] | None = None
        self._train_signature: tuple[str, str] | None = None
        self._train_ancestors: list[weakref.ref[Any]] = []
        self._train_batches = 0
        self._rejected: weakref.ref[Any] | None = None
        self._last_iterator: weakref.ref[Any] | None = None
        self._open_step: tuple[float, float] | None = None  # (start, input wait)
        self._epoch = -1
        self._last_batch: Any = None
        self._cached_steps: CachedBatchSteps | None = None
        self._fix_trials: LoopTrials | None = None

    def on_next(self, iterator: Any, fetch: Callable[[Any], Any]) -> Any:
        # Runs on every pull of the user's loop, often thousands a second: the common case
        # (the training dataset, already known) is tested first, without a method call, and
        # the step is closed with one call into the timeline.
        if self._cached_steps is not None:
            return self._serve_cached(iterator, fetch)
        if self._fix_trials is not None:
            return self._serve_fix_trials(iterator, fetch)
        dataset = getattr(iterator, "_dataset", None)
        known = self._train_dataset
        if dataset is None or (
            (known is None or known() is not dataset) and not self._is_training(dataset)
        ):
            return fetch(iterator)
        now = self._now()
        last = self._last_iterator
        if last is None or last() is not iterator:
            # A new pass over the data: a step left open by a loop that broke out early
            # would span the gap between passes, so it is dropped.
            self._last_iterator = weakref.ref(iterator)
            self._open_step = None
            self._epoch += 1
            self._session.mark_style("custom-loop")
        elif self._open_step is not None:
            start, wait = self._open_step
            self._open_step = None
            if self._timeline.add(start, now, wait, self._epoch) and (
                not self._session.keep_measuring()
            ):
                return self._at_budget(iterator, fetch)
        try:
            batch = fetch(iterator)
        except Exception:
            # No `as exc`: a frame holding its own exception is a reference cycle that
            # would keep the user's dataset alive until the next garbage collection.
            if _is_end_of_sequence(sys.exc_info()[1]):
                self._open_step = None
            raise
        self._open_step = (now, self._now() - now)
        self._train_batches += 1
        self._last_batch = batch
        return batch

    def _at_budget(self, iterator: Any, fetch: Callable[[Any], Any]) -> Any:
        """The measured steps are done: serve the loop its last batch to time the step alone.

        The steps served from the cache run just before the budget ends the script, so
        nothing the loop would save afterwards ever sees them.
        """
        step_s = self._timeline.median_measured_step_s()
        if self._last_batch is None or step_s is None:
            self._session.conclude()
            raise StepBudgetReached
        self._cached_steps = CachedBatchSteps(
            self._last_batch,
            clock=self._session.clock,
            step_s_hint=step_s,
            fixed_steps=self._session.lockstep_steps(),
        )
        self._session.phase(
            "measuring the train step alone on a cached batch", MAX_SECONDS, redraw=False
        )
        return self._serve_cached(iterator, fetch)

    def _serve_cached(self, iterator: Any, fetch: Callable[[Any], Any]) -> Any:
        cached = self._cached_steps
        assert cached is not None
        if getattr(iterator, "_dataset", None) is not self._current_dataset():
            return fetch(iterator)  # another dataset (e.g. validation) pulled meanwhile
        batch = cached.next_step()
        if batch is not None:
            return batch
        result = cached.result(self._session.origin)
        self._session.add_compute_alone_phase(result)
        self._cached_steps = None
        self._last_batch = None
        self._session.conclude(result, loop_serving=True)
        self._fix_trials = self._session.serve_fix_trials()
        if self._fix_trials is None:
            raise StepBudgetReached
        return self._serve_fix_trials(iterator, fetch)

    def _serve_fix_trials(self, iterator: Any, fetch: Callable[[Any], Any]) -> Any:
        """After compute alone: the loop is fed by each fix's two pipeline copies in turn
        (`hooks/training_trial.py`), then the budget ends the script."""
        trials = self._fix_trials
        assert trials is not None
        if getattr(iterator, "_dataset", None) is not self._current_dataset():
            return fetch(iterator)  # the copies' own iterators, or another dataset
        batch = trials.next_batch()
        if batch is not None:
            return batch
        self._fix_trials = None
        self._session.fix_trials_served(trials)
        raise StepBudgetReached

    def _current_dataset(self) -> Any:
        return self._train_dataset() if self._train_dataset is not None else None

    def _is_training(self, dataset: Any) -> bool:
        """Whether a dataset other than the known training one is (now) the training one."""
        current = self._train_dataset() if self._train_dataset is not None else None
        if self._rejected is not None and self._rejected() is dataset:
            return False
        if self._train_dataset is not None:
            if self._same_stream(dataset, current):
                # The training dataset rebuilt for a new pass (`ds.take(n)` in an epoch
                # loop): the same stream, benchmarked again only if the last one ran out
                # before it could be timed (a peek with `train.take(1)`).
                self._train_dataset = weakref.ref(dataset)
                if not self._session.pipeline.measured:
                    self._session.benchmark_pipeline(dataset)
                return True
            if self._train_batches > PEEK_BATCHES:
                self._rejected = weakref.ref(dataset)
                return False
            self._session.note(
                f"a dataset that gave only {self._train_batches} batch(es) before another "
                "was read (a peek) was not taken as the training dataset"
            )
            self._session.timeline.clear()
        self._train_dataset = weakref.ref(dataset)
        self._train_signature = _signature(dataset)
        self._train_ancestors = [weakref.ref(d) for d in _ancestors(dataset)[1:]]
        self._train_batches = 0
        self._last_iterator = None
        self._epoch = -1
        self._session.benchmark_pipeline(dataset)
        return True

    def _same_stream(self, dataset: Any, current: Any) -> bool:
        """A new dataset object that is the training data again, built on the same parents.

        `train.take(n)` each epoch shares the object `train` with last epoch's dataset; a
        dataset built anew from the same code (same stages and element types) counts once
        the previous one is gone, so a live validation dataset of the same shape does not.
        """
        parents = {id(p) for ref in self._train_ancestors if (p := ref()) is not None}
        if parents and any(id(node) in parents for node in _ancestors(dataset)):
            return True
        return current is None and _signature(dataset) == self._train_signature


def _ancestors(dataset: Any, limit: int = 64) -> list[Any]:
    """The dataset and every dataset it reads from, breadth first."""
    found: list[Any] = []
    queue, seen = [dataset], set()
    while queue and len(found) < limit:
        node = queue.pop(0)
        if id(node) in seen:
            continue
        seen.add(id(node))
        found.append(node)
        inputs = getattr(node, "_inputs", None)
        try:
            queue.extend(inputs() if callable(inputs) else [])
        except Exception:  # noqa: S112 - a dataset kind without readable inputs
            continue
    return found


def _signature(dataset: Any) -> tuple[str, str]:
    """What identifies a dataset rebuilt from the same code: its stages and element types."""
    from pipediag.bench.pipeline import describe_chain

    return describe_chain(dataset), repr(dataset.element_spec)


def _is_end_of_sequence(exc: BaseException | None) -> bool:
    from tensorflow.python.framework import errors

    return isinstance(exc, errors.OutOfRangeError)


class IteratorPatch:
    """Wraps `OwnedIterator._next_internal`; `uninstall` restores the original exactly."""

    def __init__(self, tracker: CustomLoopTracker, session: HookHost) -> None:
        self._tracker = tracker
        self._session = session
        self._owner: Any = None
        self._original: Any = None

    def install(self, _module: object = None) -> None:
        if self._owner is not None:
            return
        from tensorflow.python.data.ops import iterator_ops
        from tensorflow.python.eager import context

        owner = iterator_ops.OwnedIterator
        original = owner.__dict__["_next_internal"]
        session = self._session
        on_next = self._tracker.on_next
        executing_eagerly = context.executing_eagerly

        def _next_internal(iterator: Any) -> Any:
            if session.paused or session.in_fit or not executing_eagerly():
                return original(iterator)
            return on_next(iterator, original)

        _next_internal.__wrapped__ = original  # type: ignore[attr-defined]
        owner._next_internal = _next_internal
        self._owner, self._original = owner, original

    def uninstall(self) -> None:
        if self._owner is None:
            return
        self._owner._next_internal = self._original
        self._owner = self._original = None
