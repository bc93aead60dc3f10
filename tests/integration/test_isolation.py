"""The pipeline-alone benchmark must not change what the user's training sees."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from train_step import TRAIN_STEP

import pipediag
from pipediag.renderers.reason_words import reason_words

pytestmark = pytest.mark.tensorflow

# Records the data of two epochs. A seeded shuffle that reshuffles each epoch draws its
# seeds from state every new iterator advances; a `tf.random.Generator` in a map is a
# variable every iterator advances; a memory cache keeps whatever first filled it; a
# `numpy_function` drawing from NumPy's global generator draws on from wherever any
# reader of the pipeline left it (pipediag puts the generator back after its reads; where
# the script's own prefetch draws meanwhile, the two interleave: docs/design.md).
SCRIPT = (
    TRAIN_STEP
    + """
import json, sys
import tensorflow as tf

def dataset(kind):
    tf.random.set_seed(0)
    if kind == "shuffle":
        return tf.data.Dataset.range(64).shuffle(64, seed=1).batch(8)
    if kind == "numpy":
        import numpy as np
        np.random.seed(1)
        noise = lambda x: x + np.random.randint(1000)  # NumPy's global generator
        # No prefetch and no map-and-batch fusion (whose threads run ahead): the map runs in
        # the loop's own pulls, so nothing of the script's draws while pipediag reads (a
        # thread drawing meanwhile interleaves with it: a fresh-clone run matched 3 batches,
        # then not).
        options = tf.data.Options()
        options.autotune.enabled = False
        options.experimental_optimization.apply_default_optimizations = False
        options.experimental_optimization.inject_prefetch = False
        return tf.data.Dataset.range(64).map(
            lambda x: tf.numpy_function(noise, [x], tf.int64)).batch(8).with_options(options)
    gen = tf.random.Generator.from_seed(1)
    ds = tf.data.Dataset.range(64).map(
        lambda x: x + tf.cast(gen.uniform([], 0, 1000), tf.int64))
    return (ds.cache() if kind == "cache" else ds).batch(8)

def train(kind, out):
    ds = dataset(kind)
    seen = []
    for _ in range(2):
        seen.append([])
        for b in ds:
            train_step(b)
            seen[-1].append(b.numpy().tolist())
    json.dump(seen, open(out, "w"))

# One kind, or every kind in turn, each from its own seeds: the plain runs share a process.
kind, out = sys.argv[1], sys.argv[2]
if kind == "all":
    for each in ("shuffle", "generator", "cache", "numpy"):
        train(each, f"{out}/{each}.json")
else:
    train(kind, out)
"""
)
KINDS = ["shuffle", "generator", "cache", "numpy"]


@pytest.fixture(scope="module")
def plain_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every kind's data from one plain run of the script, without pipediag."""
    folder = tmp_path_factory.mktemp("plain")
    script = folder / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    subprocess.run(
        [sys.executable, str(script), "all", str(folder)], check=True, capture_output=True
    )
    return folder


@pytest.mark.parametrize("kind", KINDS)
def test_training_data_is_unchanged_by_the_benchmark(
    tmp_path: Path, kind: str, plain_data: Path
) -> None:
    # GIVEN a script whose data depends on per-iterator state
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    expected = json.loads((plain_data / f"{kind}.json").read_text())
    # WHEN it runs under pipediag, which benchmarks the dataset alone first
    config = pipediag.RunConfig(
        measured_steps=None, warmup_steps=0, bench_seconds=1.0, deep_seconds=4.0
    )
    report = pipediag.diagnose(
        script, [kind, str(tmp_path / "diag.json")], config=config, out=None, log=None
    )
    # THEN the benchmark did run, and the script saw exactly the data it sees alone
    assert report.pipeline.measured, report.pipeline.reason
    assert json.loads((tmp_path / "diag.json").read_text()) == expected


