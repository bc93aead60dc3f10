"""The step budget and after, each part once: measuring on into a cached epoch, serving a custom
loop, compute alone, the verdict, the deep analysis, the tf.data service check (docs/design.md,
"The flow of one diagnosis")."""

from __future__ import annotations

import dataclasses

from pipediag import phases
from pipediag.analysis import paired
from pipediag.analysis.classifier import judge
from pipediag.bench import teardown
from pipediag.clock import Clock, Quiet
from pipediag.config import DEFAULT_MEASURED_STEPS, RunConfig
from pipediag.hooks.profiler_trace import quiet_profiler_logs
from pipediag.phases import Diagnosis, Narration, OnTraining, Seen
from pipediag.progress import ProgressStep
from pipediag.renderers.progress_words import progress_words
from pipediag.renderers.verdict_words import verdict_line
from pipediag.report.model import ComputeAlone, PipelineBenchmark, TrainSection
from pipediag.report.model_side import ModelTrial
from pipediag.report.reasons import Reason
from pipediag.report.samples import HostSection
from pipediag.report.vocabulary import LOOP_STYLES, TrainStyle
from pipediag.timeline import StepTimeline
from pipediag.training.alternation import (
    Alternation,
    FitAlternation,
    block_steps_for,
    unbounded_block_steps,
)
from pipediag.training.budget import (
    AlternatedBlocks,
    BudgetServer,
    CachedBatch,
    Fold,
    Held,
    LoopResult,
    LoopWork,
    ModelSide,
    Serving,
    loop_plans,
)
from pipediag.training.compute_alone import StepAlone, fit_step_alone
from pipediag.training.function_loop import TrainCalls
from pipediag.training.loop_profile import Profiler
from pipediag.training.loop_xla import LoopStep
from pipediag.training.stage_cost import with_freed

# A multi-worker loop's blocks: a fixed size, whatever each worker's own timing says.
LOCKSTEP_BLOCK_STEPS = 16


def alternation_scale(measured_steps: int | None) -> float:
    """How much longer than its default bound the alternation may run (never less)."""
    return 1.0 if measured_steps is None else max(1.0, measured_steps / DEFAULT_MEASURED_STEPS)


