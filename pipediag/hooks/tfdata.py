"""Custom training loops: every pull ends in `OwnedIterator._next_internal`, whose time is the
step's input wait; each iterator's pass is judged once, at its first pull (docs/design.md,
"Finding the training")."""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipediag.bench.cache_sizing import cardinality
from pipediag.bench.isolate import dataset_ancestors
from pipediag.bench.pipeline import describe_chain
from pipediag.hooks.host import HookHost
from pipediag.hooks.pass_origin import pass_origin, script_uses_jax
from pipediag.hooks.patching import Patches
from pipediag.hooks.step_calls import StepCalls
from pipediag.hooks.train_evidence import GradientWatch, changed
from pipediag.report.model import DataPass
from pipediag.timeline import StepBudgetReached
from pipediag.training.budget import PULL, BudgetServer, CachedBatch

# A JAX loop takes no TensorFlow gradient to watch: a pass past this many batches trains.
JAX_PEEK_BATCHES = 1
MADE_S = "_pipediag_made_s"  # set on each iterator the script makes: how long making it took
# Set on an iterator once `CustomLoopTracker._rebuilt_at_budget` has read it.
JUDGED_AT_BUDGET = "_pipediag_judged_at_budget"

UNDECIDED = "undecided"  # no train step seen between its pulls yet
TRAINING = "training"
KERAS = "keras"  # made by a Keras call: never training
BESIDE = "beside"  # another dataset read once training was found (validation)
UNTRACKED = "untracked"  # not a dataset's iterator, or read after fit was diagnosed


@dataclass(slots=True, eq=False)
class _Pass:
    """One iterator's pass over a dataset, from its first pull."""

    iterator: weakref.ref[Any]
    dataset: weakref.ref[Any] | None
    kind: str
    began: float
    last: float
    by: str | None = None
    where: str | None = None
    chain: str = ""
    batches: int = 0
    fresh: bool = True  # no training pull timed yet
    snapshot: tuple[Any, ...] | None = None


