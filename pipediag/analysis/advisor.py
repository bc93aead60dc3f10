"""The advisor: a table of rules over the report, each a small function with a stable id.

Every rule reads only the report (no TensorFlow): the stages and their measured own costs
(`bench/stages.py`), the `tf.data.Options` in force, the what-if trials (`bench/whatif.py`),
the verdict and the host samples. It returns suggestions that carry the numbers behind them
and the exact code to write.

Speedups, three kinds, kept apart because they differ a lot on few cores:

- `estimated_speedup`: the pipeline-alone speedup predicted from stage costs (Plumber: a
  stage's time per batch, divided by the parallelism it would get);
- `verified_speedup`: the pipeline-alone speedup measured on a rewritten copy of the user's
  pipeline, beside the original, in this run;
- `predicted_speedup`: the end-to-end training speedup, DS-Analyzer's rule
  `new rate = min(compute-alone rate, fixed pipeline rate)` over the measured train rate,
  then discounted because the pipeline and the train step share the cores (a pipeline-alone
  1.6x gave 1.18x end to end on 2 cores: docs/design.md, "Costs that are not waiting"). It
  is capped by compute.

When the verdict is compute-bound no input fix is invented: one note says the pipeline is
fine and what its headroom is. Correctness warnings (a cache after a random transform) and a
tiny shuffle buffer are reported whatever the verdict, because they change what the model
is trained on, not how fast. Output is sorted: correctness warnings, then by predicted gain,
then by rule order and stage, so it is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from pipediag.analysis.cost_rules import (
    check_contention,
    check_fetch,
    training_text,
    why_no_input_fix,
)
from pipediag.report.model import (
    COMPUTE_BOUND,
    FixTrial,
    Report,
    StageStats,
    Suggestion,
    SuggestionKind,
    timed_steps,
)
from pipediag.report.names import stage_name
from pipediag.report.stage_facts import (
    MAP_KINDS,
    SHUFFLE_KINDS,
    STAGE_MIN_SHARE,
    VECTORIZE_MAX_ELEMENT_S,
    VERIFIED_MIN_GAIN,
    cache_point,
    downstream_batch_size,
    int_setting,
    prefix_cost_s,
    runs_sequential_interleave,
    runs_sequential_map,
    vectorizable,
)

# --- thresholds ------------------------------------------------------------------------------

# Python-bound stages gain little from parallel calls (the GIL): a sleeping py_function map
# went from 53 to 81 batches/s (1.5x) on 2 cores; CPU-bound Python gains less
# (docs/design.md, "tf.data behaviours").
PY_FUNCTION_PARALLEL_GAIN = 1.5
# On this many cores or fewer the pipeline and the train step fight for the CPU: only this
# share of the ideal DS-Analyzer gain is predicted (pipeline-alone 1.6x gave 1.18x end to end
# on 2 cores, 0.18 / 0.6 = 0.3: docs/design.md, "Costs that are not waiting").
FEW_CORES = 4
FEW_CORES_GAIN_SHARE = 0.3
# With more cores contention is lower; not measured: assumed half-way to the ideal gain.
MANY_CORES_GAIN_SHARE = 0.6
# All cores busy at least this much on average during the measured steps: the CPU is
# saturated and more tf.data parallelism cannot add cores (psutil per-core %, the usual
# ">90% busy" saturation line of capacity planning).
CPU_SATURATED_PCT = 90.0
# Share of a cheap map's cost that vectorising is assumed to remove; conservative, since the
# guide's example gains far more and the arithmetic itself remains.
VECTORIZE_SAVED_SHARE = 0.5
# A cache is worth its memory when the deterministic prefix costs at least this share of the
# time per batch: below it the gain from epoch 2 is under 1.25x (1 / (1 - 0.2)).
CACHE_MIN_SHARE = 0.20
# A cached stream still costs something to read; never predict it as free.
CACHE_READ_FLOOR = 0.05
# Shuffle buffers: tf.data's guide and common practice ask for a buffer much larger than a
# batch; pipediag flags fewer than 10 batches' worth, or fewer than 1000 elements.
SHUFFLE_MIN_BATCHES = 10
SHUFFLE_MIN_ELEMENTS = 1000

# Suggestion kinds.
FIX: Final = "fix"
WARNING: Final = "warning"
NOTE: Final = "note"


# --- the context every rule reads ------------------------------------------------------------


@dataclass(frozen=True)
class Context:
    """Figures derived once from the report, shared by every rule."""

    report: Report
    stages: list[StageStats]
    options: dict[str, str]
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
        """Share of the pipeline's time per batch that `seconds` per batch is."""
        total = self.time_per_batch_s
        if seconds is None or not total:
            return None
        return seconds / total

    def trial(self, fix: str, stage_index: int | None) -> FixTrial | None:
        return self.trials.get((fix, stage_index))


