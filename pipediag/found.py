"""The user's training as the hooks found it, and the report's train section made of it
(docs/design.md, "Finding the training", "Batch stamps")."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from pipediag.analysis.classifier import build_train_section
from pipediag.report.model import DataPass, TrainSection
from pipediag.report.reasons import Reason
from pipediag.report.vocabulary import (
    LOOP_STYLES,
    InputWaitSource,
    KerasBackend,
    PhaseName,
    TrainStyle,
)
from pipediag.timeline import StepTimeline

if TYPE_CHECKING:
    from pipediag.hooks.keras_fit import FitTracker
    from pipediag.training.function_loop import TrainCalls


class Notes(Protocol):
    """Where what the user should know goes, and the phase list (the session's)."""

    def note(self, reason: Reason) -> None: ...
    def note_once(self, reason: Reason) -> None: ...
    def add_phase(self, name: PhaseName, start: float, end: float) -> None: ...


class FoundTraining:
    """How the script trains, and what later phases need of it. `fit`: what marks fit's steps,
    looked up when needed; `forget_loop`: the hooks forget a custom loop that fit replaces."""

    def __init__(
        self,
        timeline: StepTimeline,
        *,
        say: Notes,
        fit: Callable[[], FitTracker | None],
        forget_loop: Callable[[], None],
    ) -> None:
        self.style: TrainStyle = "none"
        self.passes: list[DataPass] = []  # not training; passes alike merged
        # Strong references for the phases after the measured steps, released at the stop.
        self.dataset: Any = None
        self.batch: Any = None
        self.model: Any = None
        # A loop that pulls inside a tf.function: the function that trains.
        self.calls: TrainCalls | None = None
        self.keras_backend: KerasBackend | None = None
        self._timeline, self._say = timeline, say
        self._fit, self._forget_loop = fit, forget_loop

    def mark_style(self, style: TrainStyle) -> bool:
        """How the script trains; False when another style is diagnosed (fit over a loop)."""
        if self.style in ("none", style):
            self.style = style
            return True
        if style == "keras-fit" and self.style in LOOP_STYLES:
            self._say.note(Reason("loop-before-fit", value=len(self._timeline)))
            self.style = style
            self._timeline.clear()
            self._forget_loop()
            return True
        other = Reason("train-style", detail=style)
        self._say.note_once(Reason("two-train-styles", detail=self.style, because=other))
        return False

    def data_pass(self, record: DataPass) -> bool:
        """A pass over the data that was not training; False when merged into a pass alike
        (same reason, call, line and dataset: a validation loop each epoch) already kept."""
        key = (record.reason, record.by, record.where, record.dataset)
        for i, seen in enumerate(self.passes):
            if (seen.reason, seen.by, seen.where, seen.dataset) == key:
                self.passes[i] = dataclasses.replace(
                    seen,
                    passes=seen.passes + record.passes,
                    batches=seen.batches + record.batches,
                    duration_s=seen.duration_s + record.duration_s,
                )
                return False
        self.passes.append(record)
        return True

    def keep_batch(self, batch: Any) -> None:
        self.batch = batch

    def training_model(self, model: Any) -> None:
        """The model `fit` trains (its step runs alone after the measured steps), its backend."""
        self.model = model
        from pipediag.training.fit_backend import keras_backend

        self.keras_backend = keras_backend(model)

    def release(self) -> None:
        """Drop the strong references to the user's objects (the session stops)."""
        self.dataset = self.batch = self.model = self.calls = None

    def fit_overhead_s(self) -> float | None:
        """What fit's measured steps took beyond their train function; None outside fit."""
        return fit.fit_overhead_s() if (fit := self._fit()) is not None else None

    def waits_deferred(self) -> bool:
        """Under fit with batch stamps, the steps' waits are filled in every few seconds."""
        return (fit := self._fit()) is not None and fit.stamps is not None

    def wait_source(self, phases: dict[PhaseName, float]) -> InputWaitSource:
        """Where the steps' waits come from; under fit without stamps, filled from the trace."""
        if self.calls is not None:
            return "unavailable"  # the pulls are inside the training function's graph
        fit = self._fit()
        if self.style in LOOP_STYLES:
            return "iterator-timing"
        if self.style == "keras-fit" and fit is not None:
            if fit.stamps is not None:
                return "batch-stamps"
            tracer = fit.tracer
            self._timeline.fill_waits(tracer.waits_for)
            if tracer.overhead_s:
                phases["profiler_overhead"] = tracer.overhead_s
            return "profiler-trace"
        return "unavailable"

    def final_section(self, origin: float, phases: dict[PhaseName, float]) -> TrainSection:
        """The report's train section; the steps' span joins the phase list."""
        raw = self._timeline.steps
        if self._timeline.merges:
            self._say.note(Reason("steps-merged", value=len(self._timeline), limit=len(raw)))
        if raw:
            self._say.add_phase("train", raw[0].start, raw[-1].end)
        return self.section(origin, phases)

    def section(self, origin: float, phases: dict[PhaseName, float]) -> TrainSection:
        """The train section of the steps so far (`phases`: see `wait_source`)."""
        overhead = self.fit_overhead_s()
        source = self.wait_source(phases)  # before the steps are read: it may fill their waits
        section = build_train_section(
            self._timeline.steps,
            origin=origin,
            warmup_steps=self._timeline.warmup_steps,
            style=self.style,
            input_wait_source=source,
            skipped_passes=self.passes,
            epoch_starts=list(self._timeline.epoch_starts),
        )
        return dataclasses.replace(
            section, keras_backend=self.keras_backend, fit_overhead_s=overhead
        )
