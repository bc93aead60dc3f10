"""The train step alone, on a cached batch: under fit and in custom loops, on real TensorFlow."""

from __future__ import annotations

import itertools
import json
import textwrap
from pathlib import Path

import pytest

import pipediag
from pipediag.analysis.alternation import _left_out
from pipediag.report.reasons import Reason

pytestmark = pytest.mark.tensorflow

CONFIG = pipediag.RunConfig(
    measured_steps=20,
    warmup_steps=3,
    bench_seconds=0.5,
    sample_gpu=False,
    verify=False,
    deep_seconds=3.0,  # nothing here reads the deep phase: the stages and holds kept short
)

# A tf.function loop is taken for training at its third pull: its first step traces and
# names the variables its gradient writes, its second changes them (docs/design.md,
# "Finding the training").
UNTIMED_PULLS = 2

COMMON = """
import json, sys
import numpy as np
import tensorflow as tf
import keras

keras.utils.set_random_seed(1)
x = np.random.default_rng(0).normal(size=(2048, 32)).astype("float32")
y = x.sum(axis=1, keepdims=True)
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32).prefetch(2)
model = keras.Sequential([keras.layers.Input((32,)), keras.layers.Dense(64, activation="relu"),
                          keras.layers.Dropout(0.2), keras.layers.Dense(1)])
"""

FIT = """
model.compile("adam", "mse", metrics=["mae"])
model.fit(ds.repeat(), epochs=100, steps_per_epoch=50, verbose=0)
"""

# A custom loop's train step, on `opt` (the loop's optimizer).
TRAIN_STEP = """
@tf.function
def step(a, b):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(a, training=True) - b) ** 2)
    opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                            model.trainable_variables))
    return loss
"""

LOOP = (
    """
opt = keras.optimizers.Adam()
seen = []
# each batch numbered once for the whole run: one iterator over the repeated data
numbered = tf.data.Dataset.zip((ds.repeat(), tf.data.Dataset.counter())).prefetch(2)
"""
    + TRAIN_STEP
    + """
try:
    for (a, b), i in numbered:
        seen.append(int(i))
        step(a, b)
finally:
    json.dump(seen, open(sys.argv[1], "w"))
"""
)

STATEFUL_RANDOM_FIT = """
class Noisy(keras.Model):
    def train_step(self, data):
        a, b = data
        a = a + tf.random.uniform(tf.shape(a)) * 0.01  # a stateful random kernel
        return super().train_step((a, b))

model = Noisy(model.inputs, model.outputs)
model.compile("adam", "mse")
model.fit(ds.repeat(), epochs=100, steps_per_epoch=50, verbose=0)
"""


def _script(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(COMMON) + textwrap.dedent(body))
    return script


def test_fit_runs_the_train_function_alone_after_the_measured_steps(tmp_path: Path) -> None:
    report = pipediag.diagnose(_script(tmp_path, FIT), config=CONFIG, out=None, log=None)
    alone = report.compute_alone
    assert alone is not None and alone.measured, alone
    assert alone.method == "keras-train-function"
    # weights, dropout's seed state, Adam's slots and iterations, the metrics: all put back
    assert alone.restored_variables >= 10
    assert alone.steps >= 50 and alone.steps_per_s and alone.cpu_s_per_step
    # in alternation with fit's own steps: at least 3 blocks of each, of one step count
    kinds = [block.kind for block in alone.blocks]
    assert all(a != b for a, b in zip(kinds, kinds[1:], strict=False))
    assert kinds.count("step-alone") >= 3 and kinds.count("training") >= 3
    assert {b.steps + b.dropped_steps for b in alone.blocks} == {alone.block_steps}
    verdict = report.verdict
    assert verdict.compute_alone_source == "measured"
    # T is the step alone with fit's own time around each step added, as fit would run it
    # on a cached batch (docs/design.md, "Rates in alternation"), read through the pairs:
    # training's rate over their mean ratio, so 1 - A/T is the cost within epochs
    around = report.train.fit_overhead_s
    assert around is not None and around >= 0.0
    pooled = 1.0 / (1.0 / alone.steps_per_s + around)
    assert verdict.compute_alone_steps_per_s == pytest.approx(pooled, rel=0.15)
    assert verdict.input_cost_fraction is not None and verdict.cost_split is not None
    # phases in order: pipeline alone, measured steps, compute alone; the verdict right after
    names = [p.name for p in report.phases]
    assert names.index("pipeline_benchmark") < names.index("train") < names.index("compute_alone")
    assert report.first_verdict_s is not None
    assert report.first_verdict_s >= alone.start_s + alone.duration_s


