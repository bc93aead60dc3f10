"""Data augmentation: Keras preprocessing layers mapped over a flowers dataset, then a small CNN.

Source: tensorflow/docs site/en/tutorials/images/data_augmentation.ipynb @ 7c3650212740204359d4ceae481abc79345541be (https://www.tensorflow.org/tutorials/images/data_augmentation)
License: Apache-2.0, Copyright 2020 The TensorFlow Authors
Split: tune
Changes:
- the download of tf_flowers through TFDS (`tfds.load(..., as_supervised=True)`: decoded uint8
  images of varied sizes with int64 labels) replaced by 400 generated images in the same format:
  random smooth noise with grain and a class tint, 200-500 px a side, made once with NumPy/PIL
  and kept in /tmp/pipediag-corpus/data_augmentation/tf_flowers.npz, then served from memory by
  `tf.data.Dataset.from_generator` (one decoded image and label per element) with
  `assert_cardinality` (TFDS datasets know their size); the same splits 'train[:80%]',
  'train[80%:90%]', 'train[90%:]'; `num_classes` is 5 (the TFDS metadata's value);
- scaled: 400 images instead of 3,670 and batch_size 16 instead of 32 (320 images to train:
  20 steps per epoch), 3 epochs instead of 5, so that a plain run fits 60 s on 2 cores (a step
  of 32 at 180x180 costs ~1.2 CPU-s here); IMG_SIZE 180 as in the tutorial;
- the truth's switch: `_truth.training_dataset(...)` around the training dataset, `_truth.callbacks()`
  in fit; inert unless PIPEDIAG_TRUTH is set;
- only "Option 2: apply the preprocessing layers to your dataset" and the model trained on it;
  the cells that only show images, the Option 1 model sketch, the evaluation on the test set
  after training, the custom augmentation layers and the tf.image section are dropped;
- the data flow: generator of uint8 images -> map(resize_and_rescale, AUTOTUNE) ->
  shuffle(1000) -> batch(16) -> map(data_augmentation: RandomFlip, RandomRotation; AUTOTUNE) ->
  prefetch(AUTOTUNE) -> fit;
- a hand-tuned variant (`PIPEDIAG_TUNED=1`, for the prescription's truth): cache() after the
  deterministic resize and rescale, before the shuffle; the decoded training split is kept
  (`raw_train_ds`) so that `_truth.training_dataset(tuned=...)` can build that variant too.
"""  # noqa: E501

from __future__ import annotations

import pathlib

import _truth
import numpy as np
import PIL
import PIL.Image
import tensorflow as tf
from tensorflow.keras import layers

SPLIT = "tune"
STYLE = "keras-fit"
TUNED_CHANGE = "cache() after the deterministic resize and rescale, before the shuffle"
TUNED_FIX = "cache"

IMAGE_COUNT = 400
NUM_CLASSES = 5
DATA_ROOT = pathlib.Path("/tmp/pipediag-corpus/data_augmentation")


def make_tf_flowers(root, count=IMAGE_COUNT, seed=0):
    """`count` uint8 images of 200-500 px a side and int labels, like tf_flowers once decoded:
    smooth noise plus grain, tinted by class. Kept as one flat array with the shapes."""
    path = root / "tf_flowers.npz"
    if not path.exists():
        rng = np.random.default_rng(seed)
        tints = rng.uniform(-60, 60, size=(NUM_CLASSES, 3))
        labels = rng.integers(0, NUM_CLASSES, size=count)
        images, shapes = [], []
        for label in labels:
            height, width = (int(v) for v in rng.integers(200, 501, size=2))
            coarse = rng.uniform(0, 255, size=(8, 8, 3)) + tints[label]
            coarse = PIL.Image.fromarray(np.clip(coarse, 0, 255).astype(np.uint8))
            smooth = np.asarray(coarse.resize((width, height), PIL.Image.BICUBIC), np.float32)
            grain = rng.normal(0, 12, size=smooth.shape)
            images.append(np.clip(smooth + grain, 0, 255).astype(np.uint8).ravel())
            shapes.append((height, width, 3))
        root.mkdir(parents=True, exist_ok=True)
        partial = root / "tf_flowers.partial.npz"
        np.savez(partial, pixels=np.concatenate(images), shapes=np.array(shapes), labels=labels)
        partial.rename(path)
    with np.load(path) as data:
        pixels, shapes, labels = data["pixels"], data["shapes"], data["labels"]
    ends = np.cumsum([int(np.prod(shape)) for shape in shapes])
    images = [
        pixels[end - int(np.prod(shape)) : end].reshape(shape)
        for shape, end in zip(shapes, ends, strict=True)
    ]
    return images, labels.astype(np.int64)


