"""tf.data feeding JAX: Keras 3 `fit` on the JAX backend and a JAX loop over
`as_numpy_iterator()`, run through the CLI on real JAX (CPU) (docs/design.md, "JAX").

Each script runs in a fresh process: the Keras backend is chosen at Keras's first import.
The input-bound scripts sleep 4 ms a batch in a sequential `numpy_function` map before a
small MLP (a step well under a millisecond): input costs most of training by a wide
margin. The compute-bound loop reads a cached, repeated pipeline into a wide MLP. The fit
script is run plainly and under pipediag, and its losses compared.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from cli_runner import ENV
from pipelines import input_bound_or_host_busy

# Found, not imported: JAX in the test process would make pipediag's in-process diagnoses
# read their loops as JAX loops (a script that imported JAX).
if importlib.util.find_spec("jax") is None:
    pytest.skip("JAX is not installed", allow_module_level=True)
pytestmark = pytest.mark.tensorflow

JAX_ENV = {**ENV, "KERAS_BACKEND": "jax"}
# Few steps and short budgets: the whole file well under a minute on 2 loaded cores.
QUICK = ("--no-gpu", "--steps", "30", "--warmup", "3", "--bench-seconds", "1")
DEEP = ("--deep-seconds", "4", "--verify-seconds", "2")

DATA = """
import sys, time
import numpy as np
import tensorflow as tf

mode = sys.argv[1]
rng = np.random.default_rng(0)
if mode == "input":
    x = rng.random((2048, 32), dtype=np.float32)
    y = (x.sum(axis=1, keepdims=True) > 16).astype("float32")

    def slow(a, b):
        time.sleep(0.004)
        return a, b

    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
    ds = ds.map(lambda a, b: tf.numpy_function(slow, [a, b], [tf.float32, tf.float32]))
    ds = ds.map(lambda a, b: (tf.ensure_shape(a, [32, 32]), tf.ensure_shape(b, [32, 1])))
    ds = ds.repeat().prefetch(2)
    width, hidden = 32, 64
else:
    x = rng.random((1024, 256), dtype=np.float32)
    y = rng.random((1024, 1), dtype=np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).cache().batch(128, drop_remainder=True)
    ds = ds.repeat().prefetch(2)
    width, hidden = 256, 512
"""

LOOP = (
    DATA
    + """
import jax
import jax.numpy as jnp

depth = 1 if mode == "input" else 3
keys = jax.random.split(jax.random.PRNGKey(0), depth + 1)
sizes = [width] + [hidden] * depth + [1]
params = [(jax.random.normal(k, (m, n)) * 0.05, jnp.zeros(n))
          for k, m, n in zip(keys, sizes, sizes[1:])]

def loss_fn(p, a, b):
    h = a
    for w, c in p[:-1]:
        h = jax.nn.relu(h @ w + c)
    w, c = p[-1]
    return jnp.mean((h @ w + c - b) ** 2)

@jax.jit
def step(p, a, b):
    loss, g = jax.value_and_grad(loss_fn)(p, a, b)
    return jax.tree.map(lambda w, d: w - 0.01 * d, p, g), loss

for a, b in ds.as_numpy_iterator():
    params, loss = step(params, a, b)
raise SystemExit("unreachable: pipediag ends the script after its step budget")
"""
)


def _pipediag_run(*args: str) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "pipediag", "run", *args],
        env=JAX_ENV,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr[-3000:]


def _diagnose(tmp_path: Path, body: str, mode: str, *options: str) -> dict[str, Any]:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(body))
    out = tmp_path / "out"
    _pipediag_run(*QUICK, *options, "--out", str(out), str(script), mode)
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


def _tried_on_training(report: dict[str, Any]) -> list[str]:
    """The fixes and held stages that measured a speedup on the script's own training."""
    fixes = [t["fix"] for t in report["pipeline"]["trials"] if t.get("training")]
    held = [s["name"] for s in report["pipeline"]["stages"] if s.get("training_speedup_if_free")]
    return fixes + held


def _assert_step_alone_measured(report: dict[str, Any]) -> None:
    alone = report["compute_alone"]
    assert alone["measured"], alone.get("reason")
    assert alone["steps_per_s"] and alone["steps_per_s"] > 0
    assert report["verdict"]["compute_alone_source"] == "measured"


