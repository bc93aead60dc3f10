"""Training a Simple Neural Network, with tensorflow/datasets Data Loading: a pure-JAX MLP
(vmap'd predict, jit'd SGD update) on MNIST-like arrays fed by a tf.data pipeline as NumPy.

Source: jax-ml/jax docs/notebooks/neural_network_with_tfds_data.md @ 00f5ef2ac0f49f4c963897dbde1fc2755e461432 (https://docs.jax.dev/en/latest/notebooks/neural_network_with_tfds_data.html)
License: Apache-2.0, Copyright 2018 Google LLC
Split: held-out
Changes:
- tensorflow_datasets is replaced by tf.data itself: the MNIST download
  (`tfds.load(name="mnist", ...)`) by generated arrays of the same format (uint8 images
  (N, 28, 28, 1), int64 labels 0-9; 25,600 to train, 2,000 to test; a faint class template plus
  noise, 15% of labels redrawn at random),
  saved once as /tmp/pipediag-corpus/jax_mlp_tfdata/mnist.npz and then reused; the full sets
  for evaluation are those arrays (what `tfds.as_numpy(tfds.load(..., batch_size=-1))` returns);
  `get_train_batches()` builds `tf.data.Dataset.from_tensor_slices((image, label))` where the
  notebook loads split="train" as_supervised, keeps `.batch(batch_size).prefetch(1)`, and
  iterates it with `ds.as_numpy_iterator()` where the notebook calls `tfds.as_numpy(ds)`;
- scaled: 25,600 training images instead of 60,000 (200 steps of 128 per epoch; num_epochs 10 as
  in the notebook) so that a plain run takes ~30 s on 2 cores;
- the truth's switch: `_truth.training_dataset(...)` on the batched dataset in
  `get_train_batches()` before `as_numpy_iterator()`, and the loop's pass wrapped as
  `for x, y in _truth.epoch(get_train_batches()):`; inert unless PIPEDIAG_TRUTH is set;
- for the linter only: `zip(..., strict=False)` spelled out and f-strings for `str.format`
  (same behaviour); the notebook's 2-space indent is 4 here;
- the data flow: arrays -> from_tensor_slices -> batch(128) -> prefetch(1) -> NumPy batches ->
  jnp.reshape / one_hot -> jitted update; a fresh pipeline per epoch, as in the notebook.
"""  # noqa: E501

from __future__ import annotations

import os
import time

import _truth
import jax.numpy as jnp
import numpy as np
import tensorflow as tf
from jax import grad, jit, random, vmap
from jax.scipy.special import logsumexp

SPLIT = "held-out"
STYLE = "jax-loop"

DATA_DIR = "/tmp/pipediag-corpus/jax_mlp_tfdata"
NUM_TRAIN = 25600
NUM_TEST = 2000


def make_mnist(data_dir=DATA_DIR, seed=0):
    """MNIST's format as tfds gives it: {"image": uint8 (N, 28, 28, 1), "label": int64 (N,)}."""
    path = os.path.join(data_dir, "mnist.npz")
    if not os.path.exists(path):
        rng = np.random.default_rng(seed)
        templates = rng.normal(0, 25, size=(10, 7, 7)).repeat(4, axis=1).repeat(4, axis=2)

        def draw(count):
            labels = rng.integers(0, 10, size=count)
            noise = rng.normal(0, 60, size=(count, 28, 28))
            images = np.clip(128 + templates[labels] + noise, 0, 255).astype(np.uint8)
            relabel = rng.random(count) < 0.15  # some label noise, so accuracy stays below 1
            labels[relabel] = rng.integers(0, 10, size=int(relabel.sum()))
            return images[..., None], labels.astype(np.int64)

        train_image, train_label = draw(NUM_TRAIN)
        test_image, test_label = draw(NUM_TEST)
        os.makedirs(data_dir, exist_ok=True)
        np.savez(
            path + ".tmp.npz",
            train_image=train_image,
            train_label=train_label,
            test_image=test_image,
            test_label=test_label,
        )
        os.replace(path + ".tmp.npz", path)
    with np.load(path) as data:
        train = {"image": data["train_image"], "label": data["train_label"]}
        test = {"image": data["test_image"], "label": data["test_label"]}
    return {"train": train, "test": test}


# ## Hyperparameters


# A helper function to randomly initialize weights and biases
# for a dense neural network layer
def random_layer_params(m, n, key, scale=1e-2):
    w_key, b_key = random.split(key)
    return scale * random.normal(w_key, (n, m)), scale * random.normal(b_key, (n,))


