"""A suggestion's title and evidence, worded by its rule; an older report's as written."""

from __future__ import annotations

from collections.abc import Callable

from pipediag.analysis.advice_context import CPU_SATURATED_PCT, Context, build_context
from pipediag.analysis.cost_rules import capped_threads, multi_step_trial, thread_cap_trial
from pipediag.analysis.input_cost import python_stages, step_cores_of
from pipediag.analysis.prescription_rules import stage_bound
from pipediag.analysis.run_terms import gain_in_run_terms
from pipediag.renderers.numbers import counted, ms
from pipediag.renderers.stage_advice_words import (
    STAGE_WORDINGS,
    bound_words,
    stage_at,
    stage_cost_text,
    stage_of,
    training_text,
    trial_of,
)
from pipediag.report.fixes import fix_words
from pipediag.report.model import CostSplit, Report, Suggestion, SuggestionWords
from pipediag.report.names import fix_words_at, stage_name
from pipediag.report.stage_facts import VERIFIED_MIN_GAIN
from pipediag.report.vocabulary import GpuIdleCause, RuleId


def suggestion_words(suggestion: Suggestion, report: Report) -> SuggestionWords:
    if suggestion.as_written is not None:
        return suggestion.as_written
    if (wording := _WORDINGS.get(suggestion.id)) is None:
        return SuggestionWords(suggestion.id)
    try:
        return wording(_context_of(report), suggestion)
    except Exception:  # a report whose facts its rule cannot word: the rule's id, not no file
        return SuggestionWords(suggestion.id)


# The last report's context: a page words each suggestion often, and a context reads every sample.
_last_context: tuple[Report, Context] | None = None


def _context_of(report: Report) -> Context:
    global _last_context
    if _last_context is None or _last_context[0] is not report:
        _last_context = (report, build_context(report))
    return _last_context[1]


def title_of(suggestion: Suggestion, report: Report) -> str:
    return suggestion_words(suggestion, report).title


def _rates_text(ctx: Context) -> str:
    verdict = ctx.report.verdict
    train, compute = verdict.training_steps_per_s, verdict.compute_alone_steps_per_s
    if train is None or compute is None:
        return ""
    return (
        f"training ran {train:.1f} steps/s, the train step alone on a cached batch "
        f"{compute:.1f} steps/s"
    )


def _split(ctx: Context) -> CostSplit:
    split = ctx.report.verdict.cost_split
    assert split is not None
    return split


def _contention_text(ctx: Context, split: CostSplit) -> str:
    wait = ctx.report.verdict.input_wait_fraction or 0.0
    return (
        f"{_rates_text(ctx)}: input costs {split.contention:.0%} of training time through "
        f"contention, yet the step waited only {wait:.0%} of the time"
    )


def _contention(ctx: Context, s: Suggestion) -> SuggestionWords:
    split = _split(ctx)
    if split.contention_kind == "gil":
        return _gil_contention(ctx, split)
    evidence = [_contention_text(ctx, split)]
    if split.pipeline_cores_busy is not None:
        busy = f"the pipeline kept {split.pipeline_cores_busy:.1f} more cores busy while training"
        if split.free_cores is not None:
            busy += f", leaving {split.free_cores:.1f} of {ctx.cores} free"
        evidence.append(busy)
    if (cost := ctx.report.pipeline.cpu_s_per_batch) is not None and ctx.pipeline_rate:
        evidence.append(f"read alone it keeps {cost * ctx.pipeline_rate:.1f} cores busy")
    if (needs := step_cores_of(ctx.report.compute_alone)) is not None:
        evidence.append(f"the train step alone uses {needs:.1f} of {ctx.cores} cores")
    text = "; ".join(e for e in evidence if e)
    text += (
        ". The pipeline must cost fewer cores per batch: vectorise its maps (map after batch), "
        "cache after the deterministic decode, use cheaper ops, cap its threads so the step "
        "keeps the cores it needs, or move the preprocessing to other machines "
        "(tf.data service)."
    )
    cap = thread_cap_trial(ctx)
    measured = gain_in_run_terms(ctx.report, cap.training if cap is not None else None)[0]
    if cap is not None and measured is not None:
        threads = capped_threads(ctx.cores, needs)
        capped = threads if cap.facts.threads is None else cap.facts.threads
        text += f" Capped at {counted(capped, 'thread')}:" + training_text(ctx, cap)
        if measured < VERIFIED_MIN_GAIN:
            text += " Not the way here: the pipeline's CPU per batch must go down."
    if s.stage_index is None:
        title = "the input pipeline takes the cores the train step needs: make it cheaper"
        return SuggestionWords(title, text.strip())
    # The cap is not the way: the costliest stage is, with what its hold gave training.
    costly = stage_of(ctx, s)
    text += f" Make it cheaper where it costs: {stage_cost_text(ctx, costly)}"
    if costly.random:
        text += " It draws random numbers, so a cache would repeat them every epoch."
    if (bound := stage_bound(ctx, costly)) is not None and bound.speedup >= VERIFIED_MIN_GAIN:
        ran = "With input free, training would run"
        if bound.held is not None:
            ran = f"{bound_words(bound).capitalize()} ran training"
        text += f" {ran} {bound.speedup:.2f}x faster: the most it gives."
    return SuggestionWords(f"make {stage_at(costly)} cheaper", text.strip())


