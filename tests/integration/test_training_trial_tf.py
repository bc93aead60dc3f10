"""Fixes tried on training itself, on real TensorFlow: fit's train function on two pipelines
with every variable put back, and whole diagnoses that try a fix on training."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pipelines  # tests/ is on sys.path under pytest (rootdir-relative prepend)
import pytest

from pipediag.bench.structure import walk
from pipediag.bench.teardown import TearDown
from pipediag.bench.whatif import FixPipelines
from pipediag.report.trials import FixTrial
from pipediag.training.prescription import order_for_search
from pipediag.training.training_trial import with_training

# --- fit, on real TensorFlow -----------------------------------------------------------------


@pytest.mark.tensorflow
def test_fit_train_function_on_two_pipelines_measures_the_gain_and_restores_every_variable() -> (
    None
):
    import keras
    import numpy as np
    import tensorflow as tf

    from pipediag.clock import MONOTONIC
    from pipediag.training.driver import step_variables
    from pipediag.training.training_trial import try_at_once

    keras.utils.set_random_seed(1)
    x = np.random.default_rng(0).normal(size=(256, 8)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    fast = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(32)

    def slow_batch(a: Any, b: Any) -> Any:
        slept = tf.reshape(tf.py_function(lambda: _sleep(0.02), [], tf.float32), ())
        return a + 0.0 * slept, b

    slow = fast.map(slow_batch)  # 20 ms a batch against a sub-millisecond step
    model = keras.Sequential(
        [
            keras.layers.Input((8,)),
            keras.layers.Dense(16),
            keras.layers.Dropout(0.2),
            keras.layers.Dense(1),
        ]
    )
    model.compile("adam", "mse", metrics=["mae"])
    model.fit(fast, steps_per_epoch=10, epochs=1, verbose=0)
    before = [v.numpy().copy() for v in step_variables(model)]

    teardown = TearDown()
    rounds, reason = try_at_once(
        model,
        FixPipelines("parallel-map", 1, slow, fast, pipeline_speedup=5.0),
        clock=MONOTONIC,
        step_s=0.02,
        teardown=teardown,
    )
    teardown.drain()
    assert reason is None and rounds is not None
    trial = with_training(FixTrial(fix="parallel-map", stage_index=1, verified=True), rounds, None)
    assert trial.training is not None, trial
    assert trial.training.training_speedup is not None and trial.training.training_speedup > 3.0
    after = [v.numpy() for v in step_variables(model)]
    assert len(before) >= 8  # weights, dropout's seed, Adam's slots and iterations, metrics
    for old, new in zip(before, after, strict=True):
        np.testing.assert_array_equal(old, new)


def _sleep(seconds: float) -> float:
    import time

    time.sleep(seconds)
    return 0.0


@pytest.mark.tensorflow
@pytest.mark.parametrize("style", ["fit", "loop"])
def test_a_sequential_python_map_is_tried_on_training(tmp_path: Path, style: str) -> None:
    import textwrap

    import pipediag

    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    config = pipediag.RunConfig(
        measured_steps=30, warmup_steps=3, bench_seconds=1.0, sample_gpu=False, deep_seconds=6.0
    )
    report = pipediag.diagnose(script, [style], config=config, out=None, log=None)
    (trial,) = [t for t in report.pipeline.trials if t.fix == "parallel-map"]
    assert trial.verified, trial.reason
    training = trial.training
    assert training is not None and training.rounds >= 3, trial
    assert training.baseline_steps_per_s and training.variant_steps_per_s
    assert training.training_speedup is not None
    assert "training_trial" in [p.name for p in report.phases]
    (fix,) = [s for s in report.suggestions if s.id.startswith("PD001")]
    assert fix.gain.on("training") == pytest.approx(_expected_gain(report, training))


def _expected_gain(report: Any, training: Any) -> float:
    """The suggestion's gain from the trial: the trial's own rates, with, under `fit`, what
    `fit`'s steps were timed to take beyond their train function added to both sides (when
    positive), and each side's epoch start spread over a pass of the dataset (where it is
    finite; docs/design.md, "Epoch starts in the gains")."""
    added_s = 0.0
    if report.train.style == "keras-fit":
        assert report.train.fit_overhead_s is not None  # timed on fit's measured steps
        added_s = max(0.0, report.train.fit_overhead_s)
    base, fixed = training.baseline_steps_per_s, training.variant_steps_per_s
    starts = (training.baseline_start_s, training.variant_start_s)
    steps = report.pipeline.pass_batches
    spread = (0.0, 0.0)
    if steps and None not in starts and starts != (0.0, 0.0):
        spread = (starts[0] / steps, starts[1] / steps)
    return (1.0 / base + added_s + spread[0]) / (1.0 / fixed + added_s + spread[1])


# A Python map that sleeps 4 ms an element, run one element at a time, before a tiny model.
SCRIPT = """
import sys, time
import numpy as np
import tensorflow as tf
import keras

def slow(x):
    time.sleep(0.004)
    return x

def to_example(i):
    v = tf.py_function(slow, [tf.cast(i, tf.float32)], tf.float32)
    v = tf.reshape(v, ())
    return tf.fill([8], v), tf.reshape(v, (1,))

ds = tf.data.Dataset.range(10_000).map(to_example).batch(8).prefetch(tf.data.AUTOTUNE)
model = keras.Sequential([keras.layers.Input((8,)), keras.layers.Dense(1)])
if sys.argv[1] == "fit":
    model.compile("sgd", "mse")
    model.fit(ds, epochs=1, verbose=0)
else:
    opt = keras.optimizers.SGD()

    @tf.function
    def step(a, b):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(a) - b) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                model.trainable_variables))

    for a, b in ds:
        step(a, b)
"""


@pytest.mark.tensorflow
def test_a_thread_cap_is_timed_and_kept_for_training_whatever_the_pipeline_alone_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tensorflow as tf

    from pipediag.bench.whatif import ForTraining, verify_fixes
    from pipediag.report.fixes import FIX_THREAD_CAP

    ds = (
        tf.data.Dataset.range(10_000)
        .map(lambda x: tf.reduce_sum(tf.sin(tf.cast(tf.fill([256], x), tf.float32))))
        .batch(16)
    )
    kept: list[FixPipelines] = []
    pipelines.only_fixes(monkeypatch)  # the thread cap alone, which training asks for
    trials = verify_fixes(walk(ds), budget_s=2.0, training=ForTraining(kept, thread_cap=1))
    (trial,) = trials
    assert trial.fix == FIX_THREAD_CAP and trial.verified, trial.reason
    assert trial.facts.threads == 1
    (capped,) = kept
    assert capped.tried_on_training
    assert capped.variant.options().threading.private_threadpool_size == 1
    assert order_for_search(kept, [])[0] == [capped]
