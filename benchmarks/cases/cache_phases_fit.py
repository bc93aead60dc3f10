"""Input cost that changes by epoch (Keras fit): epoch 1 decodes, later epochs read a cache.

Intended: input-bound over the window, in phases: epoch 1 input-bound, epochs 2 and later
compute-bound. A costly deterministic decode (blur passes in TF ops, parallel map) is
followed by `cache()`: epoch 1 pays the decode for every image as its batches are drawn,
later epochs read decoded images from memory, shuffle them and batch them, far faster
than the convnet trains. Epochs are short (20 batches), so the window pipediag judges
(60 steps after its 5-step warm-up) holds the rest of epoch 1 (14-15 steps), epochs 2 and 3
and the start of epoch 4. The existing `cache_after_first_epoch_loop` is the custom-loop
cousin, with a lighter step.

Measured (2026-12-01, 2 cores shared with other work; two sessions of
`python benchmarks/input_cost_truth.py --cases cache_phases_fit --runs 3`, 6 runs, median
[min, max]): over the window, training A 11.0 [9.3, 12.2] steps/s, the step alone T 18.7
[16.2, 22.6], input cost 44% [31%, 48%] (18 side-by-side pairs: 45% [27%, 53%]), wait 40%
[33%, 45%]. By epoch (the same T): epoch 1 costs 78% [72%, 79%], almost all of it waiting;
epochs 2-4 cost -1% [-23%, 4%] (a negative cost is the drift of a shared machine between
the runs of T and of training: the cached epochs train as fast as the step alone). The
window's three epoch boundaries (an iterator's tear-down, the next one's start) took 0.01
to 4.9 s in all per run; they are left out of the rates, as pipediag leaves them out.

Hand-tuned (`--tuned`): the decode runs on whole batches (vectorised) before the cache,
which shortens epoch 1; later epochs are the same.

    python benchmarks/cases/cache_phases_fit.py --epochs 4 [--tuned]
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from _case import FIT, main, wants

BOTTLENECK = "epoch 1 decodes every image (slow); later epochs read a cache (fast)"
INTENDED = "input-bound"
STYLE = FIT
EXPECTED_SUGGESTION = None
FIXES = {"PD004": "vectorize"}

IMAGE = 48
EXAMPLES = 640
BATCH = 32
CLASSES = 10
BLUR_PASSES = 240
# Small enough that epoch 1 decodes as batches are drawn; a buffer as large as the dataset
# would decode everything before the first batch (docs/design.md, "tf.data behaviours"), hiding
# epoch 1 in one step.
SHUFFLE_BUFFER = 64


def decode(raw: tf.Tensor) -> tf.Tensor:
    """Works on one image [H, W, 3] or a batch [B, H, W, 3]."""
    image = tf.cast(raw, tf.float32) / 255.0
    batched = image if image.shape.rank == 4 else image[None]
    kernel = tf.ones((3, 3, 3, 1)) / 9.0
    for _ in range(BLUR_PASSES):
        batched = tf.nn.depthwise_conv2d(batched, kernel, [1, 1, 1, 1], "SAME")
    return batched if image.shape.rank == 4 else batched[0]


def make_dataset(fixes: frozenset[str] = frozenset()) -> tf.data.Dataset:
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 256, (EXAMPLES, IMAGE, IMAGE, 3), dtype=np.uint8)
    labels = rng.integers(0, CLASSES, EXAMPLES)
    ds = tf.data.Dataset.from_tensor_slices((raw, labels))
    if wants(fixes, "vectorize"):
        ds = ds.batch(BATCH).map(lambda r, y: (decode(r), y), num_parallel_calls=2).unbatch()
    else:
        ds = ds.map(lambda r, y: (decode(r), y), num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.cache().shuffle(SHUFFLE_BUFFER, seed=0)
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def make_model() -> keras.Model:
    model = keras.Sequential(
        [
            keras.layers.Input((IMAGE, IMAGE, 3)),
            keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.Conv2D(64, 3, strides=2, activation="relu"),
            keras.layers.Conv2D(64, 3, activation="relu"),
            keras.layers.Conv2D(128, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(CLASSES),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


if __name__ == "__main__":
    main(make_dataset, make_model, style=STYLE, description=__doc__, default_epochs=4)