def _gil_contention(ctx: Context, split: CostSplit) -> SuggestionWords:
    python = ", ".join(stage_name(s) for s in python_stages(ctx.stages)) or "its functions"
    free = "cores" if split.free_cores is None else f"{split.free_cores:.1f} of {ctx.cores} cores"
    evidence = (
        f"{_contention_text(ctx, split)} and {free} were free while training. The pipeline "
        f"runs Python ({python}), which holds the interpreter lock the train step's own Python "
        "needs. Take the Python out of the pipeline: port the function to TensorFlow ops, or "
        "run it once and write its output to files the pipeline reads."
    )
    title = "the input pipeline's Python holds the interpreter lock the train step needs"
    return SuggestionWords(title, evidence)


def _epoch_start(ctx: Context, s: Suggestion) -> SuggestionWords:
    split = _split(ctx)
    start = split.epoch_start_s or 0.0
    likely = f" ({split.epoch_start_stage} likely makes it)" if split.epoch_start_stage else ""
    evidence = (
        f"Each epoch starts {start:.2f} s late{likely}: {split.epoch_start:.0%} of an epoch "
        f"of {split.epoch_steps:,} steps, where a new iterator is made and the last one "
        "dropped. Make the dataset repeat and give the epoch's length, so that one iterator "
        "serves every epoch."
    )
    if any(st.kind == "shuffle" for st in ctx.stages):
        evidence += " A shuffle before the repeat still refills its buffer each epoch."
    title = "each epoch makes a new iterator: one repeating iterator for the whole run"
    return SuggestionWords(title, evidence)


def _fetch(ctx: Context, s: Suggestion) -> SuggestionWords:
    split = _split(ctx)
    pull = f"{split.pull_s * 1e3:.2f} ms" if split.pull_s is not None else "a fixed cost"
    faster = "far"
    if ctx.pipeline_rate and ctx.train_rate:
        faster = f"{ctx.pipeline_rate / ctx.train_rate:.0f}x"
    evidence = (
        f"{_rates_text(ctx)}; the pipeline alone is {faster} faster than training, so no "
        f"step waited on its work, yet pulling each batch costs about {pull}: "
        f"{split.fetch:.0%} of training time. Pull fewer, larger batches: raise the batch "
        "size, or run several steps per Python call."
    )
    tried = multi_step_trial(ctx) if ctx.report.train.style == "keras-fit" else None
    if tried is not None:
        # Its figure is said once: the fix's gain, or the model-side section's note.
        evidence += (
            f" steps_per_execution={tried.setting} was tried on the train step alone, the "
            "pulls of a call made inside it"
            + (": it did not help, not the way here." if s.kind == "note" else ".")
        )
    return SuggestionWords("each step pulls one small batch: fewer, larger pulls", evidence)


def _no_input_fix(ctx: Context, s: Suggestion) -> SuggestionWords:
    cost = ctx.report.verdict.input_cost_fraction
    title = f"input costs {cost:.0%}, but no input-side change applies"
    if s.reason is not None:
        return SuggestionWords(title)
    pipeline = ctx.report.pipeline
    if not pipeline.stages:
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
        timed = [st for st in pipeline.stages if st.own_s_per_batch is not None]
        worst = max(timed, key=lambda st: st.own_s_per_batch or 0.0, default=None)
        why = "no stage adds enough of the time per batch for a stage fix to gain over noise"
        if worst is not None and worst.own_s_per_batch is not None:
            why += (
                f" (the costliest, {stage_name(worst)}, adds {ms(worst.own_s_per_batch)} per batch)"
            )
    return SuggestionWords(title, why + ".")


def _cpu_saturated(ctx: Context, s: Suggestion) -> SuggestionWords:
    wait = ctx.report.verdict.input_wait_fraction
    wait_text = f"{wait:.0%} of step time waits for input while " if wait is not None else ""
    evidence = (
        f"{wait_text}all {ctx.cores} cores are {ctx.cpu_busy_pct:.0f}% busy on average "
        f"during the measured steps (>= {CPU_SATURATED_PCT:.0f}%)"
        f"{_other_processes_text(ctx)}. More parallel calls only add threads to busy cores; "
        "the input work itself must shrink or move: computed once and stored (TFRecord "
        "files), into the model (Keras preprocessing layers, on the accelerator), or onto "
        "other machines (tf.data service)."
    )
    return SuggestionWords("the host CPU is saturated: more parallel calls cannot help", evidence)