@dataclass(frozen=True)
class Rule:
    """One check. `when`: "input" runs only when input may limit training (not compute-bound),
    "compute-bound" only then, "always" whatever the verdict (correctness)."""

    id: str
    when: str
    check: Callable[[Context, str], list[Suggestion]]


def advise(report: Report) -> list[Suggestion]:
    """Every suggestion the rules make for this report, best first.

    Args:
        report: a report with its verdict, pipeline stages and (optionally) fix trials.

    Returns:
        Correctness warnings first, then fixes and warnings by predicted end-to-end gain, then
        notes; ties by rule order and stage.
    """
    context = build_context(report)
    compute_bound = report.verdict.label == COMPUTE_BOUND
    found: list[tuple[int, Suggestion]] = []
    for position, rule in enumerate(RULES):
        if rule.when == "input" and compute_bound:
            continue
        if rule.when == "compute-bound" and not compute_bound:
            continue
        found.extend((position, s) for s in rule.check(context, rule.id))
    found.extend((len(RULES), s) for s in why_no_input_fix(context, [s for _, s in found]))
    found.sort(key=lambda item: _sort_key(item[0], item[1]))
    return [s for _, s in found]


def build_context(report: Report) -> Context:
    pipeline = report.pipeline
    options = dict(pipeline.options)
    cores = (
        int_setting(options.get("cpu_count"))
        or report.host.cpu_count
        or report.environment.cpu_count
    )
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
    samples = [s for s in report.host.samples if s.per_core_pct]
    if not samples:
        return None
    timed = timed_steps(report.train.steps)
    if timed:
        begin = timed[0].start_s
        end = timed[-1].start_s + timed[-1].duration_s
        inside = [s for s in samples if begin <= s.t_s <= end]
        samples = inside or samples
    means = [sum(s.per_core_pct) / len(s.per_core_pct) for s in samples]
    return sum(means) / len(means)


# --- predictions -----------------------------------------------------------------------------


def predict_end_to_end(
    ctx: Context, pipeline_speedup: float | None, *, adds_threads: bool
) -> float | None:
    """DS-Analyzer: new rate = min(compute alone, fixed pipeline), over the measured rate,
    discounted for shared cores; 1.0 when the CPU is saturated and the fix only adds threads."""
    if pipeline_speedup is None or not ctx.pipeline_rate or not ctx.train_rate:
        return None
    if not ctx.compute_rate:
        return None
    if adds_threads and ctx.saturated:
        return 1.0
    ideal = min(ctx.compute_rate, ctx.pipeline_rate * pipeline_speedup) / ctx.train_rate
    if ideal <= 1.0:
        return 1.0
    share = FEW_CORES_GAIN_SHARE if ctx.cores <= FEW_CORES else MANY_CORES_GAIN_SHARE
    return 1.0 + (ideal - 1.0) * share