def test_a_custom_loop_alternates_its_last_batch_and_its_own_pulls_at_the_budget(
    tmp_path: Path,
) -> None:
    seen = tmp_path / "seen.json"
    report = pipediag.diagnose(
        _script(tmp_path, LOOP), [str(seen)], config=CONFIG, out=None, log=None
    )
    assert report.stop_reason == "step-budget"
    alone = report.compute_alone
    assert alone is not None and alone.measured and alone.method == "cached-batch-loop"
    assert report.verdict.compute_alone_source == "measured"
    # the blocks alternate, training first (20 measured steps are fewer than a block), at
    # least 3 of each kind, every one of the same step count
    kinds = [block.kind for block in alone.blocks]
    assert kinds[:2] == ["training", "step-alone"]
    assert all(a != b for a, b in zip(kinds, kinds[1:], strict=False))
    assert kinds.count("step-alone") >= 3 and kinds.count("training") >= 3
    assert {b.steps + b.dropped_steps for b in alone.blocks} == {alone.block_steps}
    # the loop trained on its 25 real batches (2 before a train step was seen between its
    # pulls, then 23 timed); after them it was served, in turn, real batches it had not
    # seen (training blocks) and runs of the last batch before the budget (the warm-up
    # and the step-alone blocks), then the budget ended it
    pulls = json.loads(seen.read_text())
    real = UNTIMED_PULLS + CONFIG.warmup_steps + (CONFIG.measured_steps or 0)
    cached = pulls[real - 1]
    # what the alternation served (the fix trials and stage holds after it read copies of
    # the pipeline, whose counters start again)
    served = [b for b in alone.blocks if alone.start_s is not None and b.start_s >= alone.start_s]
    after = pulls[real:][: alone.warmup_steps + sum(b.steps + b.dropped_steps for b in served)]
    alone_blocks = [b for b in alone.blocks if b.kind == "step-alone"]
    assert after.count(cached) == alone.warmup_steps + sum(
        b.steps + b.dropped_steps for b in alone_blocks
    )
    runs = [key for key, _ in itertools.groupby(pull == cached for pull in after)]
    assert runs.count(True) == len(alone_blocks)
    fresh = [pull for pull in after if pull != cached]
    assert fresh == sorted(set(fresh)) and not set(fresh) & set(pulls[:real])


REBUILT_EACH_EPOCH = (
    """
opt = keras.optimizers.SGD(0.01)
xv = -np.abs(x[:512])  # validation: every value negative, training's as drawn

def batches(data):  # a fresh pipeline each epoch, as JAX's tf.data notebook builds it
    return tf.data.Dataset.from_tensor_slices((data, data.sum(axis=1, keepdims=True))).batch(32)
"""
    + TRAIN_STEP
    + """
for epoch in range(100):
    for a, b in batches(x[:1536]):  # 48 batches
        step(a, b)
    for a, b in batches(xv):  # the same pipeline over other data, pulled at another line
        if float(tf.reduce_max(a)) > 0:
            print("VALIDATION SERVED A TRAINING BATCH", flush=True)
"""
)