# The compute-bound JAX loop (24 s on 2 cores) is left to the unit tests of the verdict and
# the JAX fit test's step alone: the input-bound loop covers the JAX loop's own path.
@pytest.mark.parametrize("mode", ["input"])
def test_jax_loop(tmp_path: Path, mode: str) -> None:
    report = _diagnose(tmp_path, LOOP, mode, *DEEP)

    assert report["train"]["style"] == "jax-loop"
    assert report["train"]["input_wait_source"] == "iterator-timing"
    # a loaded host may read a compute-bound loop as balanced, never as input-bound; the
    # input-bound one as uncertain where other processes kept the host busy
    verdict = report["verdict"]
    if mode == "input":
        assert input_bound_or_host_busy(verdict["label"], verdict.get("uncertain_because")), verdict
    else:
        assert report["verdict"]["label"] in {"compute-bound", "balanced"}
    _assert_step_alone_measured(report)
    assert report["compute_alone"]["method"] == "cached-batch-loop"
    if mode == "input":
        assert _tried_on_training(report), report["pipeline"]["trials"]


# Shuffling each epoch and dropout: randomness Keras keeps in seed-generator state. A
# sequential Python map sleeps 4 ms a batch before a step well under a millisecond: input
# costs most of training, so the fixes are tried on fit's state too.
IDENTITY = """
import json, sys, time
import numpy as np
import tensorflow as tf
import keras

keras.utils.set_random_seed(7)
out = sys.argv[1]
x = np.random.default_rng(1).normal(size=(512, 64)).astype("float32")
y = x.sum(axis=1, keepdims=True)

def slow(a, b):
    time.sleep(0.004)
    return a, b

ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512, seed=5).batch(32)
ds = ds.map(lambda a, b: tf.numpy_function(slow, [a, b], [tf.float32, tf.float32]))
ds = ds.map(lambda a, b: (tf.ensure_shape(a, [None, 64]), tf.ensure_shape(b, [None, 1])))
ds = ds.prefetch(2)
model = keras.Sequential([keras.layers.Input((64,)), keras.layers.Dense(256, activation="relu"),
                          keras.layers.Dropout(0.3), keras.layers.Dense(1)])
losses = []

class Record(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        losses.append(float(logs["loss"]))

model.compile(keras.optimizers.Adam(0.001), "mse")
model.fit(ds, epochs=3, verbose=0, callbacks=[Record()])
json.dump(losses, open(out, "w"))
"""


def test_keras_fit_on_jax_input_bound_with_losses_identical_to_a_plain_run(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(IDENTITY))
    plain, diagnosed = tmp_path / "plain.json", tmp_path / "diagnosed.json"
    # The plain run beside pipediag's, not before it: its losses are the same whatever the
    # load, and a verdict read on a host it keeps busy says so (`input_bound_or_host_busy`).
    plain_run = subprocess.Popen(
        [sys.executable, str(script), str(plain)],
        env=JAX_ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    out = tmp_path / "out"
    _pipediag_run(
        "--no-gpu",
        "--steps",
        "all",
        "--warmup",
        "2",
        "--bench-seconds",
        "1",
        "--deep-seconds",
        "3",
        "--out",
        str(out),
        str(script),
        str(diagnosed),
    )
    _, plain_err = plain_run.communicate(timeout=300)
    assert plain_run.returncode == 0, plain_err[-2000:]
    expected = json.loads(plain.read_text())
    assert len(expected) == 48
    assert json.loads(diagnosed.read_text()) == expected
    report = json.loads((out / "report.json").read_text())
    assert report["train"]["style"] == "keras-fit"
    assert report["train"]["keras_backend"] == "jax"
    assert report["train"]["input_wait_source"] == "batch-stamps"
    verdict = report["verdict"]
    assert input_bound_or_host_busy(verdict["label"], verdict.get("uncertain_because")), verdict
    # The step ran alone mid-run, between fit's own steps, and training went on unchanged.
    _assert_step_alone_measured(report)
    assert report["compute_alone"]["start_s"] < report["train"]["steps"][-1]["start_s"]
    assert report["compute_alone"]["method"] == "keras-train-function"
    # the step ran on copies of every array of fit's state: weights, optimizer, metrics
    assert report["compute_alone"]["restored_variables"] >= 4
    assert _tried_on_training(report), report["pipeline"]["trials"]
    assert "TypeError" not in json.dumps(report)
