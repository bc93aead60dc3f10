"""Missing prefetch (custom loop): autotune and prefetch injection are off, so nothing overlaps.

Intended bottleneck: input. The pipeline sets `autotune.enabled = False` and
`experimental_optimization.inject_prefetch = False`, as some tuned-by-hand pipelines do;
with either one on, TF would add the prefetch itself ("Prefetch is already injected":
docs/design.md, "tf.data behaviours"). The map is explicitly parallel (2 calls) and random
(per-element noise, as an augmentation would be), so nothing upstream can be cached and its
random draws rule out moving it after the batch: the one thing missing is the overlap. Each
step waits for the whole batch to be produced, then trains on it.

Hand-tuned (`--tuned`): `.prefetch(2)` at the end (a fixed buffer, since autotune is off).
`--fix prefetch` applies the same prefetch (what PD003 says); `--fix autotune-on` turns
autotune back on (PD009).

    python benchmarks/cases/no_prefetch_loop.py --epochs 2 [--tuned]
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from _case import LOOP, TUNED, main, wants

BOTTLENECK = "no prefetch: autotune and inject_prefetch off, input and step never overlap"
INTENDED = "input-bound"
STYLE = LOOP
EXPECTED_SUGGESTION = "PD003"
FIXES = {"PD003": "prefetch", "PD009": "autotune-on"}

EXAMPLES = 4096
FEATURES = 256
BATCH = 64
CLASSES = 10
PREFETCH_BUFFER = 2


MIX_PASSES = 8
NOISE = 0.05
MIX = tf.constant(np.random.default_rng(1).normal(size=(FEATURES, FEATURES)) / 16, tf.float32)


def featurize(x: tf.Tensor, y: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Per-element augmentation and feature engineering: input noise, then a few fixed
    random projections of the raw vector."""
    x = x + tf.random.normal(tf.shape(x), stddev=NOISE)
    for _ in range(MIX_PASSES):
        x = tf.tanh(tf.linalg.matvec(MIX, x))
    return x, y


def make_dataset(fixes: frozenset[str] = frozenset()) -> tf.data.Dataset:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(EXAMPLES, FEATURES)).astype(np.float32)
    y = rng.integers(0, CLASSES, EXAMPLES)
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    ds = ds.map(featurize, num_parallel_calls=2, deterministic=True).batch(BATCH)
    # `--fix autotune-on` restores both defaults, as PD009's advice would.
    restore = wants(fixes, "autotune-on") and TUNED not in fixes
    options = tf.data.Options()
    options.autotune.enabled = restore
    options.experimental_optimization.inject_prefetch = restore
    ds = ds.with_options(options)
    return ds.prefetch(PREFETCH_BUFFER) if wants(fixes, "prefetch") else ds


def make_model() -> keras.Model:
    model = keras.Sequential(
        [keras.layers.Input((FEATURES,))]
        + [keras.layers.Dense(256, activation="relu") for _ in range(2)]
        + [keras.layers.Dense(CLASSES)]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


if __name__ == "__main__":
    main(make_dataset, make_model, style=STYLE, description=__doc__)
