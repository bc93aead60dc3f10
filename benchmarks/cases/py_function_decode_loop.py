"""py_function map (custom loop): a NumPy "decode" per element, held by Python's GIL.

Intended bottleneck: input. Code that wraps PIL, OpenCV or a custom decoder calls it through
`tf.numpy_function`; tf.data treats that as stateful and runs it sequentially, and even a
parallel map gains little because the work holds the GIL (docs/design.md, "tf.data behaviours").
The model is small.

Hand-tuned (`--tuned`): the same decode written in TF ops, applied to whole batches
(vectorised), with a final prefetch. `--fix parallel-map` only parallelises the py_function
map (PD001's advice, which the GIL limits).

    python benchmarks/cases/py_function_decode_loop.py --epochs 2 [--tuned]
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from _case import LOOP, main, wants

BOTTLENECK = "py_function map: NumPy decode under the GIL, per element"
INTENDED = "input-bound"
STYLE = LOOP
EXPECTED_SUGGESTION = "PD007"
FIXES = {"PD007": "tuned", "PD001": "parallel-map"}

IMAGE = 32
EXAMPLES = 2048
BATCH = 32
CLASSES = 10
BLUR_PASSES = 8


def decode_numpy(raw: np.ndarray) -> np.ndarray:
    """Stand-in for a JPEG decode plus augmentation in Python: a few box-blur passes."""
    image = raw.astype(np.float32).reshape(IMAGE, IMAGE, 3) / 255.0
    for _ in range(BLUR_PASSES):
        image = (image + np.roll(image, 1, axis=0) + np.roll(image, 1, axis=1)) / 3.0
    return image


def decode_tf(raw: tf.Tensor) -> tf.Tensor:
    """The same decode in TF ops, on a batch: `raw` is [batch, pixels]."""
    image = tf.reshape(tf.cast(raw, tf.float32), (-1, IMAGE, IMAGE, 3)) / 255.0
    for _ in range(BLUR_PASSES):
        image = (image + tf.roll(image, 1, axis=1) + tf.roll(image, 1, axis=2)) / 3.0
    return image


def to_example(raw: tf.Tensor, label: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    image = tf.numpy_function(decode_numpy, [raw], tf.float32)
    image.set_shape((IMAGE, IMAGE, 3))
    return image, label


def make_dataset(fixes: frozenset[str] = frozenset()) -> tf.data.Dataset:
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 256, (EXAMPLES, IMAGE * IMAGE * 3), dtype=np.uint8)
    labels = rng.integers(0, CLASSES, EXAMPLES)
    ds = tf.data.Dataset.from_tensor_slices((raw, labels)).shuffle(1024, seed=0)
    if wants(fixes, "tuned"):
        ds = ds.batch(BATCH).map(
            lambda r, y: (decode_tf(r), y), num_parallel_calls=tf.data.AUTOTUNE
        )
        return ds.prefetch(tf.data.AUTOTUNE)
    parallel = tf.data.AUTOTUNE if wants(fixes, "parallel-map") else None
    return ds.map(to_example, num_parallel_calls=parallel).batch(BATCH)


def make_model() -> keras.Model:
    model = keras.Sequential(
        [
            keras.layers.Input((IMAGE, IMAGE, 3)),
            keras.layers.Conv2D(8, 3, strides=2, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(CLASSES),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


if __name__ == "__main__":
    main(make_dataset, make_model, style=STYLE, description=__doc__)
