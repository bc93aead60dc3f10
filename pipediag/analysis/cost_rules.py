"""Advice on the dominant part of input cost, why no fix where none applies, and the host's
and GPU's rules (docs/design.md, "The advisor")."""

from __future__ import annotations

from dataclasses import replace

from pipediag.analysis.advice_context import Context, share_fix
from pipediag.analysis.gpu_causes import CAUSE_FIX_CODE
from pipediag.analysis.input_cost import step_cores_of
from pipediag.analysis.prescription_rules import stage_bound
from pipediag.analysis.run_terms import gain_in_run_terms
from pipediag.report.fixes import FIX_THREAD_CAP
from pipediag.report.model import CostSplit, Gain, Suggestion
from pipediag.report.model_side import ModelTrial
from pipediag.report.reasons import Reason
from pipediag.report.stage_facts import VERIFIED_MIN_GAIN
from pipediag.report.trials import FixTrial
from pipediag.report.vocabulary import CostPart, RuleId

CONTENTION_RULE: RuleId = "PD012-input-contention"
FETCH_RULE: RuleId = "PD013-per-pull-overhead"
SATURATED_RULE: RuleId = "PD010-cpu-saturated"


def _led_by(ctx: Context, part: CostPart) -> CostSplit | None:
    split = ctx.report.verdict.cost_split
    return split if split is not None and split.dominant == part else None


