"""Heavy model on cached data (Keras fit): the pipeline is fine, the model sets the rate.

Intended bottleneck: compute. In-memory tensors, `cache()`, shuffle, batch, prefetch: the
pipeline delivers thousands of batches per second, while four 1024-wide dense layers take
tens of milliseconds per step on 2 cores. A diagnoser must not invent input fixes here.

Hand-tuned (`--tuned`): identical; there is nothing in the input pipeline to tune (the
model, not the data, would have to change).

    python benchmarks/cases/heavy_model_cached_fit.py --epochs 2 [--tuned]
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from _case import FIT, main

BOTTLENECK = "heavy model on cached, prefetched data"
INTENDED = "compute-bound"
STYLE = FIT
EXPECTED_SUGGESTION = "PD000"
FIXES: dict[str, str] = {}

EXAMPLES = 8192
FEATURES = 512
BATCH = 256
WIDTH = 1024
CLASSES = 10


def make_dataset(fixes: frozenset[str] = frozenset()) -> tf.data.Dataset:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(EXAMPLES, FEATURES)).astype(np.float32)
    y = rng.integers(0, CLASSES, EXAMPLES)
    # A full shuffle: the data is small and in memory, so nothing in the pipeline is a compromise.
    ds = tf.data.Dataset.from_tensor_slices((x, y)).cache().shuffle(EXAMPLES, seed=0)
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def make_model() -> keras.Model:
    model = keras.Sequential(
        [keras.layers.Input((FEATURES,))]
        + [keras.layers.Dense(WIDTH, activation="relu") for _ in range(4)]
        + [keras.layers.Dense(CLASSES)]
    )
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


if __name__ == "__main__":
    main(make_dataset, make_model, style=STYLE, description=__doc__)
