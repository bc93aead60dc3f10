"""TensorFlow 2 quickstart for experts: a subclassed convnet on in-memory digits, tf.function loop.

Source: tensorflow/docs site/en/tutorials/quickstart/advanced.ipynb
    @ 7c3650212740204359d4ceae481abc79345541be
    (https://www.tensorflow.org/tutorials/quickstart/advanced)
License: Apache-2.0, Copyright 2019 The TensorFlow Authors
Split: tune
Changes:
- the download of MNIST (`tf.keras.datasets.mnist.load_data()`) replaced by generated digit-like
  uint8 28x28 arrays in mnist.npz's layout (x_train, y_train, x_test, y_test), written to
  mnist.npz and read back as `load_data` does: three stroke drawings per class, each example
  with a fainter stroke drawing of another class half the time, thickened, shifted and noised;
- scaled: 3,200 training and 640 test images instead of 60,000 and 10,000 (100 training steps
  of 32 per epoch; the tutorial's 5 epochs kept), so that a plain run takes ~30 s on 2 cores;
  `--epochs` sets the epochs;
- the truth's switch: `_truth.epoch(train_ds)` around the training loop's per-epoch pass
  (and `_truth.training_dataset(...)` on train_ds before the loop); inert unless
  PIPEDIAG_TRUTH is set;
- a hand-tuned variant (`PIPEDIAG_TUNED=1`, for the prescription's truth): prefetch(AUTOTUNE)
  after batch; the training pipeline is built in `training_batches()`, so that
  `_truth.training_dataset(tuned=...)` can build that variant too.
"""

from __future__ import annotations

import argparse
import os

import _truth
import numpy as np
import tensorflow as tf
from tensorflow.keras import Model
from tensorflow.keras.layers import Conv2D, Dense, Flatten

SPLIT = "tune"
STYLE = "custom-loop"
TUNED_CHANGE = "prefetch(AUTOTUNE) after batch"
TUNED_FIX = "prefetch-end"

DATA_DIR = "/tmp/pipediag-corpus/quickstart_advanced"
TRAIN_IMAGES = 3_200
TEST_IMAGES = 640


def digit_templates(rng, variants=3):
    """`variants` 28x28 stroke drawings per class: a few random line segments each."""
    templates = np.zeros((10, variants, 28, 28), dtype=np.float32)
    t = np.linspace(0.0, 1.0, 40)
    for digit in range(10):
        for variant in range(variants):
            points = rng.uniform(6, 22, size=(int(rng.integers(3, 6)), 2))
            for (r0, c0), (r1, c1) in zip(points[:-1], points[1:], strict=True):
                rows = np.round(r0 + (r1 - r0) * t).astype(int)
                cols = np.round(c0 + (c1 - c0) * t).astype(int)
                templates[digit, variant, rows, cols] = 1.0
    return templates


def generate_mnist(path, seed=0):
    """mnist.npz's arrays, made once and reused (replaces the download)."""
    if os.path.exists(path):
        return
    rng = np.random.default_rng(seed)
    templates = digit_templates(rng)

    def images(n):
        labels = rng.integers(0, 10, n).astype(np.uint8)
        x = templates[labels, rng.integers(0, templates.shape[1], n)]
        # half the images carry a stroke drawing of another class, fainter
        others = templates[rng.integers(0, 10, n), rng.integers(0, templates.shape[1], n)]
        x = np.maximum(
            x, others * rng.uniform(0.0, 0.6, size=(n, 1, 1)) * (rng.random((n, 1, 1)) < 0.5)
        )
        # thicken the strokes, shift each image by up to 4 pixels and add noise
        x = np.maximum(x, 0.6 * np.roll(x, 1, axis=1))
        x = np.maximum(x, 0.6 * np.roll(x, 1, axis=2))
        shifts = rng.integers(-4, 5, size=(n, 2))
        x = np.stack(
            [np.roll(img, tuple(s), axis=(0, 1)) for img, s in zip(x, shifts, strict=True)]
        )
        x = x * rng.uniform(0.5, 1.0, size=(n, 1, 1)) + rng.normal(0, 0.25, size=x.shape)
        return (np.clip(x, 0, 1) * 255).astype(np.uint8), labels

    x_train, y_train = images(TRAIN_IMAGES)
    x_test, y_test = images(TEST_IMAGES)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.savez_compressed(path + ".tmp.npz", x_train=x_train, y_train=y_train, x_test=x_test,
                        y_test=y_test)  # fmt: skip
    os.replace(path + ".tmp.npz", path)


