"""The session's phases after the verdict: the deep analysis (stage timing and fix trials),
the fixes tried on training, and the tf.data service check.

They run only when input matters, within their own budgets (docs/design.md, "The flow of
one diagnosis"), and read the session's state; `DiagnosticSession` inherits them, so this
module holds one job of the session's, apart from its life cycle and the hooks' interface.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import TYPE_CHECKING, Any

from pipediag.clock import Clock
from pipediag.config import RunConfig
from pipediag.report.model import (
    COST_CONTENTION,
    ComputeAlone,
    FixTrial,
    PipelineBenchmark,
    ScaleOut,
    TrainStyle,
    Verdict,
)
from pipediag.timeline import StepTimeline

if TYPE_CHECKING:
    from pipediag.bench.whatif import FixPipelines

# Stage timing and fix trials run when input costs at least this share of training: below
# it no input fix can gain more than ~5%, XProf's line for "not input-bound".
DEEP_MIN_COST = 0.05
# Stage timing may take up to this share of the deep-analysis budget; the fix trials get
# the rest. Stages are quick on most pipelines (a few prefixes, a fraction of a second
# each), and the trials are what turn an estimate into a measured fix.
STAGES_SHARE = 0.5


class DeepAnalysisPhases:
    """Stage timing, fix trials, fixes on training and the scale-out check, over the
    session's state (the attributes below are the session's)."""

    config: RunConfig
    clock: Clock
    timeline: StepTimeline
    style: TrainStyle
    pipeline: PipelineBenchmark
    compute_alone: ComputeAlone | None
    scale_out: ScaleOut | None
    lockstep: bool
    _dataset: Any
    _model: Any
    _verdict: Verdict | None
    _loop_serving: bool
    _fixes_for_loop: list[Any]
    _loop_trials: Any

    def note(self, message: str) -> None:
        raise NotImplementedError

    def phase(self, what: str, budget_s: float | None = None, *, redraw: bool = True) -> None:
        raise NotImplementedError

    def _add_phase(self, name: str, start: float, end: float) -> None:
        raise NotImplementedError

    def _deep_analysis(self, verdict: Verdict | None) -> None:
        """Stage timing and fix trials, only where they can change the advice."""
        if self._dataset is None or not self.pipeline.measured or not self.config.stages:
            return
        cost = verdict.input_cost_fraction if verdict is not None else None
        if not self.config.deep and cost is not None and cost < DEEP_MIN_COST:
            self.pipeline = dataclasses.replace(
                self.pipeline,
                deep_skipped_reason=(
                    f"input costs {cost:.0%} of training (under {DEEP_MIN_COST:.0%}): no "
                    "pipeline fix can gain more; --deep measures stages and fixes anyway"
                ),
            )
            return
        began = self.clock.now()
        try:
            self.pipeline = self._examine_stages(self._dataset, self.pipeline)
        finally:
            self._add_phase("deep_analysis", began, self.clock.now())

    def _check_scale_out(self) -> None:
        """Can the pipeline move to tf.data service, and, when asked, measured
        through one (`bench/scale_out.py`). A failure costs only this section."""
        from pipediag.bench.scale_out import check_scale_out, wanted
        from pipediag.hooks.service_train import train_through

        if self._dataset is None or not wanted(self.config, self.pipeline):
            return
        began = self.clock.now()
        try:
            self.scale_out = check_scale_out(
                self._dataset,
                self.pipeline,
                self.config,
                clock=self.clock,
                note=self.note,
                phase=self.phase,
                train=functools.partial(train_through, self._model, self.style, clock=self.clock),
            )
        except Exception as exc:
            self.note(f"the tf.data service check failed ({type(exc).__name__}: {exc})")
        finally:
            self._add_phase("scale_out", began, self.clock.now())

    def _examine_stages(self, dataset: Any, pipeline: PipelineBenchmark) -> PipelineBenchmark:
        """Per-stage rates and measured fixes, within one shared budget (`deep_seconds`):
        stage timing may take up to `STAGES_SHARE` of it, the fix trials whatever is left.
        A failure here keeps the benchmark itself."""
        from pipediag.bench import teardown
        from pipediag.bench.stages import measure_stages
        from pipediag.bench.structure import effective_options
        from pipediag.bench.whatif import verify_fixes

        budget = self.config.deep_seconds
        began = self.clock.now()
        deadline = began + budget
        self.phase("timing each pipeline stage", budget * STAGES_SHARE)
        try:
            options = effective_options(dataset)
            stages = measure_stages(
                dataset,
                clock=self.clock,
                deadline=began + budget * STAGES_SHARE,
                teardown=teardown.SHARED,
            )
            trials = []
            kept: list[FixPipelines] = []
            left = deadline - self.clock.now()
            if self.config.verify and stages and left > 0:
                self.phase("measuring candidate fixes", left)
                trials = verify_fixes(
                    dataset,
                    stages,
                    clock=self.clock,
                    budget_s=min(self.config.verify_seconds, left),
                    deadline=deadline,
                    teardown=teardown.SHARED,
                    keep=kept if self._can_try_on_training() else None,
                    thread_cap=self._thread_cap() if self._can_try_on_training() else None,
                )
        except Exception as exc:
            self.note(f"the per-stage analysis failed ({type(exc).__name__}: {exc})")
            return pipeline
        if kept:
            trials = self._try_fixes_on_training(dataset, trials, kept)
        return dataclasses.replace(pipeline, stages=stages, options=options, trials=trials)

    # -- fixes tried on training -------------------------------------------------------
    def _can_try_on_training(self) -> bool:
        """Whether the user's train step can run on the fixed pipelines: fit's train function
        (the model is known), or a custom loop still being served at its budget. Never in a
        multi-worker job: how long the trials run is decided by time."""
        if self.lockstep:
            return False
        if self.style == "keras-fit":
            return self._model is not None and self.timeline.median_measured_step_s() is not None
        return self._loop_serving and self.timeline.median_measured_step_s() is not None

    def _thread_cap(self) -> int | None:
        """Where contention dominates input cost: the pipeline threads that would leave the
        train step the cores it uses alone (tried on training only)."""
        from pipediag.analysis.cost_rules import capped_threads

        verdict, alone = self._verdict, self.compute_alone
        split = verdict.cost_split if verdict is not None else None
        if split is None or split.dominant != COST_CONTENTION:
            return None
        cores = os.cpu_count() or 1
        step_cores = None
        if alone is not None and alone.cpu_s_per_step and alone.step_time:
            step_cores = alone.cpu_s_per_step / max(1e-9, alone.step_time.median_s)
        return capped_threads(cores, step_cores)

    def _try_fixes_on_training(
        self, dataset: Any, trials: list[FixTrial], kept: list[FixPipelines]
    ) -> list[FixTrial]:
        """fit: each fix's trial on the train function, now. A custom loop: the fixes wait
        for the loop's next pulls (`serve_fix_trials`)."""
        from pipediag.hooks.training_trial import BUDGET_S, order_for_training

        fixes = order_for_training(kept)
        if self.style != "keras-fit":
            self._fixes_for_loop = fixes
            return trials
        from pipediag.bench import teardown
        from pipediag.bench.isolate import preserved_variables
        from pipediag.hooks.training_trial import try_on_fit

        step_s = self.timeline.median_measured_step_s()
        assert step_s is not None
        self.phase("trying the fixes on training", BUDGET_S)
        began = self.clock.now()
        try:
            with preserved_variables(dataset, teardown.SHARED):
                results = try_on_fit(
                    self._model, fixes, clock=self.clock, step_s=step_s, teardown=teardown.SHARED
                )
        except Exception as exc:
            self.note(f"trying the fixes on training failed ({type(exc).__name__}: {exc})")
            return trials
        finally:
            self._add_phase("training_trial", began, self.clock.now())
        return _with_training_results(trials, results)

    def serve_fix_trials(self) -> Any:
        """The custom loop's fix trials (`hooks.training_trial.LoopTrials`), or None."""
        fixes, self._fixes_for_loop = self._fixes_for_loop, []
        step_s = self.timeline.median_measured_step_s()
        if not fixes or step_s is None:
            return None
        from pipediag.bench import teardown
        from pipediag.hooks.training_trial import BUDGET_S, LoopTrials

        self.phase("trying the fixes on training", BUDGET_S, redraw=False)
        self._loop_trials = LoopTrials(
            fixes, clock=self.clock, step_s=step_s, teardown=teardown.SHARED
        )
        return self._loop_trials

    def fix_trials_served(self, served: Any) -> None:
        """The loop's fix trials are over: their results join the pipeline's trials."""
        self._loop_trials = None
        results = served.results()
        self._add_phase("training_trial", served.began, self.clock.now())
        trials = _with_training_results(list(self.pipeline.trials), results)
        self.pipeline = dataclasses.replace(self.pipeline, trials=trials)


def _with_training_results(
    trials: list[FixTrial],
    results: dict[tuple[str, int | None], tuple[Any, str | None]],
) -> list[FixTrial]:
    from pipediag.hooks.training_trial import with_training

    updated = []
    for trial in trials:
        found = results.get((trial.fix, trial.stage_index))
        updated.append(trial if found is None else with_training(trial, *found))
    return updated
