"""Each stage's cost to training on real TensorFlow: the held copy's elements, and a whole
fit diagnosis whose sleeping map is named by the jump."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from pipediag.bench.structure import walk
from pipediag.config import RunConfig
from pipediag.renderers.stage_cost_words import costliest_stage

pytestmark = pytest.mark.tensorflow


def test_a_held_stage_yields_its_first_elements_repeated_then_the_later_stages_apply() -> None:
    import tensorflow as tf

    from pipediag.bench.graph_edit import PipelineGraph

    # GIVEN range -> map(x10) -> batch(4)
    ds = tf.data.Dataset.range(100).map(lambda x: x * 10).batch(4)
    walked = walk(ds)
    graph, nodes = walked.graph, walked.nodes
    assert graph is not None, walked.graph_error
    (map_index,) = [s.stats.index for s in walked.stages if s.stats.kind == "map"]

    # WHEN the map's first 6 elements are held
    edited = PipelineGraph.copy_of(graph)
    edited.isolate()
    edited.hold_after(nodes[map_index], 6)
    held = edited.rebuild(ds.element_spec)

    # THEN they repeat forever, batched by the stage after the map
    got = [b.tolist() for b in held.take(4).as_numpy_iterator()]
    assert got == [[0, 10, 20, 30], [40, 50, 0, 10], [20, 30, 40, 50], [0, 10, 20, 30]]
    # and the source held repeats its first elements through the map
    source = PipelineGraph.copy_of(graph)
    source.hold_after(nodes[0], 3)
    got = [b.tolist() for b in source.rebuild(ds.element_spec).take(2).as_numpy_iterator()]
    assert got == [[0, 10, 20, 0], [10, 20, 0, 10]]


def test_the_chain_stops_at_a_filter_and_skips_options() -> None:
    import tensorflow as tf

    from pipediag.bench.hold import HeldCopies

    ds = tf.data.Dataset.from_tensor_slices(tf.range(64)).map(lambda x: x + 1)
    ds = ds.filter(lambda x: x > 0).batch(8, drop_remainder=True).prefetch(1)
    ds = ds.with_options(tf.data.Options())
    copies = HeldCopies(walk(ds), pipeline_batches_per_s=100.0)
    kinds = [s.kind for s in _stats(ds)]
    assert [kinds[h.index] for h in copies.chain] == ["filter", "batch", "prefetch"]
    (batch,) = [h for h in copies.chain if kinds[h.index] == "batch"]
    assert batch.elements_per_batch == 1.0 and batch.element_bytes == 8 * 4


def test_the_unchanged_copy_s_cache_is_filled_before_a_held_trial_as_training_s_was() -> None:
    import tensorflow as tf

    from pipediag.bench import teardown
    from pipediag.bench.hold import HeldCopies
    from pipediag.bench.whatif import TrialSide
    from pipediag.clock import MONOTONIC

    # GIVEN a random map before an in-memory cache: each uncached pass draws new values
    ds = tf.data.Dataset.range(12).map(lambda x: x + tf.random.uniform([], 1, 10**9, tf.int64))
    ds = ds.cache().batch(4)
    copies = HeldCopies(walk(ds), pipeline_batches_per_s=100.0)
    fix = copies.pipelines(copies.chain[-1])
    # THEN the unchanged copy is read a pass and past its end first
    assert fix.baseline_fill_batches == 3 + 1

    def first_batch() -> list[int]:
        iterator = iter(fix.baseline)
        return next(iterator).numpy().tolist()  # type: ignore[no-any-return]

    # WHEN a trial's side fills it: later slices' fresh iterators read the same cached values
    TrialSide(fix.baseline, teardown.SHARED, MONOTONIC, fix.baseline_fill_batches)
    assert first_batch() == first_batch()
    # AND without a cache nothing is read first, nor where a pass would take over 3 s
    plain = tf.data.Dataset.range(12).batch(4)
    assert HeldCopies(walk(plain), 100.0).pipelines(_output(plain)).baseline_fill_batches == 0
    slow = HeldCopies(walk(ds), pipeline_batches_per_s=0.5)
    assert slow.pipelines(slow.chain[-1]).baseline_fill_batches == 0


def _output(ds: object) -> object:
    from pipediag.bench.hold import HeldCopies

    return HeldCopies(walk(ds), 100.0).chain[-1]


def _stats(ds: object) -> list:  # type: ignore[type-arg]
    from pipediag.bench.structure import walk

    return [stage.stats for stage in walk(ds).stages]


SCRIPT = """
import sys, time
import numpy as np
import tensorflow as tf
import keras

