"""Loops that pull inside a `tf.function`, as research trainers and Orbit do: several steps a
call over `strategy.distribute_datasets_from_function`, diagnosed like any loop.

Margins are wide: the input-bound pipeline sleeps 50 ms a batch in a `py_function` against a
step of about a millisecond; the compute-bound one reads a cached, repeated dataset into a
model that does far more work per step than the pipeline.
"""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pipelines import bands_reached, input_bound_or_host_busy

import pipediag
from pipediag.renderers.cost_words import WAITS_NOT_TIMED
from pipediag.renderers.verdict_words import headline
from pipediag.report.reasons import Reason

pytestmark = pytest.mark.tensorflow

STEPS_PER_CALL = 4
CONFIG = pipediag.RunConfig(
    measured_steps=24,
    measured_seconds=None,
    warmup_steps=4,
    bench_seconds=1.0,
    sample_gpu=False,
    stages=False,
    verify=False,
)

SCRIPT = f"""
import time
import numpy as np
import tensorflow as tf
import keras

SLOW = {{slow}}
strategy = tf.distribute.MirroredStrategy(["/cpu:0"])

def slow_batch(x):
    time.sleep(0.05)
    return x

def input_fn(context):
    x = np.random.default_rng(0).normal(size=(2048, {{width}})).astype("float32")
    y = np.zeros((2048, 1), "float32")
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if SLOW:
        ds = ds.batch(8).map(
            lambda a, b: (tf.ensure_shape(tf.py_function(slow_batch, [a], tf.float32),
                                          [None, {{width}}]), b))
        return ds.repeat()
    return ds.cache().batch(256).repeat().prefetch(2)

with strategy.scope():
    model = keras.Sequential([keras.layers.Input(({{width}},))]
        + [keras.layers.Dense({{hidden}}, activation="relu") for _ in range({{layers}})]
        + [keras.layers.Dense(1)])
    optimizer = keras.optimizers.SGD(0.01)

def step(inputs):
    x, y = inputs
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss

@tf.function
def train_steps(iterator, steps):
    for _ in tf.range(steps):
        strategy.run(step, (next(iterator),))

iterator = iter(strategy.distribute_datasets_from_function(input_fn))
for _ in range(10_000):
    train_steps(iterator, tf.constant({STEPS_PER_CALL}))
raise SystemExit("unreachable: pipediag ends the script after its step budget")
"""


def _note(report: pipediag.Report, code: str, function: str) -> Reason:
    """The report's note of this code on the script's `function`, defined in train.py."""
    found = [note for note in report.notes if note.code == code and note.detail == function]
    assert found, report.notes
    site = found[0].because
    assert site is not None and site.detail.startswith("train.py:"), found[0]
    return found[0]


def _diagnose(
    tmp_path: Path, config: pipediag.RunConfig = CONFIG, **shape: object
) -> pipediag.Report:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT.format(**shape)))
    return pipediag.diagnose(script, config=config, out=tmp_path / "out", log=None)


def test_a_slow_map_under_a_multi_step_function_is_input_bound(tmp_path: Path) -> None:
    report = _diagnose(tmp_path, slow=True, width=8, hidden=8, layers=1)

    assert report.complete and report.stop_reason == "step-budget", report.exit
    assert report.train.style == "custom-loop"
    assert report.train.measured_steps >= CONFIG.measured_steps
    assert report.train.input_wait_source == "unavailable"
    assert _note(report, "loop-pulls-inside", "train_steps").value == STEPS_PER_CALL
    alone = report.compute_alone
    assert alone is not None and alone.measured and alone.blocks, alone
    assert alone.restored_variables > 0
    verdict = report.verdict
    assert input_bound_or_host_busy(verdict.label, verdict.uncertain_because), verdict
    if verdict.label == "input-bound":
        assert verdict.cost_split is not None and not verdict.cost_split.waits_timed
        assert WAITS_NOT_TIMED in headline(report).details
    # Training runs at the pipeline's pace: about 20 batches/s, each batch one step.
    assert report.pipeline.batches_per_s == pytest.approx(20, rel=0.4)
    assert verdict.training_steps_per_s == pytest.approx(20, rel=0.4)