def prediction_text(ctx: Context, pipeline_speedup: float | None, predicted: float | None) -> str:
    if predicted is None or pipeline_speedup is None or not ctx.pipeline_rate:
        return ""
    assert ctx.compute_rate is not None and ctx.train_rate is not None
    fixed = ctx.pipeline_rate * pipeline_speedup
    text = (
        f" End to end: min(train step alone {ctx.compute_rate:.1f} steps/s, fixed pipeline "
        f"{fixed:.1f} batches/s) vs {ctx.train_rate:.1f} steps/s measured"
    )
    if ctx.saturated and predicted == 1.0:
        return text + "; but the CPU is saturated, so more threads cannot run: ~1.0x."
    return text + (
        f"; expect ~{predicted:.2f}x, discounted because the pipeline and the train step share "
        f"{ctx.cores} cores, and never more than compute allows."
    )


def _parallel_estimate(ctx: Context, own_s: float | None, parallelism: float) -> float | None:
    """Pipeline speedup when a stage's own time per batch is divided by `parallelism`."""
    total = ctx.time_per_batch_s
    if own_s is None or not total or parallelism <= 1:
        return None
    # Prefix rates of element-yielding stages keep some per-element Python overhead
    # (bench/stages.py), so an own cost can exceed the whole pipeline's time: clamp it.
    own_s = min(own_s, total)
    fixed = total - own_s + own_s / parallelism
    return total / fixed if fixed > 0 else None


def _trial_text(trial: FixTrial | None) -> str:
    if trial is None:
        return " Not verified: no what-if run."
    if trial.verified and trial.speedup is not None:
        return (
            f" Verified on a rewritten copy of your pipeline: {trial.baseline_batches_per_s:.1f}"
            f" -> {trial.variant_batches_per_s:.1f} batches/s ({trial.speedup:.2f}x, medians of"
            f" {trial.rounds} interleaved runs)."
        )
    return f" Not verified: {trial.reason}."


def _verified(trial: FixTrial | None) -> float | None:
    return trial.speedup if trial is not None and trial.verified else None


def _measured_no_gain(trial: FixTrial | None) -> bool:
    speedup = _verified(trial)
    return speedup is not None and speedup < VERIFIED_MIN_GAIN


def _fix(
    ctx: Context,
    rule_id: str,
    *,
    title: str,
    stats: StageStats | None,
    evidence: str,
    code: str,
    estimated: float | None,
    trial: FixTrial | None,
    adds_threads: bool,
    measured_gate: bool = True,
) -> Suggestion:
    """A fix suggestion with its speedups; a fix measured not to help becomes a note.

    Measured on training beats measured on the pipeline, which beats estimated: a fix tried
    on training is judged by that gain alone (an added prefetch shows nothing on the
    pipeline alone, and a parallel map may gain there yet take the train step's cores).
    """
    verified = _verified(trial)
    basis = verified if verified is not None else estimated
    predicted = predict_end_to_end(ctx, basis, adds_threads=adds_threads)
    on_training = trial.training_speedup if trial is not None else None
    kind: SuggestionKind = FIX
    if on_training is not None:
        assert trial is not None
        evidence += _trial_text(trial) + training_text(trial)
        if on_training < VERIFIED_MIN_GAIN:
            kind = NOTE
            title += f" (measured {on_training:.2f}x on your training: not worth it)"
    elif measured_gate and _measured_no_gain(trial):
        # Measured not to help: no end-to-end forecast, which could read as a gain.
        kind, predicted = NOTE, 1.0
        title += f" (measured {verified:.2f}x here: not worth it)"
        evidence += _trial_text(trial)
    else:
        evidence += _trial_text(trial) + prediction_text(ctx, basis, predicted)
        if trial is not None and trial.training_reason:
            evidence += f" Not tried on training: {trial.training_reason}."
    return Suggestion(
        id=rule_id,
        title=title,
        stage=stage_name(stats) if stats is not None else None,
        stage_index=stats.index if stats is not None else None,
        evidence=evidence.strip(),
        code=code,
        estimated_speedup=estimated,
        verified_speedup=verified,
        predicted_speedup=predicted,
        training_speedup=on_training,
        kind=kind,
    )


