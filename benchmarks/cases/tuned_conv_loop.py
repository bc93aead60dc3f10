"""A well-tuned image pipeline feeding a convnet (custom loop): compute-bound.

Intended bottleneck: compute. Decoded images are cached, then augmented with stateless
random ops in a parallel map, batched and prefetched: what the tf.data guide recommends.
The convnet's step is much slower than the pipeline. There should be no false alarm: no
input fix comes first.

Hand-tuned (`--tuned`): identical; the pipeline is already tuned.

    python benchmarks/cases/tuned_conv_loop.py --epochs 2 [--tuned]
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from _case import LOOP, main

BOTTLENECK = "convnet step; the pipeline is parallel, cached and prefetched"
INTENDED = "compute-bound"
STYLE = LOOP
EXPECTED_SUGGESTION = "PD000"
FIXES: dict[str, str] = {}

IMAGE = 32
EXAMPLES = 2048
BATCH = 64
CLASSES = 10


def augment(index: tf.Tensor, image: tf.Tensor, label: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    seed = tf.stack([index, tf.constant(0, tf.int64)])
    image = tf.image.stateless_random_flip_left_right(image, seed)
    image = tf.image.stateless_random_brightness(image, 0.1, seed)
    return image, label


def make_dataset(fixes: frozenset[str] = frozenset()) -> tf.data.Dataset:
    rng = np.random.default_rng(0)
    images = rng.uniform(size=(EXAMPLES, IMAGE, IMAGE, 3)).astype(np.float32)
    labels = rng.integers(0, CLASSES, EXAMPLES)
    ds = tf.data.Dataset.from_tensor_slices((images, labels)).cache().enumerate()
    ds = ds.shuffle(1024, seed=0)
    ds = ds.map(lambda i, xy: augment(i, *xy), num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def make_model() -> keras.Model:
    model = keras.Sequential(
        [
            keras.layers.Input((IMAGE, IMAGE, 3)),
            keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(CLASSES),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


if __name__ == "__main__":
    main(make_dataset, make_model, style=STYLE, description=__doc__)