def load_data(path):
    """As `tf.keras.datasets.mnist.load_data()` reads mnist.npz."""
    with np.load(path, allow_pickle=True) as f:
        x_train, y_train = f["x_train"], f["y_train"]
        x_test, y_test = f["x_test"], f["y_test"]
    return (x_train, y_train), (x_test, y_test)


parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=5)
args = parser.parse_args()

print("TensorFlow version:", tf.__version__)

mnist_path = os.path.join(DATA_DIR, "mnist.npz")
generate_mnist(mnist_path)

(x_train, y_train), (x_test, y_test) = load_data(mnist_path)
x_train, x_test = x_train / 255.0, x_test / 255.0

# Add a channels dimension
x_train = x_train[..., tf.newaxis].astype("float32")
x_test = x_test[..., tf.newaxis].astype("float32")


def training_batches():
    train_ds = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(10000).batch(32)
    if _truth.TUNED:
        train_ds = train_ds.prefetch(tf.data.AUTOTUNE)
    return train_ds


train_ds = training_batches()

test_ds = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(32)


class MyModel(Model):
    def __init__(self):
        super().__init__()
        self.conv1 = Conv2D(32, 3, activation="relu")
        self.flatten = Flatten()
        self.d1 = Dense(128, activation="relu")
        self.d2 = Dense(10)

    def call(self, x):
        x = self.conv1(x)
        x = self.flatten(x)
        x = self.d1(x)
        return self.d2(x)


# Create an instance of the model
model = MyModel()

loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

optimizer = tf.keras.optimizers.Adam()

train_loss = tf.keras.metrics.Mean(name="train_loss")
train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")

test_loss = tf.keras.metrics.Mean(name="test_loss")
test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="test_accuracy")


@tf.function
def train_step(images, labels):
    with tf.GradientTape() as tape:
        # training=True is only needed if there are layers with different
        # behavior during training versus inference (e.g. Dropout).
        predictions = model(images, training=True)
        loss = loss_object(labels, predictions)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))

    train_loss(loss)
    train_accuracy(labels, predictions)


@tf.function
def test_step(images, labels):
    # training=False is only needed if there are layers with different
    # behavior during training versus inference (e.g. Dropout).
    predictions = model(images, training=False)
    t_loss = loss_object(labels, predictions)

    test_loss(t_loss)
    test_accuracy(labels, predictions)


EPOCHS = args.epochs

train_ds = _truth.training_dataset(train_ds, epochs=EPOCHS, loop=True, tuned=training_batches)
for epoch in range(EPOCHS):
    # Reset the metrics at the start of the next epoch
    train_loss.reset_state()
    train_accuracy.reset_state()
    test_loss.reset_state()
    test_accuracy.reset_state()

    for images, labels in _truth.epoch(train_ds):
        train_step(images, labels)

    for test_images, test_labels in test_ds:
        test_step(test_images, test_labels)

    print(
        f"Epoch {epoch + 1}, "
        f"Loss: {train_loss.result():0.2f}, "
        f"Accuracy: {train_accuracy.result() * 100:0.2f}, "
        f"Test Loss: {test_loss.result():0.2f}, "
        f"Test Accuracy: {test_accuracy.result() * 100:0.2f}"
    )
