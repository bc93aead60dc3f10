"""A training script whose every batch costs a known delay: the input wait is known exactly.

Used by `input_wait_accuracy.py`. Each batch passes through tf.data's `SleepDataset`
(`--delay-ms`, a C++ sleep, so no Python or CPU time is added), and the pipeline has no
prefetch (autotune and prefetch injection off), so the train step waits the full delay for
every batch: the true input wait is the delay, plus tf.data's own per-batch cost (tens of
microseconds, reported as the bias at the smallest delay).

    python benchmarks/injected_delay.py --style fit --delay-ms 10 --epochs 2
"""

from __future__ import annotations

import argparse

import keras
import tensorflow as tf
from tensorflow.python.data.experimental.ops import testing

FEATURES = 32
BATCH = 16
BATCHES_PER_EPOCH = 100


def make_dataset(delay_ms: float) -> tf.data.Dataset:
    ds = tf.data.Dataset.range(BATCH * BATCHES_PER_EPOCH)
    ds = ds.map(lambda i: (tf.fill([FEATURES], tf.cast(i % 7, tf.float32)), tf.zeros([1])))
    ds = ds.batch(BATCH).apply(testing.sleep(int(delay_ms * 1000)))
    options = tf.data.Options()
    options.autotune.enabled = False
    options.experimental_optimization.inject_prefetch = False
    return ds.with_options(options)


def make_model() -> keras.Model:
    model = keras.Sequential([keras.layers.Input((FEATURES,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description="training with a known per-batch delay")
    parser.add_argument("--style", choices=("fit", "loop"), default="fit")
    parser.add_argument("--delay-ms", type=float, default=10.0)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    model = make_model()
    dataset = make_dataset(args.delay_ms)
    if args.style == "fit":
        model.fit(dataset, epochs=args.epochs, verbose=0)
        return

    @tf.function
    def train_step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        model.optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    for _ in range(args.epochs):
        for x, y in dataset:
            train_step(x, y)


if __name__ == "__main__":
    main()
