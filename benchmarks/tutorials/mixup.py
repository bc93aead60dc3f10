"""MixUp augmentation for image classification: a small CNN on Fashion-MNIST-like 28x28 images,
two shuffled from_tensor_slices datasets zipped and mixed up batch by batch in a parallel map.

Source: keras-team/keras-io examples/vision/mixup.py @ 0a57de48c864d63b80083820e8988368ee5c3149 (https://keras.io/examples/vision/mixup/)
License: Apache-2.0, Copyright The Keras Authors (example by Sayak Paul)
Split: held-out
Changes:
- the download of Fashion-MNIST (`tf.keras.datasets.fashion_mnist.load_data()`) replaced by
  generated arrays of the same format: uint8 images (N, 28, 28) and uint8 labels 0-9, 5,200 to
  train and 1,000 to test, a class template per label plus noise, saved once as
  /tmp/pipediag-corpus/mixup/fashion_mnist.npz and then reused;
- scaled: 5,200 training images instead of 60,000 (2,000 still put aside for validation, so 50
  steps of 64 per epoch; EPOCHS 10 as in the example) so that a plain run takes ~35 s on 2 cores;
- the truth's switch: `_truth.training_dataset(...)` around `train_ds_mu` where it is handed to
  fit, `_truth.callbacks()` in fit; inert unless PIPEDIAG_TRUTH is set;
- Keras 3 only saves weights to a `.weights.h5` file: the initial weights go to
  /tmp/pipediag-corpus/mixup/initial_weights.weights.h5 instead of ./initial_weights.h5;
- dropped: the preview of 9 mixed samples (plot), `model.evaluate(test_ds)` after training, and
  the second training run without mixup ("2. Train the model *without* the mixed up dataset"),
  which is the same model on `train_ds_one` (a second fit; the corpus times the mixup one);
- the data flow: arrays -> two from_tensor_slices().shuffle(6400).batch(64) -> Dataset.zip ->
  map(mix_up, num_parallel_calls=AUTOTUNE) (Beta lambdas from two tf.random.gamma) -> fit, with
  no prefetch, as in the example;
- a hand-tuned variant (`PIPEDIAG_TUNED=1`, for the prescription's truth): prefetch after the
  map; the mixup map is built in `mixed_up()`, so that `_truth.training_dataset(tuned=...)`
  can build that variant too.
"""  # noqa: E501

from __future__ import annotations

import os

import _truth
import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

SPLIT = "held-out"
STYLE = "keras-fit"
TUNED_CHANGE = "prefetch(AUTOTUNE) after the mixup map"
TUNED_FIX = "prefetch-end"

DATA_DIR = "/tmp/pipediag-corpus/mixup"
NUM_TRAIN = 5200
NUM_TEST = 1000