# Initialize all layers for a fully-connected neural network with sizes "sizes"
def init_network_params(sizes, key):
    keys = random.split(key, len(sizes))
    return [
        random_layer_params(m, n, k) for m, n, k in zip(sizes[:-1], sizes[1:], keys, strict=False)
    ]


layer_sizes = [784, 512, 512, 10]
param_scale = 0.1
step_size = 0.01
num_epochs = 10
batch_size = 128
n_targets = 10
params = init_network_params(layer_sizes, random.PRNGKey(0))

# ## Auto-batching predictions


def relu(x):
    return jnp.maximum(0, x)


def predict(params, image):
    # per-example predictions
    activations = image
    for w, b in params[:-1]:
        outputs = jnp.dot(w, activations) + b
        activations = relu(outputs)

    final_w, final_b = params[-1]
    logits = jnp.dot(final_w, activations) + final_b
    return logits - logsumexp(logits)


# This works on single examples
random_flattened_image = random.normal(random.PRNGKey(1), (28 * 28,))
preds = predict(params, random_flattened_image)
print(preds.shape)

# Doesn't work with a batch
random_flattened_images = random.normal(random.PRNGKey(1), (10, 28 * 28))
try:
    preds = predict(params, random_flattened_images)
except TypeError:
    print("Invalid shapes!")

# Let's upgrade it to handle batches using `vmap`

# Make a batched version of the `predict` function
batched_predict = vmap(predict, in_axes=(None, 0))

# `batched_predict` has the same call signature as `predict`
batched_preds = batched_predict(params, random_flattened_images)
print(batched_preds.shape)

# ## Utility and loss functions


def one_hot(x, k, dtype=jnp.float32):
    """Create a one-hot encoding of x of size k."""
    return jnp.array(x[:, None] == jnp.arange(k), dtype)


def accuracy(params, images, targets):
    target_class = jnp.argmax(targets, axis=1)
    predicted_class = jnp.argmax(batched_predict(params, images), axis=1)
    return jnp.mean(predicted_class == target_class)


def loss(params, images, targets):
    preds = batched_predict(params, images)
    return -jnp.mean(preds * targets)


@jit
def update(params, x, y):
    grads = grad(loss)(params, x, y)
    return [
        (w - step_size * dw, b - step_size * db)
        for (w, b), (dw, db) in zip(params, grads, strict=False)
    ]


# ## Data Loading with `tensorflow/datasets` (here: tf.data on generated arrays)

# Fetch full datasets for evaluation
mnist_data = make_mnist()
train_data, test_data = mnist_data["train"], mnist_data["test"]
num_labels = 10
h, w, c = 28, 28, 1
num_pixels = h * w * c

# Full train set
train_images, train_labels = train_data["image"], train_data["label"]
train_images = jnp.reshape(train_images, (len(train_images), num_pixels))
train_labels = one_hot(train_labels, num_labels)

# Full test set
test_images, test_labels = test_data["image"], test_data["label"]
test_images = jnp.reshape(test_images, (len(test_images), num_pixels))
test_labels = one_hot(test_labels, num_labels)

print("Train:", train_images.shape, train_labels.shape)
print("Test:", test_images.shape, test_labels.shape)

# ## Training Loop


def get_train_batches():
    # as_supervised=True gives us the (image, label) as a tuple instead of a dict
    ds = tf.data.Dataset.from_tensor_slices((train_data["image"], train_data["label"]))
    # You can build up an arbitrary tf.data input pipeline
    ds = ds.batch(batch_size).prefetch(1)
    ds = _truth.training_dataset(ds, epochs=num_epochs, loop=True)
    # tfds.dataset_as_numpy converts the tf.data.Dataset into an iterable of NumPy arrays
    return ds.as_numpy_iterator()


for epoch in range(num_epochs):
    start_time = time.time()
    for x, y in _truth.epoch(get_train_batches()):
        x = jnp.reshape(x, (len(x), num_pixels))
        y = one_hot(y, num_labels)
        params = update(params, x, y)
    epoch_time = time.time() - start_time

    train_acc = accuracy(params, train_images, train_labels)
    test_acc = accuracy(params, test_images, test_labels)
    print(f"Epoch {epoch} in {epoch_time:0.2f} sec")
    print(f"Training set accuracy {train_acc}")
    print(f"Test set accuracy {test_acc}")
