"""What every advisor rule reads and writes with: the context derived once from the report,
the thresholds, the end-to-end prediction, and how a fix suggestion is put together."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pipediag.analysis.input_cost import samples_during
from pipediag.analysis.run_terms import gain_in_run_terms
from pipediag.report.model import Gain, PipelineOptions, Report, Suggestion, timed_steps
from pipediag.report.names import stage_name
from pipediag.report.reasons import Reason
from pipediag.report.stage_facts import (
    STAGE_MIN_SHARE,
    VERIFIED_MIN_GAIN,
    if_free_bound,
    if_free_clearly_under,
)
from pipediag.report.stages import StageStats
from pipediag.report.trials import FixTrial
from pipediag.report.vocabulary import FixName, RuleId, SuggestionKind, TrialOutcome

# The GIL bounds a py_function map run in parallel (docs/design.md, "tf.data behaviours").
PY_FUNCTION_PARALLEL_GAIN = 1.5
# On this many cores or fewer, this share of the ideal gain (docs/design.md, "The advisor").
FEW_CORES = 4
FEW_CORES_GAIN_SHARE = 0.3
# Not measured: assumed half-way to the ideal gain.
MANY_CORES_GAIN_SHARE = 0.6
# Mean per-core busy % over the measured steps that saturates the CPU (the usual ">90% busy").
CPU_SATURATED_PCT = 90.0
# A shuffle buffer under 10 batches' worth, or 1000 elements, is flagged.
SHUFFLE_MIN_BATCHES = 10
SHUFFLE_MIN_ELEMENTS = 1000


@dataclass(frozen=True)
class Context:
    report: Report
    stages: list[StageStats]
    options: PipelineOptions  # TF's defaults where they were not read
    trials: dict[tuple[str, int | None], FixTrial]
    pipeline_rate: float | None  # pipeline alone, batches/s
    train_rate: float | None  # measured full train, steps/s
    compute_rate: float | None  # train step alone, steps/s
    cores: int
    cpu_busy_pct: float | None
    saturated: bool

    @property
    def time_per_batch_s(self) -> float | None:
        return 1.0 / self.pipeline_rate if self.pipeline_rate else None

    def share(self, seconds: float | None) -> float | None:
        total = self.time_per_batch_s
        return seconds / total if seconds is not None and total else None

    def trial(self, fix: FixName, stage_index: int | None) -> FixTrial | None:
        return self.trials.get((fix, stage_index))


@dataclass(frozen=True)
class Rule:
    """One check. `when`: "input" runs only when input may limit training (not compute-bound),
    "compute-bound" only then, "always" whatever the verdict (correctness)."""

    id: RuleId
    when: Literal["input", "compute-bound", "always"]
    check: Callable[[Context, RuleId], list[Suggestion]]


def build_context(report: Report) -> Context:
    pipeline = report.pipeline
    options = pipeline.options if pipeline.options is not None else PipelineOptions()
    cores = options.cpu_count or report.host.cpu_count or report.environment.cpu_count
    busy = cpu_busy_pct(report)
    return Context(
        report=report,
        stages=list(pipeline.stages),
        options=options,
        trials={(t.fix, t.stage_index): t for t in pipeline.trials},
        pipeline_rate=pipeline.batches_per_s,
        train_rate=report.train.steps_per_s,
        compute_rate=report.verdict.compute_alone_steps_per_s,
        cores=max(1, cores or 1),
        cpu_busy_pct=busy,
        saturated=busy is not None and busy >= CPU_SATURATED_PCT,
    )


def cpu_busy_pct(report: Report) -> float | None:
    """Mean per-core busy % over the measured train steps (all samples if none are timed)."""
    if not (samples := [s for s in report.host.samples if s.per_core_pct]):
        return None
    if timed := timed_steps(report.train.steps):
        samples = samples_during(samples, timed) or samples
    means = [sum(s.per_core_pct) / len(s.per_core_pct) for s in samples]
    return sum(means) / len(means)


def predict_end_to_end(
    ctx: Context, pipeline_speedup: float | None, *, adds_threads: bool
) -> float | None:
    """DS-Analyzer: new rate = min(compute alone, fixed pipeline), over the measured rate,
    discounted for shared cores; 1.0 when the CPU is saturated and the fix only adds threads."""
    if pipeline_speedup is None or not (ctx.pipeline_rate and ctx.train_rate and ctx.compute_rate):
        return None
    if adds_threads and ctx.saturated:
        return 1.0
    ideal = min(ctx.compute_rate, ctx.pipeline_rate * pipeline_speedup) / ctx.train_rate
    if ideal <= 1.0:
        return 1.0
    share = FEW_CORES_GAIN_SHARE if ctx.cores <= FEW_CORES else MANY_CORES_GAIN_SHARE
    return 1.0 + (ideal - 1.0) * share


def parallel_estimate(ctx: Context, own_s: float | None, parallelism: float) -> float | None:
    total = ctx.time_per_batch_s
    if own_s is None or not total or parallelism <= 1:
        return None
    # Prefix rates keep some per-element Python cost: an own cost can exceed the pipeline's.
    own_s = min(own_s, total)
    fixed = total - own_s + own_s / parallelism
    return total / fixed if fixed > 0 else None


def not_verified(trial: FixTrial | None) -> Reason | None:
    if trial is None:
        return Reason("no-whatif-run")
    return None if trial.verified and trial.speedup is not None else trial.reason


def verified_gain(trial: FixTrial | None) -> float | None:
    return trial.speedup if trial is not None and trial.verified else None


def verified_to_gain(trial: FixTrial | None) -> bool:
    speedup = verified_gain(trial)
    return speedup is not None and speedup >= VERIFIED_MIN_GAIN


def share_fix(rule_id: RuleId, code: str, share: float | None) -> Suggestion:
    """A fix that removes `share` of training time: at best 1 / (1 - share) as fast."""
    estimate = None if share is None else 1.0 / max(1e-9, 1.0 - share)
    return Suggestion(id=rule_id, code=code, estimate=estimate, kind="fix")


def fix_suggestion(
    ctx: Context,
    rule_id: RuleId,
    stats: StageStats | None,
    code: str,
    estimated: float | None = None,
    *,
    trial: FixTrial | None,
    adds_threads: bool,
    measured_gate: bool = True,
) -> Suggestion:
    """A stage rule's fix at `stats` (None: the whole pipeline). Measured on training beats on the
    pipeline alone (where a prefetch shows nothing and a parallel map may gain yet take the step's
    cores), which beats `estimated`: the pipeline speedup guessed without running anything."""
    verified = verified_gain(trial)
    basis = verified if verified is not None else estimated
    predicted = predict_end_to_end(ctx, basis, adds_threads=adds_threads)
    training = trial.training if trial is not None else None
    on_training, interval = gain_in_run_terms(ctx.report, training)
    verified_alone = verified  # what orders the fix after the prediction, unless ruled out
    kind: SuggestionKind = "fix"
    outcome: TrialOutcome | None = None
    not_on_training: Reason | None = None
    if on_training is not None:
        assert training is not None
        outcome, high = "on-training", training.training_speedup_high
        if high is not None and high >= VERIFIED_MIN_GAIN and on_training < VERIFIED_MIN_GAIN:
            # The rounds could not tell (a busy host): neither a gain nor a loss is shown.
            outcome, on_training = "unclear-on-training", None
        elif on_training < VERIFIED_MIN_GAIN:
            kind, outcome = "note", "under-worth-it-on-training"
    elif trial is not None and trial.facts.covered_by_cache:
        # A cache the search kept covers the stage: the fix changes epoch 1 only; nothing forecast.
        kind, predicted, estimated, verified_alone = "note", None, None, None
        outcome, not_on_training = "covered-by-cache", trial.training_reason
    elif measured_gate and verified is not None and verified < VERIFIED_MIN_GAIN:
        # Measured not to help: no end-to-end forecast, which could read as a gain.
        kind, predicted, outcome = "note", 1.0, "under-worth-it-alone"
    else:
        # The prediction itself is never said: it only orders the fixes nothing measured.
        if ctx.saturated and predicted == 1.0:
            outcome = "saturated"
        if trial is not None and trial.training_reason:
            not_on_training = trial.training_reason
    if on_training is not None:
        measured = Gain("training", on_training, interval)
    elif verified is not None:
        measured = Gain("pipeline-alone", verified)
    else:
        measured = Gain()
    return Suggestion(
        id=rule_id,
        stage=stage_name(stats) if stats is not None else None,
        stage_index=stats.index if stats is not None else None,
        code=code,
        gain=measured,
        estimate=next((e for e in (predicted, verified_alone, estimated) if e is not None), None),
        kind=kind,
        fix=trial.fix if trial is not None else None,
        outcome=outcome,
        not_on_training=not_on_training,
        not_verified=not_verified(trial),
    )


def worth_fixing(ctx: Context, stats: StageStats) -> bool:
    """Not where holding it (or the nearest held stage after it) clearly gained training
    under 1.05x, since no change to it can gain more; else where its share is material."""
    bound = if_free_bound(ctx.stages, stats.index)
    if bound is not None and if_free_clearly_under(bound):
        return False
    share = ctx.share(stats.own_s_per_batch)
    return share is None or share >= STAGE_MIN_SHARE


def fn_name(stats: StageStats) -> str:
    """A lambda gets a placeholder."""
    name = stats.function
    return name if name and all(p.isidentifier() for p in name.split(".")) else "fn"
