"""Every rewrite on a real pipeline, alone and composed: what the rewritten dataset yields.

No timing: each test builds the candidates of a small real pipeline (`fix_candidates` over
its unmeasured stages, costs given where a cache needs a fill time) and compares elements.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

from pipediag.bench.structure import walk
from pipediag.renderers.reason_words import reason_words
from pipediag.report.reasons import Reason

pytestmark = pytest.mark.tensorflow


def _tf() -> Any:
    return pytest.importorskip("tensorflow")


# --- helpers -------------------------------------------------------------------------------


def _candidates(dataset: Any, **stats_changes: Any) -> tuple[list[Any], Any]:
    """The dataset's candidates (each stage given `stats_changes`), and its GraphDef."""
    from pipediag.bench.fix_candidates import fix_candidates

    walked = walk(dataset)
    stages = [replace(s.stats, **stats_changes) for s in walked.stages]
    assert walked.graph_error is None and walked.options is not None
    found = fix_candidates(walked.stages, stages, walked.nodes, walked.options, 2)
    return found, walked.graph


def _kept(dataset: Any, fix: str, stage: int | None = None, **stats_changes: Any) -> Any:
    """The `FixPipelines` verify_fixes would keep for `fix` (no timing), its check run."""
    from pipediag.bench.teardown import TearDown
    from pipediag.bench.whatif import FixPipelines

    found, graph = _candidates(dataset, **stats_changes)
    (candidate,) = [c for c in found if c.fix == fix and stage in (None, c.stage_index)]
    assert candidate.reason is None, candidate.reason
    if candidate.check is not None:
        teardown = TearDown()
        try:
            assert candidate.check(graph, teardown) == (None, False)
        finally:
            teardown.drain()
    return FixPipelines(
        fix=fix,
        stage_index=candidate.stage_index,
        baseline=None,
        variant=None,
        fill_batches=candidate.fill_batches,
        candidate=candidate,
        graph=graph,
        element_spec=dataset.element_spec,
        semantics=candidate.semantics,
    )


def _rows(dataset: Any, count: int | None = None) -> list[Any]:
    """Elements as nested lists, the first `count` (a cache variant repeats forever)."""
    data = dataset if count is None else dataset.take(count)
    return [_plain(e) for e in data.as_numpy_iterator()]


def _plain(element: Any) -> Any:
    if isinstance(element, tuple):
        return tuple(_plain(e) for e in element)
    return element.tolist()


def _unbatched(dataset: Any, count: int | None = None) -> Counter[tuple[bytes, int]]:
    """The multiset of elements across the first `count` batches (order ignored), each as its
    image's bytes and its label: nested lists of every pixel made a million objects here, and
    a full garbage collection of the suite's heap with them once took 41 s."""
    data = dataset if count is None else dataset.take(count)
    out: Counter[tuple[bytes, int]] = Counter()
    for images, labels in data.as_numpy_iterator():
        for image, label in zip(images, labels, strict=True):
            out[(image.tobytes(), int(label))] += 1
    return out


def _without_injected_prefetch(ds: Any) -> Any:
    """`ds` with tf.data's own prefetch at the end turned off: a prefetch added is a change."""
    options = _tf().data.Options()
    options.experimental_optimization.inject_prefetch = False
    return ds.with_options(options)


def _mnist_like(shuffle: bool, count: int = 96) -> Any:
    import numpy as np

    tf = _tf()

    def preprocess(x: Any, y: Any) -> Any:
        x = tf.image.convert_image_dtype(x, tf.float32)
        x = tf.image.resize_with_crop_or_pad(x, 32, 32)
        x = tf.image.per_image_standardization(x)
        return x, y

    images = np.random.default_rng(0).integers(0, 255, (count, 28, 28, 1), dtype=np.uint8)
    ds = tf.data.Dataset.from_tensor_slices((images, np.arange(count)))
    if shuffle:
        ds = ds.shuffle(count, seed=1)
    return ds.map(preprocess).batch(32)