def test_a_heavy_model_under_a_multi_step_function_is_compute_bound(tmp_path: Path) -> None:
    # Narrow batches (64 features: 64 KB a batch) into a wide model: copying a batch is a
    # sliver of the step, on both sides of every pair. 400 steps asked for (about 12 s),
    # bounded by 30 s.
    config = dataclasses.replace(CONFIG, measured_steps=400, measured_seconds=30.0)
    report = _diagnose(tmp_path, config, slow=False, width=64, hidden=1024, layers=3)

    assert report.complete and report.stop_reason == "step-budget", report.exit
    # the waits inside the function are not timed: the measured steps end after 1 s
    measured = [s for s in report.train.steps if s.label != "warmup"][: report.train.measured_steps]
    assert report.train.measured_steps < 400
    assert measured[-1].start_s - measured[0].start_s < 5.0
    verdict = report.verdict
    assert verdict.compute_alone_source == "measured", verdict
    # (its cost read near 5%, the band edge a host's noise moves either way)
    reached = bands_reached(verdict.label, verdict.input_cost_interval)
    assert verdict.label != "input-bound" and reached & {"compute-bound", "balanced"}, verdict
    assert verdict.pipeline_headroom is not None and verdict.pipeline_headroom > 1


NO_COUNTER_SCRIPT = """
import tensorflow as tf

w = tf.Variable(tf.zeros([8, 1]))
ds = tf.data.Dataset.from_tensor_slices(tf.ones([64, 8])).batch(8).repeat()

@tf.function
def sgd_steps(iterator, steps):
    for _ in tf.range(steps):
        x = next(iterator)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.matmul(x, w) ** 2)
        w.assign_sub(0.01 * tape.gradient(loss, w))

iterator = iter(ds)
for _ in range({calls}):
    sgd_steps(iterator, tf.constant(4))
"""


def test_a_function_loop_without_a_step_counter_is_named_with_how_to_get_a_verdict(
    tmp_path: Path,
) -> None:
    script = tmp_path / "train.py"
    script.write_text(NO_COUNTER_SCRIPT.format(calls=20))
    report = pipediag.diagnose(script, config=CONFIG, out=tmp_path / "out", log=None)

    assert report.complete and report.stop_reason == "script-finished", report.exit
    assert report.verdict.label == "unknown"
    assert report.verdict.no_verdict_because == "no-steps"
    assert "pipediag.monitor()" in headline(report).text
    assert _note(report, "function-without-step-counter", "sgd_steps")


def test_a_function_named_as_training_counts_each_call_as_a_step(tmp_path: Path) -> None:
    # GIVEN the same loop, its function named as the one that trains
    script = tmp_path / "train.py"
    script.write_text(NO_COUNTER_SCRIPT.format(calls=10_000))
    config = dataclasses.replace(CONFIG, train_function="sgd_steps")
    # WHEN diagnosed
    report = pipediag.diagnose(script, config=config, out=tmp_path / "out", log=None)
    # THEN its calls are the steps: timed, the function run alone, a verdict given
    assert report.complete and report.stop_reason == "step-budget", report.exit
    assert _note(report, "loop-pulls-inside-named", "sgd_steps").value == 1
    alone = report.compute_alone
    assert alone is not None and alone.measured and alone.blocks, alone
    verdict = report.verdict
    assert verdict.no_verdict_because == "", verdict
    # the calls of the step-alone blocks are not counted as training steps: A and T are
    # rates of the same tiny step, not A inflated by the blocks' calls
    a, t = verdict.training_steps_per_s, verdict.compute_alone_steps_per_s
    assert a is not None and t is not None and 0.3 < a / t < 2.0, (a, t)


SECOND_ITERATOR_SCRIPT = """
import tensorflow as tf
import keras

labeled = tf.data.Dataset.from_tensor_slices(tf.ones([64, 8])).batch(8).repeat()
unlabeled = iter(tf.data.Dataset.from_tensor_slices(tf.ones([64, 8])).batch(8).repeat())
model = keras.Sequential([keras.layers.Input((8,)), keras.layers.Dense(1)])
optimizer = keras.optimizers.SGD(0.01)
optimizer.build(model.trainable_variables)

@tf.function
def train_step(x):
    u = next(unlabeled)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x) ** 2) + tf.reduce_mean(model(u) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))

for step, x in enumerate(labeled):
    train_step(x)
    if step == 5000:
        break
"""


def test_an_eager_loop_whose_step_closes_over_a_second_iterator_stays_an_eager_loop(
    tmp_path: Path,
) -> None:
    # GIVEN an eager loop over the labeled data whose step pulls a second, unlabeled
    # iterator it closes over (semi-supervised training, GANs)
    script = tmp_path / "train.py"
    script.write_text(SECOND_ITERATOR_SCRIPT)
    # WHEN diagnosed
    report = pipediag.diagnose(script, config=CONFIG, out=tmp_path / "out", log=None)
    # THEN the eager loop's pulls are timed: the step is not taken for a loop in the graph
    assert report.train.style == "custom-loop"
    assert report.train.input_wait_source == "iterator-timing", report.train
    pulls_inside = ("loop-pulls-inside", "loop-pulls-inside-named")
    assert not any(note.code in pulls_inside for note in report.notes)


