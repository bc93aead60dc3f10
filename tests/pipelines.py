"""Small real tf.data pipelines, one per smell, and a helper that turns one into a Report.

Costs are made with sleeps (milliseconds, GIL released) or deliberately heavy TF ops, so a
smell's stage dominates by a wide margin even on a loaded 2-core machine. Every builder
imports TensorFlow lazily, so importing this module costs nothing in the TF-free tests.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pytest

from pipediag.report.model import PipelineBenchmark, Report, TrainSection, Verdict

SLEEP_S = 0.005  # per element in the Python-bound stages
BATCH = 4
# A short budget per prefix and per fix keeps each pipeline at a few seconds on 2 cores.
STAGE_BUDGET_S = 0.25
VERIFY_BUDGET_S = 2.0
BENCH_SECONDS = 0.5
# How long a diagnosis waits for the collection before it: what it frees costs CPU for
# about this long, and a tear-down that waits out autotune's sleep costs none.
COLLECT_WAIT_S = 2.0


def _tf() -> Any:
    import tensorflow as tf

    return tf


def _sleepy(value: Any) -> Any:
    time.sleep(SLEEP_S)
    return value


def slow_py_map(x: Any) -> Any:
    """A Python-bound per-element map (sleeps, like I/O): stateful, so never auto-parallel."""
    tf = _tf()
    return tf.py_function(_sleepy, [x], tf.int64)


def sequential_map() -> Any:
    """The map runs one element at a time: map_parallelization skips py_function maps."""
    tf = _tf()
    return (
        tf.data.Dataset.range(1000)
        .repeat()
        .map(slow_py_map)
        .batch(BATCH)
        .prefetch(tf.data.AUTOTUNE)
    )


def read_shard(shard: Any) -> Any:
    """A "file" whose records take SLEEP_S each to read."""
    tf = _tf()
    return tf.data.Dataset.range(20).map(lambda x: tf.py_function(_sleepy, [x + shard], tf.int64))


def sequential_interleave() -> Any:
    """interleave without num_parallel_calls reads one shard at a time."""
    tf = _tf()
    return (
        tf.data.Dataset.range(64)
        .repeat()
        .interleave(read_shard, cycle_length=2)
        .batch(BATCH)
        .prefetch(tf.data.AUTOTUNE)
    )


def no_prefetch() -> Any:
    """inject_prefetch turned off and no prefetch at the end: the step waits serially."""
    tf = _tf()
    options = tf.data.Options()
    options.experimental_optimization.inject_prefetch = False
    return (
        tf.data.Dataset.range(1000)
        .repeat()
        .map(slow_py_map, num_parallel_calls=tf.data.AUTOTUNE)
        .batch(BATCH)
        .with_options(options)
    )


def scale(x: Any) -> Any:
    """A cheap elementwise function: per-element overhead dominates its cost.

    A short chain of elementwise ops (each gives the same result on a whole batch), so the
    stage's own cost per element stands clear of the timing noise of reading one element at
    a time: with `x * 2 + 1` alone it was sometimes measured near zero when other tests'
    threads were still winding down, and the rule did not fire. With 12 links it read 1.2x the
    batch after it on a loaded CI host; 24 keep it the costliest stage by construction.
    """
    tf = _tf()
    y = tf.cast(x, tf.float32)
    for _ in range(24):
        y = tf.math.tanh(y * 0.5) * 2.0 + 1.0
    return y


def per_element_map() -> Any:
    """A cheap elementwise map before the batch: worth vectorising."""
    tf = _tf()
    return (
        tf.data.Dataset.range(1000)
        .repeat()
        .map(scale, num_parallel_calls=tf.data.AUTOTUNE)
        .batch(256)
        .prefetch(tf.data.AUTOTUNE)
    )


def decode(x: Any) -> Any:
    """Deterministic and costly TF work (a 320x320 matmul per element, ~1 ms)."""
    tf = _tf()
    matrix = tf.fill([320, 320], tf.cast(x % 7, tf.float32) + 1.0)
    return tf.reduce_sum(tf.matmul(matrix, matrix))


def uncached_prefix(elements: int = 400) -> Any:
    """A finite dataset with a costly deterministic map and no cache: cache after decode."""
    tf = _tf()
    return (
        tf.data.Dataset.range(elements)
        .map(decode, num_parallel_calls=tf.data.AUTOTUNE)
        .batch(BATCH)
        .repeat()
        .prefetch(tf.data.AUTOTUNE)
    )


def augment(x: Any) -> Any:
    tf = _tf()
    return x + tf.random.uniform([], maxval=10, dtype=tf.int64)


def cache_after_random() -> Any:
    """The augmentation runs before the cache: epoch 1's randomness is replayed forever."""
    tf = _tf()
    return (
        tf.data.Dataset.range(200)
        .map(augment, num_parallel_calls=tf.data.AUTOTUNE)
        .cache()
        .batch(BATCH)
        .repeat()
        .prefetch(tf.data.AUTOTUNE)
    )


