"""Un-vectorised map (Keras fit): cheap per-element feature scaling on large batches.

Intended bottleneck: input. Tabular rows are normalised, clipped and log-scaled one row at a
time before a batch of 512. Each op is trivial, so the cost is tf.data's per-element
overhead (a function call per row, ~10-30 us), paid 512 times per batch; the map is
stateless, so `map_parallelization` already runs it on both cores, and that is still
slower than the small model's step.

Hand-tuned (`--tuned`): batch first, then map the same function over whole batches
(vectorised), and prefetch. `--fix vectorize` applies only the reordering (what PD004 says).

    python benchmarks/cases/unvectorised_map_fit.py --epochs 2 [--tuned]
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from _case import FIT, main, wants

BOTTLENECK = "un-vectorised map: trivial per-row ops paid per element on big batches"
INTENDED = "input-bound"
STYLE = FIT
EXPECTED_SUGGESTION = "PD004"
FIXES = {"PD004": "vectorize"}

EXAMPLES = 32768
FEATURES = 32
BATCH = 512
CLASSES = 2


def scale(x: tf.Tensor, y: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Elementwise, so it gives the same result per row or per batch."""
    x = tf.clip_by_value((x - 0.5) * 2.0, -3.0, 3.0)
    x = tf.math.log1p(tf.abs(x)) * tf.sign(x)
    return x, tf.cast(y, tf.float32)


def make_dataset(fixes: frozenset[str] = frozenset()) -> tf.data.Dataset:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(EXAMPLES, FEATURES)).astype(np.float32)
    y = rng.integers(0, CLASSES, EXAMPLES)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(4096, seed=0)
    if wants(fixes, "vectorize"):
        ds = ds.batch(BATCH).map(scale, num_parallel_calls=tf.data.AUTOTUNE)
    else:
        ds = ds.map(scale).batch(BATCH)
    return ds.prefetch(tf.data.AUTOTUNE) if wants(fixes, "tuned") else ds


def make_model() -> keras.Model:
    model = keras.Sequential(
        [
            keras.layers.Input((FEATURES,)),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    model.compile("adam", keras.losses.BinaryCrossentropy(from_logits=True))
    return model


if __name__ == "__main__":
    main(make_dataset, make_model, style=STYLE, description=__doc__)