def load_tf_flowers(split):
    """Stands in for tfds.load('tf_flowers', split=split, as_supervised=True): (image, label)
    pairs, uint8 images of varied sizes, int64 labels."""
    images, labels = make_tf_flowers(DATA_ROOT)
    datasets = []
    for name in split:
        low, high = name[len("train[") : -len("]")].split(":")  # e.g. "80%", "90%"
        begin = len(images) * int(low.rstrip("%")) // 100 if low else 0
        end = len(images) * int(high.rstrip("%")) // 100 if high else len(images)

        def generate(begin=begin, end=end):
            yield from zip(images[begin:end], labels[begin:end], strict=True)

        ds = tf.data.Dataset.from_generator(
            generate,
            output_signature=(
                tf.TensorSpec(shape=(None, None, 3), dtype=tf.uint8),
                tf.TensorSpec(shape=(), dtype=tf.int64),
            ),
        )
        datasets.append(ds.apply(tf.data.experimental.assert_cardinality(end - begin)))
    return datasets


(train_ds, val_ds, test_ds) = load_tf_flowers(
    split=["train[:80%]", "train[80%:90%]", "train[90%:]"],
)

num_classes = NUM_CLASSES
print(num_classes)

IMG_SIZE = 180

resize_and_rescale = tf.keras.Sequential(
    [
        layers.Resizing(IMG_SIZE, IMG_SIZE),
        layers.Rescaling(1.0 / 255),
    ]
)

data_augmentation = tf.keras.Sequential(
    [
        layers.RandomFlip("horizontal_and_vertical"),
        layers.RandomRotation(0.2),
    ]
)

batch_size = 16  # the tutorial's 32, halved to fit the 60 s budget
AUTOTUNE = tf.data.AUTOTUNE


def prepare(ds, shuffle=False, augment=False):
    # Resize and rescale all datasets.
    ds = ds.map(lambda x, y: (resize_and_rescale(x), y), num_parallel_calls=AUTOTUNE)
    if _truth.TUNED:
        ds = ds.cache()

    if shuffle:
        ds = ds.shuffle(1000)

    # Batch all datasets.
    ds = ds.batch(batch_size)

    # Use data augmentation only on the training set.
    if augment:
        ds = ds.map(
            lambda x, y: (data_augmentation(x, training=True), y), num_parallel_calls=AUTOTUNE
        )

    # Use buffered prefetching on all datasets.
    return ds.prefetch(buffer_size=AUTOTUNE)


raw_train_ds = train_ds
train_ds = prepare(train_ds, shuffle=True, augment=True)
val_ds = prepare(val_ds)
test_ds = prepare(test_ds)

model = tf.keras.Sequential(
    [
        layers.Conv2D(16, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(64, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(),
        layers.Flatten(),
        layers.Dense(128, activation="relu"),
        layers.Dense(num_classes),
    ]
)

model.compile(
    optimizer="adam",
    loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
)

epochs = 3  # the tutorial's 5, cut to fit the 60 s budget
train_ds = _truth.training_dataset(
    train_ds, epochs=epochs, tuned=lambda: prepare(raw_train_ds, shuffle=True, augment=True)
)
history = model.fit(
    train_ds, validation_data=val_ds, epochs=epochs, callbacks=[*_truth.callbacks()]
)