class CustomLoopTracker:
    """Turns pulls on the training dataset's iterators into timed steps."""

    def __init__(
        self, session: HookHost, watch: GradientWatch, step_calls: StepCalls | None = None
    ) -> None:
        self._session = session
        # The tf.functions called between the measured pulls: the train step XLA is tried on.
        self.step_calls = step_calls or StepCalls()
        self._timeline = session.timeline
        self._now = session.clock.now
        self._watch = watch
        self._train_dataset: weakref.ref[Any] | None = None
        self._train_signature: tuple[str, str] | None = None
        self._train_where: str | None = None  # the script's line that pulls the training pass
        self._training_pass_ended = False  # at the budget: its pass ended, none begun since
        self._train_ancestors: list[weakref.ref[Any]] = []
        self._pass: _Pass | None = None
        self._passes: dict[int, _Pass] = {}
        self._open_step: tuple[float, float] | None = None  # (start, input wait)
        self._epoch = -1
        self._last_batch: Any = None
        self._budget: BudgetServer | None = None
        self._diagnosed_elsewhere = False
        self.pulls = 0  # the script's eager pulls before the budget

    def on_next(self, iterator: Any, fetch: Callable[[Any], Any]) -> Any:
        # Every pull, often thousands a second: the common case (a training pass) first.
        if self._budget is not None:
            return self._serve_budget(iterator, fetch)
        self.pulls += 1
        if (current := self._pass) is None or current.iterator() is not iterator:
            current = self._pass = self._pass_of(iterator)
        if current.kind != TRAINING:
            return self._pull_outside_training(current, iterator, fetch)
        now = self._now()
        if current.fresh:
            # A step left open by a loop that broke out early would span the passes' gap.
            current.fresh, self._open_step = False, None
            self.step_calls.pull(counted=False)
            self.step_calls.recording = True
            self._epoch += 1
            # The pass's start-up, `iter()` (docs/design.md, "Epoch starts"), and its length.
            if (made_s := getattr(iterator, MADE_S, None)) is not None:
                length = cardinality(getattr(iterator, "_dataset", None))
                steps = length if length is not None and length > 0 else None
                self._timeline.mark_epoch_start(self._epoch, float(made_s), steps)
        elif self._open_step is not None:
            start, wait = self._open_step
            self._open_step = None
            self.step_calls.pull()
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
        self._last_batch = batch
        return batch

    def forget_training(self) -> None:
        """Fit, or a loop that pulls inside a tf.function, is diagnosed instead."""
        self._train_dataset = self._open_step = None
        for judged in self._passes.values():
            if judged.kind == TRAINING:
                judged.kind = UNTRACKED
        self._diagnosed_elsewhere = True

    def finish(self) -> None:
        """Record the open passes not training, end what the budget serves; safe to call again."""
        if self._budget is not None:
            self._budget.finish()
            self._budget = None
        for judged in list(self._passes.values()):
            self._record(judged)
        self._passes.clear()
        self._pass = None

    def _pass_of(self, iterator: Any) -> _Pass:
        """The pass this iterator makes: judged at its first pull, looked up after."""
        if (known := self._passes.get(id(iterator))) is not None and known.iterator() is iterator:
            return known
        for key, other in list(self._passes.items()):
            if other.iterator() is None:  # its iterator is gone: recorded and forgotten
                del self._passes[key]
                self._record(other)
        dataset, now = getattr(iterator, "_dataset", None), self._now()
        dataset_ref = weakref.ref(dataset) if dataset is not None else None
        judged = _Pass(weakref.ref(iterator), dataset_ref, UNTRACKED, began=now, last=now)
        if dataset is not None and not self._diagnosed_elsewhere:
            origin = pass_origin(sys._getframe(1))
            judged.kind = UNDECIDED
            judged.by, judged.where = origin.by, origin.where
            judged.chain = describe_chain(dataset)
            if origin.by is not None:
                judged.kind = KERAS
            elif self._train_dataset is not None:
                if self._same_stream(judged, dataset):
                    self._start_training(judged, dataset)
                else:
                    judged.kind = BESIDE
        self._passes[id(iterator)] = judged
        return judged

    def _pull_outside_training(
        self, judged: _Pass, iterator: Any, fetch: Callable[[Any], Any]
    ) -> Any:
        """A pull that is not a timed step: counted, and checked for a train step if undecided."""
        if judged.kind == UNDECIDED:
            snapshot = self._watch.snapshot()
            if changed(judged.snapshot, snapshot) or (
                self._jax_loop() and judged.batches > JAX_PEEK_BATCHES
            ):
                dataset = judged.dataset() if judged.dataset is not None else None
                if dataset is not None and self._start_training(judged, dataset):
                    return self.on_next(iterator, fetch)
            judged.snapshot = snapshot
        if judged.kind == UNTRACKED:
            return fetch(iterator)
        try:
            batch = fetch(iterator)
        except Exception:
            if _is_end_of_sequence(sys.exc_info()[1]):
                self._passes.pop(id(iterator), None)
                self._record(judged)
                if self._pass is judged:
                    self._pass = None
            raise
        judged.batches += 1
        judged.last = self._now()
        return batch

    def _jax_loop(self) -> bool:
        """No TensorFlow gradient taken, and the script imported JAX (docs/design.md, "JAX")."""
        return self._watch.gradients_seen == 0 and script_uses_jax()

    def _start_training(self, judged: _Pass, dataset: Any) -> bool:
        """The pass trains on its dataset (benchmarked alone); False when fit is diagnosed."""
        if not self._session.mark_style("jax-loop" if self._jax_loop() else "custom-loop"):
            judged.kind = UNTRACKED
            return False
        judged.kind = TRAINING
        self._train_where = judged.where
        self._watch.watching = False
        if self._current_dataset() is dataset:
            return True
        known = self._train_dataset is not None
        self._train_dataset = weakref.ref(dataset)
        if known:  # rebuilt for a new pass (`ds.take(n)` in an epoch loop)
            self._session.benchmark_pipeline(dataset, rebuilt=True)
            return True
        self._train_signature = _signature(judged.chain, dataset)
        self._train_ancestors = [weakref.ref(d) for d in dataset_ancestors(dataset)[1:]]
        self._session.benchmark_pipeline(dataset)
        return True

    def _record(self, judged: _Pass) -> None:
        """A pass that was not training, for the report, once."""
        if judged.kind not in (UNDECIDED, KERAS, BESIDE):
            return
        judged.kind = UNTRACKED  # recorded
        self._session.data_pass(
            DataPass(
                batches=judged.batches,
                reason="keras" if judged.by is not None else "no-train-step",
                where=judged.where,
                by=judged.by,
                dataset=judged.chain,
                duration_s=max(0.0, judged.last - judged.began),
            )
        )

    def _at_budget(self, iterator: Any, fetch: Callable[[Any], Any]) -> Any:
        """The budget serves the loop from now on, its last batch first; its steps run just
        before the script ends, so nothing the loop saves sees them."""
        last, self._last_batch = self._last_batch, None
        self.step_calls.stop()
        self._budget = self._session.loop_at_budget(
            CachedBatch(last, self._cached_pull(last, fetch)), self.step_calls.train_step()
        )
        if self._budget is None:
            raise StepBudgetReached
        return self._serve_budget(iterator, fetch)

    def _cached_pull(self, batch: Any, fetch: Callable[[Any], Any]) -> Callable[[], object] | None:
        """A pull from an iterator over `batch` alone (a step on it pays one); None: no dataset."""
        if batch is None:
            return None
        import tensorflow as tf

        try:
            with self._session.gate.pipediag_reading():
                iterator = iter(tf.data.Dataset.from_tensors(batch).repeat())
        except Exception:  # a batch tf.data cannot hold: its steps pay no pull
            return None
        return lambda: fetch(iterator)

    def _serve_budget(self, iterator: Any, fetch: Callable[[Any], Any]) -> Any:
        budget = self._budget
        assert budget is not None
        dataset = getattr(iterator, "_dataset", None)
        if dataset is not self._current_dataset() and not self._rebuilt_at_budget(iterator):
            # Another dataset pulled meanwhile (validation), or the fix copies' own iterators.
            return fetch(iterator)
        if (batch := budget.next_batch()) is None:
            self._budget = None
            raise StepBudgetReached
        if batch is not PULL:
            return batch
        try:
            return fetch(iterator)  # a training block: the loop's own pull
        except Exception:
            if _is_end_of_sequence(sys.exc_info()[1]):
                budget.pull_ended_an_epoch()
                self._training_pass_ended = True
            raise

    def _rebuilt_at_budget(self, iterator: Any) -> bool:
        """Whether the loop's new pass, after its training pass ended, is over the same
        pipeline rebuilt (a fresh one each epoch), pulled at the same line: it trains from
        then on, so the budget's blocks go on past the epoch's end. Read at its first pull."""
        if not self._training_pass_ended or getattr(iterator, JUDGED_AT_BUDGET, False):
            return False
        setattr(iterator, JUDGED_AT_BUDGET, True)
        dataset = getattr(iterator, "_dataset", None)
        # Made by the script (`MADE_S`), never one of pipediag's own copies.
        if dataset is None or getattr(iterator, MADE_S, None) is None:
            return False
        if _signature(describe_chain(dataset), dataset) != self._train_signature:
            return False
        if pass_origin(sys._getframe()).where != self._train_where:
            return False  # another loop over data of the same shape: validation
        self._train_dataset = weakref.ref(dataset)
        self._training_pass_ended = False
        return True

    def _current_dataset(self) -> Any:
        return self._train_dataset() if self._train_dataset is not None else None

    def _same_stream(self, judged: _Pass, dataset: Any) -> bool:
        """The training data again: sharing a parent (`train.take(n)` each epoch), or the same
        stages and element types once the previous one is gone (not a live validation dataset)."""
        current = self._current_dataset()
        if current is dataset:
            return True
        parents = {id(p) for ref in self._train_ancestors if (p := ref()) is not None}
        if parents and any(id(node) in parents for node in dataset_ancestors(dataset)):
            return True
        return current is None and _signature(judged.chain, dataset) == self._train_signature