def _stage_cost_text(ctx: Context, stats: StageStats) -> str:
    own = stats.own_s_per_batch
    share = ctx.share(own)
    where = f" at {stats.source}" if stats.source else ""
    text = f"{stage_name(stats)}{where}"
    if own is not None:
        text += f" adds {own * 1000:.1f} ms per batch"
        # Up to 5% over the whole is a difference of noisy rates, not a real excess: "all of
        # it" ("11.2 ms, more than the pipeline's 11.2 ms" read as a contradiction).
        if share is not None and ctx.time_per_batch_s is not None and share <= 1.05:
            text += f" of the pipeline's {ctx.time_per_batch_s * 1000:.1f} ms ({min(share, 1):.0%})"
        elif ctx.time_per_batch_s is not None:
            # Timed up to this stage, tf.data cannot overlap it with what follows (no
            # injected prefetch, no map-and-batch fusion), so it can exceed the whole.
            text += (
                f" when timed up to this stage, more than the whole pipeline's "
                f"{ctx.time_per_batch_s * 1000:.1f} ms, where tf.data overlaps it with the "
                "stages after it: it is nearly all of the pipeline's cost"
            )
    if ctx.pipeline_rate:
        text += f"; the pipeline alone delivers {ctx.pipeline_rate:.1f} batches/s"
    return text + "."


def _worth_fixing(ctx: Context, stats: StageStats) -> bool:
    share = ctx.share(stats.own_s_per_batch)
    return share is None or share >= STAGE_MIN_SHARE


def _fn(stats: StageStats) -> str:
    """The user's function name for the code line; a lambda gets a placeholder."""
    name = stats.function
    return name if name and all(p.isidentifier() for p in name.split(".")) else "fn"


# --- the rules ---------------------------------------------------------------------------------


def check_sequential_map(ctx: Context, rule_id: str) -> list[Suggestion]:
    found = []
    for stats in ctx.stages:
        if stats.settings.get("tf_internal") == "true":
            continue
        if not runs_sequential_map(stats, ctx.cores) or not _worth_fixing(ctx, stats):
            continue
        why = stats.settings.get(
            "auto_parallel", f"num_parallel_calls={stats.settings.get('num_parallel_calls')}"
        ).removeprefix("no: ")
        gain = min(ctx.cores, PY_FUNCTION_PARALLEL_GAIN) if stats.uses_py_function else ctx.cores
        evidence = (
            f"{_stage_cost_text(ctx, stats)} It runs one element at a time (tf.data's "
            f"map_parallelization does not parallelise it: {why})."
        )
        if stats.uses_py_function:
            evidence += " It calls Python, so the GIL limits what parallel calls gain."
        found.append(
            _fix(
                ctx,
                rule_id,
                title=f"{stage_name(stats)}: add num_parallel_calls=tf.data.AUTOTUNE",
                stats=stats,
                evidence=evidence,
                code=f"ds = ds.map({_fn(stats)}, num_parallel_calls=tf.data.AUTOTUNE)",
                estimated=_parallel_estimate(ctx, stats.own_s_per_batch, gain),
                trial=ctx.trial("parallel-map", stats.index),
                adds_threads=True,
            )
        )
    return found


def check_sequential_interleave(ctx: Context, rule_id: str) -> list[Suggestion]:
    found = []
    for stats in ctx.stages:
        if stats.settings.get("tf_internal") == "true":
            continue
        if not runs_sequential_interleave(stats, ctx.cores) or not _worth_fixing(ctx, stats):
            continue
        settings = ", ".join(
            f"{k}={stats.settings[k]}"
            for k in ("cycle_length", "num_parallel_calls")
            if k in stats.settings
        )
        evidence = (
            f"{_stage_cost_text(ctx, stats)} It reads its inputs one at a time"
            f"{f' ({settings})' if settings else ''}; on {ctx.cores} cores an AUTOTUNE "
            "cycle_length did not run in parallel either (measured on TF 2.21). A parallel "
            "interleave reads in another (still deterministic) order."
        )
        found.append(
            _fix(
                ctx,
                rule_id,
                title=f"{stage_name(stats)}: read {ctx.cores} inputs in parallel",
                stats=stats,
                evidence=evidence,
                code=(
                    f"ds = ds.interleave({_fn(stats)}, cycle_length={ctx.cores}, "
                    "num_parallel_calls=tf.data.AUTOTUNE)"
                ),
                estimated=_parallel_estimate(ctx, stats.own_s_per_batch, ctx.cores),
                trial=ctx.trial("parallel-interleave", stats.index),
                adds_threads=True,
            )
        )
    return found