EPOCH_SCRIPT = """
import time
import numpy as np
import tensorflow as tf
import keras

def slow_batch(x):
    time.sleep(0.05)
    return x

x = np.random.default_rng(0).normal(size=(64, 8)).astype("float32")
y = np.zeros((64, 1), "float32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(8).map(
    lambda a, b: (tf.ensure_shape(tf.py_function(slow_batch, [a], tf.float32), [None, 8]), b))
model = keras.Sequential([keras.layers.Input((8,)), keras.layers.Dense(8), keras.layers.Dense(1)])
optimizer = keras.optimizers.SGD(0.01)
optimizer.build(model.trainable_variables)

@tf.function
def train_epoch(dataset):
    for xb, yb in dataset:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(xb) - yb) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

for _ in range(1000):
    train_epoch(ds)
raise SystemExit("unreachable: pipediag ends the script after its step budget")
"""


# The same epoch function, closing over the dataset instead of being given it.
EPOCH_CLOSURE_SCRIPT = (
    EPOCH_SCRIPT.replace("def train_epoch(dataset):", "def train_epoch():")
    .replace("for xb, yb in dataset:", "for xb, yb in ds:")
    .replace("train_epoch(ds)", "train_epoch()")
)


@pytest.mark.parametrize("source", [EPOCH_SCRIPT, EPOCH_CLOSURE_SCRIPT], ids=["given", "closed"])
def test_an_epoch_function_that_iterates_its_dataset_is_timed_per_step(
    tmp_path: Path, source: str
) -> None:
    # GIVEN a whole epoch inside one tf.function, `for x in dataset` over the dataset it is
    # given or closes over (8 batches of a map that sleeps 50 ms each, into a tiny model)
    script = tmp_path / "train.py"
    script.write_text(source)
    # WHEN diagnosed
    report = pipediag.diagnose(script, config=CONFIG, out=tmp_path / "out", log=None)
    # THEN each call is found to run 8 steps, the pipeline is read alone, the function is run
    # alone on a dataset of the cached batch, and the verdict reads input-bound
    assert report.complete and report.stop_reason == "step-budget", report.exit
    assert report.train.style == "custom-loop"
    assert _note(report, "loop-pulls-inside", "train_epoch").value == 8
    assert report.pipeline.batches_per_s == pytest.approx(20, rel=0.4)
    alone = report.compute_alone
    assert alone is not None and alone.measured and alone.blocks, alone
    verdict = report.verdict
    assert input_bound_or_host_busy(verdict.label, verdict.uncertain_because), verdict


CLOSURE_SCRIPT = """
import time
import numpy as np
import tensorflow as tf
import keras

def slow_batch(x):
    time.sleep(0.05)
    return x

x = np.random.default_rng(0).normal(size=(2048, 8)).astype("float32")
y = np.zeros((2048, 1), "float32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(8).map(
    lambda a, b: (tf.ensure_shape(tf.py_function(slow_batch, [a], tf.float32), [None, 8]), b))
iterator = iter(ds.repeat())
model = keras.Sequential([keras.layers.Input((8,)), keras.layers.Dense(8), keras.layers.Dense(1)])
optimizer = keras.optimizers.SGD(0.01)
optimizer.build(model.trainable_variables)

@tf.function
def train_steps(steps):
    for _ in tf.range(steps):
        xb, yb = next(iterator)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(xb) - yb) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

for _ in range(10_000):
    train_steps(tf.constant(4))
raise SystemExit("unreachable: pipediag ends the script after its step budget")
"""


def test_a_function_that_closes_over_its_iterator_is_found_and_run_alone(tmp_path: Path) -> None:
    # GIVEN a tf.function that pulls 4 steps a call from an iterator it closes over (made
    # eagerly with iter()), over a map that sleeps 50 ms a batch
    script = tmp_path / "train.py"
    script.write_text(CLOSURE_SCRIPT)
    # WHEN diagnosed
    report = pipediag.diagnose(script, config=CONFIG, out=tmp_path / "out", log=None)
    # THEN it is found training, 4 steps a call, the pipeline read alone, and the function
    # run alone with the cached batch's iterator in place of the one it closes over
    assert report.complete and report.stop_reason == "step-budget", report.exit
    assert _note(report, "loop-pulls-inside", "train_steps").value == 4
    assert report.pipeline.batches_per_s == pytest.approx(20, rel=0.4)
    alone = report.compute_alone
    assert alone is not None and alone.measured and alone.blocks, alone
    verdict = report.verdict
    assert input_bound_or_host_busy(verdict.label, verdict.uncertain_because), verdict