def capped_threads(cores: int, step_cores: float | None) -> int:
    return max(1, cores // 2) if step_cores is None else max(1, round(cores - step_cores))


def thread_cap_trial(ctx: Context) -> FixTrial | None:
    return ctx.trial(FIX_THREAD_CAP, None)


def check_contention(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    if (split := _led_by(ctx, "contention")) is None:
        return []
    if split.contention_kind == "gil":
        # A cap on tf.data's threads does not release the interpreter lock.
        return [share_fix(rule_id, _GIL_CODE, split.contention)]
    threads = capped_threads(ctx.cores, step_cores_of(ctx.report.compute_alone))
    cap = thread_cap_trial(ctx)
    measured, interval = gain_in_run_terms(ctx.report, cap.training if cap is not None else None)
    cap_code = (
        "options = tf.data.Options()\n"
        f"options.threading.private_threadpool_size = {threads}  # step keeps the rest\n"
        "ds = ds.with_options(options)\n"
    )
    cut = "# and cut its CPU per batch: ds.batch(n).map(f_on_batches), ds.map(decode).cache()"
    fix = share_fix(rule_id, cap_code + cut, split.contention)
    if measured is not None and measured >= VERIFIED_MIN_GAIN:
        # `fix`: the cap's trial is said here, not again as a measured rewrite.
        return [replace(fix, gain=Gain("training", measured, interval), fix=FIX_THREAD_CAP)]
    if measured is not None:
        # The one change this rule makes did not help training: where the pipeline's CPU
        # goes is a note, with no code to paste (docs/design.md, "The advisor").
        fix = replace(fix, kind="note", code="")
    # The cap is not the way: the costliest stage is, with what its hold gave training.
    if (costly := next((st for st in ctx.stages if st.bottleneck), None)) is None:
        return [fix]
    # `stage_index`, not `stage`: one contention fix to compare across runs.
    fix = replace(fix, stage_index=costly.index)
    # The most it gives: its hold, or T/A where the hold read above it (the host's noise)
    if (bound := stage_bound(ctx, costly)) is None or bound.speedup < VERIFIED_MIN_GAIN:
        return [fix]
    return [replace(fix, gain=bound.gain)]


_GIL_CODE = (
    "ds = ds.map(tf_ops_fn, num_parallel_calls=tf.data.AUTOTUNE)  # no py_function\n"
    "# or run the Python once: ds.save(path); later tf.data.Dataset.load(path)"
)


def check_epoch_start(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    """Keras 3 keeps its iterator across epochs when `steps_per_epoch` is set."""
    if (split := _led_by(ctx, "epoch-start")) is None or split.epoch_steps is None:
        return []
    steps = split.epoch_steps
    code = (
        f"model.fit(ds.repeat(), epochs=epochs, steps_per_epoch={steps})  # one iterator"
        if ctx.report.train.style == "keras-fit"
        else (
            "iterator = iter(ds.repeat())  # made once, for every epoch\n"
            "for epoch in range(epochs):\n"
            f"    for _ in range({steps}):\n"
            "        train_step(*next(iterator))"
        )
    )
    return [share_fix(rule_id, code, split.epoch_start)]


def multi_step_trial(ctx: Context) -> ModelTrial | None:
    """`steps_per_execution` measured on fit's train step alone, where it was."""
    alone = ctx.report.compute_alone
    trials = alone.trials if alone is not None else []
    return next((t for t in trials if t.change == "steps_per_execution" and t.speedup), None)


def check_fetch(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    if (split := _led_by(ctx, "fetch")) is None:
        return []
    fit = ctx.report.train.style == "keras-fit"
    tried = multi_step_trial(ctx) if fit else None
    if tried is not None and (tried.speedup or 0.0) < VERIFIED_MIN_GAIN:
        # The rule's change, tried on the step alone, did not help: a note, no code.
        return [Suggestion(id=rule_id, kind="note")]
    steps = tried.setting if tried is not None else "32"
    code = (
        f"model.compile(..., steps_per_execution={steps})  # {steps} steps per call"
        if fit
        else (
            "@tf.function\n"
            "def train_many(iterator, steps):\n"
            "    for _ in tf.range(steps):\n"
            "        train_step(*next(iterator))  # the pull runs inside the graph\n"
            "iterator = iter(ds)\n"
            "train_many(iterator, tf.constant(100))"
        )
    )
    fix = share_fix(rule_id, code, split.fetch)
    if tried is None:
        return [fix]
    return [replace(fix, gain=Gain("step-alone", tried.speedup, tried.interval))]


def why_no_input_fix(ctx: Context, found: list[Suggestion]) -> list[Suggestion]:
    verdict = ctx.report.verdict
    if verdict.label == "compute-bound" or verdict.input_cost_fraction is None:
        return []
    # A cost rule's note already says its one change did not help, or that no more threads can.
    if any(s.kind == "fix" or s.id in (CONTENTION_RULE, FETCH_RULE, SATURATED_RULE) for s in found):
        return []
    pipeline = ctx.report.pipeline
    reason: Reason | None = None
    if pipeline.deep_skipped_reason:
        reason = pipeline.deep_skipped_reason
    elif not pipeline.measured:
        reason = Reason("pipeline-not-read", because=pipeline.reason)
    return [Suggestion(id="PD014-no-input-fix", kind="note", reason=reason)]


def check_cpu_saturated(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    # A note: more threads cannot help, and moving the work is not a line of code to paste.
    if not ctx.saturated or ctx.cpu_busy_pct is None:
        return []
    return [Suggestion(id=rule_id, kind="note")]


def check_gpu_idle_cause(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    """HTA's idle categories other than input wait (host overhead, transfer)."""
    analysis = ctx.report.gpu_analysis
    if analysis is None or not analysis.available or analysis.attribution is None:
        return []
    attribution = analysis.attribution
    if (cause := attribution.dominant) not in CAUSE_FIX_CODE or attribution.idle_s <= 0:
        return []
    # Removing that idle time at best: busy share / (busy share + the rest of the idle time).
    removed = None
    if analysis.gpu_busy_fraction and attribution.window_s > 0:
        removed = attribution.idle_s / attribution.window_s * attribution.share_of(cause)
    tried = multi_step_trial(ctx)  # one size for one setting: the one measured, if any
    code = CAUSE_FIX_CODE[cause].format(steps=tried.setting if tried is not None else 32)
    return [share_fix(rule_id, code, removed)]


def check_pipeline_fine(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    return [Suggestion(id=rule_id, kind="note")]