def test_a_loop_that_rebuilds_its_pipeline_each_epoch_alternates_on_past_the_epoch_s_end(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a loop that builds its pipeline anew each epoch, 48 batches, ending its first
    # epoch in the alternation's first block; and a validation pass over the same pipeline
    # after each
    report = pipediag.diagnose(
        _script(tmp_path, REBUILT_EACH_EPOCH), config=CONFIG, out=None, log=None
    )
    # THEN the alternation goes on in the next epochs' pipelines to its rounds
    alone = report.compute_alone
    assert alone is not None and alone.measured and alone.method == "cached-batch-loop"
    kinds = [block.kind for block in alone.blocks]
    assert kinds.count("step-alone") >= 3 and kinds.count("training") >= 3, kinds
    assert sum(b.steps + b.dropped_steps for b in alone.blocks if b.kind == "training") > 48
    assert report.verdict.compute_alone_source == "measured"
    # AND the validation passes are never served as training: they read their own batches
    assert "VALIDATION SERVED" not in capfd.readouterr().out


def test_a_stateful_random_op_in_the_train_step_keeps_compute_alone_estimated(
    tmp_path: Path,
) -> None:
    report = pipediag.diagnose(
        _script(tmp_path, STATEFUL_RANDOM_FIT), config=CONFIG, out=None, log=None
    )
    alone = report.compute_alone
    assert alone is not None and not alone.measured
    assert alone.reason == Reason("stateful-random-op", detail="RandomUniform")
    assert report.verdict.compute_alone_source == "estimated"
    assert report.verdict.compute_alone_reason == alone.reason


def test_the_step_alone_takes_fit_s_path_an_iterator_over_the_cached_batch() -> None:
    # GIVEN a compiled model that has trained, and the batch pipediag caches
    import keras
    import numpy as np
    import tensorflow as tf
    from synthetic_reports import FakeClock

    from pipediag.training.compute_alone import FitStepAlone

    x = np.random.default_rng(0).normal(size=(256, 8)).astype("float32")
    ds = tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1))).batch(32)
    model = keras.Sequential([keras.layers.Input((8,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse", steps_per_execution=2)
    model.fit(ds, epochs=1, verbose=0)
    fed: list[object] = []
    original = model.train_function
    model.train_function = lambda data: fed.append(data) or original(data)
    before = [v.numpy() for v in model.variables]
    # WHEN it runs a block alone
    ends = iter(range(3))
    FitStepAlone(model, next(iter(ds))).block(
        lambda _at: next(ends) >= 2, clock=FakeClock(), warmup=1
    )
    # THEN each call reads a tf.data iterator inside the train function, as fit's steps do
    # (FastFlow's T), never a Python iterable that skips that path; training is unchanged
    assert len(fed) == 4 and all(isinstance(data, tf.data.Iterator) for data in fed)
    assert all(np.array_equal(a, v.numpy()) for a, v in zip(before, model.variables, strict=True))


def test_the_observer_check_times_fit_s_own_steps_with_the_samplers_paused(
    tmp_path: Path,
) -> None:
    import dataclasses

    # GIVEN a fit of 3 short epochs: few steps left for the alternation
    short_fit = FIT.replace("epochs=100", "epochs=3")
    config = dataclasses.replace(CONFIG, observer_check=True)
    report = pipediag.diagnose(_script(tmp_path, short_fit), config=config, out=None, log=None)
    alone = report.compute_alone
    assert alone is not None and alone.measured, alone
    # THEN every other training block is a quiet one, the blocks' kinds alternating, in the
    # rounds and in the check's own blocks after them, where fit's steps leave room
    kinds = [block.kind for block in alone.blocks]
    assert kinds[:4] == ["training", "step-alone", "quiet-training", "step-alone"]
    assert "step-alone" not in [block.kind for block in alone.observer_blocks]
    training = [k for k in kinds if k != "step-alone"] + [b.kind for b in alone.observer_blocks]
    assert training == ["training", "quiet-training"] * (len(training) // 2) + (
        ["training"] if len(training) % 2 else []
    )
    assert kinds.count("step-alone") >= 3
    # AND the verdict carries the observer effect, with an interval where two pairs or more
    # were kept; none only where the host disturbed every quiet block past the first (which
    # reads against the lead), or left it in another of its modes than the training blocks
    # beside it (a short fit has few), or training ended before a watched block followed it
    effect = report.verdict.observer_effect
    if effect is None:
        every = [*alone.blocks, *alone.observer_blocks]
        left_out, modes = _left_out(every)
        quiet = [i for i, block in enumerate(every) if block.kind == "quiet-training"]
        last_watched = max(i for i, block in enumerate(every) if block.kind == "training")
        read = [i for i in quiet if i < last_watched and i != 2]  # 2: beside the lead
        assert quiet and (modes is not None or set(read) <= left_out), every
        return
    assert effect.pairs >= 1 and effect.ratio > 0
    if effect.pairs >= 2:
        assert effect.low is not None and effect.low <= effect.ratio <= (effect.high or 0)