def _other_processes_text(ctx: Context) -> str:
    contention = ctx.report.host_contention
    if contention is None or not contention.contended or contention.other_cpu_pct_mean is None:
        return ""
    return (
        f", {contention.other_cpu_pct_mean:.0f}% of the machine by other processes: "
        "free the machine first"
    )


_IDLE_CAUSE_TITLES: dict[GpuIdleCause, str] = {
    "host-overhead": "the GPU idles on host-side overhead: fewer, larger steps",
    "transfer": "the GPU idles on host-to-device copies: overlap them with compute",
}


def _gpu_idle_cause(ctx: Context, s: Suggestion) -> SuggestionWords:
    analysis = ctx.report.gpu_analysis
    assert analysis is not None and analysis.attribution is not None
    attribution = analysis.attribution
    cause = attribution.dominant
    assert cause in _IDLE_CAUSE_TITLES
    seconds, share = attribution.seconds_of(cause), attribution.share_of(cause)
    busy = analysis.gpu_busy_fraction
    evidence = (
        f"The GPU was busy {busy:.0%} of the measured time; {share:.0%} of its idle time "
        f"({seconds:.2f} s) was {cause.replace('-', ' ')}, not waiting for input."
        if busy is not None
        else f"{share:.0%} of the GPU's idle time was {cause.replace('-', ' ')}."
    )
    return SuggestionWords(_IDLE_CAUSE_TITLES[cause], evidence)


def _pipeline_fine(ctx: Context, s: Suggestion) -> SuggestionWords:
    verdict, parts = ctx.report.verdict, []
    if ctx.pipeline_rate:
        parts.append(f"the pipeline alone delivers {ctx.pipeline_rate:.1f} batches/s")
    if ctx.compute_rate:
        parts.append(f"the train step alone runs {ctx.compute_rate:.1f} steps/s")
    headroom = verdict.pipeline_headroom
    title = "the input pipeline is fine: the model sets the rate"
    if headroom is not None:
        title += f" (pipeline headroom {headroom:.1f}x)"
    wait = verdict.input_wait_fraction
    evidence = f"{wait:.0%} of step time waits for input" if wait is not None else ""
    if parts:
        evidence += ("; " if evidence else "") + " and ".join(parts)
    return SuggestionWords(
        title, (evidence + ". Input fixes would not speed up training.").lstrip(". ")
    )


def _prescription(ctx: Context, s: Suggestion) -> SuggestionWords:
    prescription = ctx.report.pipeline.prescription
    assert prescription is not None
    low, high = prescription.training_speedup_low, prescription.training_speedup_high
    steps = "; ".join(
        f"{fix_words_at(c.fix, c.stage)}: {c.training_speedup:.2f}x"
        + (" on top of the ones before" if c.after else "")
        for c in prescription.kept
        if c.training_speedup is not None
    )
    interval = ""
    if low is not None and high is not None:
        interval = f", 90% interval {low:.2f}x-{high:.2f}x"
    evidence = (
        f"Each rewrite was tried on your training on top of the ones kept before it ({steps}). "
        f"Together against your pipeline: {prescription.baseline_steps_per_s:.1f} -> "
        f"{prescription.variant_steps_per_s:.1f} steps/s "
        f"({prescription.training_speedup:.2f}x{interval})."
    )
    # What the rewritten lines change in what the pipeline yields is said by the renderer
    # after this (`renderers/prescription_words.py::changes_besides_speed`).
    title = f"rewrite the pipeline ({len(prescription.kept)} changes, measured together)"
    return SuggestionWords(title, evidence)


def _measured_rewrite(ctx: Context, s: Suggestion) -> SuggestionWords:
    trial = trial_of(ctx, s)
    assert trial is not None and trial.training is not None
    after = trial.training.after
    on_top = f" (on top of {', '.join(fix_words(f) for f in after)})" if after else ""
    return SuggestionWords(
        f"{fix_words_at(trial.fix, trial.stage)}{on_top}", training_text(ctx, trial).strip()
    )


_WORDINGS: dict[RuleId, Callable[[Context, Suggestion], SuggestionWords]] = {
    **STAGE_WORDINGS,
    "PD000-pipeline-fine": _pipeline_fine,
    "PD010-cpu-saturated": _cpu_saturated,
    "PD011-gpu-idle-cause": _gpu_idle_cause,
    "PD012-input-contention": _contention,
    "PD013-per-pull-overhead": _fetch,
    "PD014-no-input-fix": _no_input_fix,
    "PD015-epoch-start": _epoch_start,
    "PD016-rewritten-pipeline": _prescription,
    "PD017-measured-rewrite": _measured_rewrite,
}
