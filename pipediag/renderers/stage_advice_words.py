"""The stage rules' suggestions in words, and the pieces every rule's words share."""

from __future__ import annotations

from collections.abc import Callable

from pipediag.analysis.advice_context import (
    PY_FUNCTION_PARALLEL_GAIN,
    SHUFFLE_MIN_BATCHES,
    SHUFFLE_MIN_ELEMENTS,
    Context,
    verified_gain,
)
from pipediag.analysis.prescription_rules import Bound, stage_bound
from pipediag.analysis.run_terms import fit_adds_s, gain_in_run_terms
from pipediag.analysis.stage_rules import interleave_cycle, random_before_cache, shuffle_shortfall
from pipediag.renderers.numbers import bytes_text, counted, gain_range, ms
from pipediag.renderers.stage_cost_words import holding_text
from pipediag.report.fixes import VECTORIZED_MAP_WORDS
from pipediag.report.model import Suggestion, SuggestionWords
from pipediag.report.names import stage_name
from pipediag.report.stage_facts import downstream_batch_size, prefix_cost_s, upstream_of
from pipediag.report.stages import AUTOTUNE, StageStats
from pipediag.report.trials import FixTrial
from pipediag.report.vocabulary import RuleId

ON_TRAINING_OUTCOMES = ("on-training", "unclear-on-training", "under-worth-it-on-training")


def tuned_text(value: int | None) -> str:
    """A parallelism or buffer setting as the user would write it: "AUTOTUNE" where tf.data
    tunes it, else its number ("None" where the graph did not hold it)."""
    return "AUTOTUNE" if value == AUTOTUNE else str(value)


def flag_text(value: bool) -> str:
    """An option that is on or off, as `option=true` reads."""
    return "true" if value else "false"


def stage_at(stats: StageStats) -> str:
    return f"{stage_name(stats)} at {stats.source}" if stats.source else stage_name(stats)


def stage_cost_text(ctx: Context, stats: StageStats) -> str:
    own = stats.own_s_per_batch
    share, text = ctx.share(own), stage_at(stats)
    if own is not None:
        text += f" adds {ms(own)} per batch"
        # Up to 5% over the whole is a difference of noisy rates, not a real excess: "all of
        # it" ("11.2 ms, more than the pipeline's 11.2 ms" read as a contradiction).
        if share is not None and ctx.time_per_batch_s is not None and share <= 1.05:
            text += f" of the pipeline's {ms(ctx.time_per_batch_s)} ({min(share, 1):.0%})"
        elif ctx.time_per_batch_s is not None:
            # Timed up to this stage, tf.data cannot overlap it with what follows (no
            # injected prefetch, no map-and-batch fusion), so it can exceed the whole.
            text += (
                f" when timed up to this stage, more than the whole pipeline's "
                f"{ms(ctx.time_per_batch_s)}, where tf.data overlaps it with the "
                "stages after it: it is nearly all of the pipeline's cost"
            )
    if ctx.pipeline_rate:
        text += f"; the pipeline alone delivers {ctx.pipeline_rate:.1f} batches/s"
    return text + "."


def bound_words(bound: Bound) -> str:
    """What measured the most a change gains: a stage's hold, or input free."""
    return "input free" if bound.held is None else holding_text(bound.held)


def training_text(ctx: Context, trial: FixTrial) -> str:
    training = trial.training
    assert training is not None and training.training_speedup is not None
    low, high = training.training_speedup_low, training.training_speedup_high
    interval = (
        f", 90% interval {gain_range(low, high)}" if low is not None and high is not None else ""
    )
    what = "train function" if ctx.report.train.style == "keras-fit" else "training"
    text = (
        f" Tried on your {what}: {training.baseline_steps_per_s:.1f} -> "
        f"{training.variant_steps_per_s:.1f} steps/s ({training.training_speedup:.2f}x, "
        f"over {counted(training.rounds, 'interleaved round')}{interval})."
    )
    if training.at_step_alone:
        text += (
            " The fixed pipeline fed it faster than the train step alone ran, so its rate "
            "is taken at the step alone's: the most a pipeline can give."
        )
    added_s = fit_adds_s(ctx.report, training.baseline_steps_per_s)
    gain, _ = gain_in_run_terms(ctx.report, training)
    if added_s is not None and gain is not None:
        text += (
            f" Counting the {ms(added_s)} fit adds around each step, training runs "
            f"{gain:.2f}x as fast."
        )
    return text


