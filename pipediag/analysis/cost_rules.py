"""Advice that follows the part of input cost that dominates, with T/A for the part removed
as its (upper-bound) gain, and why no fix where none applies (docs/design.md, "The advisor")."""

from __future__ import annotations

from dataclasses import replace

from pipediag.analysis.advice_context import (
    Context,
    share_fix,
    stage_at,
    stage_cost_text,
    training_text,
)
from pipediag.analysis.input_cost import python_stages, step_cores_of
from pipediag.analysis.prescription_rules import stage_bound
from pipediag.analysis.run_terms import trial_in_run_terms
from pipediag.report.fixes import FIX_THREAD_CAP
from pipediag.report.model import CostSplit, Gain, Suggestion
from pipediag.report.names import fix_words_at, stage_name
from pipediag.report.reasons import Reason
from pipediag.report.stage_facts import VERIFIED_MIN_GAIN
from pipediag.report.vocabulary import CostPart


def _led_by(ctx: Context, part: CostPart) -> CostSplit | None:
    split = ctx.report.verdict.cost_split
    return split if split is not None and split.dominant == part else None


def _rates_text(ctx: Context) -> str:
    verdict = ctx.report.verdict
    train, compute = verdict.training_steps_per_s, verdict.compute_alone_steps_per_s
    if train is None or compute is None:
        return ""
    return (
        f"training ran {train:.1f} steps/s, the train step alone on a cached batch "
        f"{compute:.1f} steps/s"
    )


