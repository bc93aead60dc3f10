"""The phases of one diagnosis around the measured steps, as functions: data in, data out
(docs/design.md, "The flow of one diagnosis"). The session decides when each runs; a phase
reads only its arguments and reports through `Narration`."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pipediag.analysis.alternation import step_alone_ceiling
from pipediag.analysis.cost_rules import capped_threads
from pipediag.analysis.input_cost import interval_labels, step_cores_of
from pipediag.analysis.paired import SLICES_PER_SHARE, TRAINING_SLICES, TRIAL_MIN_ROUNDS
from pipediag.bench import teardown
from pipediag.bench.hold import HeldCopies
from pipediag.bench.isolate import preserved_variables
from pipediag.bench.pipeline import benchmark_dataset, describe_chain
from pipediag.bench.stages import measure_stages
from pipediag.bench.structure import WalkedPipeline, effective_options, walk
from pipediag.bench.whatif import FixPipelines, ForTraining, verify_fixes
from pipediag.clock import Clock
from pipediag.config import RunConfig
from pipediag.progress import ProgressStep
from pipediag.report.model import ComputeAlone, PipelineBenchmark, Verdict
from pipediag.report.reasons import Reason, error_reason
from pipediag.report.scale_out import ScaleOut
from pipediag.report.vocabulary import PhaseName, TrainStyle
from pipediag.timeline import RawStep, StepTimeline
from pipediag.training import stage_cost
from pipediag.training.fit_backend import fit_batches_per_call
from pipediag.training.function_loop import TrainCalls
from pipediag.training.loop_search import HoldPlan
from pipediag.training.search import run_at_once
from pipediag.training.step_rounds import FitFacts

if TYPE_CHECKING:
    from pipediag.training.compute_alone import StepAlone
    from pipediag.training.prescription import SearchPlan

# Below this input cost no input fix gains more than ~5%, XProf's line for "not input-bound".
DEEP_MIN_COST = 0.05
# The deep budget's shares: stage timing, the rewrites alone until ALONE_UNTIL, the stage holds
# at least HOLD_SHARE, the last SEARCH_SHARE the rewrites on training (docs/design.md, "The
# pipeline pipediag would write"); the output stage's hold bounds every rewrite.
STAGES_SHARE = 0.2
ALONE_UNTIL = 0.35
HOLD_SHARE = 0.2
SEARCH_SHARE = 0.35

# A cache's first epoch is uncached: measuring goes on, this many steps at a time, until the
# second epoch has as many (each its own verdict), within at most MAX_FACTOR budgets and MAX_S.
PHASE_EXTENSION_STEPS = 20
PHASE_EXTENSION_MAX_FACTOR = 4
PHASE_EXTENSION_MAX_S = 30.0

MeasureOn = Literal["extend", "stop", "outlasted"]


class Narration(Protocol):
    """What a phase tells (the session): notes for the user and the report (`note_once`: said
    once), a line for the user only (the verdict), the progress line, its span."""

    def note(self, reason: Reason) -> None: ...
    def note_once(self, reason: Reason) -> None: ...
    def log(self, message: str) -> None: ...
    def phase(
        self, step: ProgressStep, budget_s: float | None = None, *, redraw: bool = True
    ) -> None: ...
    def add_phase(self, name: PhaseName, start: float, end: float) -> None: ...


@dataclass(frozen=True)
class Seen:
    """What the hooks saw of training (strong references, while the session runs), and what
    fit's steps took beyond their train function (`hooks/fit_overhead.py`)."""

    style: TrainStyle
    dataset: Any
    model: Any
    batch: Any
    fit_overhead_s: float | None = None
    calls: TrainCalls | None = None


@dataclass
class Diagnosis:
    """What the diagnosis has found so far (the conclusion's), each part as it is measured."""

    pipeline: PipelineBenchmark
    compute_alone: ComputeAlone | None = None
    verdict: Verdict | None = None  # said once, after the measured steps
    first_verdict_s: float | None = None
    scale_out: ScaleOut | None = None

    def ceiling_on_training(self) -> float | None:
        """The fastest rate a fix can show on training: the step alone's (None: not measured)."""
        alone = self.compute_alone
        return step_alone_ceiling(alone.blocks) if alone is not None else None


@dataclass(frozen=True)
class OnTraining:
    """The user's train step, to be fed the fixed pipelines. `trainer`: fit's model or a loop's
    `TrainCalls`, called at once; None for a custom loop at its budget, served the fixes."""

    step_s: float
    trainer: Any = None
    ceiling: float | None = None  # `Diagnosis.ceiling_on_training()`


