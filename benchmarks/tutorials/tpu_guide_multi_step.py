"""The TensorFlow TPU guide's custom training loop: MNIST, a distribution strategy, and
several steps in one `tf.function` ("Improving performance by multiple steps within
tf.function").

Source: tensorflow/docs site/en/guide/tpu.ipynb @ 0080b9f6a9450e5b725515dc226b33f0b71adf02
    (https://www.tensorflow.org/guide/tpu)
License: Apache-2.0, Copyright 2018 The TensorFlow Authors
Split: tune
Changes: the guide's custom loop kept, its code written here, not copied:
- `TPUStrategy` replaced by `MirroredStrategy`, which the guide names as what one writes on
  GPUs, here over the one CPU device; the model, optimizer and metrics made in its scope, the
  dataset given by `get_dataset` at the per-replica batch size to
  `strategy.distribute_datasets_from_function` (the guide's
  `experimental_distribute_datasets_from_function`, TensorFlow's name for it since 2.4),
  one iterator;
- `train_multiple_steps(iterator, steps)`, a `tf.function` whose `for _ in tf.range(steps)`
  runs `strategy.run(step_fn, args=(next(iterator),))`; the guide calls it once with
  `steps_per_epoch`, after its single-step epochs: here it is called once an epoch for
  `--epochs` epochs, the loss and accuracy printed and reset after each as the guide's
  single-step epochs do; the single-step loop and the Keras `fit` before it are dropped;
- `tfds.load('mnist', as_supervised=True)` replaced by generated 28x28x1 uint8 digits
  (strokes on a dark background, 10 classes) and int64 labels, 3,000 of them instead of
  60,000, read with `from_tensor_slices`; get_dataset's training order kept: map(scale),
  shuffle(10000), repeat, batch(200); its `is_training` flag and test split dropped (nothing
  evaluates), and it takes the epochs and steps per epoch for the truth's switch;
- the model scaled down for 2 CPU cores: the guide's two 3x3 Conv2D layers with 16 filters
  each instead of 256, then its Dense 256, 128 and 10; its `input_shape=` given as a
  `keras.Input` layer, as Keras 3 asks;
- `reset_states()` spelled `reset_state()`, Keras 3's name;
- the truth's switch: `_truth.training_dataset(...)` on get_dataset's training dataset, and
  each call stamped (`_truth.begin_epoch()` before it, `_truth.steps_done(n)` after); inert
  unless PIPEDIAG_TRUTH is set.
"""

from __future__ import annotations

import argparse

import _truth
import numpy as np
import tensorflow as tf

SPLIT = "tune"
STYLE = "custom-loop"

IMAGES = 3_000
BATCH = 200


def mnist_like(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """tfds's MNIST format: uint8 images [28, 28, 1] of a few bright strokes, int64 labels."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, IMAGES)
    # each class a fixed set of stroke end points, drawn with some jitter per image
    strokes = rng.uniform(5, 23, size=(10, 3, 4))
    images = np.zeros((IMAGES, 28, 28), dtype=np.float32)
    t = np.linspace(0.0, 1.0, 24)[:, None]
    for n, label in enumerate(labels):
        for y0, x0, y1, x1 in strokes[label] + rng.normal(0, 1.0, size=(3, 4)):
            points = np.round((1 - t) * [y0, x0] + t * [y1, x1]).astype(int)
            images[n, points[:, 0].clip(0, 27), points[:, 1].clip(0, 27)] = 255.0
    images += rng.normal(0, 8, size=images.shape)
    pixels = images.clip(0, 255).astype(np.uint8)[..., None]
    return pixels, labels.astype(np.int64)


def get_dataset(batch_size: int, epochs: int, steps_per_epoch: int) -> tf.data.Dataset:
    images, labels = mnist_like()
    dataset = tf.data.Dataset.from_tensor_slices((images, labels))

    def scale(image, label):
        image = tf.cast(image, tf.float32)
        image /= 255.0
        return image, label

    dataset = dataset.map(scale)
    # only the training dataset shuffles and repeats, so no batch is ever partial
    dataset = dataset.shuffle(10000)
    dataset = dataset.repeat()
    dataset = dataset.batch(batch_size)
    return _truth.training_dataset(
        dataset, epochs=epochs, steps_per_epoch=steps_per_epoch, steps_per_call=steps_per_epoch
    )


def create_model() -> tf.keras.Model:
    return tf.keras.Sequential(
        [
            tf.keras.Input(shape=(28, 28, 1)),
            tf.keras.layers.Conv2D(16, 3, activation="relu"),
            tf.keras.layers.Conv2D(16, 3, activation="relu"),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(256, activation="relu"),
            tf.keras.layers.Dense(128, activation="relu"),
            tf.keras.layers.Dense(10),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=30)
    args = parser.parse_args()
    strategy = tf.distribute.MirroredStrategy()
    steps_per_epoch = IMAGES // BATCH

    with strategy.scope():
        model = create_model()
        optimizer = tf.keras.optimizers.Adam()
        training_loss = tf.keras.metrics.Mean("training_loss", dtype=tf.float32)
        training_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(
            "training_accuracy", dtype=tf.float32
        )

    per_replica_batch_size = BATCH // strategy.num_replicas_in_sync
    train_dataset = strategy.distribute_datasets_from_function(
        lambda _: get_dataset(per_replica_batch_size, args.epochs, steps_per_epoch)
    )

    @tf.function
    def train_multiple_steps(iterator, steps):
        def step_fn(inputs):
            images, labels = inputs
            with tf.GradientTape() as tape:
                logits = model(images, training=True)
                loss = tf.keras.losses.sparse_categorical_crossentropy(
                    labels, logits, from_logits=True
                )
                loss = tf.nn.compute_average_loss(loss, global_batch_size=BATCH)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(list(zip(grads, model.trainable_variables, strict=True)))
            training_loss.update_state(loss * strategy.num_replicas_in_sync)
            training_accuracy.update_state(labels, logits)

        for _ in tf.range(steps):
            strategy.run(step_fn, args=(next(iterator),))

    train_iterator = iter(train_dataset)
    for epoch in range(args.epochs):
        _truth.begin_epoch()
        # a tensor, so that the tf.function is not traced again for each value
        train_multiple_steps(train_iterator, tf.convert_to_tensor(steps_per_epoch))
        _truth.steps_done(steps_per_epoch)
        print(
            f"Epoch {epoch + 1}/{args.epochs}: step {optimizer.iterations.numpy()},"
            f" training loss {round(float(training_loss.result()), 4)},"
            f" accuracy {round(float(training_accuracy.result()) * 100, 2)}%"
        )
        training_loss.reset_state()
        training_accuracy.reset_state()


if __name__ == "__main__":
    main()
