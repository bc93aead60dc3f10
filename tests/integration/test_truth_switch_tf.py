"""The corpus's truth switch in its alternated modes (`PIPEDIAG_TRUTH=AT`, and `AB` for a
script's hand-tuned variant), on real tf.data pipelines under Keras fit: the kinds each step
was fed, as the TensorFlow side chose them, are the ones the stamps record, and every epoch
reads one whole pass of the real dataset (of both, in `AB`), so a cache in it fills as in
the plain script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = REPO_ROOT / "benchmarks" / "tutorials"
sys.path.insert(0, str(TUTORIALS))

import _truth  # noqa: E402

pytestmark = pytest.mark.tensorflow

# Every element read from the pipeline carries the count of reads so far, so the held batch
# is the one batch that comes back within an epoch: a callback records each step's batch.
SCRIPT = """
import json, sys
import tensorflow as tf
import keras
import _truth

style, fed_out = sys.argv[1], sys.argv[2]
endless = style in ("endless", "calls")
reads = tf.Variable(0, dtype=tf.int64)
# one count per read however many iterators read at once: a variable's add and the read
# after it are two steps, and two iterators can read the same count between them (three
# threads reading 20,000 each gave 293 repeats; the read inside the section, none)
one_at_a_time = tf.CriticalSection()

def bump():
    added = reads.assign_add(1, read_value=False)
    with tf.control_dependencies([added]):
        return tf.identity(reads.read_value())

def count(_):
    x = tf.reshape(tf.cast(one_at_a_time.execute(bump), tf.float32), [1])
    return x, x


def build():
    ds = tf.data.Dataset.range(96).map(count).cache()
    if _truth.TUNED:
        ds = ds.map(lambda x, y: (x + 1000.0, y))  # marks the tuned variant's batches
    ds = ds.batch(8)  # 12 batches
    return ds.repeat() if endless else ds

ds = _truth.training_dataset(
    build(),
    epochs=3,
    steps_per_epoch=6 if endless else None,
    steps_per_call=3 if style == "calls" else 1,
    loop=style == "loop",
    tuned=build,
)
fed = []

class Fed(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        fed.append(float(model.seen.numpy()))

class Seen(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)
        self.seen = tf.Variable(0.0, trainable=False)

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        x, y = data
        self.seen.assign(x[0, 0])
        return super().train_step(data)

model = Seen()
model.compile(optimizer="sgd", loss="mse")
if style == "loop":
    for epoch in range(3):
        for x, y in _truth.epoch(ds):
            fed.append(float(x[0, 0]))
elif style == "calls":
    iterator = iter(ds)

    @tf.function
    def call(steps):
        seen = tf.TensorArray(tf.float32, size=steps)
        for i in tf.range(steps):
            x, y = next(iterator)
            seen = seen.write(i, x[0, 0])
        return seen.stack()

    for epoch in range(3):
        _truth.begin_epoch()
        for _ in range(2):
            fed += [float(v) for v in call(tf.constant(3))]
            _truth.steps_done(3)
else:
    model.fit(ds, epochs=3, steps_per_epoch=6 if endless else None, verbose=0,
              callbacks=[Fed(), *_truth.callbacks()])
json.dump({"fed": fed, "reads": int(reads.numpy())}, open(fed_out, "w"))
"""


def _run(tmp_path: Path, style: str, mode: str = "AT") -> tuple[dict, dict]:
    script = tmp_path / "alternated.py"
    script.write_text(textwrap.dedent(SCRIPT))
    stamps, fed = tmp_path / f"{style}-stamps.json", tmp_path / f"{style}-fed.json"
    env = {
        **os.environ,
        "PIPEDIAG_TRUTH": mode,
        "PIPEDIAG_TRUTH_OUT": str(stamps),
        "PYTHONPATH": str(TUTORIALS),
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    done = subprocess.run(
        [sys.executable, str(script), style, str(fed)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(stamps.read_text()), json.loads(fed.read_text())


def _fed_kinds(stamps: dict, fed: list[float]) -> list[int]:
    """1 for each step whose batch came back within its epoch (the held one), else 0."""
    kinds, at = [], 0
    for epoch in stamps["epochs"]:
        batches = fed[at : at + len(epoch["ends_s"])]
        kinds += [int(batches.count(b) > 1) for b in batches]
        at += len(batches)
    return kinds


@pytest.mark.parametrize("style", ["finite", "loop"])
def test_a_finite_dataset_alternates_by_block_and_reads_one_whole_pass_an_epoch(
    tmp_path: Path, style: str
) -> None:
    stamps, fed = _run(tmp_path, style)
    # THEN blocks of 3 (a quarter of 12 batches), each epoch starting on the other kind
    assert stamps["block"] == 3
    kinds = [e["kinds"] for e in stamps["epochs"]]
    assert kinds == [_truth.pattern(12, 3, n % 2) for n in range(3)]
    # AND the kinds recorded are the ones the steps were fed
    assert [k for epoch in kinds for k in epoch] == _fed_kinds(stamps, fed["fed"])
    # AND the real dataset's cache filled in the first epoch: its map ran for one pass
    # (and once more for the held batch's own read), never again
    assert fed["reads"] <= 96 + 8
    # AND a loop's passes end each iterator apart, its end timed
    if style == "loop":
        assert all(len(e["closing_s"]) == 2 for e in stamps["epochs"])


@pytest.mark.parametrize("style", ["endless", "calls"])
def test_an_endless_dataset_keeps_fit_s_steps_per_epoch(tmp_path: Path, style: str) -> None:
    # (under fit, or in a loop whose tf.function runs 3 steps a call, each call one kind)
    stamps, fed = _run(tmp_path, style)
    kinds = [e["kinds"] for e in stamps["epochs"]]
    assert [len(k) for k in kinds] == [6, 6, 6]
    assert [k for epoch in kinds for k in epoch] == _fed_kinds(stamps, fed["fed"])
    assert kinds[0][0] != kinds[1][0]


@pytest.mark.parametrize("style", ["finite", "loop", "endless"])
def test_the_tuned_variant_takes_the_held_batch_s_place_and_both_read_whole_passes(
    tmp_path: Path, style: str
) -> None:
    stamps, fed = _run(tmp_path, style, mode="AB")
    kinds = [e["kinds"] for e in stamps["epochs"]]
    # THEN the kinds recorded are the ones the steps were fed: 1 for the tuned variant's
    assert [k for epoch in kinds for k in epoch] == [int(v >= 1000) for v in fed["fed"]]
    if style == "endless":
        # AND an endless pair keeps fit's steps per epoch, both kinds in each
        assert [len(k) for k in kinds] == [6, 6, 6]
        assert all(set(k) == {0, 1} for k in kinds)
        return
    # AND a finite pair reads one whole pass of each an epoch, block for block
    assert kinds == [_truth.pattern(12, 3, n % 2, both_whole=True) for n in range(3)]
    assert [k.count(1) for k in kinds] == [12, 12, 12]
    # AND each one's cache filled in the first epoch: its map ran for one pass, never again
    assert fed["reads"] == 2 * 96
