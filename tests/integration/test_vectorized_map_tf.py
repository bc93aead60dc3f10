"""The vectorise rewrite through `tf.vectorized_map`, on real pipelines: a function that takes
no batch as written (`parse_single_example`, a reshape to one image) is checked again on each
element through pfor, and the variant yields the user's batches (docs/design.md, "Every
applicable rewrite"). No timing."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from pipediag.bench.structure import walk
from pipediag.renderers.reason_words import reason_words
from pipediag.report.reasons import Reason

pytestmark = pytest.mark.tensorflow

IMAGE = (4, 4, 3)
RECORDS = 20  # batches of 8: a short last batch too


def _tf() -> Any:
    return pytest.importorskip("tensorflow")


def _records() -> list[bytes]:
    """Serialized `tf.train.Example`s of a small uint8 image and its label; label 0 ends its
    record in a NUL byte."""
    import numpy as np

    tf = _tf()
    rng = np.random.default_rng(0)
    out = []
    for label in range(RECORDS):
        image = rng.integers(0, 256, size=IMAGE, dtype=np.uint8)
        feature = {
            "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image.tobytes()])),
            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
        }
        example = tf.train.Example(features=tf.train.Features(feature=feature))
        out.append(example.SerializeToString())
    return out


def decode_one(record: Any) -> tuple[Any, Any]:
    tf = _tf()
    spec = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }
    parsed = tf.io.parse_single_example(record, spec)
    pixels = tf.reshape(tf.io.decode_raw(parsed["image"], tf.uint8), IMAGE)
    return tf.cast(pixels, tf.float32) / 255.0, parsed["label"]


def _vectorize(dataset: Any) -> tuple[Any, Any, tuple[str | None, bool]]:
    """The dataset's vectorise candidate, its GraphDef, and what its check said."""
    from pipediag.bench.fix_candidates import fix_candidates
    from pipediag.bench.teardown import TearDown

    walked = walk(dataset)
    stages = [stage.stats for stage in walked.stages]
    graph, nodes, options = walked.graph, walked.nodes, walked.options
    assert walked.graph_error is None and options is not None
    found = fix_candidates(walked.stages, stages, nodes, options, 2)
    (candidate,) = [c for c in found if c.fix == "vectorize"]
    teardown = TearDown()
    try:
        said = candidate.check(graph, teardown)
    finally:
        teardown.drain()
    return candidate, graph, said


def _variant(dataset: Any, candidate: Any, graph: Any) -> Any:
    from pipediag.bench.compose import apply_fixes
    from pipediag.bench.whatif import FixPipelines

    kept = FixPipelines(
        fix=candidate.fix,
        stage_index=candidate.stage_index,
        baseline=None,
        variant=None,
        candidate=candidate,
        graph=graph,
        element_spec=dataset.element_spec,
    )
    return apply_fixes(graph, dataset.element_spec, [kept])


def test_a_parse_single_example_map_is_vectorised_through_vectorized_map(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import numpy as np

    from pipediag.analysis.pipeline_code import rewritten_chain
    from pipediag.bench.structure import walk
    from pipediag.report.prescription import StageChange

    tf = _tf()
    # GIVEN records decoded one by one: parse_single_example asserts a scalar record
    ds = tf.data.Dataset.from_tensor_slices(_records()).map(decode_one).batch(8)
    level = logging.getLogger("tensorflow").level
    # WHEN the vectorise candidate is checked
    candidate, graph, said = _vectorize(ds)
    # THEN the plain form is refused, the vectorized_map form passes, and pfor said nothing
    assert said == (None, False)
    assert candidate.facts.vectorized_map and not candidate.facts.element_unpacked
    assert candidate.facts.batch_refusal == Reason(
        "fails-on-batch", detail="ValueError: Input serialized must be a scalar"
    )
    assert reason_words(candidate.facts.batch_refusal) == (
        "the function fails on a batch (ValueError: Input serialized must be a scalar)"
    )
    assert candidate.semantics == ("vectorized-map",)
    assert not [r for r in caplog.records if "while_loop" in r.getMessage()]
    assert logging.getLogger("tensorflow").level == level
    # and the variant yields the same batches, the short last one included
    want = list(ds.as_numpy_iterator())
    got = list(_variant(ds, candidate, graph).as_numpy_iterator())
    assert [w[0].shape for w in want] == [g[0].shape for g in got]
    for (w_x, w_y), (g_x, g_y) in zip(want, got, strict=True):
        np.testing.assert_array_equal(g_x, w_x)
        assert g_y.tolist() == w_y.tolist()
    # and the pipeline pipediag would write runs decode_one through tf.vectorized_map
    change = StageChange(
        "vectorize",
        candidate.stage_index,
        candidate.semantics,
        vectorized_map=candidate.facts.vectorized_map,
        element_unpacked=candidate.facts.element_unpacked,
    )
    lines = rewritten_chain([s.stats for s in walk(ds).stages], [change])
    assert [line.text for line in lines][-2:] == [
        "ds = ds.batch(8)",
        "ds = ds.map(lambda batch: tf.vectorized_map(decode_one, batch, "
        "fallback_to_while_loop=True), num_parallel_calls=tf.data.AUTOTUNE)",
    ]


def test_a_tuple_element_is_unpacked_into_the_functions_arguments() -> None:
    import numpy as np

    tf = _tf()

    def decode_with_key(record: Any, key: Any) -> tuple[Any, Any]:
        image, label = decode_one(record)
        return image, label + key

    source = (_records(), np.arange(RECORDS) * 100)
    ds = tf.data.Dataset.from_tensor_slices(source).map(decode_with_key)
    ds = ds.batch(8, drop_remainder=True)

    candidate, graph, said = _vectorize(ds)

    assert said == (None, False)
    assert candidate.facts.vectorized_map and candidate.facts.element_unpacked
    want = [w[1].tolist() for w in ds.as_numpy_iterator()]
    assert [g[1].tolist() for g in _variant(ds, candidate, graph).as_numpy_iterator()] == want


def test_a_batch_safe_function_keeps_the_plain_form() -> None:
    import numpy as np

    tf = _tf()
    vectors = np.arange(1, 41, dtype=np.float32).reshape(10, 4)
    ds = tf.data.Dataset.from_tensor_slices(vectors).map(lambda x: x * 2 + 1).batch(4)

    candidate, _, said = _vectorize(ds)

    assert said == (None, False)
    assert not candidate.facts.vectorized_map and candidate.facts.batch_refusal is None
    assert candidate.semantics == ("batched",)


def test_a_function_that_is_not_elementwise_runs_per_element_through_vectorized_map() -> None:
    import numpy as np

    tf = _tf()
    # GIVEN each vector normalised by its own sum: on a batch, the sum would be the batch's
    vectors = np.arange(1, 41, dtype=np.float32).reshape(10, 4)
    ds = tf.data.Dataset.from_tensor_slices(vectors).map(lambda x: x / tf.reduce_sum(x))
    ds = ds.batch(4)

    candidate, graph, said = _vectorize(ds)

    assert said == (None, False) and candidate.facts.vectorized_map
    refusal = candidate.facts.batch_refusal
    assert refusal is not None and refusal.code == "not-elementwise"
    assert "other results on a batch" in reason_words(refusal)
    want = np.concatenate(list(ds.as_numpy_iterator()))
    got = np.concatenate(list(_variant(ds, candidate, graph).as_numpy_iterator()))
    np.testing.assert_allclose(got, want, rtol=1e-6)