def make_fashion_mnist(data_dir=DATA_DIR, seed=0):
    """Fashion-MNIST's format: ((x_train, y_train), (x_test, y_test)), uint8 28x28 images."""
    path = os.path.join(data_dir, "fashion_mnist.npz")
    if not os.path.exists(path):
        rng = np.random.default_rng(seed)
        templates = rng.uniform(0, 255, size=(10, 7, 7))
        templates = templates.repeat(4, axis=1).repeat(4, axis=2)  # 10 coarse 28x28 shapes

        def draw(count):
            labels = rng.integers(0, 10, size=count).astype(np.uint8)
            noise = rng.normal(0, 40, size=(count, 28, 28))
            images = np.clip(templates[labels] + noise, 0, 255).astype(np.uint8)
            return images, labels

        x_train, y_train = draw(NUM_TRAIN)
        x_test, y_test = draw(NUM_TEST)
        os.makedirs(data_dir, exist_ok=True)
        np.savez(path + ".tmp.npz", x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
        os.replace(path + ".tmp.npz", path)
    with np.load(path) as data:
        return (data["x_train"], data["y_train"]), (data["x_test"], data["y_test"])


# ## Prepare the dataset

(x_train, y_train), (x_test, y_test) = make_fashion_mnist()

x_train = x_train.astype("float32") / 255.0
x_train = np.reshape(x_train, (-1, 28, 28, 1))
y_train = tf.one_hot(y_train, 10)

x_test = x_test.astype("float32") / 255.0
x_test = np.reshape(x_test, (-1, 28, 28, 1))
y_test = tf.one_hot(y_test, 10)

# ## Define hyperparameters

AUTO = tf.data.AUTOTUNE
BATCH_SIZE = 64
EPOCHS = 10

# ## Convert the data into TensorFlow `Dataset` objects

# Put aside a few samples to create our validation set
val_samples = 2000
x_val, y_val = x_train[:val_samples], y_train[:val_samples]
new_x_train, new_y_train = x_train[val_samples:], y_train[val_samples:]

train_ds_one = (
    tf.data.Dataset.from_tensor_slices((new_x_train, new_y_train))
    .shuffle(BATCH_SIZE * 100)
    .batch(BATCH_SIZE)
)
train_ds_two = (
    tf.data.Dataset.from_tensor_slices((new_x_train, new_y_train))
    .shuffle(BATCH_SIZE * 100)
    .batch(BATCH_SIZE)
)
# Because we will be mixing up the images and their corresponding labels, we will be
# combining two shuffled datasets from the same training data.
train_ds = tf.data.Dataset.zip((train_ds_one, train_ds_two))

val_ds = tf.data.Dataset.from_tensor_slices((x_val, y_val)).batch(BATCH_SIZE)

test_ds = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(BATCH_SIZE)

# ## Define the mixup technique function


def sample_beta_distribution(size, concentration_0=0.2, concentration_1=0.2):
    gamma_1_sample = tf.random.gamma(shape=[size], alpha=concentration_1)
    gamma_2_sample = tf.random.gamma(shape=[size], alpha=concentration_0)
    return gamma_1_sample / (gamma_1_sample + gamma_2_sample)


def mix_up(ds_one, ds_two, alpha=0.2):
    # Unpack two datasets
    images_one, labels_one = ds_one
    images_two, labels_two = ds_two
    batch_size = tf.shape(images_one)[0]

    # Sample lambda and reshape it to do the mixup
    l = sample_beta_distribution(batch_size, alpha, alpha)  # noqa: E741
    x_l = tf.reshape(l, (batch_size, 1, 1, 1))
    y_l = tf.reshape(l, (batch_size, 1))

    # Perform mixup on both images and labels by combining a pair of images/labels
    # (one from each dataset) into one image/label
    images = images_one * x_l + images_two * (1 - x_l)
    labels = labels_one * y_l + labels_two * (1 - y_l)
    return (images, labels)


def mixed_up():
    # First create the new dataset using our `mix_up` utility
    train_ds_mu = train_ds.map(
        lambda ds_one, ds_two: mix_up(ds_one, ds_two, alpha=0.2), num_parallel_calls=AUTO
    )
    if _truth.TUNED:
        train_ds_mu = train_ds_mu.prefetch(AUTO)
    return train_ds_mu


train_ds_mu = mixed_up()

# ## Model building


def get_training_model():
    model = tf.keras.Sequential(
        [
            layers.Conv2D(16, (5, 5), activation="relu", input_shape=(28, 28, 1)),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Conv2D(32, (5, 5), activation="relu"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Dropout(0.2),
            layers.GlobalAvgPool2D(),
            layers.Dense(128, activation="relu"),
            layers.Dense(10, activation="softmax"),
        ]
    )
    return model


# For the sake of reproducibility, we serialize the initial random weights of our shallow
# network.

initial_weights = os.path.join(DATA_DIR, "initial_weights.weights.h5")
initial_model = get_training_model()
initial_model.save_weights(initial_weights)

# ## 1. Train the model with the mixed up dataset

model = get_training_model()
model.load_weights(initial_weights)
model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
train_ds_mu = _truth.training_dataset(train_ds_mu, epochs=EPOCHS, tuned=mixed_up)
model.fit(train_ds_mu, validation_data=val_ds, epochs=EPOCHS, callbacks=[*_truth.callbacks()])
