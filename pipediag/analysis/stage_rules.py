"""Advisor rules over the pipeline's stages (PD001-PD009, PD018): each reads the context
(`advice_context.py`) and returns its code; `renderers/stage_advice_words.py` words them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TypeGuard

from pipediag.analysis.advice_context import (
    PY_FUNCTION_PARALLEL_GAIN,
    SHUFFLE_MIN_BATCHES,
    SHUFFLE_MIN_ELEMENTS,
    Context,
    fix_suggestion,
    fn_name,
    parallel_estimate,
    verified_to_gain,
    worth_fixing,
)
from pipediag.analysis.pipeline_code import library_cache, rewritten_chain, vectorized_map_lambda
from pipediag.analysis.prescription_rules import stage_bound
from pipediag.report import fixes, stage_facts
from pipediag.report.model import Suggestion
from pipediag.report.names import stage_name
from pipediag.report.prescription import StageChange
from pipediag.report.stages import StageStats
from pipediag.report.trials import FixTrial
from pipediag.report.vocabulary import FixName, RuleId

_PREFETCH_LINE = "ds = ds.prefetch(tf.data.AUTOTUNE)"
PORT_RULE: RuleId = "PD007-py-function"
HOIST_RULE: RuleId = "PD018-hoist-cache"
# Share of a cheap map's cost vectorising is assumed to remove (conservative).
VECTORIZE_SAVED_SHARE = 0.5
# Below this share of the time per batch, a cached prefix gains under 1.25x from epoch 2.
CACHE_MIN_SHARE = 0.20
# A cached stream still costs something to read; never predict it as free.
CACHE_READ_FLOOR = 0.05


def _stages_to_fix(ctx: Context, applies: Callable[[StageStats], bool]) -> list[StageStats]:
    return [stats for stats in ctx.stages if applies(stats) and worth_fixing(ctx, stats)]


def _sequential(
    ctx: Context, runs_sequential: Callable[[StageStats, int], bool]
) -> list[StageStats]:
    return _stages_to_fix(ctx, lambda s: not s.tf_internal and runs_sequential(s, ctx.cores))


def check_sequential_map(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    found = []
    for stats in _sequential(ctx, stage_facts.runs_sequential_map):
        gain = min(ctx.cores, PY_FUNCTION_PARALLEL_GAIN) if stats.uses_py_function else ctx.cores
        code = f"ds = ds.map({fn_name(stats)}, num_parallel_calls=tf.data.AUTOTUNE)"
        estimated = parallel_estimate(ctx, stats.own_s_per_batch, gain)
        trial = ctx.trial(fixes.FIX_PARALLEL_MAP, stats.index)
        found.append(
            fix_suggestion(ctx, rule_id, stats, code, estimated, trial=trial, adds_threads=True)
        )
    return found


def check_sequential_interleave(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    found = []
    for stats in _sequential(ctx, stage_facts.runs_sequential_interleave):
        trial = ctx.trial(fixes.FIX_PARALLEL_INTERLEAVE, stats.index)
        cycle = interleave_cycle(ctx, trial)
        code = (
            f"ds = ds.interleave({fn_name(stats)}, cycle_length={cycle}, "
            "num_parallel_calls=tf.data.AUTOTUNE)"
        )
        estimated = parallel_estimate(ctx, stats.own_s_per_batch, ctx.cores)
        found.append(
            fix_suggestion(ctx, rule_id, stats, code, estimated, trial=trial, adds_threads=True)
        )
    return found


def interleave_cycle(ctx: Context, trial: FixTrial | None) -> int:
    return (trial.facts.cycle_length if trial is not None else None) or ctx.cores


def check_prefetch_at_end(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    """Only where the options leave no prefetch (one added beside inject_prefetch measured 0.99x:
    docs/design.md, "tf.data behaviours"), or a measured run shows a gain."""
    if (last := next((s for s in reversed(ctx.stages) if s.kind != "options"), None)) is None:
        return []
    trial = ctx.trial(fixes.FIX_PREFETCH, last.index)
    if last.kind == "prefetch":
        if not verified_to_gain(trial):
            return []
        return [fix_suggestion(ctx, rule_id, last, _PREFETCH_LINE, trial=trial, adds_threads=False)]
    if ctx.options.inject_prefetch and ctx.options.autotune:
        return []  # tf.data appends the prefetch itself; a pipeline-alone "gain" here is noise
    # Overlap: the pipeline-alone rate stays, the step stops paying for it serially.
    code = f"{_PREFETCH_LINE}  # the last transformation"
    suggestion = fix_suggestion(
        ctx, rule_id, last, code, 1.0, trial=trial, adds_threads=False, measured_gate=False
    )
    return [suggestion]


def check_vectorize(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    found = []
    for stats in _stages_to_fix(ctx, lambda s: stage_facts.vectorizable(s, ctx.stages)):
        batch = stage_facts.downstream_batch_size(ctx.stages, stats.index)
        own, trial = stats.own_s_per_batch, ctx.trial(fixes.FIX_VECTORIZE, stats.index)
        # A costly function gains little from running once per batch, unless the rewrite
        # was measured to gain (on a loaded host a cheap map timed 229 us an element, over
        # the 200 us guess).
        if own is None or not batch:
            continue
        if own / batch > stage_facts.VECTORIZE_MAX_ELEMENT_S and not verified_to_gain(trial):
            continue
        if trial is not None and trial.unsafe:
            continue  # run on a batch, the function failed or gave other results
        function, refusal = fn_name(stats), None
        if trial is not None and trial.facts.vectorized_map:
            refusal = trial.facts.batch_refusal
            function = vectorized_map_lambda(function, trial.facts.element_unpacked)
            must = ""
        else:
            must = f"  # {function} must accept a batch"
        code = f"ds = ds.batch({batch}).map({function}, num_parallel_calls=tf.data.AUTOTUNE)"
        estimated = parallel_estimate(ctx, own, 1 / (1 - VECTORIZE_SAVED_SHARE))
        suggestion = fix_suggestion(
            ctx, rule_id, stats, code + must, estimated, trial=trial, adds_threads=False
        )
        found.append(replace(suggestion, refused_as_written=refusal))
    return found


def check_cache(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    """Needs the what-if facts (size, memory): the trial carries them even when not run."""
    point = stage_facts.cache_point(ctx.stages)
    if any(s.kind == "cache" for s in ctx.stages) or point is None:
        return []
    trial = ctx.trial(fixes.FIX_CACHE, point)
    if not _cacheable(trial):
        return []
    stats, prefix_s = ctx.stages[point], stage_facts.prefix_cost_s(ctx.stages, point)
    share, total = ctx.share(prefix_s), ctx.time_per_batch_s
    if share is None or total is None or share < CACHE_MIN_SHARE:
        return []
    code = _cache_code(ctx.stages, stats, trial)
    estimated = total / max(total - prefix_s, total * CACHE_READ_FLOOR)
    return [fix_suggestion(ctx, rule_id, stats, code, estimated, trial=trial, adds_threads=False)]


def _cache_code(stages: list[StageStats], stats: StageStats, trial: FixTrial) -> str:
    """The cache's line; where the point lies inside a Keras call the script made, after the
    call, as the call's recipe, or, where the script cannot reach it, where it goes."""
    site = f"your call at {stats.created_at}" if stats.created_at else "your call"
    if (recipe := library_cache(stages, stats.index, trial.facts.elements)) is not None:
        asked, then = recipe
        if not asked:
            return f"{then}  # right after {site}"
        call = f"ds = tf.keras.utils.{stats.made_by}(...{asked})"
        return f"{call}  # {site}, its windows in order\n{then}  # shuffled anew each epoch"
    if stage_facts.call_stages_after(stages, stats.index):
        return (
            f"ds = ds.cache()  # inside {stats.made_by} ({site}), right after "
            f"{stage_name(stats)}, before its own shuffle: write that part of it yourself"
        )
    where = f"right after {stage_name(stats)}, before shuffle/augment"
    if trial.facts.cached_in_batches:
        where = f"right after the batch that follows {stage_name(stats)}"
    return f"ds = ds.cache()  # {where}"