def check_prefetch_at_end(ctx: Context, rule_id: str) -> list[Suggestion]:
    """Only when the options really leave no prefetch (inject_prefetch appends one, and an
    added prefetch then measured 0.99x: docs/design.md, "tf.data behaviours"), or when a measured
    run shows a gain."""
    last = next((s for s in reversed(ctx.stages) if s.kind != "options"), None)
    if last is None:
        return []
    trial = ctx.trial("prefetch-end", last.index)
    injected = (
        ctx.options.get("inject_prefetch") != "false" and ctx.options.get("autotune") != "false"
    )
    if last.kind == "prefetch":
        verified = _verified(trial)
        if verified is None or verified < VERIFIED_MIN_GAIN:
            return []
        return [
            _fix(
                ctx,
                rule_id,
                title="raise the final prefetch to tf.data.AUTOTUNE",
                stats=last,
                evidence=f"The final prefetch has buffer_size={last.settings.get('buffer_size')}.",
                code="ds = ds.prefetch(tf.data.AUTOTUNE)",
                estimated=None,
                trial=trial,
                adds_threads=False,
            )
        ]
    if injected:
        # tf.data appends the prefetch itself; a pipeline-alone "gain" here is noise.
        return []
    options = ", ".join(f"{k}={ctx.options.get(k, '?')}" for k in ("inject_prefetch", "autotune"))
    evidence = (
        f"The pipeline ends with {stage_name(last)}, and the options in force ({options}) "
        "leave no prefetch, so the train step waits while each batch is made instead of "
        "overlapping with it. A pipeline-alone run cannot show that overlap: the gain is end "
        "to end."
    )
    # Overlap: the pipeline-alone rate stays, the step stops paying for it serially.
    return [
        _fix(
            ctx,
            rule_id,
            title="add .prefetch(tf.data.AUTOTUNE) as the last step",
            stats=last,
            evidence=evidence,
            code="ds = ds.prefetch(tf.data.AUTOTUNE)  # the last transformation",
            estimated=1.0,
            trial=trial,
            adds_threads=False,
            measured_gate=False,
        )
    ]


def check_vectorize(ctx: Context, rule_id: str) -> list[Suggestion]:
    found = []
    for stats in ctx.stages:
        if not vectorizable(stats, ctx.stages) or not _worth_fixing(ctx, stats):
            continue
        batch = downstream_batch_size(ctx.stages, stats.index)
        own = stats.own_s_per_batch
        if own is None or not batch or own / batch > VECTORIZE_MAX_ELEMENT_S:
            continue
        trial = ctx.trial("vectorize", stats.index)
        if trial is not None and trial.details.get("unsafe") == "true":
            continue  # run on a batch, the function failed or gave other results
        if trial is not None and trial.verified:
            safety = (
                f"On {trial.details.get('sample_elements', 'a sample of')} of your elements "
                "the function gave the same results on whole batches as element by element."
            )
        else:
            safety = "Only safe if the function works on a batch (elementwise ops)."
        evidence = (
            f"{_stage_cost_text(ctx, stats)} That is {own / batch * 1e6:.0f} us per element, "
            f"mostly per-element call overhead; applied after batch({batch}) it runs once per "
            f"batch. {safety}"
        )
        found.append(
            _fix(
                ctx,
                rule_id,
                title=f"{stage_name(stats)}: vectorise, map after batch",
                stats=stats,
                evidence=evidence,
                code=(
                    f"ds = ds.batch({batch}).map({_fn(stats)}, "
                    f"num_parallel_calls=tf.data.AUTOTUNE)  # {_fn(stats)} must accept a batch"
                ),
                estimated=_parallel_estimate(ctx, own, 1 / (1 - VECTORIZE_SAVED_SHARE)),
                trial=trial,
                adds_threads=False,
            )
        )
    return found


