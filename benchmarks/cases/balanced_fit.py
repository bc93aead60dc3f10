"""Balanced (Keras fit): input and compute take about as long per batch.

Intended verdict: balanced. Batches come from 4 shards read one at a time, each batch after
a fixed storage latency (tf.data's `SleepDataset`, which uses no CPU, so the reader does not
compete with the model for the 2 cores and the balance holds on a busy machine). The
model's step is sized (`WIDTH`) to take a little less than that latency on 2 cores, so with a
prefetch buffer the step waits about 10% of the time: both sides would need work.

Hand-tuned (`--tuned`): read 2 shards in parallel, which halves the latency per batch and
leaves the model as the limit.

    python benchmarks/cases/balanced_fit.py --epochs 2 [--tuned]
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from _case import FIT, main, wants
from tensorflow.python.data.experimental.ops import testing

BOTTLENECK = "balanced: storage latency per batch slightly above the model's step"
INTENDED = "balanced"
STYLE = FIT
EXPECTED_SUGGESTION = None
FIXES = {"PD002": "parallel-interleave"}

SHARDS = 4
EXAMPLES = 8192
FEATURES = 256
BATCH = 64
CLASSES = 10
BATCH_LATENCY_US = 13_000
WIDTH = 896


def make_dataset(fixes: frozenset[str] = frozenset()) -> tf.data.Dataset:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(EXAMPLES, FEATURES)).astype(np.float32)
    y = rng.integers(0, CLASSES, EXAMPLES)
    base = tf.data.Dataset.from_tensor_slices((x, y))

    def read_shard(shard: tf.Tensor) -> tf.data.Dataset:
        return base.shard(SHARDS, shard).batch(BATCH).apply(testing.sleep(BATCH_LATENCY_US))

    shards = tf.data.Dataset.range(SHARDS)
    if wants(fixes, "parallel-interleave"):
        ds = shards.interleave(read_shard, cycle_length=2, num_parallel_calls=2)
    else:
        ds = shards.interleave(read_shard, cycle_length=1)
    return ds.prefetch(tf.data.AUTOTUNE)


def make_model() -> keras.Model:
    model = keras.Sequential(
        [keras.layers.Input((FEATURES,))]
        + [keras.layers.Dense(WIDTH, activation="relu") for _ in range(3)]
        + [keras.layers.Dense(CLASSES)]
    )
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


if __name__ == "__main__":
    main(make_dataset, make_model, style=STYLE, description=__doc__)