def test_the_captured_iterator_is_swapped_for_the_run_alone_and_put_back() -> None:
    import tensorflow as tf

    from pipediag.training.function_loop import captured_data, captured_swapped

    # GIVEN a function that adds each batch it pulls from the iterator it closes over
    iterator = iter(tf.data.Dataset.range(100).batch(4).repeat())
    total = tf.Variable(0, dtype=tf.int64)

    @tf.function
    def pull(steps: Any) -> None:
        for _ in tf.range(steps):
            total.assign_add(tf.reduce_sum(next(iterator)))

    pull(tf.constant(1))  # 0+1+2+3
    resource = iterator._iterator_resource
    assert captured_data(pull, {id(resource): iterator}.get) is iterator
    held = iter(tf.data.Dataset.from_tensors(tf.constant([1000, 0, 0, 0], tf.int64)).repeat())
    # WHEN called with the held iterator's resource in place of the captured one
    with captured_swapped(pull, (resource, held._iterator_resource)):
        pull(tf.constant(2))
    # THEN it read the held batch, and afterwards reads its own iterator where it left off
    assert int(total.numpy()) == 6 + 2000
    pull(tf.constant(1))  # 4+5+6+7
    assert int(total.numpy()) == 6 + 2000 + 22


def test_a_captured_dataset_is_swapped_for_the_run_alone_and_put_back() -> None:
    import tensorflow as tf

    from pipediag.training.function_loop import captured_data, captured_swapped

    # GIVEN a function that adds every batch of the dataset it closes over (0..11 in 3)
    dataset = tf.data.Dataset.range(12).batch(4)
    total = tf.Variable(0, dtype=tf.int64)

    @tf.function
    def epoch() -> None:
        for batch in dataset:
            total.assign_add(tf.reduce_sum(batch))

    epoch()
    variant = dataset._variant_tensor
    assert captured_data(epoch, {id(variant): dataset}.get) is dataset
    held = tf.data.Dataset.from_tensors(tf.constant([1000, 0, 0, 0], tf.int64)).repeat().take(2)
    # WHEN called with the held dataset's variant in place of the captured one
    with captured_swapped(epoch, (variant, held._variant_tensor)):
        epoch()
    # THEN it read the held batches, and afterwards its own dataset again
    assert int(total.numpy()) == 66 + 2000
    epoch()
    assert int(total.numpy()) == 66 + 2000 + 66


def test_a_fix_is_tried_on_the_multi_step_function_itself(tmp_path: Path) -> None:
    # GIVEN the loop starved by a 50 ms map a batch against a step of about a millisecond
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT.format(slow=True, width=8, hidden=8, layers=1)))
    config = dataclasses.replace(CONFIG, stages=True, verify=True)
    # WHEN pipediag diagnoses it with its fixes verified
    report = pipediag.diagnose(script, config=config, out=tmp_path / "out", log=None)
    # THEN a rewrite is tried on the training function itself, fed a tf.data iterator over
    # the rewritten pipeline in place of its one-replica tf.distribute one, and reads far
    # faster (the map runs in parallel: several sleeps at once, against one at a time)
    tried = [t.training for t in report.pipeline.trials if t.training is not None]
    assert tried, [(t.fix, t.training_reason) for t in report.pipeline.trials]
    best = max(tried, key=lambda t: t.training_speedup or 0.0)
    assert best.training_speedup is not None and best.training_speedup > 1.3, best
    # AND each stage held in memory is measured on it too: holding the map's output frees
    # training of the sleep
    held = [s.training_speedup_if_free for s in report.pipeline.stages]
    assert max(h or 0.0 for h in held) > 3, held
    assert report.complete and report.stop_reason == "step-budget", report.exit


def test_a_function_that_closes_over_its_data_says_why_no_fix_is_tried_on_it() -> None:
    from pipediag.report.reasons import Reason
    from pipediag.training.function_loop import TrainCalls

    calls = TrainCalls(
        function=None,
        call=lambda *args, **kwargs: None,
        slot=None,
        counter=None,
        name="train_steps",
        where=None,
        steps_per_call=4,
    )
    trained = calls.trained_on()
    assert isinstance(trained, Reason) and trained.code == "calls-no-fix-trial"


