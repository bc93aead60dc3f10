"""An input-bound Keras training job: a Python-side image "decode" in a per-element map.

The map calls NumPy through `tf.numpy_function`, as code that wraps PIL, OpenCV or a custom
decoder does. tf.data cannot parallelise it on its own (it is stateful to tf.data), so one
core decodes while the small model waits.

    python examples/input_bound_fit.py --epochs 2
    pipediag run examples/input_bound_fit.py --epochs 2
"""

import argparse

import keras
import numpy as np
import tensorflow as tf

IMAGE_SIZE = 32
NUM_CLASSES = 10


def decode_and_augment(raw: np.ndarray) -> np.ndarray:
    """Stand-in for a JPEG decode plus augmentation: a few passes of a box blur."""
    image = raw.astype(np.float32).reshape(IMAGE_SIZE, IMAGE_SIZE, 3) / 255.0
    for _ in range(12):
        image = (image + np.roll(image, 1, axis=0) + np.roll(image, 1, axis=1)) / 3.0
    return image


def to_example(raw, label):
    image = tf.numpy_function(decode_and_augment, [raw], tf.float32)
    image.set_shape((IMAGE_SIZE, IMAGE_SIZE, 3))
    return image, label


def make_dataset(num_examples: int, batch_size: int) -> tf.data.Dataset:
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 256, size=(num_examples, IMAGE_SIZE * IMAGE_SIZE * 3), dtype=np.uint8)
    labels = rng.integers(0, NUM_CLASSES, size=num_examples)
    ds = tf.data.Dataset.from_tensor_slices((raw, labels))
    ds = ds.shuffle(1024, seed=0)
    ds = ds.map(to_example)
    ds = ds.batch(batch_size)
    return ds.prefetch(tf.data.AUTOTUNE)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--examples", type=int, default=8192)
    args = parser.parse_args()

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.layers.Input((IMAGE_SIZE, IMAGE_SIZE, 3)),
            keras.layers.Conv2D(8, 3, strides=2, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(NUM_CLASSES),
        ]
    )
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    model.fit(make_dataset(args.examples, args.batch_size), epochs=args.epochs, verbose=2)


if __name__ == "__main__":
    main()
