"""Custom training loops: time every batch the loop pulls from the training dataset.

A hook (`hooks/`): every pull ends in `OwnedIterator._next_internal`, whose time is the
step's input wait; a step runs from one pull to the next on the training dataset. Each
iterator's pass is judged once, at its first pull: a pass Keras makes (`hooks/pass_origin.py`)
is never training, any other is undecided until a train step is seen between two of its
pulls (`hooks/train_evidence.py`), and a pass that ends undecided is skipped. Method:
(docs/design.md, "Finding the training").
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import Any

from pipediag.bench.isolate import dataset_ancestors
from pipediag.hooks.host import HookHost
from pipediag.hooks.pass_origin import pass_origin, script_uses_jax
from pipediag.hooks.patching import Patches
from pipediag.hooks.step_calls import StepCalls
from pipediag.hooks.train_evidence import GradientWatch, changed
from pipediag.report.model import KERAS_PASS, NO_TRAIN_STEP, DataPass
from pipediag.report.vocabulary import CUSTOM_LOOP, JAX_LOOP
from pipediag.timeline import StepBudgetReached
from pipediag.training.budget import PULL, BudgetServer, CachedBatch

# A JAX loop takes no TensorFlow gradient to watch: there, a pass that goes on past this
# many batches is taken for training (the rule before train steps were watched).
JAX_PEEK_BATCHES = 1

# Set on each iterator the script makes: how long making it took (`IteratorPatch`).
MADE_S = "_pipediag_made_s"

# What a pass is, once judged.
UNDECIDED = "undecided"  # no train step seen between its pulls yet
TRAINING = "training"
KERAS = "keras"  # made by a Keras call: never training
BESIDE = "beside"  # another dataset read once training was found (validation)
UNTRACKED = "untracked"  # not a dataset's iterator, or read after fit was diagnosed


class _Pass:
    """One iterator's pass over a dataset, from its first pull."""

    __slots__ = (
        "iterator",
        "dataset",
        "kind",
        "by",
        "where",
        "chain",
        "batches",
        "began",
        "last",
        "fresh",
        "snapshot",
    )

    def __init__(self, iterator: Any, dataset: Any, kind: str, now: float) -> None:
        self.iterator = weakref.ref(iterator)
        self.dataset: weakref.ref[Any] | None = (
            weakref.ref(dataset) if dataset is not None else None
        )
        self.kind = kind
        self.by: str | None = None
        self.where: str | None = None
        self.chain = ""
        self.batches = 0
        self.began = self.last = now
        self.fresh = True  # no training pull timed yet
        self.snapshot: tuple[Any, ...] | None = None


