"""Advisor rules over the pipeline's stages (PD001-PD009, PD018): each reads the context
(`advice_context.py`) and returns suggestions with their evidence and code."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TypeGuard

from pipediag.analysis.advice_context import (
    CACHE_MIN_SHARE,
    CACHE_READ_FLOOR,
    PY_FUNCTION_PARALLEL_GAIN,
    SHUFFLE_MIN_BATCHES,
    SHUFFLE_MIN_ELEMENTS,
    VECTORIZE_SAVED_SHARE,
    Context,
    FixProposal,
    bytes_text,
    fix_suggestion,
    fn_name,
    parallel_estimate,
    stage_cost_text,
    verified_to_gain,
    worth_fixing,
)
from pipediag.analysis.pipeline_code import rewritten_chain, vectorized_map_lambda
from pipediag.analysis.prescription_rules import stage_bound
from pipediag.report.fixes import (
    FIX_AUTOTUNE,
    FIX_CACHE,
    FIX_HOIST_CACHE,
    FIX_PARALLEL_INTERLEAVE,
    FIX_PARALLEL_MAP,
    FIX_PREFETCH,
    FIX_VECTORIZE,
    FIXES,
    VECTORIZED_MAP_WORDS,
)
from pipediag.report.model import Suggestion
from pipediag.report.names import flag_text, stage_name, tuned_text
from pipediag.report.prescription import StageChange
from pipediag.report.stage_facts import (
    MAP_KINDS,
    SHUFFLE_KINDS,
    VECTORIZE_MAX_ELEMENT_S,
    VERIFIED_MIN_GAIN,
    cache_point,
    downstream_batch_size,
    downstream_of,
    if_free_bound,
    prefix_cost_s,
    runs_sequential_interleave,
    runs_sequential_map,
    upstream_of,
    vectorizable,
)
from pipediag.report.stages import StageStats
from pipediag.report.trials import FixTrial

_PREFETCH_LINE = "ds = ds.prefetch(tf.data.AUTOTUNE)"


def _stages_to_fix(ctx: Context, applies: Callable[[StageStats], bool]) -> list[StageStats]:
    return [stats for stats in ctx.stages if applies(stats) and worth_fixing(ctx, stats)]


def _sequential(
    ctx: Context, runs_sequential: Callable[[StageStats, int], bool]
) -> list[StageStats]:
    return _stages_to_fix(ctx, lambda s: not s.tf_internal and runs_sequential(s, ctx.cores))


def check_sequential_map(ctx: Context, rule_id: str) -> list[Suggestion]:
    found = []
    for stats in _sequential(ctx, runs_sequential_map):
        why = (
            stats.auto_parallel_blocker
            or f"num_parallel_calls={tuned_text(stats.settings.num_parallel_calls)}"
        )
        gain = min(ctx.cores, PY_FUNCTION_PARALLEL_GAIN) if stats.uses_py_function else ctx.cores
        evidence = (
            f"{stage_cost_text(ctx, stats)} It runs one element at a time (tf.data's "
            f"map_parallelization does not parallelise it: {why})."
        )
        if stats.uses_py_function:
            evidence += " It calls Python, so the GIL limits what parallel calls gain."
        proposal = FixProposal(
            title=f"{stage_name(stats)}: add num_parallel_calls=tf.data.AUTOTUNE",
            stats=stats,
            evidence=evidence,
            code=f"ds = ds.map({fn_name(stats)}, num_parallel_calls=tf.data.AUTOTUNE)",
            estimated=parallel_estimate(ctx, stats.own_s_per_batch, gain),
        )
        trial = ctx.trial(FIX_PARALLEL_MAP, stats.index)
        found.append(fix_suggestion(ctx, rule_id, proposal, trial=trial, adds_threads=True))
    return found


def check_sequential_interleave(ctx: Context, rule_id: str) -> list[Suggestion]:
    found = []
    for stats in _sequential(ctx, runs_sequential_interleave):
        shown = (
            ("cycle_length", stats.settings.cycle_length),
            ("num_parallel_calls", stats.settings.num_parallel_calls),
        )
        settings = ", ".join(f"{k}={tuned_text(v)}" for k, v in shown if v is not None)
        trial = ctx.trial(FIX_PARALLEL_INTERLEAVE, stats.index)
        cycle = (trial.facts.cycle_length if trial is not None else None) or ctx.cores
        evidence = (
            f"{stage_cost_text(ctx, stats)} It reads its inputs one at a time"
            f"{f' ({settings})' if settings else ''}; on {ctx.cores} cores an AUTOTUNE "
            "cycle_length did not run in parallel either (measured on TF 2.21). A parallel "
            "interleave reads in another (still deterministic) order. A read that waits on "
            "storage may gain more with another cycle_length: the best is not always the "
            "cores, so try a few."
        )
        proposal = FixProposal(
            title=f"{stage_name(stats)}: read {cycle} inputs in parallel",
            stats=stats,
            evidence=evidence,
            code=(
                f"ds = ds.interleave({fn_name(stats)}, cycle_length={cycle}, "
                "num_parallel_calls=tf.data.AUTOTUNE)"
            ),
            estimated=parallel_estimate(ctx, stats.own_s_per_batch, ctx.cores),
        )
        found.append(fix_suggestion(ctx, rule_id, proposal, trial=trial, adds_threads=True))
    return found


def check_prefetch_at_end(ctx: Context, rule_id: str) -> list[Suggestion]:
    """Only where the options leave no prefetch (one added beside inject_prefetch measured 0.99x:
    docs/design.md, "tf.data behaviours"), or a measured run shows a gain."""
    last = next((s for s in reversed(ctx.stages) if s.kind != "options"), None)
    if last is None:
        return []
    trial = ctx.trial(FIX_PREFETCH, last.index)
    if last.kind == "prefetch":
        if not verified_to_gain(trial):
            return []
        evidence = f"The final prefetch has buffer_size={tuned_text(last.settings.buffer_size)}."
        title = "raise the final prefetch to tf.data.AUTOTUNE"
        proposal = FixProposal(
            title=title, stats=last, evidence=evidence, code=_PREFETCH_LINE, estimated=None
        )
        return [fix_suggestion(ctx, rule_id, proposal, trial=trial, adds_threads=False)]
    if ctx.options.inject_prefetch and ctx.options.autotune:
        return []  # tf.data appends the prefetch itself; a pipeline-alone "gain" here is noise
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
    # Overlap: the pipeline-alone rate stays, the step stops paying for it serially.
    proposal = FixProposal(
        title="add .prefetch(tf.data.AUTOTUNE) as the last step",
        stats=last,
        evidence=evidence,
        code=f"{_PREFETCH_LINE}  # the last transformation",
        estimated=1.0,
    )
    return [
        fix_suggestion(ctx, rule_id, proposal, trial=trial, adds_threads=False, measured_gate=False)
    ]


def check_vectorize(ctx: Context, rule_id: str) -> list[Suggestion]:
    found = []
    for stats in _stages_to_fix(ctx, lambda s: vectorizable(s, ctx.stages)):
        batch = downstream_batch_size(ctx.stages, stats.index)
        own = stats.own_s_per_batch
        trial = ctx.trial(FIX_VECTORIZE, stats.index)
        # A costly function gains little from running once per batch, unless the rewrite
        # was measured to gain (on a loaded host a cheap map timed 229 us an element, over
        # the 200 us guess).
        measured = verified_to_gain(trial)
        if own is None or not batch or (own / batch > VECTORIZE_MAX_ELEMENT_S and not measured):
            continue
        if trial is not None and trial.unsafe:
            continue  # run on a batch, the function failed or gave other results
        cost = f"{stage_cost_text(ctx, stats)} That is {own / batch * 1e6:.0f} us per element"
        function = fn_name(stats)
        refusal = None
        if trial is not None and trial.facts.vectorized_map:
            refusal = trial.facts.batch_refusal
            title = f"{stage_name(stats)}: vectorise {VECTORIZED_MAP_WORDS}, map after batch"
            evidence = f"{cost}. {_vectorized_map_check(trial)}"
            function = vectorized_map_lambda(function, trial.facts.element_unpacked)
            must = ""
        else:
            title = f"{stage_name(stats)}: vectorise, map after batch"
            evidence = (
                f"{cost}, mostly per-element call overhead; applied after batch({batch}) it runs "
                f"once per batch. {_batch_check(trial)}"
            )
            must = f"  # {function} must accept a batch"
        code = f"ds = ds.batch({batch}).map({function}, num_parallel_calls=tf.data.AUTOTUNE)"
        proposal = FixProposal(
            title=title,
            stats=stats,
            evidence=evidence,
            code=code + must,
            estimated=parallel_estimate(ctx, own, 1 / (1 - VECTORIZE_SAVED_SHARE)),
        )
        suggestion = fix_suggestion(ctx, rule_id, proposal, trial=trial, adds_threads=False)
        found.append(replace(suggestion, refused_as_written=refusal))
    return found


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
    checked = trial.facts.sample_elements
    refusal = trial.facts.batch_refusal
    run = (
        "As written, the function does not take a batch; run through tf.vectorized_map, on"
        if refusal is None
        else "Run through tf.vectorized_map, on"
    )
    return (
        f"{run} {'a sample of' if checked is None else checked} of your elements "
        f"{'it' if refusal is None else 'the function'} gave the same results as element by "
        "element: pfor vectorises the ops it knows and loops over the rest, once per batch."
    )


def check_cache(ctx: Context, rule_id: str) -> list[Suggestion]:
    """Needs the what-if facts (size, memory): the trial carries them even when not run."""
    point = cache_point(ctx.stages)
    if any(s.kind == "cache" for s in ctx.stages) or point is None:
        return []
    trial = ctx.trial(FIX_CACHE, point)
    if not _cacheable(trial):
        return []
    stats = ctx.stages[point]
    prefix_s = prefix_cost_s(ctx.stages, point)
    share = ctx.share(prefix_s)
    total = ctx.time_per_batch_s
    if share is None or total is None or share < CACHE_MIN_SHARE:
        return []
    size = bytes_text(trial.facts.cache_bytes)
    evidence = (
        f"Everything up to {stage_name(stats)} is deterministic and costs "
        f"{prefix_s * 1000:.1f} ms of the pipeline's {total * 1000:.1f} ms per batch "
        f"({share:.0%}). One epoch there is {trial.facts.elements} elements, "
        f"~{size}, with {bytes_text(trial.facts.available_bytes)} of memory available. From "
        "the second epoch a cache serves it from memory."
    ) + _python_repeat_text(ctx, trial, point)
    where = f"right after {stage_name(stats)}, before shuffle/augment"
    if trial.facts.cached_in_batches:
        evidence += (
            " The cache goes after the batch that reads it: whole batches are read back, "
            "not batched again each epoch."
        )
        where = f"right after the batch that follows {stage_name(stats)}"
    proposal = FixProposal(
        title=f"cache() after {stage_name(stats)} (deterministic, {size}, fits) - from epoch 2",
        stats=stats,
        evidence=evidence,
        code=f"ds = ds.cache()  # {where}",
        estimated=total / max(total - prefix_s, total * CACHE_READ_FLOOR),
    )
    return [fix_suggestion(ctx, rule_id, proposal, trial=trial, adds_threads=False)]


def _cacheable(trial: FixTrial | None) -> TypeGuard[FixTrial]:
    """Fits in memory, and its Python upstream, where checked, gave the same values twice."""
    return (
        trial is not None
        and bool(trial.fits_in_memory)
        and trial.facts.python_repeatable is not False
    )


def _python_repeat_text(ctx: Context, trial: FixTrial, cached: int) -> str:
    if not any(ctx.stages[i].uses_py_function for i in upstream_of(ctx.stages, cached)):
        return ""
    if trial.facts.python_repeatable:
        return (
            " Its Python gave the same values for the same elements read twice, so the cache "
            "keeps what every epoch would make."
        )
    return " Assumes the Python functions upstream return the same data each epoch."


def check_hoist_cache(ctx: Context, rule_id: str) -> list[Suggestion]:
    """A map moved above its shuffle and cached, unmeasured on training (too slow to fill): its
    hold measured what the cache gives from epoch 2 (docs/design.md, "Every applicable rewrite")."""
    found = []
    for trial in ctx.report.pipeline.trials:
        if (
            trial.fix != FIX_HOIST_CACHE
            or trial.stage_index is None
            or not 0 <= trial.stage_index < len(ctx.stages)
            or trial.training_speedup is not None
            or not _cacheable(trial)
        ):
            continue
        stats = ctx.stages[trial.stage_index]
        share = ctx.share(stats.own_s_per_batch)
        if if_free_bound(ctx.stages, stats.index) is None:
            continue  # no stage's hold measured what the cache would give
        bound = stage_bound(ctx, stats)
        if (
            share is None
            or share < CACHE_MIN_SHARE
            or bound is None
            or bound.speedup < VERIFIED_MIN_GAIN
        ):
            continue
        shuffle = ctx.stages[stats.inputs[0]]
        size = bytes_text(trial.facts.cache_bytes)
        fill = (
            f" The first epoch fills it (about {trial.facts.fill_s:.0f} s)."
            if trial.facts.fill_s is not None
            else ""
        )
        evidence = (
            f"{stage_cost_text(ctx, stats)} It makes the same output from each element every "
            f"epoch, and one epoch of it is {trial.facts.elements} elements, ~{size}, with "
            f"{bytes_text(trial.facts.available_bytes)} of memory available: moved above "
            f"{stage_name(shuffle)} and cached, it runs once; the shuffle still reorders "
            f"every epoch.{fill} With {bound.what}, your training ran {bound.speedup:.2f}x faster "
            "(measured): what the cache gives from the second epoch."
        ) + _python_repeat_text(ctx, trial, stats.index)
        proposal = FixProposal(
            title=(
                f"cache() after {stage_name(stats)}, moved above {stage_name(shuffle)} "
                f"({size}, fits)"
            ),
            stats=stats,
            evidence=evidence,
            code="\n".join(_hoisted_lines(ctx, stats)),
            estimated=None,
        )
        # The hold ranks the change, where a port's bound does not (it is what the stage
        # costs, not what a port gains).
        suggestion = fix_suggestion(ctx, rule_id, proposal, trial=None, adds_threads=False)
        found.append(
            replace(suggestion, gain=bound.gain, estimate=bound.speedup, fix=FIX_HOIST_CACHE)
        )
    return found


def _hoisted_lines(ctx: Context, stats: StageStats) -> list[str]:
    change = StageChange(FIX_HOIST_CACHE, stats.index, FIXES[FIX_HOIST_CACHE].semantics)
    lines = rewritten_chain(ctx.stages, [change])
    changed = [i for i, line in enumerate(lines) if line.change == FIX_HOIST_CACHE]
    if not changed:
        return ["ds = ds.cache()  # after the map, with the map moved above the shuffle"]
    return [line.text for line in lines[changed[0] : changed[-1] + 1]]


def check_cache_after_random(ctx: Context, rule_id: str) -> list[Suggestion]:
    found = []
    for stats in ctx.stages:
        if stats.kind != "cache":
            continue
        # A shuffle after the cache reorders the cached elements every epoch, so only an
        # order frozen before it is replayed; random values (augmentation) still are.
        reshuffled = any(
            ctx.stages[i].kind in SHUFFLE_KINDS for i in downstream_of(ctx.stages, stats.index)
        )
        random = [
            ctx.stages[i]
            for i in sorted(upstream_of(ctx.stages, stats.index) - {stats.index})
            if ctx.stages[i].random or (ctx.stages[i].kind in SHUFFLE_KINDS and not reshuffled)
        ]
        if not random:
            continue
        names = ", ".join(stage_name(s) for s in random)
        title = f"cache() after a random transform ({names}): every epoch repeats epoch 1"
        evidence = (
            f"{names} runs before the cache, so its random output is frozen the first "
            "epoch and replayed afterwards: the same augmentation/order every epoch."
        )
        code = (
            f"ds = ds.cache()  # move it before {stage_name(random[0])}; "
            "random steps go after the cache"
        )
        warning = _stage_warning(rule_id, stats, title, evidence, code)
        found.append(replace(warning, correctness_warning=True))
    return found


def check_py_function(ctx: Context, rule_id: str) -> list[Suggestion]:
    found = []
    python = _stages_to_fix(ctx, lambda s: s.uses_py_function and s.kind in (*MAP_KINDS, "source"))
    for stats in python:
        source = "from_generator" if stats.kind == "source" else "tf.py_function/numpy_function"
        bound = stage_bound(ctx, stats)
        bounded = (
            f" With {bound.what}, your training would run {bound.speedup:.2f}x faster (measured): "
            "the most this change can gain."
            if bound is not None
            else ""
        )
        proposal = FixProposal(
            title=f"{stage_name(stats)} runs Python ({source}): port it to TF ops",
            stats=stats,
            evidence=(
                f"{stage_cost_text(ctx, stats)} Python code holds the GIL, so parallel "
                f"calls help little (at most ~{PY_FUNCTION_PARALLEL_GAIN:g}x measured on "
                "2 cores, for sleeping I/O); TF ops run in parallel outside it and let "
                "tf.data parallelise the stage for you." + bounded
            ),
            code=(
                f"# rewrite {fn_name(stats)} with TensorFlow ops (tf.io.decode_*, tf.image.*, "
                "tf.strings.*) instead of tf.py_function / tf.numpy_function"
            ),
            estimated=None,
        )
        suggestion = fix_suggestion(ctx, rule_id, proposal, trial=None, adds_threads=False)
        found.append(replace(suggestion, gain=bound.gain) if bound is not None else suggestion)
    return found


def check_shuffle_buffer(ctx: Context, rule_id: str) -> list[Suggestion]:
    found = []
    for stats in ctx.stages:
        if stats.kind not in SHUFFLE_KINDS or stats.made_by is not None:
            # A library call's own shuffle (image_dataset_from_directory's 8 x batch_size)
            # is not the script's to size.
            continue
        buffer = stats.settings.buffer_size
        if buffer is None or buffer <= 0:
            continue
        batch = downstream_batch_size(ctx.stages, stats.index)
        reasons = []
        if buffer < SHUFFLE_MIN_ELEMENTS:
            reasons.append(f"under {SHUFFLE_MIN_ELEMENTS} elements")
        if batch and buffer < SHUFFLE_MIN_BATCHES * batch:
            reasons.append(f"under {SHUFFLE_MIN_BATCHES} batches of {batch}")
        if not reasons:
            continue
        wanted = max(SHUFFLE_MIN_ELEMENTS, SHUFFLE_MIN_BATCHES * (batch or 0))
        title = f"shuffle buffer of {buffer} is tiny ({' and '.join(reasons)})"
        evidence = (
            f"shuffle(buffer_size={buffer}) only mixes elements that are {buffer} apart "
            "in the source order, so batches stay correlated with file order. It does "
            f"not matter if the dataset has fewer than {buffer} elements."
        )
        code = f"ds = ds.shuffle({wanted})  # or the dataset size, if it fits in memory"
        found.append(_stage_warning(rule_id, stats, title, evidence, code))
    return found


def _stage_warning(
    rule_id: str, stats: StageStats, title: str, evidence: str, code: str
) -> Suggestion:
    """A suggestion that changes what is trained on, not the speed."""
    return Suggestion(
        id=rule_id,
        title=title,
        stage=stage_name(stats),
        stage_index=stats.index,
        evidence=evidence,
        code=code,
        kind="warning",
    )


def check_autotune_off(ctx: Context, rule_id: str) -> list[Suggestion]:
    if ctx.options.autotune:
        return []
    proposal = FixProposal(
        title="autotune is turned off: turn it back on",
        stats=None,
        evidence=(
            "options.autotune.enabled=False: AUTOTUNE parallelism and buffer sizes get no "
            "tuning, and tf.data's default optimisations that need it (injected prefetch, "
            "map parallelisation) do not run."
        ),
        code="options.autotune.enabled = True  # or drop the line that turns it off",
        estimated=None,
    )
    trial = ctx.trial(FIX_AUTOTUNE, None)
    return [fix_suggestion(ctx, rule_id, proposal, trial=trial, adds_threads=True)]
