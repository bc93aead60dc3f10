"""One diagnosis: owns the samplers, the hooks and the step timeline; `stop()` gives the Report."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import platform
import sys
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TextIO

from pipediag.analysis.advisor import advise
from pipediag.analysis.classifier import judge
from pipediag.analysis.enrich import enrich_report
from pipediag.analysis.run_terms import with_prescription_in_run_terms
from pipediag.bench import teardown
from pipediag.bench.isolate import kept_random_states
from pipediag.bench.pipeline import describe_chain
from pipediag.clock import MONOTONIC, Clock, wall_minus_clock
from pipediag.conclusion import Conclusion, no_compute_alone_reason
from pipediag.config import RunConfig
from pipediag.found import FoundTraining
from pipediag.hooks import InstalledHooks, install
from pipediag.hooks.host import HookGate
from pipediag.hooks.keras_fit import FitTracker
from pipediag.phases import Seen, pipeline_alone
from pipediag.progress import Progress, ProgressStep
from pipediag.renderers.hardware_words import sampler_note_lines
from pipediag.renderers.progress_words import progress_words
from pipediag.renderers.reason_words import reason_words
from pipediag.renderers.run_words import data_pass_text
from pipediag.report.model import (
    ComputeAlone,
    DataPass,
    Environment,
    ExitInfo,
    PhaseSpan,
    PipelineBenchmark,
    Report,
    TaskInfo,
)
from pipediag.report.reasons import Reason, ReasonCode
from pipediag.report.samples import GpuSection, HostSection
from pipediag.report.vocabulary import PhaseName, StopReason, TrainStyle
from pipediag.scale_out.analysis import enrich_report as enrich_scale_out
from pipediag.timeline import StepTimeline
from pipediag.training.alternation import FitAlternation
from pipediag.training.budget import BudgetServer, CachedBatch, LoopResult, LoopWork
from pipediag.training.function_loop import TrainCalls
from pipediag.training.loop_xla import LoopStep
from pipediag.version import __version__

if TYPE_CHECKING:
    from pipediag.samplers import GpuSampler, HostSampler
    from pipediag.watch.watcher import Watcher


class DiagnosticSession:
    """Records one run of a training script and freezes it into a `Report`; the hooks' methods:
    `hooks.host.HookHost`. `install_hooks=False`: TensorFlow and Keras unpatched (`pipediag.monitor`
    marks steps); `task`: a multi-worker job's (every extra step counted)."""

    def __init__(
        self,
        script: str,
        args: list[str],
        config: RunConfig | None = None,
        *,
        clock: Clock = MONOTONIC,
        log: TextIO | None = sys.stderr,
        install_hooks: bool = True,
        task: TaskInfo | None = None,
    ) -> None:
        self.script = script
        self.args = list(args)
        self.config = config = config or RunConfig()
        self.clock, self.task = clock, task
        # Workers must run the same train steps: a time bound could end one a step before the
        # others, and their next collective fails (docs/design.md, "Multi-worker jobs").
        self.lockstep = task is not None and task.cluster_size > 1
        self.timeline = StepTimeline(
            warmup_steps=self.config.warmup_steps,
            measured_steps=self.config.measured_steps,
            measured_seconds=None if self.lockstep else self.config.measured_seconds,
            fixed_end=self.lockstep,
        )
        # Shared with the hooks: they pass calls through while pipediag reads or fit runs.
        self.gate = HookGate()
        # A FitTracker the caller feeds (`pipediag.keras.Watch`), not the hooks.
        self.fit_tracker: FitTracker | None = None
        self.found = FoundTraining(
            self.timeline, say=self, fit=self._fit_tracker, forget_loop=self._forget_loop
        )
        self._progress = Progress(log)
        self._notes: list[Reason] = []
        self._benchmarked: set[int] = set()
        self._phases: dict[PhaseName, float] = {}
        self._spans: list[PhaseSpan] = []
        self._hooks: InstalledHooks | None = None
        self._install_hooks = install_hooks
        self._samplers: list[HostSampler | GpuSampler] = []
        self._started_wall = ""
        self._origin_unix_s: float | None = None
        self.conclusion = Conclusion(
            config=config, clock=clock, timeline=self.timeline, say=self, lockstep=self.lockstep
        )
        # Watch mode: windows, TensorBoard scalars and alerts, read off the timeline.
        self.watcher: Watcher | None = None
        if self.config.watch is not None:
            from pipediag.watch.watcher import Watcher

            self.watcher = Watcher(
                self.config.watch,
                self.timeline,
                clock=clock,
                warmup_steps=self.config.warmup_steps,
                script=script,
                log=self.log,
                note=self.note_once,
            )
            self.watcher.waits_deferred = self.found.waits_deferred

    def start(self) -> None:
        self.conclusion.origin = self.clock.now()
        self._origin_unix_s = self.origin + wall_minus_clock(self.clock)
        self._started_wall = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        if self.lockstep and self.task is not None:
            self.note(
                Reason("multi-worker-job", detail=self.task.name, value=self.task.cluster_size)
            )
        from pipediag.samplers import make_samplers

        self._samplers = make_samplers(self.config, self.clock, self.conclusion.quiet)
        for sampler in self._samplers:
            sampler.start()
        if self.watcher is not None:
            self.watcher.start(self.origin)
        if self._install_hooks:
            self._hooks = install(self)

    def stop(self, exit_info: ExitInfo, stop_reason: StopReason) -> Report:
        """Undo every hook, stop every thread, and build the report. Never raises."""
        if self._hooks is not None:
            self._hooks.uninstall()
        watch = self.watcher.finish() if self.watcher is not None else None
        if not self.conclusion.concluded and stop_reason != "interrupted":
            self._conclude_after_the_script()
        if self.style == "none" and self._hooks is not None:
            for seen in self._hooks.function_loop.seen:
                self.note(seen)
        self.found.release()
        if not teardown.SHARED.drain():  # spent iterators released off the main thread (bench/)
            self.note(Reason("iterators-still-releasing"))
        analysis_began = self.clock.now()
        self._progress.close()
        from pipediag.samplers import stop_samplers

        host, gpu = stop_samplers(self._samplers, self.origin)
        for line in sampler_note_lines(host, gpu):
            self.log(line)
        train = self.found.final_section(self.origin, self._phases)
        diagnosis = self.conclusion.diagnosis
        report = Report(
            script=self.script,
            args=self.args,
            created_utc=self._started_wall,
            environment=_environment(gpu),
            verdict=judge(
                train, diagnosis.pipeline, compute_alone=diagnosis.compute_alone, host=host
            ),
            pipeline=diagnosis.pipeline,
            train=train,
            host=host,
            gpu=gpu,
            complete=stop_reason in ("step-budget", "script-finished"),
            stop_reason=stop_reason,
            exit=exit_info,
            compute_alone=diagnosis.compute_alone,
            first_verdict_s=diagnosis.first_verdict_s,
            task=self.task,
            origin_unix_s=self._origin_unix_s,
            scale_out=diagnosis.scale_out,
        )
        report = _analysed(report, self.note)
        self.add_phase("analysis", analysis_began, self.clock.now())
        return dataclasses.replace(
            report,
            wall_time_s=self.clock.now() - self.origin,
            phase_times_s=dict(self._phases),
            phases=sorted(self._spans, key=lambda span: span.start_s),
            notes=[*self._notes, *(n for n in report.notes if n not in self._notes)],
            watch=watch,
        )

    def note(self, reason: Reason) -> None:
        self._notes.append(reason)
        self.log(reason_words(reason))

    def note_once(self, reason: Reason) -> None:
        if reason not in self._notes:
            self.note(reason)

    def log(self, message: str) -> None:
        self._progress.message(message)

    def phase(
        self, step: ProgressStep, budget_s: float | None = None, *, redraw: bool = True
    ) -> None:
        self._progress.phase(progress_words(step), budget_s, redraw=redraw)

    @property
    def origin(self) -> float:
        """The session's start on its clock (0.0 before `start`); the conclusion holds it."""
        return self.conclusion.origin

    @property
    def style(self) -> TrainStyle:
        return self.found.style

    def mark_style(self, style: TrainStyle) -> bool:
        return self.found.mark_style(style)

    def _forget_loop(self) -> None:
        if self._hooks is not None:
            self._hooks.loop.forget_training()

    def data_pass(self, record: DataPass) -> None:
        if self.found.data_pass(record):
            self.log(f"skipped {data_pass_text(record)}")

    @contextlib.contextmanager
    def suspended(self) -> Iterator[None]:
        """pipediag's own reads: not the user's steps, drawing none of the script's randomness."""
        with self.gate.pipediag_reading(), kept_random_states():
            yield

    def benchmark_pipeline(self, dataset: Any, *, rebuilt: bool = False) -> None:
        """Phase 1: the training dataset alone, once per dataset, before training pulls (its
        stages wait for the verdict). `rebuilt`: made anew for a new pass (`ds.take(n)` in an
        epoch loop), benchmarked only if the last one could not be (it ran out first)."""
        diagnosis = self.conclusion.diagnosis
        if id(dataset) in self._benchmarked or (rebuilt and diagnosis.pipeline.measured):
            return
        self._benchmarked.add(id(dataset))
        self.found.dataset = dataset
        if not self.config.bench:
            reason = Reason("no-bench" if self.config.watch is None else "watch-no-bench")
            diagnosis.pipeline = PipelineBenchmark(measured=False, reason=reason)
            return
        try:
            with self.suspended():
                diagnosis.pipeline = pipeline_alone(
                    dataset,
                    config=self.config,
                    clock=self.clock,
                    say=self,
                    keep_first_batch=self.found.keep_batch,
                )
        except BaseException:
            diagnosis.pipeline = PipelineBenchmark(
                measured=False, reason=Reason("bench-interrupted"), dataset=describe_chain(dataset)
            )
            raise
        self.phase(ProgressStep("train-steps"), redraw=False)

    def keep_measuring(self) -> bool:
        return self.conclusion.keep_measuring()

    def train_calls(self, calls: TrainCalls) -> None:
        self.found.calls = calls

    def training_log_dir(self, log_dir: str) -> None:
        """The training's own TensorBoard log directory: watch mode's scalars go there too."""
        if self.watcher is not None:
            self.watcher.saw_logdir(log_dir)

    def fit_called(self, model: Any, dataset: Any, *, given: str) -> None:
        self.mark_style("keras-fit")
        self.found.training_model(model)
        diagnosis = self.conclusion.diagnosis
        if dataset is not None:
            self.benchmark_pipeline(dataset)
        elif not diagnosis.pipeline.measured and diagnosis.pipeline.reason == Reason("no-dataset"):
            given_instead = Reason("fit-given", given)
            diagnosis.pipeline = PipelineBenchmark(measured=False, reason=given_instead)

    def _fit_tracker(self) -> FitTracker | None:
        """What marks fit's steps: the hooks' tracker, or one the caller feeds (`fit_tracker`)."""
        return self._hooks.fit if self._hooks is not None else self.fit_tracker

    def _host_so_far(self) -> HostSection | None:
        """The host's samples so far, for the first verdict (the samplers run on)."""
        from pipediag.samplers import HostSampler

        for sampler in self._samplers:
            if isinstance(sampler, HostSampler):
                section = sampler.section(self.origin)
                return section if section.available else None
        return None

    def conclude(self, *, deep: bool = True) -> None:
        """The measured steps are done: compute alone, the verdict line, then stages and fixes
        (each once; `deep=False`: at a safe point of fit with `--steps all`, they wait)."""
        self._conclude(None, deep=deep)

    def _conclude(
        self, compute_alone: ComputeAlone | None, *, deep: bool = True, loop_serving: bool = False
    ) -> LoopWork | None:
        """`conclude` with a loop's compute alone; what the loop tries next, if deep ran now."""
        seen, conclusion = self._seen(), self.conclusion
        with self.suspended():
            if conclusion.diagnosis.verdict is None:
                conclusion.settle_compute_alone(seen, compute_alone)
                train = self.found.section(self.origin, self._phases)
                conclusion.say_verdict(train, self._host_so_far())
            return conclusion.deep_analysis(seen, loop_serving=loop_serving) if deep else None

    def alternate_fit(self, *, lead: bool, steps_left: int | None) -> FitAlternation | None:
        return self.conclusion.alternate_fit(self._seen(), lead=lead, steps_left=steps_left)

    def _seen(self) -> Seen:
        found = self.found
        overhead = found.fit_overhead_s()
        return Seen(found.style, found.dataset, found.model, found.batch, overhead, found.calls)

    def loop_at_budget(
        self, cached: CachedBatch, step: LoopStep | Reason | None
    ) -> BudgetServer | None:
        if (server := self.conclusion.serve_loop(cached, step, fold=self._loop_measured)) is None:
            self.conclude()
        return server

    def _loop_measured(self, result: LoopResult) -> LoopWork | None:
        """A plan served to a custom loop is over; compute alone's concludes (what comes next)."""
        self.conclusion.fold(result)
        if not isinstance(result, ComputeAlone):
            return None
        return self._conclude(result, loop_serving=True)

    def _conclude_after_the_script(self) -> None:
        """The script ended before the step budget: conclude with what can still be run."""
        reason = no_compute_alone_reason(
            self.config, self.style, hooked=self._install_hooks, calls=self.found.calls
        )
        try:
            # (a verdict already said keeps its compute-alone run: this one is ignored)
            self._conclude(ComputeAlone(measured=False, reason=reason) if reason else None)
        except Exception as exc:
            self.note(Reason("late-analysis-failed", detail=f"{type(exc).__name__}: {exc}"))

    def add_phase(self, name: PhaseName, start: float, end: float) -> None:
        """A phase of the diagnosis ran from `start` to `end`: on the report's phase list."""
        self._phases[name] = self._phases.get(name, 0.0) + end - start
        self._spans.append(PhaseSpan(name, start - self.origin, end - start))


def _analysed(report: Report, note: Callable[[Reason], None]) -> Report:
    """The report with each analysis and the advice; a bug in one costs only its own part."""

    def guarded(failed: ReasonCode, step: Callable[[Report], Report], report: Report) -> Report:
        try:
            return step(report)
        except Exception as exc:
            note(Reason(failed, detail=f"{type(exc).__name__}: {exc}"))
            return report

    report = guarded("gpu-analysis-failed", enrich_report, report)
    report = guarded("scale-out-prediction-failed", enrich_scale_out, report)
    report = guarded("prescription-figures-failed", with_prescription_in_run_terms, report)
    return guarded(
        "advisor-failed", lambda r: dataclasses.replace(r, suggestions=advise(r)), report
    )


def _environment(gpu: GpuSection) -> Environment:
    return Environment(
        python_version=platform.python_version(),
        platform=platform.platform(),
        pipediag_version=__version__,
        tensorflow_version=getattr(sys.modules.get("tensorflow"), "__version__", None),
        keras_version=getattr(sys.modules.get("keras"), "__version__", None),
        cpu_count=os.cpu_count() or 0,
        gpus=[d.name for d in gpu.devices],
        gpu_reason=None if gpu.available else gpu.reason,
    )