@dataclass(frozen=True)
class DeepAnalysis:
    """The pipeline with its stages and fix trials, what a custom loop is to try (stage holds,
    then rewrites), and the walked pipeline for the scale-out check (None: not walked)."""

    pipeline: PipelineBenchmark
    loop_holds: HoldPlan | None = None
    loop_search: SearchPlan | None = None
    walked: WalkedPipeline | None = None


def measure_on(
    timeline: StepTimeline, pipeline: PipelineBenchmark, config: RunConfig, now: float
) -> MeasureOn:
    """Phase 2 at its budget: on into a cache's second epoch, or stop (epoch 1 "outlasted")."""
    if config.measured_steps is None or not pipeline.cache_ends_each_epoch:
        return "stop"
    steps = timeline.steps[config.warmup_steps :]
    if not steps:
        return "stop"
    later = sum(s.count for s in steps if s.epoch > steps[0].epoch)
    if later == 0 and _hardly_waits(steps):
        return "stop"  # epoch 1 already keeps up: a filled cache cannot change the verdict
    if later >= PHASE_EXTENSION_STEPS:
        return "stop"
    budget = config.warmup_steps + config.measured_steps
    too_long = now - steps[0].start >= PHASE_EXTENSION_MAX_S
    if len(timeline) >= budget * PHASE_EXTENSION_MAX_FACTOR or too_long:
        return "outlasted" if later == 0 else "stop"
    return "extend"


def _hardly_waits(steps: list[RawStep]) -> bool:
    """Whether steps whose waits are all known waited under 5% of their time."""
    if any(s.input_wait_s is None for s in steps):
        return False  # under fit, waits are settled later: unknown
    total, waited = sum(s.duration_s for s in steps), sum(s.input_wait_s or 0.0 for s in steps)
    return bool(total > 0 and waited / total < DEEP_MIN_COST)


def pipeline_alone(
    dataset: Any,
    *,
    config: RunConfig,
    clock: Clock,
    say: Narration,
    keep_first_batch: Callable[[Any], None],
) -> PipelineBenchmark:
    """Phase 1: the training dataset read alone, on a private copy, for a bounded time; a
    failure of the pipeline is the benchmark's result, an interruption is raised."""
    say.phase(ProgressStep("pipeline-alone"), config.bench_seconds)
    began = clock.now()
    try:
        return benchmark_dataset(
            dataset,
            max_batches=config.bench_batches,
            max_seconds=config.bench_seconds,
            clock=clock,
            keep_first_batch=keep_first_batch,
            teardown=teardown.SHARED,
        )
    except Exception as exc:
        failed = Reason("pipeline-failed", detail=f"{type(exc).__name__}: {exc}")
        return PipelineBenchmark(measured=False, reason=failed, dataset=describe_chain(dataset))
    finally:
        say.add_phase("pipeline_benchmark", began, clock.now())


def fit_compute_alone(
    runner: StepAlone, *, step_s: float, clock: Clock, origin: float, say: Narration
) -> ComputeAlone:
    """Phase 3 under fit: the train function (`runner`) on the cached batch."""
    from pipediag.training.compute_alone import MAX_SECONDS, measure_step_alone

    say.phase(ProgressStep("step-alone"), MAX_SECONDS)
    began = clock.now()
    try:
        result = measure_step_alone(runner, clock=clock, origin=origin, step_s_hint=step_s)
    except Exception as exc:
        failed = Reason("step-alone-failed", detail=f"{type(exc).__name__}: {exc}")
        result = ComputeAlone(measured=False, reason=failed)
    say.add_phase("compute_alone", began, clock.now())
    return result


def deep_analysis(
    seen: Seen,
    diagnosis: Diagnosis,
    *,
    config: RunConfig,
    clock: Clock,
    say: Narration,
    on_training: OnTraining | None,
) -> DeepAnalysis:
    """Phases 5 and 6 in one budget (`deep_seconds`, split by the shares above), only where they can
    change the advice: stage rates, the rewrites timed alone, each stage's cost to training, the
    rewrites on training (`on_training`; None: not possible). A failure keeps the benchmark."""
    pipeline, verdict = diagnosis.pipeline, diagnosis.verdict
    if seen.dataset is None or not pipeline.measured or not config.stages:
        return DeepAnalysis(pipeline)
    cost = verdict.input_cost_fraction if verdict is not None else None
    if not config.deep and cost is not None and cost < DEEP_MIN_COST:
        skipped = dataclasses.replace(
            pipeline, deep_skipped_reason=Reason("deep-skipped", value=cost, limit=DEEP_MIN_COST)
        )
        return DeepAnalysis(skipped)
    began = clock.now()
    try:
        return _examine_stages(
            seen.dataset,
            pipeline,
            config=config,
            clock=clock,
            say=say,
            on_training=on_training,
            thread_cap=thread_cap(verdict, diagnosis.compute_alone) if on_training else None,
            hold_output_s=(
                _hold_output_s(verdict, pipeline, on_training)
                if cost is not None and cost >= DEEP_MIN_COST
                else None
            ),
        )
    finally:
        say.add_phase("deep_analysis", began, clock.now())


