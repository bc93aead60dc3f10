"""Per-element map after a shuffle (custom loop): MNIST-like images preprocessed one by one.

Intended bottleneck: input. `from_tensor_slices((images, labels)).shuffle(...)
.map(preprocess).batch(32)`, the order of many tutorials: uint8 28x28 images are converted
to float, padded to 32x32 and standardised per image, one element at a time, in TF ops only
(so `map_parallelization` runs the map on both cores). Each op is cheap: the cost is
tf.data's per-element overhead, paid 32 times per batch, while the small model's step
takes about a millisecond.

Hand-written fixes: `--fix vectorize` batches before the map (every op works on a batch of
images: what PD004 says); `--fix cache` is the classic TFDS order, map, cache, then
shuffle, so the map runs once (what PD005 says; `--fix hoist-cache`, the name of
pipediag's rewrite that makes it, applies the same); `--fix prefetch-end` adds a final
prefetch. Hand-tuned (`--tuned`): the vectorised map, then the cache, then prefetch.

    python benchmarks/cases/shuffled_map_loop.py --epochs 2 [--tuned]
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from _case import LOOP, main, wants

BOTTLENECK = "per-element map after a shuffle: cheap image ops paid per element"
INTENDED = "input-bound"
STYLE = LOOP
EXPECTED_SUGGESTION = "PD004"
FIXES = {
    "PD004": "vectorize",
    "PD005": "cache",
    "PD003": "prefetch-end",
    "PD017": "hoist-cache",
}

EXAMPLES = 4096
IMAGE = 28
PADDED = 32
BATCH = 32
CLASSES = 10
SHUFFLE_BUFFER = 1024


def preprocess(image: tf.Tensor, label: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Works on one image or a batch of them, with the same result per image."""
    image = tf.image.convert_image_dtype(image, tf.float32)
    image = tf.image.resize_with_crop_or_pad(image, PADDED, PADDED)
    return tf.image.per_image_standardization(image), label


def make_dataset(fixes: frozenset[str] = frozenset()) -> tf.data.Dataset:
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(EXAMPLES, IMAGE, IMAGE, 1), dtype=np.uint8)
    labels = rng.integers(0, CLASSES, EXAMPLES)
    ds = tf.data.Dataset.from_tensor_slices((images, labels))
    vectorize = wants(fixes, "vectorize")
    cache = wants(fixes, "cache") or wants(fixes, "hoist-cache")
    if vectorize and cache:
        # The map's output is cached in batches, so the shuffle mixes whole batches only:
        # the hand-tuned variant trades that for a map paid once per epoch-1 batch.
        ds = ds.batch(BATCH).map(preprocess, num_parallel_calls=tf.data.AUTOTUNE).cache()
        ds = ds.shuffle(SHUFFLE_BUFFER // BATCH, seed=0)
    elif vectorize:
        ds = ds.shuffle(SHUFFLE_BUFFER, seed=0).batch(BATCH)
        ds = ds.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)
    elif cache:
        ds = ds.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE).cache()
        ds = ds.shuffle(SHUFFLE_BUFFER, seed=0).batch(BATCH)
    else:
        ds = ds.shuffle(SHUFFLE_BUFFER, seed=0).map(preprocess).batch(BATCH)
    return ds.prefetch(tf.data.AUTOTUNE) if wants(fixes, "prefetch-end") else ds


def make_model() -> keras.Model:
    model = keras.Sequential(
        [
            keras.layers.Input((PADDED, PADDED, 1)),
            keras.layers.Flatten(),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(CLASSES),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


if __name__ == "__main__":
    main(make_dataset, make_model, style=STYLE, description=__doc__)