def check_cache(ctx: Context, rule_id: str) -> list[Suggestion]:
    """Needs the what-if facts (size, memory): the trial carries them even when not run."""
    if any(s.kind == "cache" for s in ctx.stages):
        return []
    point = cache_point(ctx.stages)
    if point is None:
        return []
    trial = ctx.trial("cache", point)
    if trial is None or trial.details.get("fits") != "true":
        return []
    stats = ctx.stages[point]
    prefix_s = prefix_cost_s(ctx.stages, point)
    share = ctx.share(prefix_s)
    total = ctx.time_per_batch_s
    if share is None or total is None or share < CACHE_MIN_SHARE:
        return []
    estimated = total / max(total - prefix_s, total * CACHE_READ_FLOOR)
    size = _bytes_text(int_setting(trial.details.get("cache_bytes")))
    free = _bytes_text(int_setting(trial.details.get("available_bytes")))
    evidence = (
        f"Everything up to {stage_name(stats)} is deterministic and costs "
        f"{prefix_s * 1000:.1f} ms of the pipeline's {total * 1000:.1f} ms per batch "
        f"({share:.0%}). One epoch there is {trial.details.get('elements')} elements, "
        f"~{size}, with {free} of memory available. From the second epoch "
        "a cache serves it from memory."
    )
    if any(ctx.stages[i].uses_py_function for i in _upstream(ctx.stages, point)):
        evidence += " Assumes the Python functions upstream return the same data each epoch."
    return [
        _fix(
            ctx,
            rule_id,
            title=f"cache() after {stage_name(stats)} (deterministic, {size}, fits) - from epoch 2",
            stats=stats,
            evidence=evidence,
            code=f"ds = ds.cache()  # right after {stage_name(stats)}, before shuffle/augment",
            estimated=estimated,
            trial=trial,
            adds_threads=False,
        )
    ]


def check_cache_after_random(ctx: Context, rule_id: str) -> list[Suggestion]:
    found = []
    for stats in ctx.stages:
        if stats.kind != "cache":
            continue
        random = [
            ctx.stages[i]
            for i in sorted(_upstream(ctx.stages, stats.index) - {stats.index})
            if ctx.stages[i].kind in SHUFFLE_KINDS or ctx.stages[i].settings.get("random") == "true"
        ]
        if not random:
            continue
        names = ", ".join(stage_name(s) for s in random)
        found.append(
            Suggestion(
                id=rule_id,
                title=f"cache() after a random transform ({names}): every epoch repeats epoch 1",
                stage=stage_name(stats),
                stage_index=stats.index,
                evidence=(
                    f"{names} runs before the cache, so its random output is frozen the first "
                    "epoch and replayed afterwards: the same augmentation/order every epoch."
                ),
                code=(
                    f"ds = ds.cache()  # move it before {stage_name(random[0])}; "
                    "random steps go after the cache"
                ),
                correctness_warning=True,
                kind=WARNING,
            )
        )
    return found


def check_py_function(ctx: Context, rule_id: str) -> list[Suggestion]:
    found = []
    for stats in ctx.stages:
        if not stats.uses_py_function or stats.kind not in (*MAP_KINDS, "source"):
            continue
        if not _worth_fixing(ctx, stats):
            continue
        source = "from_generator" if stats.kind == "source" else "tf.py_function/numpy_function"
        found.append(
            _fix(
                ctx,
                rule_id,
                title=f"{stage_name(stats)} runs Python ({source}): port it to TF ops",
                stats=stats,
                evidence=(
                    f"{_stage_cost_text(ctx, stats)} Python code holds the GIL, so parallel "
                    f"calls help little (at most ~{PY_FUNCTION_PARALLEL_GAIN:g}x measured on "
                    "2 cores, for sleeping I/O); TF ops run in parallel outside it and let "
                    "tf.data parallelise the stage for you."
                ),
                code=(
                    f"# rewrite {_fn(stats)} with TensorFlow ops (tf.io.decode_*, tf.image.*, "
                    "tf.strings.*) instead of tf.py_function / tf.numpy_function"
                ),
                estimated=None,
                trial=None,
                adds_threads=False,
            )
        )
    return found