def _hold_output_s(
    verdict: Verdict | None, pipeline: PipelineBenchmark, on_training: OnTraining | None
) -> float | None:
    """The least time for the output's hold (None: no stage is held on training)."""
    if on_training is None:
        return None
    call_s = _call_s(on_training)
    return output_check_s(verdict, call_s, start_s=call_s + (pipeline.first_batch_s or 0.0))


def output_check_s(verdict: Verdict | None, call_s: float, *, start_s: float = 0.0) -> float:
    """The least time for the output's hold where the verdict's interval holds a band's edge
    (or is too noisy to tell): the trial's fewest rounds of slices two calls long (`call_s`
    each), each slice after its iterator's start and untimed first call (`start_s`); else 0
    (docs/design.md, "The held output")."""
    interval = verdict.input_cost_interval if verdict is not None else None
    if verdict is None or interval is None:
        return 0.0
    low, high = interval_labels(interval)
    if verdict.label != "uncertain" and low == high:
        return 0.0
    slice_s = max(TRAINING_SLICES.shortest_s, 2 * call_s + SLICE_START_S)
    starts_s = 2 * TRIAL_MIN_ROUNDS * start_s
    return min(OUTPUT_CHECK_MAX_S, SLICES_PER_SHARE * slice_s + starts_s)


def _call_s(on_training: OnTraining) -> float:
    """One call of what the trials drive: fit's `steps_per_execution` steps, a loop's steps
    a call of its tf.function, else one step."""
    trainer = on_training.trainer
    if isinstance(trainer, TrainCalls):
        return on_training.step_s * max(1, trainer.steps_per_call)
    if trainer is not None:
        return on_training.step_s * fit_batches_per_call(trainer)
    return on_training.step_s


# What a held trial's slice spends on its iterator's start, beside its untimed first step.
SLICE_START_S = 0.1
# The most the output's hold takes to settle a verdict (steps of about 300 ms).
OUTPUT_CHECK_MAX_S = 8.0


def _examine_stages(
    dataset: Any,
    pipeline: PipelineBenchmark,
    *,
    config: RunConfig,
    clock: Clock,
    say: Narration,
    on_training: OnTraining | None,
    thread_cap: int | None,
    hold_output_s: float | None = None,
) -> DeepAnalysis:
    """`hold_output_s`: None where no stage is held on training, else the least time the
    output's hold is given (`output_check_s`)."""
    from pipediag.training.prescription import SearchPlan

    budget = config.deep_seconds
    start = clock.now()
    deadline = start + budget
    alone_until = start + budget * ALONE_UNTIL if on_training is not None else deadline
    holding = hold_output_s is not None and on_training is not None
    output_s = hold_output_s or 0.0
    say.phase(ProgressStep("stage-timing"), budget * STAGES_SHARE)
    walked: WalkedPipeline | None = None
    try:
        # Walked once, here; every later read of the pipeline takes this walk.
        walked = walk(dataset, effective_options(dataset))
        stages = measure_stages(
            walked, clock=clock, deadline=start + budget * STAGES_SHARE, teardown=teardown.SHARED
        )
        trials = []
        kept: list[FixPipelines] = []
        left = alone_until - clock.now()
        if config.verify and stages and left > 0:
            say.phase(ProgressStep("candidate-fixes"), left)
            trials = verify_fixes(
                walked,
                stages,
                clock=clock,
                budget_s=min(config.verify_seconds, left),
                deadline=alone_until,
                teardown=teardown.SHARED,
                training=_for_training(on_training, kept, thread_cap),
            )
    except Exception as exc:
        say.note(error_reason("stage-analysis-failed", exc))
        return DeepAnalysis(pipeline, walked=walked)
    examined = dataclasses.replace(pipeline, stages=stages, options=walked.options, trials=trials)
    if on_training is None or not stages:
        return DeepAnalysis(examined, walked=walked)
    holds_until = clock.now()
    if holding:
        reserve = budget * SEARCH_SHARE if kept else 0.0
        holds_until = min(deadline, max(deadline - reserve, clock.now() + budget * HOLD_SHARE))
        holds_until = max(holds_until, clock.now() + output_s)
    if on_training.trainer is None:
        loop_holds = None
        if holding:
            seconds = holds_until - clock.now()
            loop_holds = _hold_plan(
                walked, pipeline, on_training, say=say, seconds=seconds, output_s=output_s
            )
        search = SearchPlan(dataset, kept, stages, until_s=deadline, ceiling=on_training.ceiling)
        return DeepAnalysis(examined, loop_holds=loop_holds, loop_search=search, walked=walked)
    if holding:
        examined = _stage_costs_on_fit(
            walked,
            examined,
            on_training,
            clock=clock,
            say=say,
            until_s=holds_until,
            output_s=output_s,
        )
    if kept:
        plan = SearchPlan(
            dataset, kept, examined.stages, until_s=deadline, ceiling=on_training.ceiling
        )
        examined = _search_on_fit(walked, examined, plan, on_training, clock=clock, say=say)
    return DeepAnalysis(examined, walked=walked)