# --- the vectorise check, on the pipeline it used to refuse ----------------------------------


def test_an_image_map_on_a_shuffled_source_is_judged_safe_to_vectorise() -> None:
    # GIVEN the MNIST-like loop: the map's shape logic was traced on one 28x28x1 image
    from pipediag.report.fixes import FIX_VECTORIZE

    kept = _kept(_mnist_like(shuffle=True), FIX_VECTORIZE)  # WHEN checked (asserted safe)

    assert kept.semantics == ("batched",)


def test_the_vectorised_image_map_yields_the_same_batches() -> None:
    import numpy as np

    from pipediag.bench.compose import apply_fixes
    from pipediag.report.fixes import FIX_VECTORIZE

    ds = _mnist_like(shuffle=False, count=70)  # 70: a short last batch too
    kept = _kept(ds, FIX_VECTORIZE)

    variant = apply_fixes(kept.graph, ds.element_spec, [kept])

    want, got = list(ds.as_numpy_iterator()), list(variant.as_numpy_iterator())
    assert [w[0].shape for w in want] == [g[0].shape for g in got]
    for (w_x, w_y), (g_x, g_y) in zip(want, got, strict=True):
        np.testing.assert_allclose(g_x, w_x, rtol=1e-5, atol=1e-5)
        assert g_y.tolist() == w_y.tolist()


# --- hoist above the shuffle, then cache -----------------------------------------------------


def test_a_map_after_a_shuffle_is_hoisted_above_it_and_cached() -> None:
    from pipediag.bench.compose import apply_fixes
    from pipediag.report.fixes import FIX_HOIST_CACHE

    ds = _mnist_like(shuffle=True)
    kept = _kept(ds, FIX_HOIST_CACHE, elements_per_s=10_000.0)

    variant = apply_fixes(kept.graph, ds.element_spec, [kept])

    ops = _edited_ops(kept)
    assert ops.index("MapDataset") < ops.index("CacheDataset") < ops.index("ShuffleDatasetV3")
    # the trial's copy reads the cache again forever (its shuffle mixes epochs): elements
    # of the user's epoch only; without the repeat, one epoch is the user's elements
    assert set(_unbatched(variant, 6)) <= set(_unbatched(ds))
    assert _unbatched(_hoisted_once(ds, kept)) == _unbatched(ds)
    assert kept.semantics == ("element-order", "cache")
    assert kept.fill_batches >= 3


def _hoisted_once(ds: Any, kept: Any) -> Any:
    from pipediag.bench.graph_edit import PipelineGraph

    graph = PipelineGraph.copy_of(kept.graph)
    by_op = {n.op: n.name for n in graph.graph_def.node}
    graph.hoist_above_shuffle(by_op["MapDataset"], by_op["ShuffleDatasetV3"], repeat=False)
    return graph.rebuild(ds.element_spec)


def _edited_ops(kept: Any) -> list[str]:
    """The ops from source to output of the edited graph."""
    from pipediag.bench.graph_edit import PipelineGraph

    graph = PipelineGraph.copy_of(kept.graph)
    kept.candidate.edit(graph)
    chain: list[str] = []
    node = graph.root()
    while True:
        chain.append(node.op)
        inputs = [
            graph.node(i.split(":")[0])
            for i in graph.data_inputs(node)
            if "Dataset" in graph.node(i.split(":")[0]).op
        ]
        if not inputs:
            return chain[::-1]
        node = inputs[0]


def test_no_hoist_when_a_random_stage_comes_before_the_shuffle() -> None:
    tf = _tf()
    ds = (
        tf.data.Dataset.range(40)
        .map(lambda x: x + tf.random.uniform([], 0, 3, dtype=tf.int64))
        .shuffle(40)
        .map(lambda x: x * 2)
        .batch(4)
    )

    found, _ = _candidates(ds, elements_per_s=10_000.0)

    assert "hoist-cache" not in [c.fix for c in found]