def check_shuffle_buffer(ctx: Context, rule_id: str) -> list[Suggestion]:
    found = []
    for stats in ctx.stages:
        if stats.kind not in SHUFFLE_KINDS:
            continue
        buffer = int_setting(stats.settings.get("buffer_size"))
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
        found.append(
            Suggestion(
                id=rule_id,
                title=f"shuffle buffer of {buffer} is tiny ({' and '.join(reasons)})",
                stage=stage_name(stats),
                stage_index=stats.index,
                evidence=(
                    f"shuffle(buffer_size={buffer}) only mixes elements that are {buffer} apart "
                    "in the source order, so batches stay correlated with file order. It does "
                    f"not matter if the dataset has fewer than {buffer} elements."
                ),
                code=f"ds = ds.shuffle({wanted})  # or the dataset size, if it fits in memory",
                kind=WARNING,
            )
        )
    return found


def check_autotune_off(ctx: Context, rule_id: str) -> list[Suggestion]:
    if ctx.options.get("autotune") != "false":
        return []
    return [
        _fix(
            ctx,
            rule_id,
            title="autotune is turned off: turn it back on",
            stats=None,
            evidence=(
                "options.autotune.enabled=False: AUTOTUNE parallelism and buffer sizes get no "
                "tuning, and tf.data's default optimisations that need it (injected prefetch, "
                "map parallelisation) do not run."
            ),
            code="options.autotune.enabled = True  # or drop the line that turns it off",
            estimated=None,
            trial=ctx.trial("autotune-on", None),
            adds_threads=True,
        )
    ]


def check_cpu_saturated(ctx: Context, rule_id: str) -> list[Suggestion]:
    if not ctx.saturated or ctx.cpu_busy_pct is None:
        return []
    wait = ctx.report.verdict.input_wait_fraction
    wait_text = f"{wait:.0%} of step time waits for input while " if wait is not None else ""
    return [
        Suggestion(
            id=rule_id,
            title="the host CPU is saturated: no tf.data setting can help",
            evidence=(
                f"{wait_text}all {ctx.cores} cores are {ctx.cpu_busy_pct:.0f}% busy on average "
                f"during the measured steps (>= {CPU_SATURATED_PCT:.0f}%)"
                f"{_contention_text(ctx)}. More parallel calls only add threads to busy cores; "
                "the input work itself must shrink or move."
            ),
            code=(
                "# 1. precompute the expensive preprocessing once and store it as TFRecord\n"
                "# 2. offload preprocessing to the accelerator (e.g. Keras preprocessing layers "
                "in the model)\n"
                "# 3. run the pipeline on other machines with tf.data service "
                "(tf.data.experimental.service.distribute)"
            ),
            kind=FIX,
        )
    ]


def _contention_text(ctx: Context) -> str:
    contention = ctx.report.host_contention
    if contention is None or not contention.contended or contention.other_cpu_pct_mean is None:
        return ""
    return (
        f", {contention.other_cpu_pct_mean:.0f}% of the machine by other processes: "
        "free the machine first"
    )