def _fix_words(
    ctx: Context, s: Suggestion, title: str, evidence: str, trial: FixTrial | None
) -> SuggestionWords:
    """A stage rule's words with its trial, as `fix_suggestion` read it (`outcome`: how)."""
    if trial is not None and trial.verified and trial.speedup is not None:
        evidence += (
            f" Verified on a rewritten copy of your pipeline: {trial.baseline_batches_per_s:.1f}"
            f" -> {trial.variant_batches_per_s:.1f} batches/s ({trial.speedup:.2f}x over"
            f" {counted(trial.rounds, 'interleaved round')})."
        )
    if trial is not None and s.outcome in ON_TRAINING_OUTCOMES:
        evidence += training_text(ctx, trial)
    if s.outcome == "unclear-on-training":
        # The rounds could not tell (a busy host): neither a gain nor a loss is shown.
        evidence += " On training the result was unclear: " + (
            "the gain shown is the pipeline alone's."
            if verified_gain(trial) is not None
            else "its gain is not measured."
        )
    elif s.outcome == "under-worth-it-on-training":
        title += f" (measured {s.gain.speedup:.2f}x on your training: not worth it)"
    elif s.outcome == "covered-by-cache":
        title += " (not needed under the kept cache)"
    elif s.outcome == "under-worth-it-alone":
        title += f" (measured {s.gain.speedup:.2f}x here: not worth it)"
    elif s.outcome == "saturated":
        evidence += " The CPU is saturated, so more threads cannot run."
    return SuggestionWords(title, evidence.strip())


def stage_of(ctx: Context, s: Suggestion) -> StageStats:
    assert s.stage_index is not None
    return ctx.stages[s.stage_index]


def trial_of(ctx: Context, s: Suggestion) -> FixTrial | None:
    return ctx.trial(s.fix, s.stage_index) if s.fix is not None else None


def _sequential_map(ctx: Context, s: Suggestion) -> SuggestionWords:
    stats = stage_of(ctx, s)
    why = (
        stats.auto_parallel_blocker
        or f"num_parallel_calls={tuned_text(stats.settings.num_parallel_calls)}"
    )
    evidence = (
        f"{stage_cost_text(ctx, stats)} It runs one element at a time (tf.data's "
        f"map_parallelization does not parallelise it: {why})."
    )
    if stats.uses_py_function:
        evidence += " It calls Python, so the GIL limits what parallel calls gain."
    title = f"{stage_name(stats)}: add num_parallel_calls=tf.data.AUTOTUNE"
    return _fix_words(ctx, s, title, evidence, trial_of(ctx, s))


def _sequential_interleave(ctx: Context, s: Suggestion) -> SuggestionWords:
    stats = stage_of(ctx, s)
    opts = stats.settings
    shown = (("cycle_length", opts.cycle_length), ("num_parallel_calls", opts.num_parallel_calls))
    settings = ", ".join(f"{k}={tuned_text(v)}" for k, v in shown if v is not None)
    trial = trial_of(ctx, s)
    cycle = interleave_cycle(ctx, trial)
    evidence = (
        f"{stage_cost_text(ctx, stats)} It reads its inputs one at a time"
        f"{f' ({settings})' if settings else ''}; on {ctx.cores} cores an AUTOTUNE "
        "cycle_length did not run in parallel either (measured on TF 2.21). A parallel "
        "interleave reads in another (still deterministic) order. A read that waits on "
        "storage may gain more with another cycle_length: the best is not always the "
        "cores, so try a few."
    )
    title = f"{stage_name(stats)}: read {cycle} inputs in parallel"
    return _fix_words(ctx, s, title, evidence, trial)


def _prefetch_at_end(ctx: Context, s: Suggestion) -> SuggestionWords:
    last, trial = stage_of(ctx, s), trial_of(ctx, s)
    if last.kind == "prefetch":
        evidence = f"The final prefetch has buffer_size={tuned_text(last.settings.buffer_size)}."
        return _fix_words(ctx, s, "raise the final prefetch to tf.data.AUTOTUNE", evidence, trial)
    options = (
        f"inject_prefetch={flag_text(ctx.options.inject_prefetch)}, "
        f"autotune={flag_text(ctx.options.autotune)}"
    )
    evidence = (
        f"The pipeline ends with {stage_name(last)}, and the options in force ({options}) "
        "leave no prefetch, so the train step waits while each batch is made instead of "
        "overlapping with it. A pipeline-alone run cannot show that overlap: the gain is end "
        "to end."
    )
    return _fix_words(ctx, s, "add .prefetch(tf.data.AUTOTUNE) as the last step", evidence, trial)


