"""What-if pipelines: graph rewrites keep what the pipeline yields, trials never touch the
user's caches, and a real sequential map gets a measured speedup.

Rewrite tests compare elements on small finite datasets (no timing). The timing tests
assert wide margins only: a sequential map sleeping 5 ms per element made parallel (~1.5x
on 2 cores, asserted a gain whose interval is clear of 1), and a cheap elementwise map
vectorised (measured ~29x, > 2x).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pipelines  # tests/ is on sys.path under pytest (rootdir-relative prepend)
import pytest

from pipediag.bench.structure import walk
from pipediag.renderers.reason_words import reason_words
from pipediag.report.reasons import Reason

pytestmark = pytest.mark.tensorflow


def _tf() -> Any:
    return pytest.importorskip("tensorflow")


def _rewritten(dataset: Any, edit: Any) -> Any:
    """The dataset rebuilt from its graph after `edit(graph, nodes_by_op)`."""
    from pipediag.bench.graph_edit import PipelineGraph

    walked = walk(dataset)
    assert walked.graph_error is None
    graph = PipelineGraph.copy_of(walked.graph)
    by_op = {node.op: node.name for node in graph.graph_def.node}
    edit(graph, by_op)
    return graph.rebuild(dataset.element_spec), graph


def _values(dataset: Any) -> list[Any]:
    return [v.tolist() for v in dataset.as_numpy_iterator()]


def test_sequential_map_becomes_parallel_and_yields_the_same() -> None:
    tf = _tf()
    ds = tf.data.Dataset.range(20).map(pipelines.slow_py_map).batch(3)

    variant, graph = _rewritten(ds, lambda g, ops: g.parallelize_map(ops["MapDataset"]))

    ops = {node.op for node in graph.graph_def.node}
    assert "ParallelMapDatasetV2" in ops and "MapDataset" not in ops
    assert _values(variant) == _values(ds)


def test_interleave_becomes_parallel_with_cycle_length_and_keeps_the_elements() -> None:
    tf = _tf()
    ds = tf.data.Dataset.range(4).interleave(
        lambda i: tf.data.Dataset.range(5).map(lambda x: x + 10 * i)
    )

    variant, graph = _rewritten(
        ds, lambda g, ops: g.parallelize_interleave(ops["InterleaveDataset"], 2)
    )

    assert "ParallelInterleaveDatasetV4" in {node.op for node in graph.graph_def.node}
    assert sorted(_values(variant)) == sorted(_values(ds))


def test_prefetch_goes_below_the_options_and_the_options_survive() -> None:
    tf = _tf()
    options = tf.data.Options()
    options.autotune.enabled = False
    ds = tf.data.Dataset.range(10).batch(2).with_options(options)

    variant, graph = _rewritten(ds, lambda g, ops: g.prefetch_at_end())

    prefetch = next(n for n in graph.graph_def.node if n.op == "PrefetchDataset")
    assert prefetch.input[0].startswith("BatchDataset")
    assert variant.options().autotune.enabled is False
    assert _values(variant) == _values(ds)


def test_a_rewrite_of_the_wrong_op_is_refused_with_a_reason() -> None:
    from pipediag.bench.graph_edit import RewriteError

    tf = _tf()
    ds = tf.data.Dataset.range(10).batch(2)

    with pytest.raises(RewriteError) as error:
        _rewritten(ds, lambda g, ops: g.parallelize_map(ops["BatchDatasetV2"]))
    assert error.value.reason == Reason("not-a-known-map", detail="BatchDatasetV2")
    assert reason_words(error.value.reason) == "BatchDatasetV2 is not a map this rewrite knows"


def test_copies_do_not_fill_the_users_memory_cache() -> None:
    tf = _tf()
    calls: list[int] = []

    def count(x: Any) -> Any:
        calls.append(1)
        return x

    ds = tf.data.Dataset.range(5).map(lambda x: tf.py_function(count, [x], tf.int64)).cache()

    # WHEN the detached copy is read to the end (filling its cache), then the user's dataset
    variant, _ = _rewritten(ds, lambda g, ops: g.isolate())
    assert _values(variant) == [0, 1, 2, 3, 4]
    before = len(calls)
    assert _values(ds) == [0, 1, 2, 3, 4]

    # THEN the user's read ran the function again: its cache was empty, not filled by the copy
    assert len(calls) == before + 5


def test_file_cache_not_on_disk_is_bypassed_and_never_written(tmp_path: Path) -> None:
    from pipediag.bench.whatif import verify_fixes
    from pipediag.report.fixes import FIX_PARALLEL_MAP

    tf = _tf()
    ds = (
        tf.data.Dataset.range(50)
        .map(pipelines.slow_py_map)
        .cache(str(tmp_path / "user-cache"))
        .batch(4)
    )

    trials = verify_fixes(walk(ds), budget_s=1.0)

    (trial,) = trials
    assert trial.fix == FIX_PARALLEL_MAP and trial.verified, trial.reason
    assert trial.baseline_cpu_s_per_batch and trial.variant_cpu_s_per_batch  # both sides timed
    assert [note.code for note in trial.facts.isolation] == ["file-cache-bypassed"]
    assert list(tmp_path.iterdir()) == []


def test_the_users_shuffle_order_is_unchanged_by_the_trials() -> None:
    from pipediag.bench.whatif import verify_fixes

    tf = _tf()

    def build() -> Any:
        return tf.data.Dataset.range(200).shuffle(50, seed=1).map(pipelines.slow_py_map).batch(4)

    expected = _values(build())
    ds = build()

    verify_fixes(walk(ds), budget_s=1.0)

    assert _values(ds) == expected


def test_a_failing_rewrite_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipediag.bench import graph_edit, whatif

    def broken(self: Any, name: str) -> None:
        raise graph_edit.RewriteError("not-a-known-map", detail="FancyMapDataset")

    monkeypatch.setattr(graph_edit.PipelineGraph, "parallelize_map", broken)

    (trial,) = whatif.verify_fixes(walk(pipelines.sequential_map()), budget_s=1.0)

    assert not trial.verified
    because = Reason("not-a-known-map", detail="FancyMapDataset")
    assert trial.reason == Reason("cannot-rewrite", because=because)
    assert reason_words(trial.reason) == (
        "cannot rewrite: FancyMapDataset is not a map this rewrite knows"
    )


def test_finite_deterministic_prefix_gets_a_cache_trial_with_its_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pipediag.bench.stages import measure_stages
    from pipediag.bench.whatif import verify_fixes
    from pipediag.report.fixes import FIX_CACHE

    ds = pipelines.uncached_prefix()
    walked = walk(ds)
    stages = measure_stages(walked, max_seconds_per_stage=pipelines.STAGE_BUDGET_S)

    pipelines.only_fixes(monkeypatch, FIX_CACHE)
    (trial,) = verify_fixes(walked, stages, budget_s=1.5)

    assert trial.stage_index == 1 and trial.stage == "parallel-map(decode)"
    assert trial.facts.elements == 400
    assert trial.facts.cache_bytes == 400 * 4  # one float32 per element
    assert trial.fits_in_memory is True
    assert trial.verified, trial.reason
    assert trial.speedup is not None and trial.speedup > 1.5


def test_a_file_source_of_unknown_length_is_counted_for_its_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipediag.bench.stages import measure_stages
    from pipediag.bench.whatif import verify_fixes
    from pipediag.report.fixes import FIX_CACHE

    tf = _tf()
    # GIVEN 400 records in a TFRecord file, decoded by the costly map: tf.data cannot tell
    # the file source's length
    path = str(tmp_path / "records.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for i in range(400):
            writer.write(tf.io.serialize_tensor(tf.constant(i, tf.int64)).numpy())
    records = tf.data.TFRecordDataset([path])
    parsed = records.map(lambda r: tf.io.parse_tensor(r, tf.int64))
    ds = parsed.map(pipelines.decode, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(pipelines.BATCH).repeat().prefetch(tf.data.AUTOTUNE)
    assert int(parsed.cardinality()) == tf.data.UNKNOWN_CARDINALITY
    walked = walk(ds)
    stages = measure_stages(walked, max_seconds_per_stage=pipelines.STAGE_BUDGET_S)

    pipelines.only_fixes(monkeypatch, FIX_CACHE)
    (trial,) = verify_fixes(walked, stages, budget_s=1.5)

    # THEN the records are counted (above both maps), the cache sized and tried
    assert trial.stage == "parallel-map(decode)"
    assert trial.facts.elements == 400
    assert trial.facts.cache_bytes == 400 * 4
    assert trial.verified, trial.reason
    assert trial.speedup is not None and trial.speedup > 1.5


def test_sequential_map_fix_is_verified_faster_on_two_cores() -> None:
    from pipediag.analysis.paired import TRIAL_MIN_ROUNDS
    from pipediag.bench.stages import measure_stages
    from pipediag.bench.whatif import verify_fixes
    from pipediag.report.fixes import FIX_PARALLEL_MAP

    ds = pipelines.sequential_map()
    walked = walk(ds)
    stages = measure_stages(walked, max_seconds_per_stage=pipelines.STAGE_BUDGET_S)

    # A budget it should not need: the trial stops once its gain is clear.
    trials = verify_fixes(walked, stages, budget_s=4.0)

    (trial,) = [t for t in trials if t.fix == FIX_PARALLEL_MAP]
    assert trial.verified, trial.reason
    assert trial.stage == "map(slow_py_map)"
    assert trial.facts.stopped == "clear gain"
    assert trial.rounds >= TRIAL_MIN_ROUNDS
    # A clear gain: its interval's low end above 1 (about 1.5x on 2 cores; the two threads
    # AUTOTUNE gives it there leave a loaded host's gain too close to any fixed bar)
    assert (trial.facts.speedup_low or 0.0) > 1.0
    assert trial.speedup is not None and trial.speedup > 1.0


# --- vectorising: map after batch, checked on the user's elements ---------------------------


def _vectors() -> Any:
    """Ten 4-vectors with distinct sums, batched by 5 after the map."""
    import numpy as np

    return np.arange(1, 41, dtype=np.float32).reshape(10, 4)


def test_vectorised_map_runs_after_the_batch_and_yields_the_same() -> None:
    tf = _tf()
    ds = tf.data.Dataset.from_tensor_slices(_vectors()).map(lambda x: x * 2 + 1).batch(4)

    variant, graph = _rewritten(
        ds, lambda g, ops: g.vectorize(ops["MapDataset"], ops["BatchDatasetV2"])
    )

    by_name = {node.name: node for node in graph.graph_def.node}
    mapped = next(n for n in graph.graph_def.node if n.op == "ParallelMapDatasetV2")
    assert by_name[mapped.input[0]].op == "BatchDatasetV2"  # the map now reads the batch
    assert _values(variant) == _values(ds)  # including the short last batch


def vectorize_check(dataset: Any) -> tuple[Reason | None, bool]:
    """The vectorise check of the map before `dataset`'s batch, on a sample of 10 elements,
    as the vectorise candidate checks it (`bench/fix_candidates.py`), the function traced
    from the graph."""
    from pipediag.bench.vectorize_check import CheckSample

    walked = walk(dataset)
    graph_def, nodes = walked.graph, walked.nodes
    assert walked.graph_error is None
    kinds = [stage.stats.kind for stage in walked.stages]
    mapped, batch = kinds.index("map"), kinds.index("batch")
    map_input = walked.stages[mapped].dataset._input_dataset
    sample = CheckSample.read(graph_def, nodes[mapped], map_input.element_spec, 10, None)
    if isinstance(sample, Reason):
        return sample, False
    return sample.check(nodes[batch], walked.stages[batch].dataset.element_spec)


def test_a_function_that_is_not_elementwise_is_refused_as_unsafe() -> None:
    tf = _tf()
    # GIVEN a map that normalises each vector by its own sum: on a batch, the sum is the batch's
    ds = tf.data.Dataset.from_tensor_slices(_vectors()).map(lambda x: x / tf.reduce_sum(x))

    reason, unsafe = vectorize_check(ds.batch(5))

    assert unsafe
    assert reason is not None and reason.code == "unsafe-keep-map"
    assert reason.because is not None and reason.because.code == "not-elementwise"
    assert reason.because.value == 10
    words = reason_words(reason)
    assert words.startswith("unsafe: on 10 of your elements the function gives other results")
    assert words.endswith(": it is not elementwise; keep the map before the batch")


def test_a_function_that_fails_on_a_batch_is_refused_with_the_error() -> None:
    tf = _tf()
    # GIVEN a map that reshapes each 4-vector to 2x2: a batch of 5 has 20 values
    ds = tf.data.Dataset.from_tensor_slices(_vectors()).map(lambda x: tf.reshape(x, [2, 2]))

    reason, unsafe = vectorize_check(ds.batch(5))

    assert unsafe
    assert reason is not None and reason.code == "unsafe-keep-map"
    assert reason.because is not None and reason.because.code == "fails-on-batch"
    words = reason_words(reason)
    assert words.startswith("unsafe: the function fails on a batch")
    assert "Input to reshape" in words and "{{" not in words  # TF's words, not its plumbing


def test_an_elementwise_function_passes_the_check() -> None:
    tf = _tf()
    ds = tf.data.Dataset.from_tensor_slices(_vectors()).map(lambda x: tf.tanh(x / 40.0) * 3.0)

    assert vectorize_check(ds.batch(5)) == (None, False)


def test_cheap_elementwise_map_is_verified_much_faster_vectorised() -> None:
    from pipediag.bench.stages import measure_stages
    from pipediag.bench.whatif import verify_fixes
    from pipediag.report.fixes import FIX_VECTORIZE

    ds = pipelines.per_element_map()
    walked = walk(ds)
    stages = measure_stages(walked, max_seconds_per_stage=pipelines.STAGE_BUDGET_S)

    (trial,) = verify_fixes(walked, stages, budget_s=2.0)

    assert trial.fix == FIX_VECTORIZE and trial.verified, trial.reason
    assert trial.speedup is not None and trial.speedup > 2.0
    assert trial.facts.sample_elements == 512


# --- time: a deadline shared with stage timing, trials that stop when clear -----------------


def _fake_sides(monkeypatch: pytest.MonkeyPatch, clock: Any, variant_rates: list[float]) -> None:
    """Each run takes exactly the time it is given on the fake clock: the baseline at 100
    batches/s, the variant at each of `variant_rates` in turn."""
    from pipediag.bench import whatif
    from pipediag.bench.pipeline import BatchTiming

    made: list[Any] = []
    original_init = whatif.TrialSide.__init__
    rates = itertools.cycle(variant_rates)

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        made.append(self)

    def run(self: Any, max_seconds: float) -> BatchTiming:
        clock.sleep(max_seconds)
        rate = 100.0 if made.index(self) % 2 == 0 else next(rates)
        batches = 20
        return BatchTiming(0.0, [1 / rate] * batches, batches / rate, exhausted=False)

    monkeypatch.setattr(whatif.TrialSide, "__init__", init)
    monkeypatch.setattr(whatif.TrialSide, "run", run)


def test_an_unclear_trial_runs_until_the_deadline_not_past_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from synthetic_reports import FakeClock

    from pipediag.analysis.paired import TRIAL_MIN_ROUNDS
    from pipediag.bench.whatif import verify_fixes

    clock = FakeClock()
    # GIVEN a fix measured 0.8x and 1.25x in turn: its interval never clears 1
    _fake_sides(monkeypatch, clock, [80.0, 125.0])
    deadline = clock.now() + 5.0

    # WHEN it is tried with the default budget (8 s) and a deadline 5 s away
    (trial,) = verify_fixes(walk(pipelines.sequential_map()), clock=clock, deadline=deadline)

    # THEN it ran more than the minimum rounds, stopped for time, and ended by the deadline
    assert trial.verified, trial.reason
    assert trial.facts.stopped == "budget"
    assert trial.rounds > TRIAL_MIN_ROUNDS
    assert clock.now() <= deadline


def test_a_clear_trial_stops_early_and_records_its_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from synthetic_reports import FakeClock

    from pipediag.analysis.paired import PIPELINE_SLICES, TRIAL_MIN_ROUNDS
    from pipediag.bench.whatif import verify_fixes

    clock = FakeClock()
    start = clock.now()
    _fake_sides(monkeypatch, clock, [200.0])

    (trial,) = verify_fixes(walk(pipelines.sequential_map()), clock=clock, budget_s=8.0)

    assert trial.facts.stopped == "clear gain"
    assert trial.rounds == TRIAL_MIN_ROUNDS
    assert (trial.facts.speedup_low, trial.facts.speedup_high) == (2.0, 2.0)
    assert trial.speedup == pytest.approx(2.0)
    # five rounds of two full slices, then it stopped: half the budget was left unused
    assert clock.now() - start == pytest.approx(TRIAL_MIN_ROUNDS * 2 * PIPELINE_SLICES.longest_s)
    assert TRIAL_MIN_ROUNDS * 2 * PIPELINE_SLICES.longest_s <= 8.0 / 2


def test_a_spent_deadline_leaves_the_trials_unmeasured() -> None:
    from synthetic_reports import FakeClock

    from pipediag.bench.whatif import verify_fixes

    clock = FakeClock()

    (trial,) = verify_fixes(
        walk(pipelines.sequential_map()),
        clock=clock,
        budget_s=None,
        deadline=clock.now(),
    )

    assert not trial.verified
    assert trial.reason == Reason("verification-budget-spent")
    assert reason_words(trial.reason) == "not measured: verification budget spent"


def test_every_fix_built_and_timed_is_kept_even_a_slower_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from synthetic_reports import FakeClock

    from pipediag.bench.whatif import FixPipelines, ForTraining, verify_fixes
    from pipediag.report.fixes import FIX_PARALLEL_MAP

    clock = FakeClock()
    # GIVEN a fix the pipeline alone measures at 0.9x (it may still help training)
    _fake_sides(monkeypatch, clock, [90.0])
    kept: list[FixPipelines] = []

    (trial,) = verify_fixes(
        walk(pipelines.sequential_map()),
        clock=clock,
        training=ForTraining(kept),
    )

    # THEN it is kept for the search on training, with what it takes to apply it again
    (fix,) = kept
    assert trial.speedup == pytest.approx(0.9)
    assert fix.pipeline_speedup == pytest.approx(0.9)
    assert fix.candidate is not None and fix.candidate.edit is not None
    assert fix.graph is not None and fix.applied == (FIX_PARALLEL_MAP,)


def test_counting_a_source_gives_up_after_its_time(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipediag.bench import cache_sizing

    tf = _tf()
    assert cache_sizing.counted_elements(tf.data.Dataset.range(2500)) == 2500
    monkeypatch.setattr(cache_sizing, "COUNT_MAX_S", 0.0)
    assert cache_sizing.counted_elements(tf.data.Dataset.range(10**9)) is None