def _cacheable(trial: FixTrial | None) -> TypeGuard[FixTrial]:
    """Fits in memory, and its Python upstream, where checked, gave the same values twice."""
    return (
        trial is not None
        and bool(trial.fits_in_memory)
        and trial.facts.python_repeatable is not False
    )


def check_hoist_cache(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    """A map moved above its shuffle and cached, unmeasured on training (too slow to fill): its
    hold measured what the cache gives from epoch 2 (docs/design.md, "Every applicable rewrite")."""
    found = []
    for trial in ctx.report.pipeline.trials:
        if trial.fix != fixes.FIX_HOIST_CACHE or trial.stage_index is None or not _cacheable(trial):
            continue
        if trial.training is not None or not 0 <= trial.stage_index < len(ctx.stages):
            continue
        stats = ctx.stages[trial.stage_index]
        share = ctx.share(stats.own_s_per_batch)
        if stage_facts.if_free_bound(ctx.stages, stats.index) is None:
            continue  # no stage's hold measured what the cache would give
        bound = stage_bound(ctx, stats)
        if share is None or share < CACHE_MIN_SHARE:
            continue
        if bound is None or bound.speedup < stage_facts.VERIFIED_MIN_GAIN:
            continue
        code = "\n".join(_hoisted_lines(ctx, stats))
        # The hold is the cache's gain from epoch 2, and ranks it (`advisor._sort_key`).
        suggestion = fix_suggestion(ctx, rule_id, stats, code, trial=None, adds_threads=False)
        found.append(
            replace(suggestion, gain=bound.gain, estimate=bound.speedup, fix=fixes.FIX_HOIST_CACHE)
        )
    return found


def _hoisted_lines(ctx: Context, stats: StageStats) -> list[str]:
    hoist: FixName = fixes.FIX_HOIST_CACHE
    change = StageChange(hoist, stats.index, fixes.FIXES[hoist].semantics)
    lines = rewritten_chain(ctx.stages, [change])
    if not (changed := [i for i, line in enumerate(lines) if line.change == hoist]):
        return ["ds = ds.cache()  # after the map, with the map moved above the shuffle"]
    return [line.text for line in lines[changed[0] : changed[-1] + 1]]


def check_cache_after_random(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    found = []
    for stats in ctx.stages:
        random = random_before_cache(ctx.stages, stats) if stats.kind == "cache" else []
        if not random:
            continue
        code = (
            f"ds = ds.cache()  # move it before {stage_name(random[0])}; "
            "random steps go after the cache"
        )
        found.append(replace(_stage_warning(rule_id, stats, code), correctness_warning=True))
    return found


def random_before_cache(stages: list[StageStats], cache: StageStats) -> list[StageStats]:
    """The random stages whose output the cache freezes. A shuffle after the cache reorders
    the cached elements every epoch, so only an order frozen before it is replayed; random
    values (augmentation) still are."""
    after = stage_facts.downstream_of(stages, cache.index)
    reshuffled = any(stages[i].kind in stage_facts.SHUFFLE_KINDS for i in after)
    return [
        stages[i]
        for i in sorted(stage_facts.upstream_of(stages, cache.index) - {cache.index})
        if stages[i].random or (stages[i].kind in stage_facts.SHUFFLE_KINDS and not reshuffled)
    ]


def check_py_function(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    found = []
    python = _stages_to_fix(
        ctx, lambda s: s.uses_py_function and s.kind in (*stage_facts.MAP_KINDS, "source")
    )
    for stats in python:
        bound = stage_bound(ctx, stats)
        code = (
            f"# rewrite {fn_name(stats)} with TensorFlow ops (tf.io.decode_*, tf.image.*, "
            "tf.strings.*) instead of tf.py_function / tf.numpy_function"
        )
        suggestion = fix_suggestion(ctx, rule_id, stats, code, trial=None, adds_threads=False)
        found.append(replace(suggestion, gain=bound.gain) if bound is not None else suggestion)
    return found


def check_shuffle_buffer(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    found = []
    for stats in ctx.stages:
        if stats.kind not in stage_facts.SHUFFLE_KINDS or stats.made_by is not None:
            # A library call's own shuffle (image_dataset_from_directory's 8 x batch_size)
            # is not the script's to size.
            continue
        buffer = stats.settings.buffer_size
        if buffer is None or buffer <= 0 or not any(shuffle_shortfall(stats, ctx.stages)):
            continue
        batch = stage_facts.downstream_batch_size(ctx.stages, stats.index)
        wanted = max(SHUFFLE_MIN_ELEMENTS, SHUFFLE_MIN_BATCHES * (batch or 0))
        code = f"ds = ds.shuffle({wanted})  # or the dataset size, if it fits in memory"
        found.append(_stage_warning(rule_id, stats, code))
    return found


def shuffle_shortfall(stats: StageStats, stages: list[StageStats]) -> tuple[bool, bool]:
    """Whether the buffer holds under SHUFFLE_MIN_ELEMENTS, and SHUFFLE_MIN_BATCHES batches."""
    buffer = stats.settings.buffer_size or 0
    batch = stage_facts.downstream_batch_size(stages, stats.index)
    few_batches = batch is not None and batch > 0 and buffer < SHUFFLE_MIN_BATCHES * batch
    return buffer < SHUFFLE_MIN_ELEMENTS, few_batches


def _stage_warning(rule_id: RuleId, stats: StageStats, code: str) -> Suggestion:
    """A suggestion that changes what is trained on, not the speed."""
    return Suggestion(
        id=rule_id, stage=stage_name(stats), stage_index=stats.index, code=code, kind="warning"
    )


def check_autotune_off(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    if ctx.options.autotune:
        return []
    code = "options.autotune.enabled = True  # or drop the line that turns it off"
    trial = ctx.trial(fixes.FIX_AUTOTUNE, None)
    return [fix_suggestion(ctx, rule_id, None, code, trial=trial, adds_threads=True)]