def _for_training(
    on_training: OnTraining | None, kept: list[FixPipelines], thread_cap: int | None
) -> ForTraining | None:
    """What the rewrites alone build for the trials on training (None: none); a device prefetch only
    for a function called at once (a JAX loop feeds its devices; tf.distribute prefetches)."""
    if on_training is None:
        return None
    from pipediag.bench.device import prefetch_device

    trainer = on_training.trainer
    distributed = isinstance(trainer, TrainCalls) and hasattr(trainer.fed(), "_strategy")
    device = prefetch_device() if trainer is not None and not distributed else None
    return ForTraining(kept, thread_cap=thread_cap, prefetch_device=device)


def thread_cap(verdict: Verdict | None, alone: ComputeAlone | None) -> int | None:
    """Where contention dominates: the pipeline threads leaving the step its cores alone."""
    split = verdict.cost_split if verdict is not None else None
    if split is None or split.dominant != "contention":
        return None
    return capped_threads(os.cpu_count() or 1, step_cores_of(alone))


def _stage_costs_on_fit(
    walked: WalkedPipeline,
    pipeline: PipelineBenchmark,
    on_training: OnTraining,
    *,
    clock: Clock,
    say: Narration,
    until_s: float,
    output_s: float = 0.0,
) -> PipelineBenchmark:
    """fit: each stage's cost to training, by holding its output in memory, until `until_s`
    (the output's hold given at least `output_s`); a failure keeps `pipeline`."""
    say.phase(ProgressStep("stage-holds"), max(0.0, until_s - clock.now()))
    try:
        with preserved_variables(walked.dataset, teardown.SHARED, graph_def=walked.graph):
            search = stage_cost.StageSearch(
                HeldCopies(walked, pipeline.batches_per_s),
                clock=clock,
                until_s=until_s,
                ceiling=on_training.ceiling,
                output_s=output_s,
            )
            stages = stage_cost.on_fit(
                on_training.trainer,
                search,
                pipeline.stages,
                step_s=on_training.step_s,
                clock=clock,
                teardown=teardown.SHARED,
            )
    except Exception as exc:
        say.note(error_reason("stage-holds-failed", exc))
        return pipeline
    return dataclasses.replace(pipeline, stages=stages)


def _hold_plan(
    walked: WalkedPipeline,
    pipeline: PipelineBenchmark,
    on_training: OnTraining,
    *,
    say: Narration,
    seconds: float,
    output_s: float = 0.0,
) -> HoldPlan | None:
    """A custom loop: the held copies served before the rewrites (None: cannot be held)."""
    try:
        copies = HeldCopies(walked, pipeline.batches_per_s)
    except Exception as exc:  # the stages keep their rates alone
        say.note(error_reason("stage-holds-failed", exc))
        return None
    if not copies.chain:
        return None
    return HoldPlan(
        copies, seconds=max(0.0, seconds), ceiling=on_training.ceiling, output_s=output_s
    )