def _vectorize(ctx: Context, s: Suggestion) -> SuggestionWords:
    stats = stage_of(ctx, s)
    batch, own = downstream_batch_size(ctx.stages, stats.index), stats.own_s_per_batch
    assert own is not None and batch
    trial = trial_of(ctx, s)
    cost = f"{stage_cost_text(ctx, stats)} That is {own / batch * 1e6:.0f} us per element"
    if trial is not None and trial.facts.vectorized_map:
        title = f"{stage_name(stats)}: vectorise {VECTORIZED_MAP_WORDS}, map after batch"
        evidence = f"{cost}. {_vectorized_map_check(trial)}"
    else:
        title = f"{stage_name(stats)}: vectorise, map after batch"
        evidence = (
            f"{cost}, mostly per-element call overhead; applied after batch({batch}) it runs "
            f"once per batch. {_batch_check(trial)}"
        )
    return _fix_words(ctx, s, title, evidence, trial)


def _batch_check(trial: FixTrial | None) -> str:
    if trial is None or not trial.verified:
        return "Only safe if the function works on a batch (elementwise ops)."
    checked = trial.facts.sample_elements
    return (
        f"On {'a sample of' if checked is None else checked} of your elements "
        "the function gave the same results on whole batches as element by element."
    )


def _vectorized_map_check(trial: FixTrial) -> str:
    """Where the function takes no batch as written but passed the check through
    `tf.vectorized_map` (docs/design.md, "Every applicable rewrite")."""
    checked, refusal = trial.facts.sample_elements, trial.facts.batch_refusal
    run = "Run through tf.vectorized_map, on"
    if refusal is None:
        run = "As written, the function does not take a batch; run through tf.vectorized_map, on"
    return (
        f"{run} {'a sample of' if checked is None else checked} of your elements "
        f"{'it' if refusal is None else 'the function'} gave the same results as element by "
        "element: pfor vectorises the ops it knows and loops over the rest, once per batch."
    )


def _cache(ctx: Context, s: Suggestion) -> SuggestionWords:
    stats, trial = stage_of(ctx, s), trial_of(ctx, s)
    assert trial is not None
    prefix_s = prefix_cost_s(ctx.stages, stats.index)
    share, total = ctx.share(prefix_s), ctx.time_per_batch_s
    assert share is not None and total is not None
    size = bytes_text(trial.facts.cache_bytes)
    evidence = (
        f"Everything up to {stage_name(stats)} is deterministic and costs "
        f"{ms(prefix_s)} of the pipeline's {ms(total)} per batch "
        f"({share:.0%}). One epoch there is {trial.facts.elements} elements, "
        f"~{size}, with {bytes_text(trial.facts.available_bytes)} of memory available. From "
        "the second epoch a cache serves it from memory."
    ) + _python_repeat_text(ctx, trial, stats.index)
    if trial.facts.cached_in_batches:
        evidence += (
            " The cache goes after the batch that reads it: whole batches are read back, "
            "not batched again each epoch."
        )
    title = f"cache() after {stage_name(stats)} (deterministic, {size}, fits) - from epoch 2"
    return _fix_words(ctx, s, title, evidence, trial)


def _python_repeat_text(ctx: Context, trial: FixTrial, cached: int) -> str:
    if not any(ctx.stages[i].uses_py_function for i in upstream_of(ctx.stages, cached)):
        return ""
    if trial.facts.python_repeatable:
        return (
            " Its Python gave the same values for the same elements read twice, so the cache "
            "keeps what every epoch would make."
        )
    return " Assumes the Python functions upstream return the same data each epoch."


