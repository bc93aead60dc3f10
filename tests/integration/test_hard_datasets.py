"""Awkward datasets and scripts: pipediag copes, says what it did, and never crashes the run."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from cli_runner import run_pipediag
from pipelines import input_bound_or_host_busy

import pipediag
from pipediag.renderers.reason_words import reason_words
from pipediag.renderers.verdict_words import headline

pytestmark = pytest.mark.tensorflow

CONFIG = pipediag.RunConfig(
    measured_steps=10,
    warmup_steps=2,
    bench_seconds=0.5,
    sample_gpu=False,
    verify=False,
    deep_seconds=3.0,  # nothing here reads the deep phase: the stages and holds kept short
)

HEADER = """
import time
import numpy as np
import tensorflow as tf
import keras

def slow(x):
    time.sleep(0.01)
    return x

def model_for(width):
    m = keras.Sequential([keras.layers.Input((width,)), keras.layers.Dense(1)])
    m.compile("sgd", "mse")
    return m

# A custom loop trains only where a train step runs between its pulls (docs/design.md,
# "Finding the training"): the loops below call this one, eagerly. Its variable is made at
# the first step, so that the header leaves TensorFlow's runtime unstarted.
state = {}

def train_step(*_):
    if not state:
        state.update(weight=tf.Variable(0.0), sgd=keras.optimizers.SGD(0.01))
    weight = state["weight"]
    with tf.GradientTape() as tape:
        loss = (weight - 1.0) ** 2
    state["sgd"].apply_gradients([(tape.gradient(loss, weight), weight)])