def _signature(chain: str, dataset: Any) -> tuple[str, str]:
    """What identifies a dataset rebuilt from the same code: its stages and element types."""
    return chain, repr(dataset.element_spec)


def _is_end_of_sequence(exc: BaseException | None) -> bool:
    # Read from the loaded module, never imported here: an iterator's end is TensorFlow's
    # OutOfRangeError, and without TensorFlow there is no such end to see.
    errors = sys.modules.get("tensorflow.python.framework.errors_impl")
    return errors is not None and isinstance(exc, errors.OutOfRangeError)


@dataclass(eq=False)
class IteratorPatch(Patches):
    """Wraps `OwnedIterator._next_internal` and `_create_iterator`, and `DatasetV2.__init__`."""

    tracker: CustomLoopTracker
    session: HookHost
    on_made: Callable[[Any], None]

    def install(self, _module: object = None) -> None:
        if self.installed:
            return
        from tensorflow.python.data.ops import iterator_ops
        from tensorflow.python.eager import context

        owner = iterator_ops.OwnedIterator
        original, bypassed = owner.__dict__["_next_internal"], self.session.gate.bypassed
        on_next, executing_eagerly = self.tracker.on_next, context.executing_eagerly

        def _next_internal(iterator: Any) -> Any:
            if bypassed() or not executing_eagerly():
                return original(iterator)
            return on_next(iterator, original)

        original_create, now = owner.__dict__["_create_iterator"], self.session.clock.now
        reading, timeline = self.session.gate.pipediag_is_reading, self.session.timeline
        on_made = self.on_made

        def _create_iterator(iterator: Any, dataset: Any) -> Any:
            # Each epoch's start-up, in a custom loop (`iter()`) and under fit alike.
            if reading() or not executing_eagerly():
                return original_create(iterator, dataset)
            began = now()
            result = original_create(iterator, dataset)
            made = now()
            setattr(iterator, MADE_S, made - began)
            timeline.last_iterator_made = (made, made - began)
            on_made(iterator)
            return result

        self.replace(owner, "_next_internal", _next_internal)
        self.replace(owner, "_create_iterator", _create_iterator)
        from tensorflow.python.data.ops import dataset_ops

        original_init = dataset_ops.DatasetV2.__dict__["__init__"]

        def __init__(dataset: Any, variant_tensor: Any) -> None:
            # Each dataset made eagerly goes to `on_made` too: a tf.function may close over it.
            original_init(dataset, variant_tensor)
            if executing_eagerly() and not reading():
                on_made(dataset)  # never raises (`FunctionLoopTracker.data_made`)

        self.replace(dataset_ops.DatasetV2, "__init__", __init__)