class CustomLoopTracker:
    """Turns pulls on the training dataset's iterators into timed steps."""

    def __init__(
        self,
        session: HookHost,
        watch: GradientWatch | None = None,
        step_calls: StepCalls | None = None,
    ) -> None:
        self._session = session
        # The tf.functions called between the measured pulls: the train step XLA is tried on.
        self.step_calls = step_calls or StepCalls()
        self._timeline = session.timeline
        self._now = session.clock.now
        self._watch = watch or GradientWatch()
        self._train_dataset: weakref.ref[Any] | None = None
        self._train_signature: tuple[str, str] | None = None
        self._train_ancestors: list[weakref.ref[Any]] = []
        self._pass: _Pass | None = None
        self._passes: dict[int, _Pass] = {}
        self._open_step: tuple[float, float] | None = None  # (start, input wait)
        self._epoch = -1
        self._last_batch: Any = None
        # At the step budget: what answers the loop's pulls until the budget ends the script.
        self._budget: BudgetServer | None = None
        self._diagnosed_elsewhere = False
        self.pulls = 0  # the script's eager pulls before the budget

    def on_next(self, iterator: Any, fetch: Callable[[Any], Any]) -> Any:
        # Runs on every pull of the user's loop, often thousands a second: the common case
        # (the pass already judged training) is tested first, and the step is closed with
        # one call into the timeline.
        if self._budget is not None:
            return self._serve_budget(iterator, fetch)
        self.pulls += 1
        current = self._pass
        if current is None or current.iterator() is not iterator:
            current = self._pass = self._pass_of(iterator)
        if current.kind != TRAINING:
            return self._pull_outside_training(current, iterator, fetch)
        now = self._now()
        if current.fresh:
            # A new pass over the data: a step left open by a loop that broke out early
            # would span the gap between passes, so it is dropped.
            current.fresh = False
            self._open_step = None
            self.step_calls.pull(counted=False)
            self.step_calls.recording = True
            self._epoch += 1
            self._mark_epoch_start(iterator)
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

    def _mark_epoch_start(self, iterator: Any) -> None:
        """The pass's start-up: how long `iter()` took to make its iterator (docs/design.md,
        "Epoch starts"), with the pass's length where the dataset knows it."""
        made_s = getattr(iterator, MADE_S, None)
        if made_s is None:
            return
        steps = None
        dataset = getattr(iterator, "_dataset", None)
        try:
            cardinality = int(dataset.cardinality()) if dataset is not None else -1
        except Exception:
            cardinality = -1
        if cardinality > 0:
            steps = cardinality
        self._timeline.mark_epoch_start(self._epoch, float(made_s), steps)

    def forget_training(self) -> None:
        """Fit, or a loop that pulls inside a tf.function, is diagnosed instead: the loop's
        pulls are no longer timed."""
        self._train_dataset = None
        self._open_step = None
        for judged in self._passes.values():
            if judged.kind == TRAINING:
                judged.kind = UNTRACKED
        self._diagnosed_elsewhere = True

    def finish(self) -> None:
        """Record every pass still open that was not training, and end what the budget was
        serving (the script ended during the fixes' trials); safe to call more than once."""
        if self._budget is not None:
            self._budget.finish()
            self._budget = None
        for judged in list(self._passes.values()):
            self._record(judged)
        self._passes.clear()
        self._pass = None

    # -- judging passes --------------------------------------------------------------
    def _pass_of(self, iterator: Any) -> _Pass:
        """The pass this iterator makes: judged at its first pull, looked up after."""
        known = self._passes.get(id(iterator))
        if known is not None and known.iterator() is iterator:
            return known
        self._sweep()
        dataset = getattr(iterator, "_dataset", None)
        now = self._now()
        if dataset is None or self._diagnosed_elsewhere:
            judged = _Pass(iterator, dataset, UNTRACKED, now)
        else:
            origin = pass_origin(sys._getframe(1))
            judged = _Pass(iterator, dataset, UNDECIDED, now)
            judged.by, judged.where = origin.by, origin.where
            judged.chain = _chain(dataset)
            if origin.by is not None:
                judged.kind = KERAS
            elif self._train_dataset is not None:
                if self._same_stream(dataset):
                    self._start_training(judged, dataset)
                else:
                    judged.kind = BESIDE
        self._passes[id(iterator)] = judged
        return judged

    def _pull_outside_training(
        self, judged: _Pass, iterator: Any, fetch: Callable[[Any], Any]
    ) -> Any:
        """A pull that is not a timed step: counted for the record, and, while the pass is
        undecided, checked for a train step since the last pull."""
        if judged.kind == UNDECIDED:
            snapshot = self._watch.snapshot()
            if changed(judged.snapshot, snapshot) or self._jax_training(judged):
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

    def _jax_training(self, judged: _Pass) -> bool:
        """A JAX loop: no TensorFlow gradient to watch, so a pass past a peek is training."""
        return self._jax_loop() and judged.batches > JAX_PEEK_BATCHES

    def _jax_loop(self) -> bool:
        """No TensorFlow gradient taken, and the script imported JAX: its step is JAX's
        (docs/design.md, "JAX"). Read from the script's names: pipediag never imports JAX."""
        return self._watch.gradients_seen == 0 and script_uses_jax()

    def _start_training(self, judged: _Pass, dataset: Any) -> bool:
        """The pass is training: its dataset becomes the training dataset (benchmarked
        alone once). False when fit is diagnosed instead."""
        if not self._session.mark_style(JAX_LOOP if self._jax_loop() else CUSTOM_LOOP):
            judged.kind = UNTRACKED
            return False
        judged.kind = TRAINING
        self._watch.watching = False
        if self._train_dataset is not None and self._train_dataset() is dataset:
            return True
        known = self._train_dataset is not None
        self._train_dataset = weakref.ref(dataset)
        if known:
            # The training dataset rebuilt for a new pass (`ds.take(n)` in an epoch loop).
            self._session.benchmark_pipeline(dataset, rebuilt=True)
            return True
        self._train_signature = _signature(dataset)
        self._train_ancestors = [weakref.ref(d) for d in dataset_ancestors(dataset)[1:]]
        self._session.benchmark_pipeline(dataset)
        return True

    def _record(self, judged: _Pass) -> None:
        """A pass that was not training, for the report; each pass once."""
        if judged.kind not in (UNDECIDED, KERAS, BESIDE):
            return
        judged.kind = UNTRACKED  # recorded
        self._session.data_pass(
            DataPass(
                batches=judged.batches,
                reason=KERAS_PASS if judged.by is not None else NO_TRAIN_STEP,
                where=judged.where,
                by=judged.by,
                dataset=judged.chain,
                duration_s=max(0.0, judged.last - judged.began),
            )
        )

    def _sweep(self) -> None:
        """Record and forget the passes whose iterators are gone."""
        for key, judged in list(self._passes.items()):
            if judged.iterator() is None:
                del self._passes[key]
                self._record(judged)

    def _at_budget(self, iterator: Any, fetch: Callable[[Any], Any]) -> Any:
        """The measured steps are done: from now on the loop is served by the budget
        (`training/budget.py`), its last batch first, to time the step alone.

        The steps it serves run just before the budget ends the script, so nothing the loop
        would save afterwards ever sees them.
        """
        last, self._last_batch = self._last_batch, None
        self.step_calls.stop()
        self._budget = self._session.loop_at_budget(
            CachedBatch(last, self._cached_pull(last, fetch)), self.step_calls.train_step()
        )
        if self._budget is None:
            raise StepBudgetReached
        return self._serve_budget(iterator, fetch)

    def _cached_pull(self, batch: Any, fetch: Callable[[Any], Any]) -> Callable[[], object] | None:
        """A pull from an iterator over `batch` alone, the one a step on the cached batch pays
        (`CachedBatch`); None where the batch makes no dataset."""
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
        if getattr(iterator, "_dataset", None) is not self._current_dataset():
            # Another dataset pulled meanwhile (validation), or the fix copies' own iterators.
            return fetch(iterator)
        batch = budget.next_batch()
        if batch is None:
            self._budget = None
            raise StepBudgetReached
        if batch is not PULL:
            return batch
        try:
            return fetch(iterator)  # a training block: the loop's own pull
        except Exception:
            if _is_end_of_sequence(sys.exc_info()[1]):
                budget.pull_ended_an_epoch()
            raise

    def _current_dataset(self) -> Any:
        return self._train_dataset() if self._train_dataset is not None else None

    def _same_stream(self, dataset: Any) -> bool:
        """A new dataset object that is the training data again, built on the same parents.

        `train.take(n)` each epoch shares the object `train` with last epoch's dataset; a
        dataset built anew from the same code (same stages and element types) counts once
        the previous one is gone, so a live validation dataset of the same shape does not.
        """
        current = self._current_dataset()
        if current is dataset:
            return True
        parents = {id(p) for ref in self._train_ancestors if (p := ref()) is not None}
        if parents and any(id(node) in parents for node in dataset_ancestors(dataset)):
            return True
        return current is None and _signature(dataset) == self._train_signature