def test_a_file_cache_is_never_written_by_the_benchmark(tmp_path: Path) -> None:
    import tensorflow as tf

    from pipediag.bench.pipeline import benchmark_dataset

    cache = tmp_path / "cache" / "data"
    cache.parent.mkdir()
    ds = tf.data.Dataset.range(64).map(lambda x: x * 2).cache(str(cache)).batch(8)
    result = benchmark_dataset(ds, max_seconds=1.0)
    assert result.measured and result.exhausted
    assert list(cache.parent.iterdir()) == []
    assert [note.code for note in result.notes] == ["file-cache-bypassed"]
    assert "not complete yet" in reason_words(result.notes[0])


def test_variables_the_pipeline_updates_are_put_back() -> None:
    # GIVEN a pipeline whose map advances a generator and a counter (shared state)
    import tensorflow as tf

    from pipediag.bench.isolate import preserved_variables

    gen = tf.random.Generator.from_seed(1)
    counter = tf.Variable(0, dtype=tf.int64)

    def augment(x: tf.Tensor) -> tf.Tensor:
        counter.assign_add(1)
        return x + tf.cast(gen.uniform([], 0, 1000), tf.int64)

    ds = tf.data.Dataset.range(16).map(augment).batch(4)
    state = gen.state.numpy().tolist()
    # WHEN pipediag reads it directly (the fallback when no private copy can be made)
    with preserved_variables(ds, copies=False):
        assert len(list(ds)) == 4
        assert gen.state.numpy().tolist() != state
    # THEN the user's variables are as they were
    assert gen.state.numpy().tolist() == state
    assert int(counter.numpy()) == 0


def _generator_batches(read_a_copy_meanwhile: bool) -> list[list[int]]:
    """40 batches of a generator-drawing map, as a custom loop's live iterator pulls them;
    with `read_a_copy_meanwhile`, pipediag reads a copy after the first pull while the loop
    pulls three more (the pipeline-alone benchmark, as the loop's training is found)."""
    import tensorflow as tf

    from pipediag.bench.isolate import isolated_copy, preserved_variables

    gen = tf.random.Generator.from_seed(1)
    ds = (
        tf.data.Dataset.range(10_000)
        .map(lambda x: x + tf.cast(gen.uniform([], 0, 1000), tf.int64))
        .batch(8)
    )
    iterator = iter(ds)
    seen = [next(iterator).numpy().tolist()]
    if read_a_copy_meanwhile:
        with preserved_variables(ds):
            copy, _ = isolated_copy(ds)
            assert len(list(copy.take(5))) == 5
            seen += [next(iterator).numpy().tolist() for _ in range(3)]
    seen += [next(iterator).numpy().tolist() for _ in range(40 - len(seen))]
    return seen


def test_reading_a_copy_leaves_the_live_iterator_s_draws_alone() -> None:
    # GIVEN a loop's live iterator over a map that draws from a tf.random.Generator, whose
    # prefetch runs ahead of the loop on threads of its own
    # WHEN pipediag reads a private copy meanwhile (a copy gets variables of its own)
    # THEN the loop sees exactly the batches it sees alone: putting the generator back after
    # the read had undone the live iterator's own draws (its batches differed from the 4th)
    assert _generator_batches(read_a_copy_meanwhile=True) == _generator_batches(False)


def test_a_tf_distribute_per_device_feed_is_not_read_alone() -> None:
    # GIVEN the per-device dataset tf.distribute feeds a worker's device from (what a custom
    # loop over `strategy.experimental_distribute_dataset(ds)` pulls): it reads the batches
    # of a multi-device iterator, which the training reads too
    import tensorflow as tf
    from tensorflow.python.data.ops import multi_device_iterator_ops

    from pipediag.bench.pipeline import benchmark_dataset

    feed = multi_device_iterator_ops.OwnedMultiDeviceIterator(
        tf.data.Dataset.range(100).batch(2), ["/cpu:0"]
    )
    per_device = feed._device_iterators[0]._dataset
    # WHEN pipediag benchmarks it
    result = benchmark_dataset(per_device, max_batches=5, max_seconds=1.0)
    # THEN it declines, saying why, and the training still gets the first batch
    assert not result.measured
    assert result.reason is not None and result.reason.code == "distributed-feed"
    assert "tf.distribute's per-device feed" in reason_words(result.reason)
    assert feed.get_next()[0].numpy().tolist() == [0, 1]
