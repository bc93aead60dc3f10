"""Python generator source (Keras fit): examples built in Python, one at a time.

Intended bottleneck: input. `Dataset.from_generator` calls back into Python for every
element (a `py_func` under the hood), so the source is GIL-bound and runs on one core no
matter what tf.data settings say; the model is small. Common when a dataset is read with a
Python library (pandas rows, a custom file format).

Hand-written fix: `--fix materialise-generator` (the generator read once, its rows kept in
memory and served with `from_tensor_slices`: the rewrite pipediag tries). Hand-tuned
(`--tuned`): build the arrays once, `from_tensor_slices`, and do the per-row work in TF ops
on whole batches.

    python benchmarks/cases/generator_source_fit.py --epochs 2 [--tuned]
    python benchmarks/cases/generator_source_fit.py --epochs 2 --fix materialise-generator
"""

from __future__ import annotations

from collections.abc import Iterator

import keras
import numpy as np
import tensorflow as tf
from _case import FIT, main, wants

BOTTLENECK = "from_generator source: per-row Python work under the GIL"
INTENDED = "input-bound"
STYLE = FIT
EXPECTED_SUGGESTION = "PD007"
FIXES = {"PD007": "tuned", "PD017": "materialise-generator"}

EXAMPLES = 4096
FEATURES = 64
BATCH = 64
CLASSES = 10


def _raw() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(EXAMPLES, FEATURES)).astype(np.float32), rng.integers(
        0, CLASSES, EXAMPLES
    )


def rows() -> Iterator[tuple[np.ndarray, int]]:
    """Per-row Python feature work, as a row-by-row reader would do it."""
    x, y = _raw()
    for row, label in zip(x, y, strict=True):
        features = [float(v) * 2.0 - 1.0 for v in row]
        features = [v if abs(v) < 3.0 else 3.0 * (1 if v > 0 else -1) for v in features]
        yield np.asarray(features, np.float32), int(label)


def make_dataset(fixes: frozenset[str] = frozenset()) -> tf.data.Dataset:
    if wants(fixes, "tuned"):
        x, y = _raw()
        ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)
        ds = ds.map(
            lambda a, b: (tf.clip_by_value(a * 2.0 - 1.0, -3.0, 3.0), b),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
        return ds.prefetch(tf.data.AUTOTUNE)
    if wants(fixes, "materialise-generator"):
        features, labels = zip(*rows(), strict=True)
        ds = tf.data.Dataset.from_tensor_slices((np.stack(features), np.asarray(labels, np.int64)))
        return ds.batch(BATCH)
    ds = tf.data.Dataset.from_generator(
        rows,
        output_signature=(
            tf.TensorSpec((FEATURES,), tf.float32),
            tf.TensorSpec((), tf.int64),
        ),
    )
    return ds.batch(BATCH)


def make_model() -> keras.Model:
    model = keras.Sequential(
        [
            keras.layers.Input((FEATURES,)),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(CLASSES),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


if __name__ == "__main__":
    main(make_dataset, make_model, style=STYLE, description=__doc__)
