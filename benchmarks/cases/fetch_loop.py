"""Per-pull overhead (custom loop): a fast in-memory pipeline, a sub-millisecond train step.

Intended: input-bound by input cost, with nothing slow in the pipeline. The data are in
memory (`from_tensor_slices().shuffle().batch()`, the prefetch injected by tf.data), the
model a tiny dense net whose compiled step takes well under a millisecond. The pipeline
alone is several times faster than the step and the step hardly waits, yet every `next()`
from Python costs a fixed overhead (an eager op call, unpacking the batch into tensors)
that is a large share of so short a step (about 25% with a ~0.6 ms step: docs/design.md,
"Costs that are not waiting"). No stage is slow: the cure is fewer, larger pulls.

Measured (2026-12-01, 2 cores shared with other work; three sessions of
`python benchmarks/input_cost_truth.py --cases contention_fit,fetch_loop,cache_phases_fit
--runs 3`, 9 runs, median [min, max]; the truth's window was lengthened to 0.5 s of the
step alone, 630-1,300 steps): training A 1,149 [946, 1,873] steps/s, the step alone T 1,921
[1,538, 3,054], input cost 39% [24%, 57%] (21 side-by-side pairs: 39% [15%, 62%]), while
the step waited 3.9% [2.6%, 4.3%] of the time (TF profiler). The pull of a ready batch
alone (the step fed by `next()` on one held batch) accounts for 37% [17%, 55%] of training
time: most of the cost. The pipeline alone reads 7,448 [2,851, 11,901] batches/s, about 6x
training; the process keeps 1.22 cores busy while training, 1.20 for the step alone.

Hand-tuned (`--tuned`): batches 8 times larger, so one pull feeds 8 times the examples
(a real script would scale its learning rate to match). Its steps/s are not comparable
with the baseline's: compare examples/s.

    python benchmarks/cases/fetch_loop.py --epochs 2 [--tuned]
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from _case import LOOP, main, wants

BOTTLENECK = "per-pull overhead: next() costs a large share of a sub-millisecond step"
INTENDED = "input-bound"
STYLE = LOOP
EXPECTED_SUGGESTION = "PD013"
FIXES: dict[str, str] = {}

EXAMPLES = 16384
FEATURES = 32
BATCH = 16
TUNED_BATCH_FACTOR = 8
CLASSES = 10
HIDDEN = 32
SHUFFLE_BUFFER = 1024


def make_dataset(fixes: frozenset[str] = frozenset()) -> tf.data.Dataset:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(EXAMPLES, FEATURES)).astype(np.float32)
    y = rng.integers(0, CLASSES, EXAMPLES)
    batch = BATCH * TUNED_BATCH_FACTOR if wants(fixes, "larger-batches") else BATCH
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(SHUFFLE_BUFFER, seed=0)
    return ds.batch(batch)


def make_model() -> keras.Model:
    model = keras.Sequential(
        [
            keras.layers.Input((FEATURES,)),
            keras.layers.Dense(HIDDEN, activation="relu"),
            keras.layers.Dense(CLASSES),
        ]
    )
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


if __name__ == "__main__":
    main(make_dataset, make_model, style=STYLE, description=__doc__)
