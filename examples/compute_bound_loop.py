"""A compute-bound custom training loop: cached, prefetched data and a heavier model.

python examples/compute_bound_loop.py --epochs 2
pipediag run examples/compute_bound_loop.py --epochs 2
"""

import argparse

import keras
import numpy as np
import tensorflow as tf

FEATURES = 256
NUM_CLASSES = 10


def make_dataset(num_examples: int, batch_size: int) -> tf.data.Dataset:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(num_examples, FEATURES)).astype(np.float32)
    y = rng.integers(0, NUM_CLASSES, size=num_examples)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).cache()
    ds = ds.shuffle(2048, seed=0).batch(batch_size)
    return ds.prefetch(tf.data.AUTOTUNE)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--examples", type=int, default=8192)
    parser.add_argument("--width", type=int, default=2048)
    args = parser.parse_args()

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.layers.Input((FEATURES,))]
        + [keras.layers.Dense(args.width, activation="relu") for _ in range(3)]
        + [keras.layers.Dense(NUM_CLASSES)]
    )
    optimizer = keras.optimizers.Adam(1e-3)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    dataset = make_dataset(args.examples, args.batch_size)
    for epoch in range(args.epochs):
        total, steps = 0.0, 0
        for x, y in dataset:
            total += float(train_step(x, y))
            steps += 1
        print(f"epoch {epoch + 1}: loss {total / steps:.4f}")


if __name__ == "__main__":
    main()
