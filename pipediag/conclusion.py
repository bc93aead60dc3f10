"""The step budget and after: whether to measure on into a cached epoch, what serves a custom
loop at its budget, then compute alone, the verdict line, the deep analysis and the tf.data
service check, each once (docs/design.md, "The flow of one diagnosis").

`Conclusion` keeps what they find; the session hands it what the hooks saw of training
(`Seen`) and the pipeline benchmark, takes back the pipeline with its stages and trials,
and freezes the rest into the report. The phases themselves are functions (`phases.py`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from pipediag.analysis.alternation import step_alone_ceiling
from pipediag.analysis.classifier import judge
from pipediag.clock import Clock, Quiet
from pipediag.config import DEFAULT_MEASURED_STEPS, RunConfig
from pipediag.phases import (
    MODEL_SIDE_SHARE,
    PHASE_EXTENSION_STEPS,
    DeepAnalysis,
    Narration,
    OnTraining,
    Seen,
    deep_analysis,
    fit_compute_alone,
    measure_on,
    model_side,
    model_side_gate,
    scale_out_check,
)
from pipediag.renderers.verdict_words import verdict_line
from pipediag.report.model import (
    ComputeAlone,
    HostSection,
    PipelineBenchmark,
    ScaleOut,
    TrainSection,
    TrainStyle,
    Verdict,
)
from pipediag.report.model_side import ModelTrial
from pipediag.report.reasons import (
    LOCKSTEP_FIT,
    LOOP_ENDED_EARLY,
    LOOP_STEPS_ALL,
    MARKED_STEPS,
    NO_BATCH_KEPT,
    NO_CACHED_BATCH,
    NO_MEASURED_STEP,
    NO_STEP_TIME,
    NO_TRAIN_STEP_TO_RUN,
    WATCH_NO_STEP_ALONE,
    Reason,
)
from pipediag.report.vocabulary import CUSTOM_LOOP, LOOP_STYLES
from pipediag.timeline import StepTimeline

if TYPE_CHECKING:
    from pipediag.bench.structure import WalkedPipeline
    from pipediag.training.alternation import FitAlternation
    from pipediag.training.budget import BudgetServer, CachedBatch, Fold, ModelSide
    from pipediag.training.compute_alone import StepAlone
    from pipediag.training.function_loop import TrainCalls
    from pipediag.training.loop_profile import Profiler
    from pipediag.training.loop_xla import LoopStep

# A multi-worker loop's blocks: a fixed size, whatever each worker's own timing says.
LOCKSTEP_BLOCK_STEPS = 16


def alternation_scale(measured_steps: int | None) -> float:
    """How much longer than its default bound the alternation may run: `--steps` beyond its
    default asks for more (docs/design.md, "Rates in alternation"); never less."""
    if measured_steps is None:
        return 1.0
    return max(1.0, measured_steps / DEFAULT_MEASURED_STEPS)


class Teller(Narration, Protocol):
    """A phase's narration, a line for the user only (the verdict), a note said once."""

    def log(self, message: str) -> None: ...
    def note_once(self, message: str) -> None: ...


