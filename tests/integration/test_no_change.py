"""pipediag never changes what the user's training computes (fixed seeds, deterministic ops)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_runner import ENV, run_pipediag

pytestmark = pytest.mark.tensorflow


# Shuffling each epoch, random augmentation, dropout: everything that draws randomness.
SCRIPT = """
import json, sys
import tensorflow as tf
import keras

keras.utils.set_random_seed(7)
tf.config.experimental.enable_op_determinism()
style, out = sys.argv[1], sys.argv[2]
gen = tf.random.Generator.from_seed(3)
x = tf.random.stateless_normal((512, 16), seed=[1, 2])
y = tf.reduce_sum(x, axis=1, keepdims=True)
ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512, seed=5)
ds = ds.map(lambda a, b: (a + gen.normal(a.shape) * 0.1 + tf.random.uniform(a.shape, seed=9), b))
ds = ds.batch(32).prefetch(2)
model = keras.Sequential([keras.layers.Input((16,)), keras.layers.Dense(32, activation="relu"),
                          keras.layers.Dropout(0.3), keras.layers.Dense(1)])
losses = []
if style == "fit":
    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            losses.append(float(logs["loss"]))
    model.compile(keras.optimizers.SGD(0.01), "mse")
    model.fit(ds, epochs=3, verbose=0, callbacks=[Record()])
else:
    opt = keras.optimizers.SGD(0.01)
    @tf.function
    def step(a, b):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(a, training=True) - b) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                model.trainable_variables))
        return loss
    for epoch in range(3):
        for a, b in ds:
            losses.append(float(step(a, b)))
json.dump(losses, open(out, "w"))
"""


def _plain_beside(script: Path, *args: str) -> subprocess.Popen[str]:
    """The plain run, started beside pipediag's rather than before it: the losses are the
    same whatever the load (seeded, deterministic ops), and nothing here reads a timing."""
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("style", ["fit", "loop"])
def test_losses_are_identical_with_and_without_pipediag(tmp_path: Path, style: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    plain, diagnosed = tmp_path / "plain.json", tmp_path / "diagnosed.json"
    plain_run = _plain_beside(script, style, str(plain))
    run = run_pipediag(
        "run",
        "--steps",
        "all",
        "--warmup",
        "2",
        "--bench-seconds",
        "1",
        # the stage holds and the rewrites on training still run, in less time
        "--deep-seconds",
        "6",
        "--out",
        str(tmp_path / "out"),
        str(script),
        style,
        str(diagnosed),
    )
    _, plain_err = plain_run.communicate(timeout=300)
    assert plain_run.returncode == 0, plain_err[-2000:]
    assert run.returncode == 0, run.stderr[-2000:]
    expected = json.loads(plain.read_text())
    assert len(expected) == 48
    assert json.loads(diagnosed.read_text()) == expected
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["pipeline"]["measured"] and report["train"]["measured_steps"] > 0
    alone = report["compute_alone"]
    if style == "fit":
        # The train step ran alone mid-run (at the end of epoch 1), between real steps, and
        # training went on exactly as without it.
        assert alone["measured"] and alone["restored_variables"] > 0
        last_step = report["train"]["steps"][-1]["start_s"]
        assert alone["start_s"] + alone["duration_s"] < last_step
        assert report["verdict"]["compute_alone_source"] == "measured"
    else:
        assert not alone["measured"] and alone["reason"]["code"] == "loop-steps-all"
        assert report["verdict"]["compute_alone_source"] == "estimated"


# A loop that pulls inside a tf.function, 4 steps a call: at its step budget the same
# function runs on the cached batch between the script's own calls. The losses are written
# after every call, since the budget ends the script.
CALLS_SCRIPT = """
import json, sys
import tensorflow as tf
import keras

keras.utils.set_random_seed(7)
tf.config.experimental.enable_op_determinism()
out = sys.argv[1]
x = tf.random.stateless_normal((512, 16), seed=[1, 2])
y = tf.reduce_sum(x, axis=1, keepdims=True)
ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512, seed=5).repeat()
ds = ds.map(lambda a, b: (a + tf.random.uniform(a.shape, seed=9), b)).batch(32).prefetch(2)
model = keras.Sequential([keras.layers.Input((16,)), keras.layers.Dense(32, activation="relu"),
                          keras.layers.Dropout(0.3), keras.layers.Dense(1)])
opt = keras.optimizers.SGD(0.01)

@tf.function
def train_steps(iterator, steps):
    losses = tf.TensorArray(tf.float32, size=steps)
    for i in tf.range(steps):
        a, b = next(iterator)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(a, training=True) - b) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                model.trainable_variables))
        losses = losses.write(i, loss)
    return losses.stack()

iterator = iter(ds)
losses = []
for _ in range(300):
    losses.extend(float(v) for v in train_steps(iterator, tf.constant(4)))
    with open(out, "w") as f:
        json.dump(losses, f)
"""


def test_a_function_loop_trains_the_same_through_its_alternation(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(CALLS_SCRIPT))
    plain, diagnosed = tmp_path / "plain.json", tmp_path / "diagnosed.json"
    plain_run = _plain_beside(script, str(plain))
    run = run_pipediag(
        "run",
        "--steps",
        "40",
        "--warmup",
        "4",
        "--bench-seconds",
        "1",
        "--no-verify",
        "--out",
        str(tmp_path / "out"),
        str(script),
        str(diagnosed),
    )
    _, plain_err = plain_run.communicate(timeout=300)
    assert plain_run.returncode == 0, plain_err[-2000:]
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    alone = report["compute_alone"]
    assert report["stop_reason"] == "step-budget", report["exit"]
    assert alone["method"] == "training-function" and alone["restored_variables"] > 0
    assert any(b["kind"] == "step-alone" for b in alone["blocks"])
    # The script's own calls after the step-alone blocks trained exactly as without them.
    expected = json.loads(plain.read_text())
    got = json.loads(diagnosed.read_text())
    last_alone = max(b["start_s"] for b in alone["blocks"] if b["kind"] == "step-alone")
    trained_after = [b for b in alone["blocks"] if b["kind"] == "training"]
    assert trained_after[-1]["start_s"] > last_alone
    assert len(got) > 4 * 15 and got == expected[: len(got)]