def _chain(dataset: Any) -> str:
    from pipediag.bench.pipeline import describe_chain

    return describe_chain(dataset)


def _signature(dataset: Any) -> tuple[str, str]:
    """What identifies a dataset rebuilt from the same code: its stages and element types."""
    from pipediag.bench.pipeline import describe_chain

    return describe_chain(dataset), repr(dataset.element_spec)


def _is_end_of_sequence(exc: BaseException | None) -> bool:
    # Read from the loaded module, never imported here: an iterator's end is TensorFlow's
    # OutOfRangeError, and without TensorFlow there is no such end to see.
    errors = sys.modules.get("tensorflow.python.framework.errors_impl")
    return errors is not None and isinstance(exc, errors.OutOfRangeError)


class IteratorPatch:
    """Wraps `OwnedIterator._next_internal` and `_create_iterator`; `uninstall` restores the
    originals exactly."""

    def __init__(
        self,
        tracker: CustomLoopTracker,
        session: HookHost,
        on_made: Callable[[Any], None] = lambda made: None,
    ) -> None:
        self._tracker = tracker
        self._session = session
        self._on_made = on_made  # each iterator and dataset the script makes eagerly
        self._patches = Patches()

    def install(self, _module: object = None) -> None:
        if self._patches.installed:
            return
        from tensorflow.python.data.ops import iterator_ops
        from tensorflow.python.eager import context

        owner = iterator_ops.OwnedIterator
        original = owner.__dict__["_next_internal"]
        bypassed = self._session.gate.bypassed
        on_next = self._tracker.on_next
        executing_eagerly = context.executing_eagerly

        def _next_internal(iterator: Any) -> Any:
            if bypassed() or not executing_eagerly():
                return original(iterator)
            return on_next(iterator, original)

        original_create = owner.__dict__["_create_iterator"]
        now = self._session.clock.now
        reading = self._session.gate.pipediag_is_reading
        timeline = self._session.timeline
        on_made = self._on_made

        def _create_iterator(iterator: Any, dataset: Any) -> Any:
            # Making the iterator is each epoch's start-up, in a custom loop (`iter()`, before
            # any pull) and under fit (Keras makes it before the epoch's first step).
            if reading() or not executing_eagerly():
                return original_create(iterator, dataset)
            began = now()
            result = original_create(iterator, dataset)
            made = now()
            setattr(iterator, MADE_S, made - began)
            timeline.last_iterator_made = (made, made - began)
            on_made(iterator)  # never raises
            return result

        self._patches.replace(owner, "_next_internal", _next_internal)
        self._patches.replace(owner, "_create_iterator", _create_iterator)
        self._install_dataset_init(reading, executing_eagerly)

    def _install_dataset_init(self, reading: Callable[[], bool], eager: Callable[[], bool]) -> None:
        """Each dataset the script makes eagerly goes to `on_made` too (a tf.function may
        close over it)."""
        from tensorflow.python.data.ops import dataset_ops

        dataset_owner = dataset_ops.DatasetV2
        original_init = dataset_owner.__dict__["__init__"]
        on_made = self._on_made

        def __init__(dataset: Any, variant_tensor: Any) -> None:
            original_init(dataset, variant_tensor)
            if eager() and not reading():
                on_made(dataset)  # never raises (`FunctionLoopTracker.data_made`)

        self._patches.replace(dataset_owner, "__init__", __init__)

    def uninstall(self) -> None:
        self._patches.restore()