class Conclusion:
    """The measured steps' conclusion, each part once.

    Args:
        config: what to measure and for how long.
        clock: the session's clock; `origin` is the session's start on it.
        timeline: the measured steps (their median sizes compute alone and the trials).
        say: the session's narration.
        lockstep: a multi-worker job, where nothing is bounded by time.
    """

    def __init__(
        self,
        *,
        config: RunConfig,
        clock: Clock,
        timeline: StepTimeline,
        say: Teller,
        lockstep: bool,
    ) -> None:
        self._config = config
        self._clock = clock
        self._timeline = timeline
        self._say = say
        self._lockstep = lockstep
        self.compute_alone: ComputeAlone | None = None
        self.verdict: Verdict | None = None  # said once, after the measured steps
        self.first_verdict_s: float | None = None
        self.scale_out: ScaleOut | None = None
        self.concluded = False  # the deep analysis ran (or had its chance)
        self._walked: WalkedPipeline | None = None  # its walk, until the scale-out check
        self._extended = False  # the step budget was extended into a cached epoch
        self._fit_alternation: FitAlternation | None = None
        # Seconds for XLA on a custom loop's own train step, at its budget (None: not tried).
        self.loop_model_s: float | None = None
        # Held through the alternation's quiet blocks (the observer check): the samplers
        # pause on it. None without the check.
        self.quiet = Quiet() if config.observer_check else None

    # -- at the step budget ------------------------------------------------------------
    def keep_measuring(self, pipeline: PipelineBenchmark) -> bool:
        """At the step budget: whether to measure on, into the epoch after a filling cache.

        Returns True when the budget was extended (the hooks then go on), False to stop.
        """
        if self._lockstep:
            return False  # how far to go on depends on time: workers could disagree
        decision = measure_on(self._timeline, pipeline, self._config, self._clock.now())
        if decision == "outlasted":
            self._say.note_once(
                "the pipeline caches, but its first epoch outlasted the measuring bound: "
                "the verdict describes epoch 1 only (--steps N measures more)"
            )
        if decision != "extend":
            return False
        if not self._extended:
            self._extended = True
            self._say.log(
                "the pipeline caches: measuring on into the next epoch, where it reads the cache"
            )
        self._timeline.extend_budget(PHASE_EXTENSION_STEPS)
        return True

    def lockstep_steps(self) -> int | None:
        """The steps in each block of a custom loop's alternation in a multi-worker job; None
        elsewhere (sized by time). At most the measured steps: no block costs more than they did.
        """
        if not self._lockstep:
            return None
        return min(LOCKSTEP_BLOCK_STEPS, self._config.measured_steps or LOCKSTEP_BLOCK_STEPS)

    def alternate_fit(
        self, seen: Seen, *, origin: float, lead: bool, steps_left: int | None
    ) -> FitAlternation | None:
        """Under fit, at the step budget or the `--steps all` probe: training and the step
        alone in alternation (`training/alternation.py`), or None where the step cannot run
        alone (the verdict then says why) or fit has too few `steps_left` for the training
        blocks (the step then runs alone in one piece). `lead`: the measured steps' last
        block is the first training block (not where the profiler traced them: it slows the
        steps).
        """
        step_s = self._timeline.median_measured_step_s()
        driven = seen.style == "keras-fit" and seen.model is not None
        if (
            not (driven or seen.calls is not None)
            or self._lockstep
            or self.verdict is not None
            or seen.batch is None
            or step_s is None
        ):
            return None
        from pipediag.analysis.paired import (
            ALTERNATION_MIN_ROUNDS,
            MAX_BLOCK_STEPS,
            MAX_BLOCK_STEPS_UNBOUNDED,
            MIN_BLOCK_STEPS,
        )
        from pipediag.training.alternation import (
            Alternation,
            FitAlternation,
            block_steps_for,
            scaled_rounds,
        )

        scale = alternation_scale(self._config.measured_steps)
        most = MAX_BLOCK_STEPS if steps_left is not None else MAX_BLOCK_STEPS_UNBOUNDED
        block_steps, max_rounds = block_steps_for(step_s, most), scaled_rounds(scale)
        if steps_left is not None:
            # fit's remaining steps hold the training blocks (the first one too, where the
            # measured steps cannot lead) and one block to spare, so that training goes on
            # after the last round: a smaller block, and no round past that
            block_steps = min(block_steps, steps_left // (ALTERNATION_MIN_ROUNDS + 2))
            if block_steps < MIN_BLOCK_STEPS:
                return None
        runner = _step_alone(seen)
        if isinstance(runner, Reason):
            return None
        # After a filling cache, a lead reaching back into epoch 1 would set the uncached
        # pipeline's steps against step-alone blocks run beside the cached one.
        first = (
            newest_steps(self._timeline, block_steps, one_epoch=self._extended) if lead else None
        )
        if steps_left is not None:
            # the most the steps left allow; the alternation stops before it
            max_rounds = steps_left // block_steps - 1 - (first is None)
        alternation = Alternation(
            clock=self._clock,
            origin=origin,
            block_steps=block_steps,
            lead=first,
            max_rounds=max_rounds,
            scale=scale,
            quiet=self.quiet,
        )
        self._say.phase("measuring training and the train step alone in turn", redraw=False)
        self._fit_alternation = FitAlternation(runner, alternation, clock=self._clock)
        return self._fit_alternation

    def serve_loop(
        self,
        cached: CachedBatch,
        step: LoopStep | Reason | None,
        *,
        origin: float,
        fold: Fold,
    ) -> BudgetServer | None:
        """What serves a custom loop at its step budget (`training/budget.py`), or None
        with no batch kept or no measured step to size it by. `step`: the train step the
        loop calls once a step, or why none was found.

        Its first training block is served too, not read from the measured steps: those ran
        under the watch on the script's functions that looks for the train step, and their
        last block read 2-27% slower than the mean of the training blocks served after it in
        4 runs of 4 of examples/compute_bound_loop.py, where it led.
        """
        step_s = self._timeline.median_measured_step_s()
        if cached.batch is None or step_s is None:
            return None
        from pipediag.analysis.paired import LOCKSTEP_ROUNDS, MAX_BLOCK_STEPS_UNBOUNDED
        from pipediag.bench import teardown
        from pipediag.training.alternation import Alternation, block_steps_for
        from pipediag.training.budget import AlternatedBlocks, BudgetServer, Serving, loop_plans
        from pipediag.training.jax_sync import device_sync, synced_step_s

        sync = device_sync()
        if sync is not None:
            # Asynchronous steps: their durations are dispatch times, the measured steps'
            # span up to a device sync is their work (docs/design.md, "JAX").
            step_s = synced_step_s(self._timeline, sync, self._clock) or step_s
        block_steps = self.lockstep_steps() or block_steps_for(step_s, MAX_BLOCK_STEPS_UNBOUNDED)
        alternation = Alternation(
            clock=self._clock,
            origin=origin,
            block_steps=block_steps,
            lead=None,
            fixed_rounds=LOCKSTEP_ROUNDS if self._lockstep else None,
            whole_blocks=sync is not None,
            scale=alternation_scale(self._config.measured_steps),
            quiet=self.quiet,
        )
        blocks = AlternatedBlocks(
            cached, alternation, clock=self._clock, sync=sync, lockstep=self._lockstep
        )
        serving = Serving(self._clock, step_s, self._say.phase, teardown.SHARED, _quiet_profiler)
        return BudgetServer(loop_plans(blocks, step, serving, fold))

    # -- after the measured steps ------------------------------------------------------

    def run(
        self,
        seen: Seen,
        pipeline: PipelineBenchmark,
        *,
        origin: float,
        train_so_far: Callable[[], TrainSection],
        host_so_far: Callable[[], HostSection | None] = lambda: None,
        compute_alone: ComputeAlone | None = None,
        deep: bool = True,
        loop_serving: bool = False,
    ) -> DeepAnalysis | None:
        """The verdict (once; `compute_alone`: a custom loop's run, else measured here under
        fit), then unless `deep` is False the deep analysis (once), whose pipeline, with its
        stages and trials, is returned with the fixes a custom loop still being served at
        its budget (`loop_serving`) is to try. None when it does not run now.
        """
        if self.verdict is None:
            if compute_alone is None and self._fit_alternation is not None:
                compute_alone = self._fit_alternation.result()
                self._fit_alternation = None
                if compute_alone.start_s is not None:
                    began = origin + compute_alone.start_s
                    self._say.add_phase("compute_alone", began, began + compute_alone.duration_s)
            if compute_alone is None:
                compute_alone = self._fit_compute_alone(seen, pipeline, origin)
            self.compute_alone = compute_alone
            train = train_so_far()
            verdict = judge(train, pipeline, compute_alone=compute_alone, host=host_so_far())
            self.first_verdict_s = self._clock.now() - origin
            self._say.log(f"verdict: {verdict_line(verdict, pipeline.batches_per_s, train)}")
            self.verdict = verdict
        if not deep or self.concluded:
            return None
        self.concluded = True
        examined = deep_analysis(
            seen.dataset,
            pipeline,
            self.verdict,
            self.compute_alone,
            config=self._config,
            clock=self._clock,
            say=self._say,
            on_training=self._on_training(seen, loop_serving),
        )
        self._walked = examined.walked
        self._model_side(seen, loop_serving)
        return examined

    def _model_side(self, seen: Seen, loop_serving: bool = False) -> None:
        """After the deep analysis: where the step's time goes and the model-side changes
        (`phases.model_side`), kept with compute alone; for a custom loop still served at
        its budget, the seconds XLA gets on its own step. Never in a multi-worker job."""
        if self._lockstep:
            return
        if loop_serving and seen.style == CUSTOM_LOOP:
            self._loop_model_side()
            return
        from pipediag.hooks.profiler_trace import quiet_profiler_logs

        self.compute_alone = model_side(
            seen,
            self.compute_alone,
            self.verdict,
            config=self._config,
            clock=self._clock,
            say=self._say,
            quiet_logs=quiet_profiler_logs,
        )

    def check_scale_out(self, seen: Seen, pipeline: PipelineBenchmark) -> None:
        """After the deep analysis: the tf.data service check (`phases.scale_out_check`)."""
        walked, self._walked = self._walked, None
        self.scale_out = scale_out_check(
            seen.dataset,
            pipeline,
            walked=walked,
            model=seen.model,
            style=seen.style,
            config=self._config,
            clock=self._clock,
            say=self._say,
        )

    def _on_training(self, seen: Seen, loop_serving: bool) -> OnTraining | None:
        """Whether the user's train step can run on the fixed pipelines: fit's train function
        (the model is known), the tf.function a loop pulls inside (called at once, as fit's),
        or a custom loop still being served at its budget. Never in a multi-worker job: how
        long the trials run is decided by time."""
        step_s = self._timeline.median_measured_step_s()
        if self._lockstep or step_s is None:
            return None
        ceiling = step_alone_ceiling(self.compute_alone.blocks) if self.compute_alone else None
        if seen.style == "keras-fit":
            if seen.model is None:
                return None
            return OnTraining(step_s, trainer=seen.model, ceiling=ceiling)
        if seen.calls is not None:
            if isinstance(seen.calls.trained_on(), Reason):
                return None  # its fixes keep their gains on the pipeline alone
            return OnTraining(step_s, trainer=seen.calls, ceiling=ceiling)
        return OnTraining(step_s, ceiling=ceiling) if loop_serving else None

    def _fit_compute_alone(
        self, seen: Seen, pipeline: PipelineBenchmark, origin: float
    ) -> ComputeAlone:
        """The train step alone under fit: the model's train function on the cached batch
        (in a loop that pulls inside a tf.function, that function)."""
        if seen.calls is not None and seen.batch is not None and not self._lockstep:
            runner = _step_alone(seen)
            if isinstance(runner, Reason):
                return ComputeAlone(measured=False, reason=runner)
            hint = self._timeline.median_measured_step_s()
            if hint is None:
                return ComputeAlone(measured=False, reason=Reason(NO_MEASURED_STEP))
            return fit_compute_alone(
                runner, step_s=hint, clock=self._clock, origin=origin, say=self._say
            )
        if seen.style != "keras-fit":
            return ComputeAlone(measured=False, reason=Reason(NO_TRAIN_STEP_TO_RUN))
        if self._lockstep:
            return ComputeAlone(measured=False, reason=Reason(LOCKSTEP_FIT))
        if seen.model is None or seen.batch is None:
            because = (
                pipeline.reason
                if not pipeline.measured and pipeline.reason
                else Reason(NO_BATCH_KEPT)
            )
            return ComputeAlone(measured=False, reason=Reason(NO_CACHED_BATCH, because=because))
        hint = self._timeline.median_measured_step_s()
        if hint is None:
            return ComputeAlone(measured=False, reason=Reason(NO_MEASURED_STEP))
        runner = _step_alone(seen)
        if isinstance(runner, Reason):
            return ComputeAlone(measured=False, reason=runner)
        return fit_compute_alone(
            runner, step_s=hint, clock=self._clock, origin=origin, say=self._say
        )

    def _loop_model_side(self) -> None:
        """A custom loop at its budget: the seconds XLA gets on its own train step, tried
        after the rewrites (`training/loop_xla.py`), or the reason it is not tried."""
        alone = self.compute_alone
        if alone is None or not alone.measured:
            return
        gate = model_side_gate(self.verdict, self._config)
        if gate is None and (alone.step_time is None or alone.step_time.median_s <= 0):
            gate = Reason(NO_STEP_TIME)
        if gate is not None:
            self.compute_alone = dataclasses.replace(alone, model_side_reason=gate)
            return
        self.loop_model_s = self._config.deep_seconds * MODEL_SIDE_SHARE

    def model_side_measured(self, result: ModelSide) -> None:
        """A model-side plan on a custom loop's own step is over: where the step's time goes
        (`training/loop_profile.py`) or XLA's trial (`training/loop_xla.py`) joins compute
        alone, with its seconds."""
        now = self._clock.now()
        self._say.add_phase("model_side", result.began, now)
        alone = self.compute_alone
        if alone is None:
            return
        spent = alone.model_side_s + now - result.began
        if isinstance(result.found, ModelTrial):
            trials = [*alone.trials, result.found]
            self.compute_alone = dataclasses.replace(alone, trials=trials, model_side_s=spent)
            return
        top, reason = result.found
        self.compute_alone = dataclasses.replace(
            alone, top_ops=top, top_ops_reason=reason, model_side_s=spent
        )


def _quiet_profiler() -> Profiler:
    """The loop window's profiler session, TF's log lines about it kept off the terminal."""
    from pipediag.hooks.profiler_trace import quiet_profiler_logs
    from pipediag.training.op_profile import ProfilerSession

    return ProfilerSession(quiet_profiler_logs)


def newest_steps(
    timeline: StepTimeline, count: int, *, one_epoch: bool = False
) -> tuple[float, list[float]] | None:
    """The newest `count` measured steps' start and durations (a merged record counts as its
    mean step), for the alternation's first training block; None with fewer measured, or,
    with `one_epoch`, where they span two epochs."""
    first, records = timeline.records_since(max(timeline.warmup_steps, len(timeline) - count))
    if first < timeline.warmup_steps or not records:
        return None
    if one_epoch and records[0].epoch != records[-1].epoch:
        return None
    durations = [r.duration_s / r.count for r in records for _ in range(r.count)][-count:]
    if len(durations) < count:
        return None
    return records[0].start, durations


def no_compute_alone_reason(
    config: RunConfig, style: TrainStyle, *, hooked: bool, calls: TrainCalls | None = None
) -> Reason | None:
    """Why compute alone cannot run once the script has ended; None where it still can (a
    loop that pulls inside a tf.function: that function runs on the cached batch)."""
    if config.watch is not None:
        return Reason(WATCH_NO_STEP_ALONE)
    if not hooked:
        return Reason(MARKED_STEPS)
    if style in LOOP_STYLES and calls is None:
        return Reason(LOOP_STEPS_ALL if config.measured_steps is None else LOOP_ENDED_EARLY)
    return None


def _step_alone(seen: Seen) -> StepAlone | Reason:
    """What runs the train step alone on the cached batch: fit's train function, or the
    tf.function a loop pulls inside (`training/function_loop.py`)."""
    from pipediag.training.compute_alone import fit_step_alone

    if seen.calls is not None:
        return seen.calls.step_alone(seen.batch)
    return fit_step_alone(seen.model, seen.batch)
