"""Contention (Keras fit): the pipeline keeps up, yet costs training a large share of its rate.

Intended: input-bound by input cost, not by waiting. A CPU-heavy parallel map (Keras
augmentation layers on each 64x64 image: flip, rotation, zoom, as keras-io's "Option 2"
puts them in the pipeline; `num_parallel_calls=AUTOTUNE`) runs beside a small CNN whose
train step uses both cores. Read alone, the pipeline is faster than the train step alone,
so the prefetch buffer stays full and the step hardly ever waits; but the map's threads
take cores the step needs, so every step runs slower than it does alone (docs/design.md,
"Costs that are not waiting": "Waiting is not the whole cost"). On a CPU host only cutting
or offloading the work helps: moving the augmentation into the model makes it part of the
step instead.

Measured (2026-12-01, 2 cores shared with other work; two sessions of
`python benchmarks/input_cost_truth.py --cases contention_fit,fetch_loop,cache_phases_fit
--runs 3`, 6 runs, median [min, max]): training A 28.9 [25.0, 31.0] steps/s, the step
alone T 48.7 [41.1, 50.7], input cost 1 - A/T 40% [35%, 44%] (15 side-by-side T/A pairs:
39% [29%, 49%]), while the step waited 1.6% [1.2%, 1.8%] of the time (TF profiler). The
pipeline alone reads 75 [64, 89] batches/s: 1.5x the step alone, 2.6x training. The
process keeps 1.84 cores busy while training, 1.75 for the step alone.

Hand-tuned (`--tuned`): augment whole batches after `batch()` (one vectorised call per
batch instead of one per image), which cuts the per-image op overhead; the pixel work stays
(about 1.05-1.1x in two 80-step runs each).

    python benchmarks/cases/contention_fit.py --epochs 2 [--tuned]
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from _case import FIT, main, wants

BOTTLENECK = "CPU contention: a parallel augmentation map shares 2 cores with the train step"
INTENDED = "input-bound"
STYLE = FIT
EXPECTED_SUGGESTION = "PD012"
FIXES: dict[str, str] = {}

IMAGE = 64
# 80 batches an epoch: the diagnosis's window (steps 6-65) stays inside epoch 1, away from
# an epoch boundary's fresh iterator.
EXAMPLES = 2560
BATCH = 32
CLASSES = 10


def make_augmenter() -> keras.Sequential:
    return keras.Sequential(
        [
            keras.layers.RandomFlip("horizontal"),
            keras.layers.RandomRotation(0.1),
            keras.layers.RandomZoom(0.1),
        ]
    )


def make_dataset(fixes: frozenset[str] = frozenset()) -> tf.data.Dataset:
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 256, (EXAMPLES, IMAGE, IMAGE, 3), dtype=np.uint8)
    labels = rng.integers(0, CLASSES, EXAMPLES)
    augmenter = make_augmenter()

    def augment(images: tf.Tensor, y: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return augmenter(tf.cast(images, tf.float32) / 255.0, training=True), y

    # The raw images are shuffled (cheap copies), then augmented as batches are drawn.
    ds = tf.data.Dataset.from_tensor_slices((raw, labels)).shuffle(EXAMPLES, seed=0)
    if wants(fixes, "batch-augment"):
        ds = ds.batch(BATCH).map(augment, num_parallel_calls=tf.data.AUTOTUNE)
    else:
        ds = ds.map(augment, num_parallel_calls=tf.data.AUTOTUNE).batch(BATCH)
    return ds.prefetch(tf.data.AUTOTUNE)


def make_model() -> keras.Model:
    model = keras.Sequential(
        [
            keras.layers.Input((IMAGE, IMAGE, 3)),
            keras.layers.Conv2D(32, 3, strides=2, activation="relu"),
            keras.layers.Conv2D(64, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(CLASSES),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


if __name__ == "__main__":
    main(make_dataset, make_model, style=STYLE, description=__doc__)
