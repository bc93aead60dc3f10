"""Keras `fit`, wrapped: pipediag's callback marks each train step; the dataset given as `x` is
benchmarked and its batches stamped for their input waits, or where `x` is no `tf.data.Dataset`,
the TF profiler traces the measured steps."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipediag.analysis.paired import MAX_BLOCK_STEPS, MAX_ROUNDS, OBSERVER_PAIRS
from pipediag.hooks.batch_stamps import BatchStamps, wait_of
from pipediag.hooks.fit_overhead import TrainFunctionTimer
from pipediag.hooks.host import HookHost
from pipediag.hooks.patching import Patches
from pipediag.hooks.profiler_trace import InputWaitTracer
from pipediag.report.reasons import Reason, error_reason
from pipediag.timeline import MIN_MEASURED_STEPS, StepBudgetReached
from pipediag.training.alternation import FitAlternation, block_steps_for

# With `--steps all`, the step runs alone at the first epoch end with this many measured
# steps, or at this many (the default step budget), so the verdict comes early.
PROBE_MIN_STEPS = 5
PROBE_MAX_STEPS = 100

# When stamped steps get their waits, read back together (docs/design.md, "Batch stamps").
SETTLE_EVERY_S = 2.0
SETTLE_MAX_STEPS = 4096
# Training blocks of a full alternation on fit's steps: one a round, one where the measured
# steps cannot lead, one to spare (`conclusion.py::alternate_fit`); the observer check's own
# blocks after the rounds besides, where it runs.
ALTERNATION_BLOCKS = MAX_ROUNDS + 2
OBSERVER_CHECK_BLOCKS = 2 * OBSERVER_PAIRS


class FitTracker:
    """Step marks from callback events, and the profiler for measured steps only. Stamped
    steps get their waits later, together (at `SETTLE_*`, epoch starts, the budget, the end)."""

    def __init__(self, session: HookHost) -> None:
        self._session = session
        self.tracer = InputWaitTracer(clock=session.clock)
        self.stamps: BatchStamps | None = None
        self._step_start: float | None = None
        self._first_batch = self._chunk_steps = self._epoch = 0
        self._epoch_began: float | None = None
        self._epoch_steps: int | None = None
        self._unsettled: list[tuple[float, int]] = []  # (step start, batches it used)
        self._settled_at = session.clock.now()
        # Only `--steps all` runs the step alone mid-run. Watch mode never does, nor traces (up
        # to 87% of throughput: docs/design.md, "Keras fit internals"): unstamped, no waits.
        watching = session.config.watch is not None
        self._probe_pending = session.config.measured_steps is None and not watching
        self._may_trace = not watching
        # At the budget (or the probe): fit's next steps alternate with the step alone.
        self._alternation: FitAlternation | None = None
        self._planned: tuple[int, int] | None = None  # fit's epochs and steps per epoch
        self.timer: TrainFunctionTimer | None = None
        self._alternation_ends_fit = True  # False at the probe: training goes on after it
        self._alternation_blocks = ALTERNATION_BLOCKS + (
            OBSERVER_CHECK_BLOCKS if session.config.observer_check else 0
        )

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        if (
            self._probe_pending
            and self._alternation is None
            and self._measured_at_least(PROBE_MIN_STEPS)
        ):
            steps = self._planned[1] if self._planned is not None else 0
            self._probe(batch=steps - 1)

    def _measured_at_least(self, steps: int) -> bool:
        timeline = self._session.timeline
        return len(timeline) - timeline.warmup_steps >= steps

    def _probe(self, batch: int) -> None:
        """Compute alone and the verdict mid-run (`--steps all`); training goes on."""
        self._probe_pending = False
        self._settle_waits()
        self._close_chunk()
        self._alternate(ends_fit=False, batch=batch)

    def on_train_begin(self, epochs: int | None, steps: int | None, model: Any = None) -> None:
        """fit's plan (epochs, steps; None unknown); its train function is timed from now."""
        self._planned = (epochs, steps) if epochs and steps else None
        if model is not None and self.timer is None:
            self.timer = TrainFunctionTimer(model, self._session.clock, sync=result_sync(model))

    def on_train_end(self, logs: Any = None) -> None:
        if self.timer is not None:
            self.timer.remove()

    def fit_overhead_s(self) -> float | None:
        return self.timer.overhead_s() if self.timer is not None else None

    def _steps_left(self, batch: int) -> int | None:
        """fit's callback steps after this one, where its plan is known."""
        if self._planned is None:
            return None
        epochs, steps = self._planned
        per_step = max(1, batch - self._first_batch + 1)  # steps_per_execution
        batches = (epochs - self._epoch - 1) * steps + (steps - batch - 1)
        return max(0, batches // per_step)

    def _alternation_wants_the_rest(self, batch: int) -> bool:
        """Whether fit's steps left are now what the alternation's full rounds want: the
        budget ends early rather than leave too few (docs/design.md, "Rates in alternation")."""
        steps_left, timeline = self._steps_left(batch), self._session.timeline
        if (
            steps_left is None
            or steps_left > self._alternation_blocks * MAX_BLOCK_STEPS
            or timeline.measured_steps is None  # `--steps all`, its probe, and watch mode
            or timeline.fixed_end
            or not self._measured_at_least(MIN_MEASURED_STEPS)
        ):
            return False
        if (step_s := timeline.median_measured_step_s()) is None:
            return False
        return steps_left <= self._alternation_blocks * block_steps_for(step_s)

    def _alternate(self, *, ends_fit: bool, batch: int) -> None:
        """Training and the step alone in turn (docs/design.md, "Rates in alternation"), where
        that can run. The measured steps lead unless traced (tracing slows)."""
        if self.timer is not None:
            self.timer.remove()  # the measured steps are over: pipediag calls it next
        self._alternation = self._session.alternate_fit(
            lead=self.stamps is not None, steps_left=self._steps_left(batch)
        )
        self._alternation_ends_fit = ends_fit
        self._block_ended()

    def _alternated_step(self, start: float, end: float, batches: int) -> None:
        """A step of the alternation's training block; measured only at the `--steps all` probe."""
        alternation = self._alternation
        assert alternation is not None
        if not self._alternation_ends_fit:
            self._session.timeline.add(start, end, None, self._epoch)
        if self.stamps is not None:
            self._unsettled.append((start, batches))
        if alternation.training_step(start, end):
            self._block_ended()

    def _block_ended(self) -> None:
        """A training block ended (or none could start): the step alone's block, if due; once
        all are done, the verdict, and at the budget the end of fit."""
        if (alternation := self._alternation) is not None:
            if not alternation.after_training_block():
                return
            self._settle_waits()
        self._alternation = None
        if not self._alternation_ends_fit:
            self._session.conclude(deep=False)
            return
        self._session.conclude()
        raise StepBudgetReached

    def on_epoch_begin(self, epoch: int, steps: int | None = None) -> None:
        # Keras may make a new iterator at the epoch's first step: settle the last one's first.
        self._settle_waits()
        self._epoch = epoch
        if self._alternation is not None:
            self._alternation.skip_step()  # the epoch's first step carries its start-up
        self._epoch_steps = steps
        self._epoch_began = self._session.clock.now()

    def saw_callbacks(self, callbacks: Any) -> None:
        """The user's callbacks for `fit`: a TensorBoard one names the log directory."""
        import keras

        for callback in callbacks if isinstance(callbacks, (list, tuple)) else []:
            if isinstance(callback, keras.callbacks.TensorBoard):
                self._session.training_log_dir(str(callback.log_dir))
                return

    def stamp(self, dataset: Any) -> Any:
        """The dataset `fit` will read, stamped; unstamped with a note where it cannot be."""
        stamps = BatchStamps(self._session.clock)
        try:
            stamped = stamps.attach(dataset)
        except Exception as exc:
            self._session.note_once(error_reason("stamps-not-attached", exc))
            return dataset
        self.stamps = stamps
        return stamped

    # Keras's callback methods themselves (bound in `make_callback`).
    def on_batch_begin(self, batch: int = 0, logs: Any = None) -> None:
        session = self._session
        self._first_batch = batch
        if self._epoch_began is not None:
            # The input part of an epoch's start: making its iterator (0 where Keras kept the
            # last); a cached batch pays the rest too (docs/design.md, "Epoch starts").
            began, self._epoch_began = self._epoch_began, None
            made = session.timeline.last_iterator_made
            made_s = made[1] if made is not None and made[0] >= began else 0.0
            session.timeline.mark_epoch_start(self._epoch, made_s, self._epoch_steps)
        if (
            self.stamps is None
            and self._may_trace
            and self._alternation is None
            and len(session.timeline) >= session.timeline.warmup_steps
            and not self.tracer.active
        ):
            if self.tracer.start():
                self._chunk_steps = 0
            elif self.tracer.failure is not None:
                session.note_once(Reason("fit-profiler-no-start", detail=self.tracer.failure))
        self._step_start = session.clock.now()

    def on_batch_end(self, batch: int = 0, logs: Any = None) -> None:
        session = self._session
        if (start := self._step_start) is None:
            return
        self._step_start = None
        end = session.clock.now()
        if self._alternation is not None:
            self._alternated_step(start, end, max(1, batch - self._first_batch + 1))
            return
        if self.timer is not None:
            self.timer.step_ended(end - start)
        budget_reached = session.timeline.add(start, end, None, self._epoch)
        budget_reached = budget_reached and not session.keep_measuring()
        # After any extension into a cached epoch: the alternation's steps come first.
        if not budget_reached and self._alternation_wants_the_rest(batch):
            session.timeline.end_budget()
            budget_reached = True
        if self.stamps is not None:
            # With steps_per_execution, one callback step covers several batches.
            self._unsettled.append((start, max(1, batch - self._first_batch + 1)))
            if (
                budget_reached
                or start - self._settled_at >= SETTLE_EVERY_S
                or len(self._unsettled) >= SETTLE_MAX_STEPS
            ):
                self._settle_waits()
        elif self.tracer.active:
            self._chunk_steps += 1
            if self._chunk_steps >= session.config.trace_chunk_steps:
                self._close_chunk()
        if budget_reached:
            self._close_chunk()
            self._alternate(ends_fit=True, batch=batch)
            return
        if self._probe_pending and self._measured_at_least(PROBE_MAX_STEPS):
            self._probe(batch)

    def finish(self) -> None:
        """Settle waits, stop any trace; safe to call more than once."""
        self._settle_waits()
        self._close_chunk()
        self._step_start = None

    def _settle_waits(self) -> None:
        """The steps recorded since the last call get their waits, from the batch stamps."""
        unsettled, self._unsettled = self._unsettled, []
        self._settled_at = self._session.clock.now()
        stamps = self.stamps
        if not unsettled or stamps is None:
            return
        try:
            stamps.collect()
        except Exception as exc:  # the stamps are lost, never the user's run
            self._session.note_once(error_reason("stamps-unread", exc))
            return
        taken = stamps.take([batches for _, batches in unsettled])
        waits = {
            start: None if used is None else wait_of(used, start)
            for (start, _), used in zip(unsettled, taken, strict=True)
        }
        self._session.timeline.fill_waits(
            lambda start, _end: waits.get(start), since=unsettled[0][0]
        )

    def _close_chunk(self) -> None:
        """Stop tracing; the chunk's steps get their waits, and the events are dropped."""
        if not self.tracer.active:
            return
        self.tracer.stop()
        self._session.timeline.fill_waits(self.tracer.waits_for)
        self.tracer.events.clear()


def make_callback(tracker: FitTracker) -> Any:
    """A `keras.callbacks.Callback` that forwards train-batch events to the tracker."""
    import keras

    class PipediagCallback(keras.callbacks.Callback):  # type: ignore[misc]
        def on_train_begin(self, logs: Any = None) -> None:
            epochs, steps = self._param("epochs"), self._param("steps")
            tracker.on_train_begin(epochs, steps, getattr(self, "model", None))

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            tracker.on_epoch_begin(epoch, self._param("steps"))

        def _param(self, name: str) -> int | None:
            value = (self.params or {}).get(name)
            return value if isinstance(value, int) else None

    callback = PipediagCallback()
    # Bound to the tracker's methods directly: one frame less per event, two per step.
    callback.on_train_batch_begin = tracker.on_batch_begin
    callback.on_train_batch_end = tracker.on_batch_end
    callback.on_epoch_end = tracker.on_epoch_end
    callback.on_train_end = tracker.on_train_end
    return callback


@dataclass(eq=False)
class FitPatch(Patches):
    """Wraps `keras.Model.fit`."""

    tracker: FitTracker
    session: HookHost

    def install(self, _module: object = None) -> None:
        if self.installed:
            return
        import keras

        original = keras.Model.fit
        signature = inspect.signature(original)
        tracker, session, gate = self.tracker, self.session, self.session.gate

        def fit(model: Any, *args: Any, **kwargs: Any) -> Any:
            if gate.bypassed():
                return original(model, *args, **kwargs)
            bound = signature.bind(model, *args, **kwargs)
            callbacks = bound.arguments.get("callbacks")
            tracker.saw_callbacks(callbacks)
            bound.arguments["callbacks"] = [*(callbacks or []), make_callback(tracker)]
            import tensorflow as tf

            x = bound.arguments.get("x")
            dataset = x if isinstance(x, tf.data.Dataset) else None
            session.fit_called(model, dataset, given=type(x).__name__)
            if dataset is not None:
                bound.arguments["x"] = tracker.stamp(dataset)
            try:
                with gate.fit_running():
                    return original(*bound.args, **bound.kwargs)
            finally:
                tracker.finish()

        self.replace(keras.Model, "fit", fit)


def result_sync(model: Any) -> Callable[[Any], Any] | None:
    """`jax.block_until_ready` on Keras's JAX backend (calls only dispatch); else None."""
    from pipediag.training.fit_backend import on_jax

    jax = sys.modules.get("jax")
    if not on_jax(model) or jax is None or not hasattr(jax, "block_until_ready"):
        return None
    return jax.block_until_ready  # type: ignore[no-any-return]