def check_gpu_idle_cause(ctx: Context, rule_id: str) -> list[Suggestion]:
    """When the GPU sat idle mostly for a reason other than input, say which and what helps.

    Input waits are the other rules' business; this one covers HTA's other idle categories
    (host overhead, transfer), read from the GPU analysis of NVML samples.
    """
    analysis = ctx.report.gpu_analysis
    if analysis is None or not analysis.available or analysis.attribution is None:
        return []
    attribution = analysis.attribution
    cause = attribution.dominant
    if cause not in GPU_CAUSE_FIXES or attribution.idle_s <= 0:
        return []
    seconds = attribution.host_overhead_s if cause == "host-overhead" else attribution.transfer_s
    share = seconds / attribution.idle_s
    busy = analysis.gpu_busy_fraction
    title, code = GPU_CAUSE_FIXES[cause]
    evidence = (
        f"The GPU was busy {busy:.0%} of the measured time; {share:.0%} of its idle time "
        f"({seconds:.2f} s) was {cause.replace('-', ' ')}, not waiting for input."
        if busy is not None
        else f"{share:.0%} of the GPU's idle time was {cause.replace('-', ' ')}."
    )
    # Removing that idle time at best: busy share / (busy share + the rest of the idle time).
    gain = None
    if busy and attribution.window_s > 0:
        idle_share = attribution.idle_s / attribution.window_s
        gain = 1.0 / max(1e-9, 1.0 - idle_share * share)
    return [
        Suggestion(
            id=rule_id,
            title=title,
            evidence=evidence,
            code=code,
            estimated_speedup=gain,
            kind=FIX,
        )
    ]


# HTA's non-input idle categories, and the changes that shrink them.
GPU_CAUSE_FIXES = {
    "host-overhead": (
        "the GPU idles on host-side overhead: fewer, larger steps",
        "model.compile(..., steps_per_execution=32, jit_compile=True)  # Keras\n"
        "# or raise the batch size so each step launches more work per Python call",
    ),
    "transfer": (
        "the GPU idles on host-to-device copies: overlap them with compute",
        "ds = ds.apply(tf.data.experimental.prefetch_to_device('/gpu:0'))\n"
        "# or copy fewer bytes: cast to uint8/bfloat16 on the host, decode on the device",
    ),
}


def check_pipeline_fine(ctx: Context, rule_id: str) -> list[Suggestion]:
    verdict = ctx.report.verdict
    parts = []
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
    return [
        Suggestion(
            id=rule_id,
            title=title,
            evidence=(evidence + ". Input fixes would not speed up training.").lstrip(". "),
            kind=NOTE,
        )
    ]


RULES: tuple[Rule, ...] = (
    Rule("PD000-pipeline-fine", "compute-bound", check_pipeline_fine),
    Rule("PD010-cpu-saturated", "input", check_cpu_saturated),
    Rule("PD012-input-contention", "input", check_contention),
    Rule("PD013-per-pull-overhead", "input", check_fetch),
    Rule("PD001-sequential-map", "input", check_sequential_map),
    Rule("PD002-sequential-interleave", "input", check_sequential_interleave),
    Rule("PD005-cache-prefix", "input", check_cache),
    Rule("PD004-vectorize-map", "input", check_vectorize),
    Rule("PD003-no-prefetch", "input", check_prefetch_at_end),
    Rule("PD009-autotune-off", "input", check_autotune_off),
    Rule("PD007-py-function", "input", check_py_function),
    Rule("PD006-cache-after-random", "always", check_cache_after_random),
    Rule("PD008-small-shuffle-buffer", "always", check_shuffle_buffer),
    Rule("PD011-gpu-idle-cause", "always", check_gpu_idle_cause),
)


# --- helpers ---------------------------------------------------------------------------------


def _sort_key(position: int, suggestion: Suggestion) -> tuple[int, float, int, int]:
    group = 0 if suggestion.correctness_warning else (2 if suggestion.kind == NOTE else 1)
    gain = suggestion.training_speedup or suggestion.predicted_speedup
    if gain is None:
        gain = suggestion.verified_speedup or suggestion.estimated_speedup or 1.0
    stage = -1 if suggestion.stage_index is None else suggestion.stage_index
    return (group, -round(gain, 6), position, stage)


def _upstream(stages: Sequence[StageStats], index: int) -> set[int]:
    seen: set[int] = set()
    pending = [index]
    while pending:
        i = pending.pop()
        if i not in seen:
            seen.add(i)
            pending.extend(stages[i].inputs)
    return seen


def _bytes_text(count: int | None) -> str:
    if count is None:
        return "unknown size"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"