def capped_threads(cores: int, step_cores: float | None) -> int:
    if step_cores is None:
        return max(1, cores // 2)
    return max(1, round(cores - step_cores))


def check_contention(ctx: Context, rule_id: str) -> list[Suggestion]:
    split = _led_by(ctx, "contention")
    if split is None:
        return []
    if split.contention_kind == "gil":
        return _gil_contention(ctx, rule_id, split)
    evidence = [_contention_text(ctx, split)]
    if split.pipeline_cores_busy is not None:
        busy = f"the pipeline kept {split.pipeline_cores_busy:.1f} more cores busy while training"
        if split.free_cores is not None:
            busy += f", leaving {split.free_cores:.1f} of {ctx.cores} free"
        evidence.append(busy)
    cost = ctx.report.pipeline.cpu_s_per_batch
    rate = ctx.pipeline_rate
    if cost is not None and rate:
        evidence.append(f"read alone it keeps {cost * rate:.1f} cores busy")
    needs = step_cores_of(ctx.report.compute_alone)
    threads = capped_threads(ctx.cores, needs)
    if needs is not None:
        evidence.append(f"the train step alone uses {needs:.1f} of {ctx.cores} cores")
    text = "; ".join(e for e in evidence if e)
    text += (
        ". The pipeline must cost fewer cores per batch: vectorise its maps (map after batch), "
        "cache after the deterministic decode, use cheaper ops, cap its threads so the step "
        "keeps the cores it needs, or move the preprocessing to other machines "
        "(tf.data service)."
    )
    cap = ctx.trial(FIX_THREAD_CAP, None)  # tried on training
    measured, interval = trial_in_run_terms(ctx.report, cap) if cap is not None else (None, None)
    cap_code = (
        "options = tf.data.Options()\n"
        f"options.threading.private_threadpool_size = {threads}  # step keeps the rest\n"
        "ds = ds.with_options(options)\n"
    )
    if cap is not None and measured is not None:
        capped = threads if cap.facts.threads is None else cap.facts.threads
        text += f" Capped at {capped} thread{'s' if capped != 1 else ''}:" + training_text(ctx, cap)
        if measured < VERIFIED_MIN_GAIN:
            text += " Not the way here: the pipeline's CPU per batch must go down."
            cap_code = ""
    code = (
        cap_code
        + "# and cut its CPU per batch: ds.batch(n).map(f_on_batches), ds.map(decode).cache()"
    )
    title = "the input pipeline takes the cores the train step needs: make it cheaper"
    if measured is not None and measured >= VERIFIED_MIN_GAIN:
        fix = share_fix(rule_id, title, text, code, split.contention)
        return [replace(fix, gain=Gain("training", measured, interval))]
    # The cap is not the way: the costliest stage is, with what its hold gave training.
    costly = next((st for st in ctx.stages if st.bottleneck), None)
    if costly is None:
        return [share_fix(rule_id, title, text, code, split.contention)]
    text += f" Make it cheaper where it costs: {stage_cost_text(ctx, costly)}"
    if costly.random:
        text += " It draws random numbers, so a cache would repeat them every epoch."
    fix = replace(
        share_fix(rule_id, f"make {stage_at(costly)} cheaper", text, code, split.contention),
        stage_index=costly.index,  # not `stage`: one contention fix to compare across runs
    )
    # The most it gives: its hold, or T/A where the hold read above it (the host's noise)
    bound = stage_bound(ctx, costly)
    if bound is None or bound.speedup < VERIFIED_MIN_GAIN:
        return [fix]
    most, what, basis = bound
    if basis == "held":
        text += f" {what.capitalize()} ran training {most:.2f}x faster: the most it gives."
    else:
        text += f" With input free, training would run {most:.2f}x faster: the most it gives."
    return [replace(fix, evidence=text, gain=bound.gain)]


def _contention_text(ctx: Context, split: CostSplit) -> str:
    wait = ctx.report.verdict.input_wait_fraction or 0.0
    return (
        f"{_rates_text(ctx)}: input costs {split.contention:.0%} of training time through "
        f"contention, yet the step waited only {wait:.0%} of the time"
    )


def _gil_contention(ctx: Context, rule_id: str, split: CostSplit) -> list[Suggestion]:
    """A cap on tf.data's threads does not release the interpreter lock."""
    python = ", ".join(stage_name(s) for s in python_stages(ctx.stages)) or "its functions"
    free = "cores"
    if split.free_cores is not None:
        free = f"{split.free_cores:.1f} of {ctx.cores} cores"
    evidence = (
        f"{_contention_text(ctx, split)} and {free} were free while training. The pipeline "
        f"runs Python ({python}), which holds the interpreter lock the train step's own Python "
        "needs. Take the Python out of the pipeline: port the function to TensorFlow ops, or "
        "run it once and write its output to files the pipeline reads."
    )
    code = (
        "ds = ds.map(tf_ops_fn, num_parallel_calls=tf.data.AUTOTUNE)  # no py_function\n"
        "# or run the Python once: ds.save(path); later tf.data.Dataset.load(path)"
    )
    title = "the input pipeline's Python holds the interpreter lock the train step needs"
    return [share_fix(rule_id, title, evidence, code, split.contention)]


def check_epoch_start(ctx: Context, rule_id: str) -> list[Suggestion]:
    """Keras 3 keeps its iterator across epochs when `steps_per_epoch` is set."""
    split = _led_by(ctx, "epoch-start")
    if split is None or split.epoch_steps is None:
        return []
    start = split.epoch_start_s or 0.0
    likely = f" ({split.epoch_start_stage} likely makes it)" if split.epoch_start_stage else ""
    evidence = (
        f"Each epoch starts {start:.2f} s late{likely}: {split.epoch_start:.0%} of an epoch "
        f"of {split.epoch_steps:,} steps, where a new iterator is made and the last one "
        "dropped. Make the dataset repeat and give the epoch's length, so that one iterator "
        "serves every epoch."
    )
    if any(s.kind == "shuffle" for s in ctx.stages):
        evidence += " A shuffle before the repeat still refills its buffer each epoch."
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
    title = "each epoch makes a new iterator: one repeating iterator for the whole run"
    return [share_fix(rule_id, title, evidence, code, split.epoch_start)]


def check_fetch(ctx: Context, rule_id: str) -> list[Suggestion]:
    split = _led_by(ctx, "fetch")
    if split is None:
        return []
    pull = f"{split.pull_s * 1e3:.2f} ms" if split.pull_s is not None else "a fixed cost"
    faster = (
        f"{ctx.pipeline_rate / ctx.train_rate:.0f}x"
        if ctx.pipeline_rate and ctx.train_rate
        else "far"
    )
    evidence = (
        f"{_rates_text(ctx)}; the pipeline alone is {faster} faster than training, so no "
        f"step waited on its work, yet pulling each batch costs about {pull}: "
        f"{split.fetch:.0%} of training time. Pull fewer, larger batches: raise the batch "
        "size, or run several steps per Python call."
    )
    code = (
        "model.compile(..., steps_per_execution=32)  # 32 steps per call of the train function"
        if ctx.report.train.style == "keras-fit"
        else (
            "@tf.function\n"
            "def train_many(iterator, steps):\n"
            "    for _ in tf.range(steps):\n"
            "        train_step(*next(iterator))  # the pull runs inside the graph\n"
            "iterator = iter(ds)\n"
            "train_many(iterator, tf.constant(100))"
        )
    )
    title = "each step pulls one small batch: fewer, larger pulls"
    return [share_fix(rule_id, title, evidence, code, split.fetch)]


def why_no_input_fix(ctx: Context, found: list[Suggestion]) -> list[Suggestion]:
    verdict = ctx.report.verdict
    if verdict.label == "compute-bound" or verdict.input_cost_fraction is None:
        return []
    if any(s.kind == "fix" for s in found):
        return []
    pipeline = ctx.report.pipeline
    reason: Reason | None = None
    why = ""
    if pipeline.deep_skipped_reason:
        reason = pipeline.deep_skipped_reason
    elif not pipeline.measured:
        reason = Reason("pipeline-not-read", because=pipeline.reason)
    elif not pipeline.stages:
        why = "the pipeline's stages were not timed (--no-stages)"
    elif pipeline.prescription is not None and pipeline.prescription.tried:
        tried = "; ".join(
            f"{fix_words_at(c.fix, c.stage)} "
            + (f"{c.training_speedup:.2f}x" if c.training_speedup is not None else "unmeasured")
            for c in pipeline.prescription.tried
        )
        why = (
            f"every rewrite that applies was tried on your training, none clearly helped ({tried})"
        )
    else:
        worst = max(
            (s for s in pipeline.stages if s.own_s_per_batch is not None),
            key=lambda s: s.own_s_per_batch or 0.0,
            default=None,
        )
        why = "no stage adds enough of the time per batch for a stage fix to gain over noise"
        if worst is not None and worst.own_s_per_batch is not None:
            why += (
                f" (the costliest, {stage_name(worst)}, adds "
                f"{worst.own_s_per_batch * 1e3:.1f} ms per batch)"
            )
    return [
        Suggestion(
            id="PD014-no-input-fix",
            title=(
                f"input costs {verdict.input_cost_fraction:.0%}, but no input-side change applies"
            ),
            evidence=why + "." if why else "",
            kind="note",
            reason=reason,
        )
    ]
