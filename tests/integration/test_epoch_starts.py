"""Each epoch's start under fit is timed apart from its steps (docs/design.md, "Epoch
starts"), on real Keras: a finite dataset, so every epoch makes a new iterator."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import pipediag

pytestmark = pytest.mark.tensorflow

LOOP = """
import numpy as np
import tensorflow as tf
import keras

x = np.random.default_rng(0).normal(size=(512, 8)).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, x[:, :1])).batch(16).prefetch(2)  # 32 batches
model = keras.Sequential([keras.layers.Input((8,)), keras.layers.Dense(1)])
opt = keras.optimizers.SGD(0.01)

@tf.function
def step(a, b):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(a) - b) ** 2)
    opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                            model.trainable_variables))

for epoch in range(10):
    for a, b in ds:
        step(a, b)
"""

SCRIPT = """
import numpy as np
import tensorflow as tf
import keras

x = np.random.default_rng(0).normal(size=(512, 8)).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, x[:, :1])).batch(16).prefetch(2)  # 32 batches
model = keras.Sequential([keras.layers.Input((8,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(ds, epochs=10, verbose=0)
"""


@pytest.mark.parametrize("style", ["fit", "loop"])
def test_every_epoch_start_the_run_crosses_is_recorded(tmp_path: Path, style: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT if style == "fit" else LOOP))
    config = pipediag.RunConfig(
        measured_steps=80,
        measured_seconds=None,
        warmup_steps=2,
        bench_seconds=0.5,
        sample_gpu=False,
        stages=False,
        verify=False,
    )
    report = pipediag.diagnose(script, config=config, out=tmp_path / "out", log=None)

    # 82 steps of 32-step epochs (in a loop, 2 pulls more before its first train step is
    # seen): epochs 0, 1 and 2 began; under fit, the training blocks of the alternation
    # after the budget may cross more (they are the script's own steps)
    starts = report.train.epoch_starts
    epochs = [s.epoch for s in starts]
    assert epochs[:3] == [0, 1, 2] and epochs == list(range(len(epochs)))
    assert style == "fit" or len(epochs) == 3
    assert all(s.steps_per_epoch == 32 for s in starts)
    assert all(0 <= s.duration_s < 60 for s in starts)
    loaded = pipediag.load_report(tmp_path / "out")
    assert loaded.train.epoch_starts == starts
