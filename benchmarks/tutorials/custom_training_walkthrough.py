"""Custom training: walkthrough: a Dense penguin classifier, in-memory tf.data, eager grad loop.

Source: tensorflow/docs site/en/tutorials/customization/custom_training_walkthrough.ipynb
    @ 7c3650212740204359d4ceae481abc79345541be
    (https://www.tensorflow.org/tutorials/customization/custom_training_walkthrough)
License: Apache-2.0, Copyright 2018 The TensorFlow Authors
Split: tune
Changes:
- the notebook loads `tfds.load("penguins/processed", split=['train[:20%]', 'train[20%:]'],
  as_supervised=True)` (TFDS is not installed here, and there is no network): replaced by a
  generated penguins_processed.csv of the same columns (species as 0/1/2, culmen_length_mm,
  culmen_depth_mm, flipper_length_mm, body_mass_g min-max scaled to [0, 1]; each species drawn
  from Gaussians near the real Palmer penguins' means), read with NumPy into an in-memory
  `from_tensor_slices((features, species))` dataset, split with take/skip as the 20%/80%
  slices are;
- scaled: 800 penguins instead of 334, so that an epoch has 20 steps of 32 (the original has
  9), and 51 epochs instead of 201 (an eager step takes ~25 ms of CPU here), so that a plain
  run takes ~40 s on 2 cores; `--epochs` sets the epochs; the loop prints every 50 epochs
  (epochs 0 and 50), as the notebook does;
- the truth's switch: `_truth.epoch(ds_train_batch)` around the loop's per-epoch pass (and
  `_truth.training_dataset(...)` on ds_train_batch before the loop); inert unless
  PIPEDIAG_TRUTH is set;
- the data previews, the single-step demonstrations before the loop, the plots, the test-set
  evaluation and the predictions dropped. Eager, as the notebook: no tf.function.
"""

from __future__ import annotations

import argparse
import os

import _truth
import numpy as np
import tensorflow as tf

SPLIT = "tune"
STYLE = "custom-loop"

DATA_DIR = "/tmp/pipediag-corpus/custom_training_walkthrough"
PENGUINS = 800

# (mean, sd) of culmen length, culmen depth, flipper length (mm) and body mass (g), and share
SPECIES = {
    "Adélie": ([38.8, 18.3, 190.0, 3700.0], [2.7, 1.2, 6.5, 460.0], 0.44),
    "Chinstrap": ([48.8, 18.4, 196.0, 3733.0], [3.3, 1.1, 7.1, 384.0], 0.20),
    "Gentoo": ([47.5, 15.0, 217.0, 5076.0], [3.1, 1.0, 6.5, 504.0], 0.36),
}


def generate_penguins_csv(csv_path, n=PENGUINS, seed=0):
    """penguins_processed.csv's columns, made once and reused (replaces the TFDS download)."""
    if os.path.exists(csv_path):
        return
    rng = np.random.default_rng(seed)
    shares = [share for _, _, share in SPECIES.values()]
    species = rng.choice(len(SPECIES), size=n, p=shares)
    means = np.array([mean for mean, _, _ in SPECIES.values()])[species]
    sds = np.array([sd for _, sd, _ in SPECIES.values()])[species]
    raw = rng.normal(means, sds)
    scaled = (raw - raw.min(axis=0)) / (raw.max(axis=0) - raw.min(axis=0))
    os.makedirs(os.path.dirname(csv_path), exist_ok=True)
    with open(csv_path + ".tmp", "w") as f:
        f.write("species,culmen_length_mm,culmen_depth_mm,flipper_length_mm,body_mass_g\n")
        for label, row in zip(species, scaled, strict=True):
            f.write(f"{label}," + ",".join(f"{v:.6f}" for v in row) + "\n")
    os.replace(csv_path + ".tmp", csv_path)


def load_penguins_processed(csv_path):
    """The (features, species) pairs that `tfds.load("penguins/processed", as_supervised=True)`
    gives, in memory."""
    table = np.loadtxt(csv_path, delimiter=",", skiprows=1, dtype=np.float32)
    features, species = table[:, 1:], table[:, 0].astype(np.int64)
    return tf.data.Dataset.from_tensor_slices((features, species))


parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=51)
args = parser.parse_args()

print(f"TensorFlow version: {tf.__version__}")

class_names = ["Adélie", "Chinstrap", "Gentoo"]

csv_path = os.path.join(DATA_DIR, "penguins_processed.csv")
generate_penguins_csv(csv_path)
ds_all = load_penguins_processed(csv_path)
n_test = int(ds_all.cardinality()) * 20 // 100
ds_split = [ds_all.take(n_test), ds_all.skip(n_test)]  # 'train[:20%]', 'train[20%:]'

ds_test = ds_split[0]
ds_train = ds_split[1]
assert isinstance(ds_test, tf.data.Dataset)

print(ds_train.element_spec)

ds_train_batch = ds_train.batch(32)

model = tf.keras.Sequential(
    [
        tf.keras.layers.Dense(10, activation=tf.nn.relu, input_shape=(4,)),  # input shape required
        tf.keras.layers.Dense(10, activation=tf.nn.relu),
        tf.keras.layers.Dense(3),
    ]
)

loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def loss(model, x, y, training):
    # training=training is needed only if there are layers with different
    # behavior during training versus inference (e.g. Dropout).
    y_ = model(x, training=training)

    return loss_object(y_true=y, y_pred=y_)


def grad(model, inputs, targets):
    with tf.GradientTape() as tape:
        loss_value = loss(model, inputs, targets, training=True)
    return loss_value, tape.gradient(loss_value, model.trainable_variables)


optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)

## Note: Rerunning this cell uses the same model parameters

# Keep results for plotting
train_loss_results = []
train_accuracy_results = []

num_epochs = args.epochs

ds_train_batch = _truth.training_dataset(ds_train_batch, epochs=num_epochs, loop=True)
for epoch in range(num_epochs):
    epoch_loss_avg = tf.keras.metrics.Mean()
    epoch_accuracy = tf.keras.metrics.SparseCategoricalAccuracy()

    # Training loop - using batches of 32
    for x, y in _truth.epoch(ds_train_batch):
        # Optimize the model
        loss_value, grads = grad(model, x, y)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))

        # Track progress
        epoch_loss_avg.update_state(loss_value)  # Add current batch loss
        # Compare predicted label to actual label
        # training=True is needed only if there are layers with different
        # behavior during training versus inference (e.g. Dropout).
        epoch_accuracy.update_state(y, model(x, training=True))

    # End epoch
    train_loss_results.append(epoch_loss_avg.result())
    train_accuracy_results.append(epoch_accuracy.result())

    if epoch % 50 == 0:
        print(
            f"Epoch {epoch:03d}: Loss: {epoch_loss_avg.result():.3f}, "
            f"Accuracy: {epoch_accuracy.result():.3%}"
        )
