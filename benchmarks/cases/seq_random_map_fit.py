"""Sequential map (Keras fit): an augmentation map with a stateful random op runs on one core.

Intended bottleneck: input. The map draws `tf.random.uniform` (a stateful op), so tf.data's
`map_parallelization` leaves it sequential even though it has no `num_parallel_calls` (a map
with a random op stays sequential: docs/design.md, "tf.data behaviours"). Each element gets
a random flip, a brightness jitter and a chain of blur passes (many small ops, each
single-threaded), while the small model needs a couple of milliseconds per batch.

Hand-tuned (`--tuned`): `num_parallel_calls=AUTOTUNE` on the map and a final prefetch.
`--fix parallel-map` applies only the parallel map (what PD001 says).

    python benchmarks/cases/seq_random_map_fit.py --epochs 2 [--tuned]
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from _case import FIT, main, wants

BOTTLENECK = "sequential map: stateful random augmentation runs on one core"
INTENDED = "input-bound"
STYLE = FIT
EXPECTED_SUGGESTION = "PD001"
FIXES = {"PD001": "parallel-map"}

IMAGE = 32
EXAMPLES = 2048
BATCH = 32
CLASSES = 10
BLUR_PASSES = 40


def augment(image: tf.Tensor, label: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    image = tf.cast(image, tf.float32) / 255.0
    image = tf.image.random_flip_left_right(image)
    image = image + tf.random.uniform([], -0.1, 0.1)
    for _ in range(BLUR_PASSES):  # many small single-threaded ops, as a chain of augmentations
        image = (image + tf.roll(image, 1, axis=0) + tf.roll(image, 1, axis=1)) / 3.0
    return image, label


def make_dataset(fixes: frozenset[str] = frozenset()) -> tf.data.Dataset:
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (EXAMPLES, IMAGE, IMAGE, 3), dtype=np.uint8)
    labels = rng.integers(0, CLASSES, EXAMPLES)
    ds = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(1024, seed=0)
    parallel = tf.data.AUTOTUNE if wants(fixes, "parallel-map") else None
    ds = ds.map(augment, num_parallel_calls=parallel).batch(BATCH)
    return ds.prefetch(tf.data.AUTOTUNE) if wants(fixes, "tuned") else ds


def make_model() -> keras.Model:
    model = keras.Sequential(
        [
            keras.layers.Input((IMAGE, IMAGE, 3)),
            keras.layers.Conv2D(16, 3, strides=2, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(CLASSES),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


if __name__ == "__main__":
    main(make_dataset, make_model, style=STYLE, description=__doc__)
