"""Orbit's single-task example: a Keras MLP on iris, trained by an Orbit StandardTrainer.

Source: tensorflow/models orbit/examples/single_task/single_task_trainer.py and
    single_task_trainer_test.py @ 00d83f37e2de5852699ed339d0c51085ab065651
    (https://github.com/tensorflow/models/tree/master/orbit/examples/single_task)
License: Apache-2.0, Copyright 2023 The Orbit Authors
Split: held-out
Changes:
- `orbit` (tf-models-official) is not installed here: the three parts of it the example uses
  are written out below as Orbit documents them, not copied: `StandardTrainer.train`, whose
  steps run in one `tf.function` over `for _ in tf.range(num_steps): train_step(iterator)`
  (`use_tf_while_loop=True`, Orbit's default), the iterator made once from the dataset and
  passed in; `train_loop_begin` / `train_loop_end` around each call; and
  `Controller.train(steps)`, which calls it `steps_per_loop` steps at a time until the
  optimizer's step counter (its `global_step`) reaches `steps`;
- `tfds.load('iris')` replaced by a generated dataset of the same format: a dict of
  `features` (float32[4]) and `label` (int64), 150 flowers, three classes drawn from
  Gaussians near the real iris means;
- the test's `controller.train(1)` then `controller.train(500)` kept, then trained on to 12,000
  steps (120 calls of `steps_per_loop=100`) so that a run lasts long enough to measure; the
  loss assertion kept as a printed check;
- the truth's switch: `_truth.training_dataset(...)` on the training dataset, and each
  controller call stamped (`_truth.begin_epoch()` before, `_truth.steps_done(n)` after);
  inert unless PIPEDIAG_TRUTH is set.
"""

from __future__ import annotations

import argparse

import _truth
import numpy as np
import tensorflow as tf

SPLIT = "held-out"
STYLE = "custom-loop"

FLOWERS = 150
STEPS_PER_LOOP = 100
MEANS = np.array(
    [[5.0, 3.4, 1.5, 0.2], [5.9, 2.8, 4.3, 1.3], [6.6, 3.0, 5.6, 2.0]], dtype=np.float32
)


def iris(seed: int = 0) -> tf.data.Dataset:
    """tfds.load('iris')['train']'s format: {'features': float32[4], 'label': int64}."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, FLOWERS)
    features = MEANS[labels] + rng.normal(0.0, 0.3, size=(FLOWERS, 4)).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices(
        {"features": features.astype(np.float32), "label": labels.astype(np.int64)}
    )


# --- the parts of Orbit the example uses ---------------------------------------------------


def create_tf_while_loop_fn(step_fn):
    """One tf.function that runs `step_fn(iterator)` `num_steps` times in a while loop."""

    @tf.function
    def loop_fn(iterator, num_steps):
        for _ in tf.range(num_steps):
            step_fn(iterator)

    return loop_fn


class StandardTrainer:
    def __init__(self, train_dataset):
        self.train_dataset = train_dataset
        self._train_iter = None
        self._loop_fn = None

    def train(self, num_steps):
        self.train_loop_begin()
        if self._train_iter is None:
            self._train_iter = iter(self.train_dataset)
        if self._loop_fn is None:
            self._loop_fn = create_tf_while_loop_fn(self.train_step)
        self._loop_fn(self._train_iter, tf.convert_to_tensor(num_steps, dtype=tf.int32))
        return self.train_loop_end()


class Controller:
    def __init__(self, trainer, steps_per_loop, global_step):
        self.trainer = trainer
        self.steps_per_loop = steps_per_loop
        self.global_step = global_step

    def train(self, steps):
        while (current := int(self.global_step.numpy())) < steps:
            num_steps = min(self.steps_per_loop, steps - current)
            _truth.begin_epoch()
            self.trainer.train(num_steps)
            _truth.steps_done(num_steps)


# --- the example's trainer -----------------------------------------------------------------


class SingleTaskTrainer(StandardTrainer):
    def __init__(self, train_dataset, label_key, model, loss_fn, optimizer):
        self.label_key = label_key
        self.model = model
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.strategy = tf.distribute.get_strategy()
        self.train_loss = tf.keras.metrics.Mean("training_loss", dtype=tf.float32)
        super().__init__(train_dataset)

    def train_loop_begin(self):
        self.train_loss.reset_state()

    def train_step(self, iterator):
        def train_fn(inputs):
            with tf.GradientTape() as tape:
                inputs = dict(inputs)
                target = inputs.pop(self.label_key)
                output = self.model(inputs["features"], training=True)
                loss = tf.reduce_mean(self.loss_fn(target, output))
                scaled_loss = loss / self.strategy.num_replicas_in_sync
            gradients = tape.gradient(scaled_loss, self.model.trainable_variables)
            self.optimizer.apply_gradients(
                list(zip(gradients, self.model.trainable_variables, strict=True))
            )
            self.train_loss.update_state(loss)

        self.strategy.run(train_fn, args=(next(iterator),))

    def train_loop_end(self):
        return {self.train_loss.name: self.train_loss.result()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12_000)
    args = parser.parse_args()

    train_ds = iris().batch(32).repeat()
    train_ds = _truth.training_dataset(
        train_ds,
        epochs=args.steps // STEPS_PER_LOOP,
        steps_per_epoch=STEPS_PER_LOOP,
        steps_per_call=STEPS_PER_LOOP,
    )
    model = tf.keras.Sequential(
        [
            tf.keras.Input(shape=(4,), name="features"),
            tf.keras.layers.Dense(10, activation=tf.nn.relu),
            tf.keras.layers.Dense(10, activation=tf.nn.relu),
            tf.keras.layers.Dense(3),
            tf.keras.layers.Softmax(),
        ]
    )
    trainer = SingleTaskTrainer(
        train_ds,
        label_key="label",
        model=model,
        loss_fn=tf.keras.losses.sparse_categorical_crossentropy,
        optimizer=tf.keras.optimizers.SGD(learning_rate=0.01),
    )
    controller = Controller(
        trainer=trainer, steps_per_loop=STEPS_PER_LOOP, global_step=trainer.optimizer.iterations
    )
    controller.train(1)
    start_loss = trainer.train_loss.result().numpy()
    controller.train(500)
    end_loss = trainer.train_loss.result().numpy()
    print(f"loss {start_loss:.3f} -> {end_loss:.3f} (halved: {end_loss < start_loss / 2})")
    controller.train(args.steps)
    print(f"loss after {args.steps} steps: {trainer.train_loss.result().numpy():.3f}")


if __name__ == "__main__":
    main()
