"""One diagnosis: owns the samplers, the hooks and the step timeline; `stop()` gives the Report."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import platform
import sys
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from pipediag.analysis.advisor import advise
from pipediag.analysis.classifier import build_train_section, judge
from pipediag.analysis.enrich import enrich_report
from pipediag.analysis.scale_out import enrich_report as enrich_scale_out
from pipediag.clock import MONOTONIC, Clock, wall_minus_clock
from pipediag.config import RunConfig
from pipediag.deep_analysis import DEEP_MIN_COST, DeepAnalysisPhases
from pipediag.progress import Progress
from pipediag.renderers.summary import data_pass_text, verdict_line
from pipediag.report.model import (
    ComputeAlone,
    DataPass,
    Environment,
    ExitInfo,
    GpuSection,
    HostSection,
    PhaseSpan,
    PipelineBenchmark,
    Report,
    ScaleOut,
    StopReason,
    TaskInfo,
    TrainSection,
    TrainStyle,
    Verdict,
)
from pipediag.report.vocabulary import InputWaitSource
from pipediag.timeline import StepTimeline

if TYPE_CHECKING:
    from pipediag.watch.watcher import Watcher

NO_DATASET = "no tf.data training dataset was seen"
# Watch mode measures the whole run and nothing beside it (docs/design.md, "Watching a long run").
WATCH_NO_BENCH = "watch mode: no pipeline-alone phase"
WATCH_NO_COMPUTE_ALONE = "watch mode runs no train step alone"

# A pipeline with a cache runs its first epoch uncached: at the budget, measuring goes on into
# the second epoch, this many steps at a time, until the second epoch has as many (so each
# phase has its own verdict), within the caps below.
PHASE_EXTENSION_STEPS = 20
# Caps on that extension: at most this many times the step budget, and this long.
PHASE_EXTENSION_MAX_FACTOR = 4
PHASE_EXTENSION_MAX_S = 30.0

# A multi-worker job's train steps are collectives: every worker must run the same number,
# so there the diagnosis counts its extra steps instead of timing them (docs/design.md,
# "Multi-worker jobs").
LOCKSTEP_NOTE = (
    "multi-worker job ({task}, {size} tasks): every worker must run the same train steps, so "
    "the step budget counts steps only, compute alone runs a fixed number of steps, and no "
    "fix is tried on training"
)
LOCKSTEP_FIT_REASON = (
    "a multi-worker fit: its train step is a collective every worker must join at once, "
    "so it is not run alone"
)


class DiagnosticSession(DeepAnalysisPhases):
    """Records one run of a training script and freezes it into a `Report`.

    Args:
        script: the script path as given, for the report.
        args: the script's arguments.
        config: what to measure and for how long.
        clock: the clock every recorder reads (a fake one in tests).
        log: where pipediag's progress lines go (stderr by default); None for silence.
        install_hooks: False leaves TensorFlow and Keras unpatched, for the framework-neutral
            API (`pipediag.monitor`), whose caller marks steps and input waits itself.
        task: this process's task in a multi-worker job (`pipediag.cluster.task_from_env`);
            with more than one task in the cluster, every extra train step is counted.
    """

    def __init__(
        self,
        script: str,
        args: list[str],
        config: RunConfig | None = None,
        *,
        clock: Clock = MONOTONIC,
        log: Any = sys.stderr,
        install_hooks: bool = True,
        task: TaskInfo | None = None,
    ) -> None:
        self.script = script
        self.args = list(args)
        self.config = config or RunConfig()
        self.clock = clock
        self.task = task
        # Workers in lockstep reach a step count together; a time bound could end one of
        # them a step before the others, whose next collective would then fail.
        self.lockstep = task is not None and task.cluster_size > 1
        self.timeline = StepTimeline(
            warmup_steps=self.config.warmup_steps,
            measured_steps=self.config.measured_steps,
            measured_seconds=None if self.lockstep else self.config.measured_seconds,
        )
        self.paused = False
        self.in_fit = False
        self.style: TrainStyle = "none"
        self.pipeline = PipelineBenchmark(measured=False, reason=NO_DATASET)
        self._progress = Progress(log)
        self._notes: list[str] = []
        self._data_passes: list[DataPass] = []
        self._benchmarked: set[int] = set()
        self._phases: dict[str, float] = {}
        self._spans: list[PhaseSpan] = []
        self._hooks: Any = None
        self._install_hooks = install_hooks
        self._samplers: list[Any] = []
        self._started_wall = ""
        self.origin = 0.0
        self._origin_unix_s: float | None = None
        self.compute_alone: ComputeAlone | None = None
        self.first_verdict_s: float | None = None
        self.scale_out: ScaleOut | None = None
        self._concluded = False
        self._verdict_said = False
        self._extended = False
        self._verdict: Verdict | None = None
        # What the compute-alone phase and the deep analysis need after the measured steps:
        # the training dataset, a batch of it, and the model `fit` trains (strong references,
        # released when the session stops).
        self._dataset: Any = None
        self._cached_batch: Any = None
        self._model: Any = None
        # A custom loop at its step budget can still be served batches: the fixes measured
        # to help are then tried on its training (`serve_fix_trials`).
        self._loop_serving = False
        self._fixes_for_loop: list[Any] = []
        self._loop_trials: Any = None  # the LoopTrials being served, until their results
        # A FitTracker fed by the caller rather than by installed hooks (`pipediag.keras.Watch`).
        self.fit_tracker: Any = None
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
            self.watcher.waits_deferred = self._fit_waits_deferred

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        from pipediag.hooks import install

        self.origin = self.clock.now()
        self._origin_unix_s = self.origin + wall_minus_clock(self.clock)
        self._started_wall = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        if self.lockstep:
            assert self.task is not None
            self.note(LOCKSTEP_NOTE.format(task=self.task.name, size=self.task.cluster_size))
        self._samplers = self._make_samplers()
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
        if not self._concluded and stop_reason != "interrupted":
            self._conclude_after_the_script()
        if self._loop_trials is not None:  # the loop ended while its fixes were tried
            self.fix_trials_served(self._loop_trials)
        self._dataset = self._cached_batch = self._model = None
        self._fixes_for_loop = []
        self._drain_teardowns()
        analysis_began = self.clock.now()
        self._progress.close()
        host, gpu = self._stop_samplers()
        train = self._train_section()
        report = Report(
            script=self.script,
            args=self.args,
            created_utc=self._started_wall,
            environment=self._environment(gpu),
            verdict=judge(train, self.pipeline, compute_alone=self.compute_alone, host=host),
            pipeline=self.pipeline,
            train=train,
            host=host,
            gpu=gpu,
            complete=stop_reason in ("step-budget", "script-finished"),
            stop_reason=stop_reason,
            exit=exit_info,
            compute_alone=self.compute_alone,
            first_verdict_s=self.first_verdict_s,
            task=self.task,
            origin_unix_s=self._origin_unix_s,
            scale_out=self.scale_out,
        )
        report = self._guarded("the GPU analysis", enrich_report, report)
        report = self._guarded("the scale-out prediction", enrich_scale_out, report)
        report = self._guarded(
            "the advisor", lambda r: dataclasses.replace(r, suggestions=advise(r)), report
        )
        self._add_phase("analysis", analysis_began, self.clock.now())
        return dataclasses.replace(
            report,
            wall_time_s=self.clock.now() - self.origin,
            phase_times_s=dict(self._phases),
            phases=sorted(self._spans, key=lambda span: span.start_s),
            notes=list(self._notes),
            watch=watch,
        )

    def _drain_teardowns(self) -> None:
        """Wait for the spent iterators being released off the main thread (bench/)."""
        if "pipediag.bench.teardown" not in sys.modules:
            return
        from pipediag.bench import teardown

        if not teardown.drain():
            self.note("some of pipediag's own iterators were still being released at the end")

    def _guarded(self, what: str, step: Callable[[Report], Report], report: Report) -> Report:
        """One analysis step; a bug in it is noted and costs only its own part of the report."""
        try:
            return step(report)
        except Exception as exc:
            self.note(f"{what} failed ({type(exc).__name__}: {exc}); it is left out")
            return report

    # -- called by the hooks ---------------------------------------------------------
    def note(self, message: str) -> None:
        self._notes.append(message)
        self.log(message)

    def note_once(self, message: str) -> None:
        if message not in self._notes:
            self.note(message)

    def log(self, message: str) -> None:
        self._progress.message(message)

    def phase(self, what: str, budget_s: float | None = None, *, redraw: bool = True) -> None:
        """A phase of the diagnosis starts: one updating line on a terminal (`redraw=False`
        where the user's code runs and prints meanwhile)."""
        self._progress.phase(what, budget_s, redraw=redraw)

    def mark_style(self, style: TrainStyle) -> bool:
        """How the script trains; False when another style is diagnosed instead.

        A script that runs `fit` is diagnosed as `keras-fit` whatever loop trained before
        it: the loop's steps are dropped (docs/design.md, "Finding the training").
        """
        if self.style == "none" or self.style == style:
            self.style = style
            return True
        if style == "keras-fit" and self.style == "custom-loop":
            self.note(
                f"the script trained in a custom loop ({len(self.timeline)} steps) before "
                "calling fit: fit's training is diagnosed"
            )
            self.style = style
            self.timeline.clear()
            if self._hooks is not None:
                self._hooks.loop.forget_training()
            return True
        self.note_once(f"the script trains both with {self.style} and {style}")
        return False

    def data_pass(self, record: DataPass) -> None:
        """A pass over the data that was not training: kept for the report, passes alike
        (a validation loop each epoch) merged into one record."""
        for i, seen in enumerate(self._data_passes):
            if (seen.reason, seen.by, seen.where, seen.dataset) == (
                record.reason,
                record.by,
                record.where,
                record.dataset,
            ):
                self._data_passes[i] = dataclasses.replace(
                    seen,
                    passes=seen.passes + record.passes,
                    batches=seen.batches + record.batches,
                    duration_s=seen.duration_s + record.duration_s,
                )
                return
        self._data_passes.append(record)
        self.log(f"skipped {data_pass_text(record)}")

    @contextlib.contextmanager
    def suspended(self) -> Iterator[None]:
        """pipediag's own reads of the data are not the user's steps."""
        was = self.paused
        self.paused = True
        try:
            yield
        finally:
            self.paused = was

    def benchmark_pipeline(self, dataset: Any) -> None:
        """Phase 1: the training dataset alone, once per dataset, before training pulls.

        Only the rate: stage timing and fix trials wait for the verdict (`conclude`), which
        says whether input matters at all.
        """
        if id(dataset) in self._benchmarked:
            return
        self._benchmarked.add(id(dataset))
        self._dataset = dataset
        if not self.config.bench:
            reason = "skipped (--no-bench)" if self.config.watch is None else WATCH_NO_BENCH
            self.pipeline = PipelineBenchmark(measured=False, reason=reason)
            return
        from pipediag.bench import teardown
        from pipediag.bench.pipeline import benchmark_dataset, describe_chain

        self.phase("benchmarking the input pipeline alone", self.config.bench_seconds)
        began = self.clock.now()
        try:
            with self.suspended():
                self.pipeline = benchmark_dataset(
                    dataset,
                    max_batches=self.config.bench_batches,
                    max_seconds=self.config.bench_seconds,
                    clock=self.clock,
                    keep_first_batch=self._keep_batch,
                    teardown=teardown.SHARED,
                )
        except Exception as exc:
            self.pipeline = PipelineBenchmark(
                measured=False,
                reason=f"the pipeline failed when read alone: {type(exc).__name__}: {exc}",
                dataset=describe_chain(dataset),
            )
        except BaseException:
            self.pipeline = PipelineBenchmark(
                measured=False,
                reason="interrupted before the pipeline benchmark finished",
                dataset=describe_chain(dataset),
            )
            self._add_phase("pipeline_benchmark", began, self.clock.now())
            raise
        self._add_phase("pipeline_benchmark", began, self.clock.now())
        self.phase("measuring train steps", redraw=False)

    def keep_measuring(self) -> bool:
        """At the step budget: whether to measure on, into the epoch after a filling cache.

        Returns True when the budget was extended (the hooks then go on), False to stop.
        """
        if self.lockstep:
            return False  # how far to go on depends on time: workers could disagree
        if self.config.measured_steps is None or not _cache_ends_each_epoch(self.pipeline.dataset):
            return False
        steps = self.timeline.steps[self.config.warmup_steps :]
        if not steps:
            return False
        first_epoch = steps[0].epoch
        later = sum(s.count for s in steps if s.epoch > first_epoch)
        if later == 0 and _hardly_waits(steps):
            return False  # epoch 1 already keeps up: a filled cache cannot change the verdict
        if later >= PHASE_EXTENSION_STEPS:
            return False
        budget = self.config.warmup_steps + self.config.measured_steps
        too_long = self.clock.now() - steps[0].start >= PHASE_EXTENSION_MAX_S
        if len(self.timeline) >= budget * PHASE_EXTENSION_MAX_FACTOR or too_long:
            if later == 0:
                self.note_once(
                    "the pipeline caches, but its first epoch outlasted the measuring bound: "
                    "the verdict describes epoch 1 only (--steps N measures more)"
                )
            return False
        if not self._extended:
            self._extended = True
            self.log(
                "the pipeline caches: measuring on into the next epoch, where it reads the cache"
            )
        self.timeline.extend_budget(PHASE_EXTENSION_STEPS)
        return True

    def _keep_batch(self, batch: Any) -> None:
        self._cached_batch = batch

    def training_model(self, model: Any) -> None:
        """The model `fit` trains: its train step is run alone after the measured steps."""
        self._model = model

    def training_log_dir(self, log_dir: str) -> None:
        """The log directory of the training's own TensorBoard callback: watch mode's scalars
        go there too."""
        if self.watcher is not None:
            self.watcher.saw_logdir(log_dir)

    def _fit_tracker(self) -> Any:
        """What marks fit's steps: the hooks' tracker, or one the caller feeds (`fit_tracker`)."""
        return self._hooks.fit if self._hooks is not None else self.fit_tracker

    def _fit_waits_deferred(self) -> bool:
        """Under fit with batch stamps, the steps' waits are filled in every few seconds."""
        fit = self._fit_tracker()
        return fit is not None and fit.stamps is not None

    # -- after the measured steps ----------------------------------------------------
    def conclude(
        self,
        compute_alone: ComputeAlone | None = None,
        *,
        deep: bool = True,
        loop_serving: bool = False,
    ) -> None:
        """The measured steps are done: compute alone, the verdict line, then stages and fixes.

        Called by the hooks at the step budget (a custom loop passes the compute-alone run
        it served from its cached batch; under fit it is run here), at a safe point between
        fit's steps with `--steps all` (`deep=False`: stages and fixes wait for the end), or
        when the script ended first. Each part runs once. `loop_serving`: a custom loop at
        its budget, which can still be served batches for the fixes' trials on training.
        """
        self._loop_serving = loop_serving
        with self.suspended():
            if not self._verdict_said:
                self._verdict_said = True
                if compute_alone is None:
                    compute_alone = self._measure_compute_alone()
                self.compute_alone = compute_alone
                self._verdict = self._say_verdict()
            if deep and not self._concluded:
                self._concluded = True
                self._deep_analysis(self._verdict)
                self._check_scale_out()

    def _conclude_after_the_script(self) -> None:
        """The script ended before the step budget: conclude with what can still be run."""
        reason = None
        if self.config.watch is not None:
            reason = WATCH_NO_COMPUTE_ALONE
        elif not self._install_hooks:
            reason = (
                "steps marked through pipediag.monitor() cannot be run on their own: "
                "compute alone is estimated"
            )
        elif self.style == "custom-loop":
            reason = (
                "--steps all: a custom loop has no safe point to run extra steps on a cached "
                "batch (they would change what it trains on)"
                if self.config.measured_steps is None
                else "the script ended before the step budget, where a custom loop is "
                "served a cached batch"
            )
        try:
            # (a verdict already said keeps its compute-alone run: conclude ignores this one)
            self.conclude(ComputeAlone(measured=False, reason=reason) if reason else None)
        except Exception as exc:
            self.note(f"the analysis after the measured steps failed ({type(exc).__name__}: {exc})")

    def _measure_compute_alone(self) -> ComputeAlone:
        """The train step alone under fit: the model's train function on the cached batch."""
        if self.style != "keras-fit":
            return ComputeAlone(measured=False, reason="no train step to run alone")
        if self.lockstep:
            return ComputeAlone(measured=False, reason=LOCKSTEP_FIT_REASON)
        if self._model is None or self._cached_batch is None:
            reason = (
                self.pipeline.reason
                if not self.pipeline.measured and self.pipeline.reason
                else "no batch of the training dataset was kept"
            )
            return ComputeAlone(measured=False, reason=f"no cached batch: {reason}")
        hint = self.timeline.median_measured_step_s()
        if hint is None:
            return ComputeAlone(measured=False, reason="no measured step to compare with")
        from pipediag.hooks.compute_alone import MAX_SECONDS, measure_fit_step

        self.phase("measuring the train step alone on a cached batch", MAX_SECONDS)
        began = self.clock.now()
        try:
            result = measure_fit_step(
                self._model,
                self._cached_batch,
                clock=self.clock,
                origin=self.origin,
                step_s_hint=hint,
            )
        except Exception as exc:
            result = ComputeAlone(
                measured=False,
                reason=f"the train step failed on a cached batch: {type(exc).__name__}: {exc}",
            )
        self._add_phase("compute_alone", began, self.clock.now())
        return result

    def lockstep_steps(self) -> int | None:
        """How many steps a custom loop's compute alone runs in a multi-worker job; None
        elsewhere (bounded by time). At most the measured steps: it costs no more than they did.
        """
        if not self.lockstep:
            return None
        from pipediag.hooks.compute_alone import MIN_STEPS

        return min(MIN_STEPS, self.config.measured_steps or MIN_STEPS)

    def add_compute_alone_phase(self, result: ComputeAlone) -> None:
        """A custom loop's compute-alone run, on the report's phase list."""
        if result.start_s is not None:
            began = self.origin + result.start_s
            self._add_phase("compute_alone", began, began + result.duration_s)

    def _say_verdict(self) -> Verdict:
        """The verdict so far (no host samples yet), printed at once."""
        raw = self.timeline.steps
        train = build_train_section(
            raw,
            origin=self.origin,
            warmup_steps=self.config.warmup_steps,
            style=self.style,
            input_wait_source=self._wait_source(),
            skipped_passes=self._data_passes,
        )
        verdict = judge(
            train, self.pipeline, compute_alone=self.compute_alone, cores=os.cpu_count()
        )
        self.first_verdict_s = self.clock.now() - self.origin
        self.log(f"verdict: {verdict_line(verdict, self.pipeline.batches_per_s)}")
        return verdict

    def benchmark_fit_input(self, x: Any) -> bool:
        """Benchmark the dataset `fit` was given; False when `x` is not a tf.data.Dataset."""
        import tensorflow as tf

        if isinstance(x, tf.data.Dataset):
            self.benchmark_pipeline(x)
            return True
        if not self.pipeline.measured and self.pipeline.reason == NO_DATASET:
            kind = type(x).__name__
            self.pipeline = PipelineBenchmark(
                measured=False,
                reason=f"fit was given a {kind}, not a tf.data.Dataset: nothing to benchmark alone",
            )
        return False

    # -- building the report ---------------------------------------------------------
    def _wait_source(self) -> InputWaitSource:
        """Where the steps' waits come from; under fit without stamps, fills them first."""
        if self.style == "custom-loop":
            return "iterator-timing"
        fit = self._fit_tracker()
        if self.style == "keras-fit" and fit is not None:
            if fit.stamps is not None:
                return "batch-stamps"
            tracer = fit.tracer
            self.timeline.fill_waits(tracer.waits_for)
            if tracer.overhead_s:
                self._phases["profiler_overhead"] = tracer.overhead_s
            return "profiler-trace"
        return "unavailable"

    def _train_section(self) -> TrainSection:
        source = self._wait_source()
        raw = self.timeline.steps
        if self.timeline.merges:
            self.note(
                f"{len(self.timeline)} steps were kept as {len(raw)} records: older steps "
                "were merged in pairs to bound memory (totals are exact)"
            )
        if raw:
            self._add_phase("train", raw[0].start, raw[-1].end)
        return build_train_section(
            raw,
            origin=self.origin,
            warmup_steps=self.config.warmup_steps,
            style=self.style,
            input_wait_source=source,
            skipped_passes=self._data_passes,
        )

    def _add_phase(self, name: str, start: float, end: float) -> None:
        self._phases[name] = self._phases.get(name, 0.0) + end - start
        self._spans.append(PhaseSpan(name, start - self.origin, end - start))

    def _make_samplers(self) -> list[Any]:
        samplers: list[Any] = []
        if self.config.sample_host:
            from pipediag.samplers.host import HostSampler

            samplers.append(HostSampler(interval_s=self.config.host_interval_s, clock=self.clock))
        if self.config.sample_gpu:
            from pipediag.samplers.gpu import GpuSampler

            samplers.append(GpuSampler(interval_s=self.config.gpu_interval_s, clock=self.clock))
        return samplers

    def _stop_samplers(self) -> tuple[HostSection, GpuSection]:
        host = HostSection(available=False, reason="host sampling was turned off")
        gpu = GpuSection(available=False, reason="GPU sampling was turned off")
        for sampler in self._samplers:
            sampler.stop()
            section = sampler.section(self.origin)
            if isinstance(section, HostSection):
                host = section
            else:
                gpu = section
        # A sampler's trouble is never swallowed: it is in its section and said on stderr.
        for where, notes in (("host sampler", host.notes), ("GPU sampler", gpu.notes)):
            for message in notes:
                self.log(f"{where}: {message}")
        return host, gpu

    def _environment(self, gpu: GpuSection) -> Environment:
        from pipediag.version import __version__

        return Environment(
            python_version=platform.python_version(),
            platform=platform.platform(),
            pipediag_version=__version__,
            tensorflow_version=_module_version("tensorflow"),
            keras_version=_module_version("keras"),
            cpu_count=os.cpu_count() or 0,
            gpus=[d.name for d in gpu.devices],
            gpu_reason=None if gpu.available else gpu.reason,
        )


def _hardly_waits(steps: list[Any]) -> bool:
    """Whether steps whose waits are all known waited under 5% of their time."""
    if any(s.input_wait_s is None for s in steps):
        return False  # under fit, waits are settled later: unknown
    total = sum(s.duration_s for s in steps)
    waited = sum(s.input_wait_s or 0.0 for s in steps)
    return bool(total > 0 and waited / total < DEEP_MIN_COST)


def _cache_ends_each_epoch(chain: str) -> bool:
    """A `cache()` whose stream ends each epoch (no `repeat()` after it), so a later epoch
    reads the filled cache on a new iterator. `chain` is outermost first."""
    stages = chain.split(" <- ")
    if "Cache" not in stages:
        return False
    return "Repeat" not in stages[: stages.index("Cache")]


def _module_version(name: str) -> str | None:
    module = sys.modules.get(name)
    return getattr(module, "__version__", None) if module is not None else None