def _hoist_cache(ctx: Context, s: Suggestion) -> SuggestionWords:
    stats, trial = stage_of(ctx, s), trial_of(ctx, s)
    bound = stage_bound(ctx, stats)
    assert trial is not None and bound is not None
    shuffle, size = ctx.stages[stats.inputs[0]], bytes_text(trial.facts.cache_bytes)
    fill = ""
    if trial.facts.fill_s is not None:
        fill = f" The first epoch fills it (about {trial.facts.fill_s:.0f} s)."
    evidence = (
        f"{stage_cost_text(ctx, stats)} It makes the same output from each element every "
        f"epoch, and one epoch of it is {trial.facts.elements} elements, ~{size}, with "
        f"{bytes_text(trial.facts.available_bytes)} of memory available: moved above "
        f"{stage_name(shuffle)} and cached, it runs once; the shuffle still reorders "
        f"every epoch.{fill} With {bound_words(bound)}, your training ran "
        f"{bound.speedup:.2f}x faster (measured): what the cache gives from the second epoch."
    ) + _python_repeat_text(ctx, trial, stats.index)
    title = f"cache() after {stage_name(stats)}, moved above {stage_name(shuffle)} ({size}, fits)"
    # Its trial is not tried on training: the hold measured what it gives.
    return _fix_words(ctx, s, title, evidence, None)


def _cache_after_random(ctx: Context, s: Suggestion) -> SuggestionWords:
    names = ", ".join(stage_name(r) for r in random_before_cache(ctx.stages, stage_of(ctx, s)))
    return SuggestionWords(
        f"cache() after a random transform ({names}): every epoch repeats epoch 1",
        f"{names} runs before the cache, so its random output is frozen the first "
        "epoch and replayed afterwards: the same augmentation/order every epoch.",
    )


def _py_function(ctx: Context, s: Suggestion) -> SuggestionWords:
    stats = stage_of(ctx, s)
    source = "from_generator" if stats.kind == "source" else "tf.py_function/numpy_function"
    bound = stage_bound(ctx, stats)
    bounded = (
        f" With {bound_words(bound)}, your training would run {bound.speedup:.2f}x faster "
        "(measured): the most this change can gain."
        if bound is not None
        else ""
    )
    evidence = (
        f"{stage_cost_text(ctx, stats)} Python code holds the GIL, so parallel "
        f"calls help little (at most ~{PY_FUNCTION_PARALLEL_GAIN:g}x measured on "
        "2 cores, for sleeping I/O); TF ops run in parallel outside it and let "
        "tf.data parallelise the stage for you." + bounded
    )
    title = f"{stage_name(stats)} runs Python ({source}): port it to TF ops"
    return _fix_words(ctx, s, title, evidence, None)


def _shuffle_buffer(ctx: Context, s: Suggestion) -> SuggestionWords:
    stats = stage_of(ctx, s)
    buffer, batch = stats.settings.buffer_size, downstream_batch_size(ctx.stages, stats.index)
    few_elements, few_batches = shuffle_shortfall(stats, ctx.stages)
    reasons = [f"under {SHUFFLE_MIN_ELEMENTS} elements"] if few_elements else []
    if few_batches:
        reasons.append(f"under {SHUFFLE_MIN_BATCHES} batches of {batch}")
    return SuggestionWords(
        f"shuffle buffer of {buffer} is tiny ({' and '.join(reasons)})",
        f"shuffle(buffer_size={buffer}) only mixes elements that are {buffer} apart "
        "in the source order, so batches stay correlated with file order. It does "
        f"not matter if the dataset has fewer than {buffer} elements.",
    )


def _autotune_off(ctx: Context, s: Suggestion) -> SuggestionWords:
    evidence = (
        "options.autotune.enabled=False: AUTOTUNE parallelism and buffer sizes get no "
        "tuning, and tf.data's default optimisations that need it (injected prefetch, "
        "map parallelisation) do not run."
    )
    return _fix_words(ctx, s, "autotune is turned off: turn it back on", evidence, trial_of(ctx, s))


STAGE_WORDINGS: dict[RuleId, Callable[[Context, Suggestion], SuggestionWords]] = {
    "PD001-sequential-map": _sequential_map,
    "PD002-sequential-interleave": _sequential_interleave,
    "PD003-no-prefetch": _prefetch_at_end,
    "PD004-vectorize-map": _vectorize,
    "PD005-cache-prefix": _cache,
    "PD006-cache-after-random": _cache_after_random,
    "PD007-py-function": _py_function,
    "PD008-small-shuffle-buffer": _shuffle_buffer,
    "PD009-autotune-off": _autotune_off,
    "PD018-hoist-cache": _hoist_cache,
}