class Conclusion:
    """The measured steps' conclusion, each part once in `diagnosis`; `lockstep`: no time bound."""

    def __init__(
        self,
        *,
        config: RunConfig,
        clock: Clock,
        timeline: StepTimeline,
        say: Narration,
        lockstep: bool,
    ) -> None:
        self._config = config
        self._clock = clock
        self._timeline = timeline
        self._say = say
        self._lockstep = lockstep
        self.origin = 0.0  # the session's start on `clock` (`DiagnosticSession.start` sets it)
        self.diagnosis = Diagnosis(PipelineBenchmark(measured=False, reason=Reason("no-dataset")))
        self.concluded = False  # the deep analysis ran (or had its chance)
        self._extended = False  # the step budget was extended into a cached epoch
        self._fit_alternation: FitAlternation | None = None
        # Seconds for XLA on a custom loop's own train step, at its budget (None: not tried).
        self.loop_model_s: float | None = None
        # The samplers pause on it in the observer check's quiet blocks (None: no check).
        self.quiet = Quiet() if config.observer_check else None

    def keep_measuring(self) -> bool:
        """At the step budget: True when extended into the epoch after a filling cache."""
        if self._lockstep:
            return False  # how far to go on depends on time: workers could disagree
        pipeline = self.diagnosis.pipeline
        decision = phases.measure_on(self._timeline, pipeline, self._config, self._clock.now())
        if decision == "outlasted":
            self._say.note_once(Reason("cache-epoch-outlasted"))
        if decision != "extend":
            return False
        if not self._extended:
            self._extended = True
            self._say.log(progress_words(ProgressStep("cached-epoch")))
        self._timeline.extend_budget(phases.PHASE_EXTENSION_STEPS)
        return True

    def lockstep_steps(self) -> int | None:
        """A multi-worker loop's alternation block (at most the measured steps); else None."""
        if not self._lockstep:
            return None
        return min(LOCKSTEP_BLOCK_STEPS, self._config.measured_steps or LOCKSTEP_BLOCK_STEPS)

    def alternate_fit(
        self, seen: Seen, *, lead: bool, steps_left: int | None
    ) -> FitAlternation | None:
        """Under fit: training and the step alone in alternation, or None where the step cannot
        run alone or `steps_left` are too few for the blocks (it then runs in one piece). `lead`:
        the measured steps' last block leads (not where the profiler traced them: it slows)."""
        step_s = self._timeline.median_measured_step_s()
        driven = seen.style == "keras-fit" and seen.model is not None
        if not (driven or seen.calls is not None) or self._lockstep or seen.batch is None:
            return None
        if self.diagnosis.verdict is not None or step_s is None:
            return None
        if steps_left is None:
            per_call = 1 if seen.calls is None else seen.calls.batches_per_call
            block_steps = unbounded_block_steps(step_s, per_call)
        else:
            # fit's steps left hold the blocks and one to spare: training goes on after them
            spare = steps_left // (paired.ALTERNATION_MIN_ROUNDS + 2)
            block_steps = min(block_steps_for(step_s), spare)
            if block_steps < paired.MIN_BLOCK_STEPS:
                return None
        runner = _step_alone(seen)
        if isinstance(runner, Reason):
            return None
        # After a filling cache, a lead reaching back into epoch 1 would set the uncached
        # pipeline's steps against step-alone blocks run beside the cached one.
        first = (
            newest_steps(self._timeline, block_steps, one_epoch=self._extended) if lead else None
        )
        # The most the steps left allow (the alternation stops before it); None: up to its own
        # bound, unless the script ends first (docs/design.md, "Rates in alternation").
        max_rounds = None if steps_left is None else steps_left // block_steps - 1 - (first is None)
        alternation = Alternation(
            clock=self._clock,
            origin=self.origin,
            block_steps=block_steps,
            lead=first,
            max_rounds=max_rounds,
            scale=alternation_scale(self._config.measured_steps),
            quiet=self.quiet,
        )
        self._say.phase(ProgressStep("alternation"), redraw=False)
        self._fit_alternation = FitAlternation(runner, alternation, clock=self._clock)
        return self._fit_alternation

    def serve_loop(
        self, cached: CachedBatch, step: LoopStep | Reason | None, *, fold: Fold
    ) -> BudgetServer | None:
        """What serves a custom loop at its step budget (None: no batch kept or no measured
        step), its first training block too (docs/design.md, "Rates in alternation")."""
        step_s = self._timeline.median_measured_step_s()
        if cached.batch is None or step_s is None:
            return None
        from pipediag.training.jax_fit import device_sync, synced_step_s

        if (sync := device_sync()) is not None:
            # Asynchronous steps' durations are dispatch times (docs/design.md, "JAX").
            step_s = synced_step_s(self._timeline, sync, self._clock) or step_s
        block_steps = self.lockstep_steps() or unbounded_block_steps(step_s)
        alternation = Alternation(
            clock=self._clock,
            origin=self.origin,
            block_steps=block_steps,
            lead=None,
            fixed_rounds=paired.LOCKSTEP_ROUNDS if self._lockstep else None,
            whole_blocks=sync is not None,
            scale=alternation_scale(self._config.measured_steps),
            quiet=self.quiet,
        )
        blocks = AlternatedBlocks(
            cached, alternation, clock=self._clock, sync=sync, lockstep=self._lockstep
        )
        serving = Serving(self._clock, step_s, self._say.phase, teardown.SHARED, _quiet_profiler)
        return BudgetServer(loop_plans(blocks, step, serving, fold))

    def settle_compute_alone(self, seen: Seen, given: ComputeAlone | None) -> None:
        """Compute alone for the verdict: `given` (a custom loop's, or why none can run), else
        fit's alternation's, else the train step alone measured now."""
        alone = given
        if alone is None and self._fit_alternation is not None:
            alone = self._fit_alternation.result()
            self._fit_alternation = None
            self._alternation_span(alone)
        if alone is None:
            alone = self._fit_compute_alone(seen)
        self.diagnosis.compute_alone = alone

    def say_verdict(self, train: TrainSection, host: HostSection | None) -> None:
        """The verdict on the steps so far and compute alone, said once."""
        diagnosis = self.diagnosis
        verdict = judge(train, diagnosis.pipeline, compute_alone=diagnosis.compute_alone, host=host)
        diagnosis.first_verdict_s = self._clock.now() - self.origin
        self._say.log(f"verdict: {verdict_line(verdict, diagnosis.pipeline.batches_per_s, train)}")
        diagnosis.verdict = verdict

    def deep_analysis(self, seen: Seen, *, loop_serving: bool = False) -> LoopWork | None:
        """After the verdict, once: the deep analysis, the model side, the tf.data service
        check; what a custom loop still served at its budget is to try (None: not now)."""
        if self.concluded:
            return None
        self.concluded = True
        diagnosis = self.diagnosis
        examined = phases.deep_analysis(
            seen,
            diagnosis,
            config=self._config,
            clock=self._clock,
            say=self._say,
            on_training=self._on_training(seen, loop_serving),
        )
        self._model_side(seen, loop_serving)
        # Before the service check: an interrupt there still leaves the stages in the report.
        diagnosis.pipeline = examined.pipeline
        diagnosis.scale_out = phases.scale_out_check(
            seen, examined, config=self._config, clock=self._clock, say=self._say
        )
        return LoopWork(examined.loop_holds, examined.loop_search, self.loop_model_s)

    def fold(self, result: LoopResult) -> None:
        """A custom loop's plan is over: its finding joins the diagnosis (compute alone: a span)."""
        diagnosis = self.diagnosis
        if isinstance(result, ComputeAlone):
            self._alternation_span(result)
        elif isinstance(result, ModelSide):
            self._model_side_measured(result)
        elif isinstance(result, Held):
            # Each held stage's speedup joins the pipeline's stages, as under fit.
            self._say.add_phase("stage_holds", result.began, self._clock.now())
            stages = with_freed(diagnosis.pipeline.stages, result.searched)
            diagnosis.pipeline = dataclasses.replace(diagnosis.pipeline, stages=stages)
        else:
            from pipediag.training.prescription import with_prescription

            self._say.add_phase("training_trial", result.began, self._clock.now())
            diagnosis.pipeline = with_prescription(
                diagnosis.pipeline, result.search, ceiling=diagnosis.ceiling_on_training()
            )

    def _alternation_span(self, alone: ComputeAlone) -> None:
        """The alternation's blocks on the phase list, as compute alone's span."""
        if alone.start_s is not None:
            began = self.origin + alone.start_s
            self._say.add_phase("compute_alone", began, began + alone.duration_s)

    def _model_side(self, seen: Seen, loop_serving: bool = False) -> None:
        """The model side, kept with compute alone (a served loop: XLA's seconds); not lockstep."""
        if self._lockstep:
            return
        if loop_serving and seen.style == "custom-loop":
            self._loop_model_side()
            return
        diagnosis = self.diagnosis
        diagnosis.compute_alone = phases.model_side(
            seen,
            diagnosis.compute_alone,
            diagnosis.verdict,
            config=self._config,
            clock=self._clock,
            say=self._say,
            quiet_logs=quiet_profiler_logs,
        )

    def _on_training(self, seen: Seen, loop_serving: bool) -> OnTraining | None:
        """The user's train step to try the fixed pipelines on: fit's, a loop's tf.function, or
        a custom loop still served at its budget. Never in a multi-worker job (timed trials)."""
        step_s = self._timeline.median_measured_step_s()
        if self._lockstep or step_s is None:
            return None
        ceiling = self.diagnosis.ceiling_on_training()
        if seen.style == "keras-fit":
            if seen.model is None:
                return None
            return OnTraining(step_s, trainer=seen.model, ceiling=ceiling)
        if seen.calls is not None:
            if isinstance(seen.calls.trained_on(), Reason):
                return None  # its fixes keep their gains on the pipeline alone
            return OnTraining(step_s, trainer=seen.calls, ceiling=ceiling)
        return OnTraining(step_s, ceiling=ceiling) if loop_serving else None

    def _fit_compute_alone(self, seen: Seen) -> ComputeAlone:
        """The train step alone on the cached batch (a loop's tf.function, else fit's)."""
        step_s = self._timeline.median_measured_step_s()
        loop_step_runs = seen.calls is not None and seen.batch is not None and not self._lockstep
        if not loop_step_runs:
            missing = _why_no_fit_step_alone(seen, self.diagnosis.pipeline, self._lockstep, step_s)
            if missing is not None:
                return ComputeAlone(measured=False, reason=missing)
        runner = _step_alone(seen)
        if isinstance(runner, Reason):
            return ComputeAlone(measured=False, reason=runner)
        if step_s is None:
            return ComputeAlone(measured=False, reason=Reason("no-measured-step"))
        return phases.fit_compute_alone(
            runner, step_s=step_s, clock=self._clock, origin=self.origin, say=self._say
        )

    def _loop_model_side(self) -> None:
        """A custom loop at its budget: the seconds XLA gets on its own train step, or why none."""
        diagnosis = self.diagnosis
        if (alone := diagnosis.compute_alone) is None or not alone.measured:
            return
        gate = phases.model_side_gate(diagnosis.verdict, self._config)
        if gate is None and (alone.step_time is None or alone.step_time.median_s <= 0):
            gate = Reason("no-step-time")
        if gate is not None:
            diagnosis.compute_alone = dataclasses.replace(alone, model_side_reason=gate)
            return
        self.loop_model_s = self._config.deep_seconds * phases.MODEL_SIDE_SHARE

    def _model_side_measured(self, result: ModelSide) -> None:
        """A custom loop's model-side plan is over: its finding joins compute alone."""
        now = self._clock.now()
        self._say.add_phase("model_side", result.began, now)
        diagnosis = self.diagnosis
        if (alone := diagnosis.compute_alone) is None:
            return
        spent = alone.model_side_s + now - result.began
        if isinstance(result.found, ModelTrial):
            trials = [*alone.trials, result.found]
            diagnosis.compute_alone = dataclasses.replace(alone, trials=trials, model_side_s=spent)
            return
        top, reason = result.found
        diagnosis.compute_alone = dataclasses.replace(
            alone, top_ops=top, top_ops_reason=reason, model_side_s=spent
        )