"""


def _input_bound(report: pipediag.Report) -> bool:
    """Input-bound, or uncertain on a host another process keeps busy: these 20-ms batches
    against a step of a few ms leave the cost, less the others' share, under the input-bound
    line there."""
    return input_bound_or_host_busy(report.verdict.label, report.verdict.uncertain_because)


def _diagnose(tmp_path: Path, body: str) -> pipediag.Report:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(HEADER) + textwrap.dedent(body))
    return pipediag.diagnose(script, config=CONFIG, out=tmp_path / "out", log=None)


def test_empty_dataset(tmp_path: Path) -> None:
    report = _diagnose(tmp_path, "for b in tf.data.Dataset.range(0).batch(4):\n    train_step(b)\n")
    # no pull ever reached a train step: nothing was training, and the report says why
    (skipped,) = report.train.skipped_passes
    assert skipped.batches == 0
    assert report.pipeline.measured is False
    assert report.verdict.label == "unknown" and report.complete
    assert report.verdict.no_verdict_because == "no-training"
    text = (tmp_path / "out" / "summary.txt").read_text()
    assert text.startswith("NO VERDICT: No training was found")
    assert "skipped an empty pass at train.py:" in text and "(the dataset was empty)" in text


def test_single_element(tmp_path: Path) -> None:
    report = _diagnose(tmp_path, "for b in tf.data.Dataset.range(3).batch(4):\n    train_step(b)\n")
    # one step cannot be seen between two pulls: one batch is never a training run
    (skipped,) = report.train.skipped_passes
    assert skipped.batches == 1
    assert report.verdict.label == "unknown"


def test_dict_and_ragged_elements(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        """
        ds = tf.data.Dataset.range(1000).map(lambda i: {"x": tf.fill([4], i), "n": tf.range(i % 5)})
        ds = ds.map(lambda d: {**d, "slow": tf.py_function(slow, [d["x"][0]], tf.int64)})
        ds = ds.ragged_batch(2)
        for batch in ds:
            _ = batch["n"].flat_values
            train_step(batch)
        """,
    )
    assert report.pipeline.measured
    assert _input_bound(report)
    assert report.train.measured_steps == 10


def test_from_generator(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        """
        def rows():
            for i in range(100000):
                time.sleep(0.01)
                yield np.full(8, i, np.float32), np.zeros(1, np.float32)
        spec = (tf.TensorSpec((8,), tf.float32), tf.TensorSpec((1,), tf.float32))
        ds = tf.data.Dataset.from_generator(rows, output_signature=spec).batch(2)
        model_for(8).fit(ds, epochs=1, verbose=0)
        """,
    )
    assert report.pipeline.measured
    assert _input_bound(report)


def test_a_peek_at_another_dataset_is_not_training(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        """
        val = tf.data.Dataset.range(100).batch(50)
        peek = val.take(1)  # kept alive: identity alone cannot tell it from training
        for b in peek:
            print("first validation batch", b.shape)
        train = tf.data.Dataset.range(10**6).map(
            lambda i: tf.py_function(slow, [i], tf.int64)).batch(2)
        for b in train:
            train_step(b)
        """,
    )
    assert "Map" in report.pipeline.dataset
    assert report.train.measured_steps == 10
    (peek,) = report.train.skipped_passes
    assert peek.batches == 1 and peek.dataset.startswith("Take <- Batch <- Range")


def test_dataset_rebuilt_every_epoch_is_one_training_stream(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        """
        train = tf.data.Dataset.range(10**6).map(
            lambda i: tf.py_function(slow, [i], tf.int64)).batch(2)
        val = tf.data.Dataset.range(8).batch(4)
        for epoch in range(10):
            for b in train.take(4):
                train_step(b)
            for b in val:
                pass
        """,
    )
    assert report.train.measured_steps == 10
    # 4 batches an epoch: training is found at epoch 0's third pull, so 2 of its steps are
    # timed, then 4 of each epoch after
    assert {s.epoch for s in report.train.steps} == {0, 1, 2, 3}
    assert all(p.dataset.endswith("Batch <- Range") for p in report.train.skipped_passes)
    assert _input_bound(report)
    benchmarks = [p for p in report.phases if p.name == "pipeline_benchmark"]
    assert len(benchmarks) == 1  # benchmarked once, not once per epoch


def test_fit_with_validation_data(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        """
        def data(n, slow_it):
            ds = tf.data.Dataset.range(n)
            if slow_it:
                ds = ds.map(lambda i: tf.py_function(slow, [i], tf.int64))
            return ds.map(lambda i: (tf.fill([8], tf.cast(i, tf.float32)), tf.zeros([1]))).batch(2)
        model_for(8).fit(data(10**6, True), validation_data=data(40, False), epochs=3,
                         steps_per_epoch=5, verbose=0)
        """,
    )
    assert report.train.style == "keras-fit"
    assert report.train.measured_steps == 10
    assert _input_bound(report)
    assert report.pipeline.dataset.startswith("Batch <- Map <- Map")


def test_script_running_its_own_profiler(tmp_path: Path) -> None:
    # fit on arrays: Keras makes the dataset, so pipediag would need the TF profiler, which the
    # script already holds; the run goes on and the report says what could not be measured.
    report = _diagnose(
        tmp_path,
        f"""
        tf.profiler.experimental.start({str(tmp_path / "userprof")!r})
        x = np.zeros((4000, 8), "float32")
        try:
            model_for(8).fit(x, x[:, :1], batch_size=8, epochs=1, verbose=0)
        finally:
            tf.profiler.experimental.stop()
        """,
    )
    assert report.verdict.label == "unknown"
    assert any(note.code == "fit-profiler-no-start" for note in report.notes)
    assert report.verdict.no_verdict_because == "wait-not-measured"
    assert "could not be measured" in headline(report).text
    assert report.train.measured_steps == 10 and report.complete


def test_fit_on_a_dataset_needs_no_profiler(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        f"""
        tf.profiler.experimental.start({str(tmp_path / "userprof")!r})
        ds = tf.data.Dataset.range(10**6).map(lambda i: tf.py_function(slow, [i], tf.int64))
        ds = ds.map(lambda i: (tf.fill([8], tf.cast(i, tf.float32)), tf.zeros([1]))).batch(2)
        try:
            model_for(8).fit(ds, epochs=1, steps_per_epoch=30, verbose=0)
        finally:
            tf.profiler.experimental.stop()
        """,
    )
    assert report.train.input_wait_source == "batch-stamps"
    assert _input_bound(report)
    assert not any("profiler" in reason_words(note) for note in report.notes)


def test_fit_on_arrays_uses_the_profiler(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        """
        x = np.zeros((4000, 8), "float32")
        model_for(8).fit(x, x[:, :1], batch_size=8, epochs=1, verbose=0)
        """,
    )
    assert report.train.input_wait_source == "profiler-trace"
    reason = report.pipeline.reason
    assert reason is not None and reason.code == "fit-given"
    assert "NDArray" in reason.detail or "ndarray" in reason.detail
    assert report.verdict.input_wait_fraction is not None


def test_distribute_strategy_on_cpu_devices(tmp_path: Path) -> None:
    # Logical devices must be set before TF starts its runtime: a fresh process.
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(HEADER)
        + textwrap.dedent(
            """
            cpu = tf.config.list_physical_devices("CPU")[0]
            logical = [tf.config.LogicalDeviceConfiguration()] * 2
            tf.config.set_logical_device_configuration(cpu, logical)
            strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
            ds = tf.data.Dataset.range(10**6).map(lambda i: tf.py_function(slow, [i], tf.int64))
            ds = ds.map(lambda i: (tf.fill([8], tf.cast(i, tf.float32)), tf.zeros([1]))).batch(8)
            with strategy.scope():
                model = model_for(8)
            model.fit(ds, epochs=1, steps_per_epoch=40, verbose=0)
            """
        )
    )
    run = run_pipediag(
        "run",
        "--steps",
        "10",
        "--warmup",
        "2",
        "--bench-seconds",
        "0.5",
        "--deep-seconds",
        "3",
        "--out",
        str(tmp_path / "out"),
        str(script),
    )
    assert run.returncode == 0, run.stderr[-2000:]
    report = pipediag.load_report(tmp_path / "out")
    # Each replica pulls its shard at the same time: the step waited once, not twice. (Batches
    # of 8 take 80 ms, a loaded host's step about 10: the wait share stands clear of 0.5.)
    assert _input_bound(report)
    fraction = report.verdict.input_wait_fraction
    assert fraction is not None and 0.5 < fraction <= 1.0