def _python_map(ds: Any, fn: Any) -> Any:
    tf = _tf()
    return ds.map(lambda x: tf.numpy_function(fn, [x], tf.float64))


def _deterministic(x: Any) -> Any:
    import numpy as np

    return np.sqrt(np.float64(x) + 1.0)


def _augment(x: Any) -> Any:
    import numpy as np

    return np.float64(x) + np.random.uniform()  # NumPy's global generator: random each call


@pytest.mark.parametrize(("fn", "repeats"), [(_deterministic, True), (_augment, False)])
def test_a_python_map_is_read_twice_before_a_cache_keeps_its_output(fn: Any, repeats: bool) -> None:

    tf = _tf()
    # GIVEN a numpy_function map, first under a shuffle (the hoist), then as the whole
    # deterministic prefix of a pipeline with no shuffle (the cache after it)
    hoisted = _python_map(tf.data.Dataset.range(40).shuffle(40, seed=1), fn).batch(4)
    prefixed = _python_map(tf.data.Dataset.range(40), fn).batch(4)
    for ds, fix in ((hoisted, "hoist-cache"), (prefixed, "cache")):
        found, _ = _candidates(ds, elements_per_s=10_000.0, own_s_per_batch=0.01)
        (candidate,) = [c for c in found if c.fix == fix]
        # THEN each is checked: a map that gave other values the second time gets no cache
        assert candidate.facts.python_repeatable is repeats
        if repeats:
            assert candidate.reason is None, candidate.reason
        else:
            assert candidate.reason is not None
            assert candidate.reason.code == "python-not-repeatable"
            words = reason_words(candidate.reason)
            assert "other values for the same 8 elements read twice" in words


# --- consecutive maps fused ----------------------------------------------------------------


def test_consecutive_maps_are_fused_by_the_option_and_yield_the_same() -> None:
    from pipediag.bench.compose import apply_fixes
    from pipediag.report.fixes import FIX_MAP_FUSION

    tf = _tf()
    ds = tf.data.Dataset.range(12).map(lambda x: x + 1).map(lambda x: x * 3).batch(5)
    kept = _kept(ds, FIX_MAP_FUSION)

    variant = apply_fixes(kept.graph, ds.element_spec, [kept])

    assert variant.options().experimental_optimization.map_fusion is True
    assert _rows(variant) == _rows(ds)
    assert kept.semantics == ()


# --- a generator read once ---------------------------------------------------------------


def _generated(count: int = 30) -> Any:
    import numpy as np

    tf = _tf()

    def generate() -> Any:
        for i in range(count):
            yield np.full((3,), i, np.float32), i

    spec = (tf.TensorSpec((3,), tf.float32), tf.TensorSpec((), tf.int64))
    return tf.data.Dataset.from_generator(generate, output_signature=spec).batch(4)


def test_a_generator_source_is_read_once_into_tensor_slices() -> None:
    from pipediag.bench.compose import apply_fixes
    from pipediag.report.fixes import FIX_MATERIALISE

    ds = _generated()
    kept = _kept(ds, FIX_MATERIALISE)

    variant = apply_fixes(kept.graph, ds.element_spec, [kept])

    assert _rows(variant) == _rows(ds)
    assert kept.semantics == ("materialised",)