def slow(x):
    time.sleep(0.002)  # 2 ms an element, 20 ms a batch of 10
    return x

# 1200 batches: the budget ends the script long before, after the alternation and the
# holds (with 400, a slow host's alternation left the holds too few pulls to find the jump)
x = np.random.default_rng(0).normal(size=(12000, 8)).astype("float32")
ds = tf.data.Dataset.from_tensor_slices(x)
ds = ds.map(lambda a: tf.ensure_shape(tf.numpy_function(slow, [a], tf.float32), (8,)))
ds = ds.map(lambda a: (a, tf.reduce_sum(a, keepdims=True)))
ds = ds.batch(10).prefetch(2)
model = keras.Sequential([keras.layers.Input((8,)), keras.layers.Dense(8), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(ds, epochs=1, verbose=0)
"""


def _holds_only() -> RunConfig:
    """No fix trials (nothing here reads them): the stage holds get the whole budget after the
    stage timing, about 9.6 s, more than the 4 s they get beside the trials."""
    return RunConfig(
        measured_steps=30,
        warmup_steps=3,
        bench_seconds=1.0,
        sample_gpu=False,
        verify=False,
        deep_seconds=12.0,
    )


def test_holding_a_sleeping_map_on_fit_makes_the_jump(tmp_path: Path) -> None:
    import pipediag

    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    report = pipediag.diagnose(script, [], config=_holds_only(), out=None, log=None)
    _the_sleeping_map_is_named(report.pipeline.stages)
    assert report.pipeline.stages[0].kind == "source"


# The same pipeline trained by a custom loop: a tf.function step with a GradientTape, so that
# pipediag finds the training (docs/design.md, "Finding the training").
LOOP_SCRIPT = """
import time
import numpy as np
import tensorflow as tf
import keras

def slow(x):
    time.sleep(0.002)  # 2 ms an element, 20 ms a batch of 10
    return x

# 1200 batches: the budget ends the script long before, after the alternation and the
# holds (with 400, a slow host's alternation left the holds too few pulls to find the jump)
x = np.random.default_rng(0).normal(size=(12000, 8)).astype("float32")
ds = tf.data.Dataset.from_tensor_slices(x)
ds = ds.map(lambda a: tf.ensure_shape(tf.numpy_function(slow, [a], tf.float32), (8,)))
ds = ds.map(lambda a: (a, tf.reduce_sum(a, keepdims=True)))
ds = ds.batch(10).prefetch(2)
model = keras.Sequential([keras.layers.Input((8,)), keras.layers.Dense(8), keras.layers.Dense(1)])
opt = keras.optimizers.SGD()

@tf.function
def step(a, b):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(a) - b) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss

for a, b in ds:
    step(a, b)
"""


def test_holding_a_sleeping_map_in_a_custom_loop_makes_the_jump(tmp_path: Path) -> None:
    import pipediag

    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(LOOP_SCRIPT))
    report = pipediag.diagnose(script, [], config=_holds_only(), out=None, log=None)
    assert report.train.style == "custom-loop"
    _the_sleeping_map_is_named(report.pipeline.stages)
    assert "stage_holds" in [p.name for p in report.phases]


def _the_sleeping_map_is_named(stages: list[Any]) -> None:
    """The output held frees training (over 2x), and the stage named is the sleeping map, or
    the map right after it that only shapes its output: at the jump, or, where the search
    ended before one, among what its largest step between holds freed (a .ci/run at 948 s
    held only some stages in a custom loop; a quiet fresh-clone run under fit read no jump,
    its holds done in 11 s); a marked jump's ratios hold."""
    seen = [(s.index, s.kind, s.training_speedup_if_free) for s in stages]
    output = stages[-1].training_speedup_if_free
    assert output is not None and output > 2.0, seen
    named = costliest_stage(stages)
    assert named is not None and named.kind == "map", seen
    if named.training_cost_jump:
        assert (named.training_speedup_if_free or 0.0) > 2.0, seen
        before = [s for s in stages if s.index < named.index and s.training_speedup_if_free]
        assert all((s.training_speedup_if_free or 0.0) < 1.5 for s in before), seen