def _search_on_fit(
    walked: WalkedPipeline,
    pipeline: PipelineBenchmark,
    plan: SearchPlan,
    on_training: OnTraining,
    *,
    clock: Clock,
    say: Narration,
) -> PipelineBenchmark:
    """The rewrites tried one on another on the train function, now; a failure keeps `pipeline`."""
    trials = plan.start(clock)
    say.phase(ProgressStep("rewrites-on-training"), max(0.0, plan.until_s - clock.now()))
    began = clock.now()
    try:
        with preserved_variables(walked.dataset, teardown.SHARED, graph_def=walked.graph):
            run_at_once(
                trials,
                on_training.trainer,
                clock=clock,
                step_s=on_training.step_s,
                teardown=teardown.SHARED,
            )
    except Exception as exc:
        say.note(error_reason("fix-trials-failed", exc))
        return pipeline
    finally:
        say.add_phase("training_trial", began, clock.now())
    from pipediag.training.prescription import with_prescription

    return with_prescription(pipeline, trials, ceiling=on_training.ceiling)


def scale_out_check(
    seen: Seen, examined: DeepAnalysis, *, config: RunConfig, clock: Clock, say: Narration
) -> ScaleOut | None:
    """Can the pipeline move to tf.data service (measured through one, asked)? None: not wanted."""
    from pipediag.scale_out.check import check_scale_out, wanted
    from pipediag.scale_out.train import train_through

    pipeline = examined.pipeline
    if seen.dataset is None or not wanted(config, pipeline):
        return None
    began = clock.now()
    try:
        return check_scale_out(
            examined.walked or walk(seen.dataset),
            pipeline,
            config,
            clock=clock,
            note=say.note,
            phase=say.phase,
            train=functools.partial(train_through, seen.model, seen.style, clock=clock),
        )
    except Exception as exc:
        say.note(error_reason("service-check-failed", exc))
        return None
    finally:
        say.add_phase("scale_out", began, clock.now())


# Model-side trials run under XProf's "highly input-bound" line, in this share of the deep budget.
MODEL_SIDE_MAX_COST = 0.20
MODEL_SIDE_SHARE = 0.4


def model_side_gate(verdict: Verdict | None, config: RunConfig) -> Reason | None:
    """Why the model-side trials do not run (None: they do)."""
    if not config.verify:
        return Reason("no-verify")
    cost = verdict.input_cost_fraction if verdict is not None else None
    if config.deep or (cost is not None and cost < MODEL_SIDE_MAX_COST):
        return None
    return Reason("input-cost-high", value=cost, limit=MODEL_SIDE_MAX_COST)


def model_side(
    seen: Seen,
    alone: ComputeAlone | None,
    verdict: Verdict | None,
    *,
    config: RunConfig,
    clock: Clock,
    say: Narration,
    quiet_logs: Callable[[], Any] | None = None,
) -> ComputeAlone | None:
    """`alone` with where fit's step time goes and the model-side changes timed on its step alone,
    or why not; `seen.fit_overhead_s` on both sides of each gain. A failure costs this part only."""
    if alone is None or not alone.measured:
        return alone
    if (gate := model_side_gate(verdict, config)) is not None:
        return dataclasses.replace(alone, model_side_reason=gate)
    model, batch = seen.model, seen.batch
    if seen.style != "keras-fit" or model is None or batch is None:
        return dataclasses.replace(alone, model_side_reason=Reason("model-side-fit-only"))
    from pipediag.bench.device import gpu_placement
    from pipediag.training.model_side import on_fit
    from pipediag.training.model_variants import cpu_flags, policy_for

    step_s = alone.step_time.median_s if alone.step_time is not None else None
    if step_s is None or step_s <= 0:
        return dataclasses.replace(alone, model_side_reason=Reason("no-step-time"))
    gpu = gpu_placement() is not None
    policy, policy_reason = policy_for(gpu, cpu_flags())
    fit_rate = verdict.training_steps_per_s if verdict else None
    facts = FitFacts(
        step_s, fit_rate, gpu, policy, policy_reason, fit_overhead_s=seen.fit_overhead_s
    )
    budget_s = config.deep_seconds * MODEL_SIDE_SHARE
    say.phase(ProgressStep("model-side"), budget_s)
    quiet = quiet_logs or contextlib.nullcontext
    began = clock.now()
    try:
        found = on_fit(model, batch, facts, clock=clock, budget_s=budget_s, quiet_logs=quiet)
    except Exception as exc:
        say.note(error_reason("model-side-failed", exc))
        failed = Reason("failed", detail=type(exc).__name__)
        return dataclasses.replace(alone, model_side_reason=failed)
    finally:
        say.add_phase("model_side", began, clock.now())
    return dataclasses.replace(
        alone,
        top_ops=found.top_ops,
        top_ops_reason=found.top_ops_reason,
        trials=found.trials,
        model_side_s=clock.now() - began,
    )