def test_a_generator_too_slow_to_read_names_the_tfrecord_route(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pipediag.bench import generator_source
    from pipediag.bench.teardown import TearDown

    monkeypatch.setattr(generator_source, "GENERATOR_READ_MAX_S", 0.0)
    found, graph = _candidates(_generated())
    (candidate,) = [c for c in found if c.fix == "materialise-generator"]

    reason, unsafe = candidate.check(graph, TearDown())

    assert not unsafe
    assert reason == Reason("generator-too-slow", limit=0.0)
    assert "TFRecordDataset" in reason_words(reason)


# --- gates: the stage's cost to training, not pipeline-alone timing ------------------------


def test_a_stage_measured_free_on_training_gets_no_rewrite() -> None:
    ds = _mnist_like(shuffle=True)

    found, _ = _candidates(ds, training_speedup_if_free=1.01, elements_per_s=10_000.0)

    assert found == []


def test_an_unmeasured_cheap_map_still_gets_its_rewrites() -> None:
    # GIVEN stage timing that says the map adds almost nothing to the pipeline alone
    found, _ = _candidates(_mnist_like(shuffle=True), own_s_per_batch=1e-6, batches_per_s=1e4)

    assert {"vectorize", "hoist-cache"} <= {c.fix for c in found}
    # (no prefetch at the end: tf.data appends that one itself, unless told not to)
    assert "prefetch-end" not in {c.fix for c in found}
    found, _ = _candidates(
        _without_injected_prefetch(_mnist_like(shuffle=True)),
        own_s_per_batch=1e-6,
        batches_per_s=1e4,
    )
    assert "prefetch-end" in {c.fix for c in found}
    # and after a parallel map, which runs ahead in threads of its own, tf.data appends
    # none: a prefetch there is a change to try
    tf = _tf()
    parallel = tf.data.Dataset.range(64).batch(8).map(lambda x: x * 2, num_parallel_calls=2)
    found, _ = _candidates(parallel, own_s_per_batch=1e-6, batches_per_s=1e4)
    assert "prefetch-end" in {c.fix for c in found}


# --- composed pairs ------------------------------------------------------------------------


def _composed(dataset: Any, first: Any, second: Any) -> Any:
    from pipediag.bench.compose import compose_fixes as compose

    both = compose(dataset, [first], second)
    assert both.applied == (first.fix, second.fix)
    return both


def test_parallel_map_and_prefetch_compose() -> None:
    import pipelines

    tf = _tf()
    ds = _without_injected_prefetch(tf.data.Dataset.range(20).map(pipelines.slow_py_map).batch(3))
    parallel, prefetch = _kept(ds, "parallel-map"), _kept(ds, "prefetch-end")

    both = _composed(ds, parallel, prefetch)

    assert _rows(both.variant) == _rows(ds)
    assert _rows(both.baseline) == _rows(ds)


def _ops(dataset: Any) -> list[str]:
    """The dataset ops from the source to the output, along first inputs (its graph)."""
    tf = _tf()
    graph = tf.compat.v1.GraphDef()
    graph.ParseFromString(dataset._as_serialized_graph().numpy())
    by_name = {node.name: node for node in graph.node}
    (current,) = [node for node in graph.node if node.op == "_Retval"]
    ops = []
    while current.input:
        current = by_name[current.input[0].split(":")[0]]
        ops.append(current.op)
    return [op for op in reversed(ops) if op.endswith("Dataset") or "DatasetV" in op]


def test_vectorise_and_cache_compose_in_either_order() -> None:
    from pipediag.bench.compose import apply_fixes

    tf = _tf()
    ds = tf.data.Dataset.range(24).map(lambda x: tf.cast(x, tf.float32) * 2.0).batch(5)
    vectorize = _kept(ds, "vectorize", elements_per_s=10_000.0)
    cache = _kept(ds, "cache", elements_per_s=10_000.0)

    # the cache keeps whole batches: after the batch, or after the map that now yields them
    assert cache.candidate.facts.cached_in_batches
    ops = _ops(apply_fixes(cache.graph, ds.element_spec, [cache]))
    assert ops[:5] == [
        "RangeDataset",
        "MapDataset",
        "BatchDatasetV2",
        "CacheDataset",
        "RepeatDataset",
    ]
    for first, second in ((vectorize, cache), (cache, vectorize)):
        both = _composed(ds, first, second)
        assert _rows(both.variant, 5) == _rows(ds)
        assert both.fill_batches == cache.fill_batches
        source, batch, mapped, cached = _ops(both.variant)[:4]
        assert (source, batch, cached) == ("RangeDataset", "BatchDatasetV2", "CacheDataset")
        assert mapped in ("MapDataset", "ParallelMapDatasetV2"), (first.fix, second.fix)


def test_hoist_cache_and_prefetch_compose() -> None:
    ds = _without_injected_prefetch(_mnist_like(shuffle=True))
    hoist = _kept(ds, "hoist-cache", elements_per_s=10_000.0)
    prefetch = _kept(ds, "prefetch-end", elements_per_s=10_000.0)

    both = _composed(ds, hoist, prefetch)

    assert set(_unbatched(both.variant, 6)) <= set(_unbatched(ds))
    assert both.baseline_fill_batches == hoist.fill_batches


def test_parallel_map_and_vectorise_on_different_maps_compose() -> None:
    import pipelines

    tf = _tf()
    ds = (
        tf.data.Dataset.range(21)
        .map(pipelines.slow_py_map)
        .map(lambda x: tf.cast(x, tf.float32) + 0.5)
        .batch(4)
    )
    parallel = _kept(ds, "parallel-map")
    vectorize = _kept(ds, "vectorize")
    assert parallel.stage_index != vectorize.stage_index

    both = _composed(ds, vectorize, parallel)

    assert _rows(both.variant) == _rows(ds)


def test_the_device_prefetch_stays_last_under_options_composed_on_top() -> None:
    # tf.data wants `prefetch_to_device` as the last transformation; the CPU stands in for
    # the GPU here, so this checks the order and the elements, not the copy
    from pipediag.bench.fix_candidates import device_prefetch_candidate
    from pipediag.bench.structure import walk
    from pipediag.bench.whatif import FixPipelines
    from pipediag.report.fixes import FIX_DEVICE_PREFETCH, FIX_MAP_FUSION

    tf = _tf()
    ds = tf.data.Dataset.range(12).map(lambda x: x + 1).map(lambda x: x * 3).batch(5)
    fusion = _kept(ds, FIX_MAP_FUSION)
    walked = walk(ds).stages
    candidate = device_prefetch_candidate("/cpu:0", [s.stats for s in walked])
    assert candidate is not None
    device = FixPipelines(
        FIX_DEVICE_PREFETCH, None, None, None, candidate=candidate, tried_on_training=True
    )

    both = _composed(ds, device, fusion)  # the option kept after the device prefetch

    # the options go on the pipeline before the copy (a copy-to-device does not pass its
    # input's options up: they are read below it)
    kinds = [s.stats.kind for s in walk(both.variant).stages]
    assert kinds[-3:] == ["options", "copy-to-device", "prefetch"]
    below_copy = both.variant._input_dataset._input_dataset
    assert below_copy.options().experimental_optimization.map_fusion is True
    assert _rows(both.variant) == _rows(ds)
    assert device_prefetch_candidate("/cpu:0", [s.stats for s in walk(both.variant).stages]) is None


def test_the_device_prefetch_is_a_candidate_only_with_a_device_and_no_copy_yet() -> None:
    from synthetic_reports import FakeClock

    from pipediag.bench.whatif import ForTraining, verify_fixes

    tf = _tf()
    ds = tf.data.Dataset.range(12).map(lambda x: x + 1).batch(5)
    copied = ds.apply(tf.data.experimental.prefetch_to_device("/cpu:0"))

    def fixes(dataset: Any, device: str | None) -> list[str]:
        """The fixes tried for training, none of them timed: the deadline is already spent."""
        clock = FakeClock()
        training = ForTraining([], prefetch_device=device)
        trials = verify_fixes(
            walk(dataset), clock=clock, budget_s=None, deadline=clock.now(), training=training
        )
        return [t.fix for t in trials]

    assert "prefetch-to-device" in fixes(ds, "/cpu:0")
    assert "prefetch-to-device" not in fixes(ds, None)
    assert "prefetch-to-device" not in fixes(copied, "/cpu:0")


def test_a_rewrite_that_cannot_go_on_top_is_refused_with_a_reason() -> None:
    from pipediag.bench.compose import compose_fixes as compose
    from pipediag.bench.graph_edit import RewriteError

    ds = _mnist_like(shuffle=True)
    vectorize = _kept(ds, "vectorize")
    hoist = _kept(ds, "hoist-cache", elements_per_s=10_000.0)

    # both move the same map: hoisted first (the order edits go in), it no longer feeds
    # its batch alone
    with pytest.raises(RewriteError) as error:
        compose(ds, [vectorize], hoist)
    assert error.value.reason == Reason("map-read-elsewhere")
    assert reason_words(error.value.reason) == "the map's output is read by more than its batch"


# --- where the script built each stage -----------------------------------------------------


def test_each_stage_records_the_script_line_that_built_it_and_the_hook_is_undone() -> None:
    import inspect

    from pipediag.bench.structure import walk
    from pipediag.hooks.call_sites import CallSitePatch

    tf = _tf()
    original = tf.data.Dataset.__init__
    patch = CallSitePatch()
    patch.install()
    try:
        line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        ds = tf.data.Dataset.range(8)
        ds = ds.map(lambda x: x * 2)
        ds = ds.batch(4)
    finally:
        patch.uninstall()

    sites = [s.stats.created_at for s in walk(ds).stages]
    assert sites == [f"test_rewrites_tf.py:{line + n}" for n in range(3)]
    assert tf.data.Dataset.__init__ is original


def test_a_library_call_s_own_stages_name_it_and_the_script_s_line(tmp_path: Any) -> None:
    import inspect

    from pipediag.bench.structure import walk
    from pipediag.hooks.call_sites import CallSitePatch

    tf = _tf()
    keras = pytest.importorskip("keras")
    for label in ("a", "b"):
        (tmp_path / label).mkdir()
        for n in range(2):
            image = tf.io.encode_jpeg(tf.zeros([8, 8, 3], tf.uint8))
            tf.io.write_file(str(tmp_path / label / f"{n}.jpg"), image)
    patch = CallSitePatch()
    patch.install()
    try:
        line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        ds = keras.utils.image_dataset_from_directory(str(tmp_path), image_size=(8, 8))
        ds = ds.shuffle(1000)
    finally:
        patch.uninstall()

    stages = [s.stats for s in walk(ds).stages]
    # the loader's stages are its own, at the script's line; the script's shuffle is the script's
    inside = [s for s in stages if s.made_by == "image_dataset_from_directory"]
    assert inside and all(s.created_at == f"test_rewrites_tf.py:{line}" for s in inside)
    assert stages[-1].kind == "shuffle" and stages[-1].made_by is None
    assert stages[-1].created_at == f"test_rewrites_tf.py:{line + 1}"


def test_a_function_whose_trace_fails_on_a_batch_is_refused_as_unsafe(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from pipediag.bench.teardown import TearDown

    tf = _tf()

    # GIVEN a map that reshapes each 4-vector to 2x2 (traced on a batch, static shapes
    # clash) and goes through a ragged tensor, which pfor cannot convert either
    def to_square(x: Any) -> Any:
        return tf.RaggedTensor.from_tensor(tf.reshape(tf.fill([4], x), [2, 2])).to_tensor()

    ds = tf.data.Dataset.range(40).map(to_square).batch(5)
    found, graph = _candidates(ds)
    (vectorize,) = [c for c in found if c.fix == "vectorize"]

    teardown = TearDown()
    try:
        reason, unsafe = vectorize.check(graph, teardown)
    finally:
        teardown.drain()

    assert unsafe
    assert reason is not None and reason.code == "unsafe-keep-map"
    assert reason.because is not None and reason.because.code == "fails-on-batch"
    words = reason_words(reason)
    assert words.startswith("unsafe: the function fails on a batch")
    assert "Shape must be rank 0" in words  # the plain form's reason (tf.fill), not pfor's
    assert not vectorize.facts.vectorized_map
    assert not [r for r in caplog.records if "pfor" in r.getMessage()]  # not pipediag's output