def _quiet_profiler() -> Profiler:
    """The loop window's profiler session, TF's log lines about it kept off the terminal."""
    from pipediag.training.op_profile import ProfilerSession

    return ProfilerSession(quiet_profiler_logs)


def newest_steps(
    timeline: StepTimeline, count: int, *, one_epoch: bool = False
) -> tuple[float, list[float]] | None:
    """The newest `count` measured steps' start and durations (a merged record as its mean
    step), for the alternation's lead; None with fewer, or, `one_epoch`, across two epochs."""
    first, records = timeline.records_since(max(timeline.warmup_steps, len(timeline) - count))
    if first < timeline.warmup_steps or not records:
        return None
    if one_epoch and records[0].epoch != records[-1].epoch:
        return None
    durations = [r.duration_s / r.count for r in records for _ in range(r.count)][-count:]
    return (records[0].start, durations) if len(durations) >= count else None


def no_compute_alone_reason(
    config: RunConfig, style: TrainStyle, *, hooked: bool, calls: TrainCalls | None = None
) -> Reason | None:
    """Why compute alone cannot run once the script has ended; None where it still can."""
    if config.watch is not None:
        return Reason("watch-no-step-alone")
    if not hooked:
        return Reason("marked-steps")
    if style in LOOP_STYLES and calls is None:
        return Reason("loop-steps-all" if config.measured_steps is None else "loop-ended-early")
    return None


def _why_no_fit_step_alone(
    seen: Seen, pipeline: PipelineBenchmark, lockstep: bool, step_s: float | None
) -> Reason | None:
    """Why fit's step cannot run alone (None: it can); a loop with no tf.function to call: none."""
    if seen.style != "keras-fit":
        return Reason("no-train-step-to-run")
    if lockstep:
        return Reason("lockstep-fit")
    if seen.model is None or seen.batch is None:
        because = Reason("no-batch-kept")
        if not pipeline.measured and pipeline.reason:
            because = pipeline.reason
        return Reason("no-cached-batch", because=because)
    if step_s is None:  # before the step alone is built
        return Reason("no-measured-step")
    return None


def _step_alone(seen: Seen) -> StepAlone | Reason:
    if seen.calls is not None:
        return seen.calls.step_alone(seen.batch)
    return fit_step_alone(seen.model, seen.batch)