def test_the_trials_on_the_function_leave_its_variables_and_iterator_as_they_were() -> None:
    # GIVEN a MirroredStrategy loop of 4 steps a call over a distributed iterator, called twice
    import numpy as np
    import tensorflow as tf

    from pipediag.bench.teardown import TearDown
    from pipediag.bench.whatif import FixPipelines
    from pipediag.clock import MonotonicClock
    from pipediag.training.function_loop import TrainCalls, step_counter
    from pipediag.training.training_trial import try_at_once

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    x = np.random.default_rng(0).normal(size=(512, 4)).astype("float32")
    dataset = tf.data.Dataset.from_tensor_slices((x, x[:, :1])).batch(8).repeat()
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
        optimizer = tf.keras.optimizers.SGD(0.01)

    def step(inputs: Any) -> None:
        features, target = inputs
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(features) - target) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))

    @tf.function
    def train_steps(iterator: Any, steps: Any) -> None:
        for _ in tf.range(steps):
            strategy.run(step, (next(iterator),))

    iterator = iter(strategy.distribute_datasets_from_function(lambda _: dataset))
    steps = tf.constant(4)
    for _ in range(2):
        train_steps(iterator, steps)
    calls = TrainCalls(
        function=train_steps,
        call=type(train_steps).__call__,
        slot=0,
        counter=step_counter(train_steps),
        name="train_steps",
        where=None,
        steps_per_call=4,
        args=(iterator, steps),
    )
    assert calls.counter is not None and int(calls.counter.numpy()) == 8
    weights = [w.numpy().copy() for w in model.weights]
    # WHEN a fix is tried on it: the pipeline against a copy held in memory
    fix = FixPipelines("hold", 0, dataset, dataset.take(4).cache().repeat(), fill_batches=5)
    teardown = TearDown()
    rounds, reason = try_at_once(
        calls, fix, clock=MonotonicClock(), step_s=0.001, budget_s=1.0, teardown=teardown
    )
    assert teardown.drain()  # the spent iterators released, their threads gone
    # THEN it was measured, and training goes on exactly where it was
    assert rounds is not None and reason is None, reason
    assert int(calls.counter.numpy()) == 8
    assert all(np.array_equal(w.numpy(), k) for w, k in zip(model.weights, weights, strict=True))
    train_steps(iterator, steps)
    assert int(calls.counter.numpy()) == 12
    expected = strategy.experimental_local_results(next(iterator))[0][0].numpy()
    assert np.array_equal(expected, x[8 * 12 : 8 * 13])  # the 13th batch: none was skipped


TO_END_SCRIPT = """
import numpy as np
import tensorflow as tf
import keras

x = np.random.default_rng(0).normal(size=(512, 4)).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, x[:, :1])).batch(8)
model = keras.Sequential([keras.layers.Input((4,)), keras.layers.Dense(1)])
optimizer = keras.optimizers.SGD(0.01)

@tf.function
def train_epoch(iterator):
    for features, target in iterator:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(features) - target) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

for epoch in range(200):
    train_epoch(iter(ds))
"""


def test_a_function_that_reads_its_iterator_to_the_end_is_not_run_on_a_repeating_batch(
    tmp_path: Path,
) -> None:
    # GIVEN a loop whose tf.function reads the iterator it is given to its end, an epoch a call
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(TO_END_SCRIPT))
    # WHEN pipediag diagnoses it (a held batch that repeats would make such a call endless)
    report = pipediag.diagnose(script, config=CONFIG, out=tmp_path / "out", log=None)
    # THEN the run ends, and the step alone says why it was not run
    alone = report.compute_alone
    assert alone is not None and not alone.measured, alone
    assert alone.reason is not None and alone.reason.code == "reads-iterator-to-end", alone


def test_a_loop_over_an_iterator_is_told_from_pulls_bounded_by_a_range() -> None:
    import tensorflow as tf

    from pipediag.training.function_loop import reads_to_end

    ds = tf.data.Dataset.range(64).batch(4)
    total = tf.Variable(0, dtype=tf.int64)

    @tf.function
    def pulls(iterator: Any, steps: Any) -> None:
        for _ in tf.range(steps):
            total.assign_add(tf.reduce_sum(next(iterator)))

    @tf.function
    def to_end(iterator: Any) -> None:
        for batch in iterator:
            total.assign_add(tf.reduce_sum(batch))

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])

    @tf.function
    def distributed_pulls(iterator: Any, steps: Any) -> None:
        for _ in tf.range(steps):
            strategy.run(lambda b: total.assign_add(tf.reduce_sum(b)), (next(iterator),))

    pulls(iter(ds), tf.constant(2))
    to_end(iter(ds))
    distributed_pulls(
        iter(strategy.distribute_datasets_from_function(lambda _: ds)), tf.constant(2)
    )
    assert not reads_to_end(pulls) and not reads_to_end(distributed_pulls)
    assert reads_to_end(to_end)