def parallel_py_function() -> Any:
    """Already parallel, but Python-bound: porting to TF ops is the fix."""
    tf = _tf()
    return (
        tf.data.Dataset.range(1000)
        .repeat()
        .map(slow_py_map, num_parallel_calls=tf.data.AUTOTUNE)
        .batch(BATCH)
        .prefetch(tf.data.AUTOTUNE)
    )


def tiny_shuffle() -> Any:
    tf = _tf()
    return tf.data.Dataset.range(100_000).repeat().shuffle(16).batch(32).prefetch(tf.data.AUTOTUNE)


def autotune_off() -> Any:
    tf = _tf()
    options = tf.data.Options()
    options.autotune.enabled = False
    return (
        tf.data.Dataset.range(1000)
        .repeat()
        .map(decode, num_parallel_calls=tf.data.AUTOTUNE)
        .batch(BATCH)
        .prefetch(tf.data.AUTOTUNE)
        .with_options(options)
    )


def well_tuned() -> Any:
    """Batch first, a vectorised parallel map, prefetch at the end, infinite: nothing to fix."""
    tf = _tf()
    return (
        tf.data.Dataset.range(1000)
        .repeat()
        .batch(64)
        .map(scale, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )


def diagnose(
    dataset: Any,
    *,
    label: str = "input-bound",
    compute_factor: float = 3.0,
    overlapped: bool = True,
) -> Report:
    """Phase 1 as the session runs it (stages, benchmark, what-ifs), plus a train section.

    The train step is not run: an input-bound run gets a train step `compute_factor` times
    faster than the pipeline, a compute-bound one that much slower, so the rules see a
    realistic verdict without a model.
    """
    import gc
    import threading

    from pipediag.bench import teardown
    from pipediag.bench.pipeline import benchmark_dataset
    from pipediag.bench.stages import measure_stages
    from pipediag.bench.structure import effective_options, walk
    from pipediag.bench.whatif import verify_fixes

    # The pipelines of earlier diagnoses in this process (their threads, the iterators still
    # being released) must not share the cores with this one's timing. Collected on a helper
    # thread: freeing an idle iterator can wait out autotune's sleep, up to 60 s, which holds
    # only the thread that frees it (tests/conftest.py, `_FullCollections`).
    collector = threading.Thread(target=gc.collect, name="pipelines-collection", daemon=True)
    collector.start()
    collector.join(COLLECT_WAIT_S)
    teardown.SHARED.drain()
    walked = walk(dataset, effective_options(dataset))
    stages = measure_stages(walked, max_seconds_per_stage=STAGE_BUDGET_S)
    bench = benchmark_dataset(dataset, max_seconds=BENCH_SECONDS)
    trials = verify_fixes(walked, stages, budget_s=VERIFY_BUDGET_S)
    pipeline = PipelineBenchmark(
        measured=bench.measured,
        batches_per_s=bench.batches_per_s,
        stages=stages,
        options=walked.options,
        trials=trials,
    )
    rate = bench.batches_per_s or 1.0
    if label == "compute-bound":
        compute, wait = rate / compute_factor, 0.01
    else:
        compute, wait = rate * compute_factor, 0.6
    # Without a prefetch the step waits for each batch, then computes: the times add up.
    train_rate = min(rate, compute) * 0.95 if overlapped else 1 / (1 / rate + 1 / compute)
    verdict = Verdict(
        label=label,
        input_wait_fraction=wait,
        compute_alone_steps_per_s=compute,
        pipeline_headroom=rate / compute,
    )
    return Report(
        script="train.py",
        verdict=verdict,
        pipeline=pipeline,
        train=TrainSection(steps_per_s=train_rate, measured_steps=50),
    )


def only_fixes(monkeypatch: pytest.MonkeyPatch, *fixes: str) -> None:
    """`verify_fixes` tries only `fixes` of the rewrites that apply (those training asks for
    still join them): another rewrite's trial would take a share of the test's budget."""
    from pipediag.bench import whatif

    found = whatif.fix_candidates
    monkeypatch.setattr(
        whatif, "fix_candidates", lambda *args: [c for c in found(*args) if c.fix in fixes]
    )


def bands_reached(label: str, interval: Sequence[float] | None) -> set[str]:
    """A verdict's label, and every band its cost's 90% interval reaches: what a verdict on a
    noisy host is consistent with (the headline names them: COMPUTE-BOUND TO BALANCED)."""
    from pipediag.analysis.input_cost import label_of

    if not interval:
        return {label}
    ends = [label_of(bound, high=0.20, moderate=0.05) for bound in interval]
    bands = ["compute-bound", "balanced", "input-bound"]
    low, high = sorted(bands.index(end) for end in ends)
    return {label, *bands[low : high + 1]}


def host_was_busy(label: str, uncertain_because: str | None) -> bool:
    """Uncertain because other processes kept the host busy: a loaded host's honest answer
    (docs/design.md, "A busy host"), which a test of any verdict on real timings allows."""
    return label == "uncertain" and uncertain_because == "busy-host"


def input_bound_or_host_busy(label: str, uncertain_because: str | None) -> bool:
    """Input-bound, or a loaded host's honest uncertain (`host_was_busy`)."""
    return label == "input-bound" or host_was_busy(label, uncertain_because)
