"""SimCLR (TF2) pretraining: two augmented views a CIFAR image, a contrastive loss, and a
MirroredStrategy loop of several steps per tf.function call.

Source: google-research/simclr tf2/run.py, tf2/data.py, tf2/data_util.py, tf2/objective.py
    @ 1e7f15dbe0395326914107c8a0266c2e6cc776ac
    (https://github.com/google-research/simclr/tree/master/tf2)
License: Apache-2.0, Copyright 2020 The SimCLR Authors
Split: held-out
Changes: the training loop's structure kept, its code written here, not copied:
- the loop as run.py runs it: `strategy = tf.distribute.MirroredStrategy()`, the dataset
  built by an `input_fn` handed to `strategy.distribute_datasets_from_function`, one
  iterator, and `train_multiple_steps(iterator)`, a `tf.function` whose
  `for _ in tf.range(steps_per_loop)` pulls `next(iterator)` and runs
  `strategy.run(single_step, ...)`, called until `optimizer.iterations` reaches the
  training steps;
- `tfds.builder('cifar10')` replaced by generated 32x32x3 uint8 images (a few coloured
  blobs on a noisy background, 10 classes), 1,024 of them instead of 50,000, read as
  `from_tensor_slices((image, label))` with data.py's order: shuffle, repeat, map
  (`preprocess_for_train` twice, the two views concatenated on channels), batch with
  `drop_remainder=True`, prefetch;
- the augmentation of data_util.py, for CIFAR: a random crop of 8-100% of the area with an
  aspect ratio of 3/4 to 4/3, resized back to 32x32, a random left-right flip, colour
  jitter (brightness, contrast, saturation, hue at strength 0.5) with probability 0.8 and
  grayscale with probability 0.2;
- the model scaled down: a 3-stage residual convnet (8, 16, 32 channels) instead of
  ResNet-50, with SimCLR's 2-layer projection head and its NT-Xent loss (temperature 0.5,
  normalised hidden vectors, one replica); SGD with momentum instead of LARS; batch 32,
  `steps_per_loop` 4, 5 epochs of 32 steps;
- dropped: checkpoints, summaries, the linear evaluation head, evaluation;
- the truth's switch: `_truth.training_dataset(...)` on the dataset in `input_fn`, and each
  call stamped (`_truth.begin_epoch()` every epoch's first call, `_truth.steps_done(n)` after
  each); inert unless PIPEDIAG_TRUTH is set.
"""

from __future__ import annotations

import argparse

import _truth
import numpy as np
import tensorflow as tf

SPLIT = "held-out"
STYLE = "custom-loop"

IMAGES = 1_024
BATCH = 32
STEPS_PER_LOOP = 4
TEMPERATURE = 0.5


def cifar_like(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """32x32x3 uint8 images of a few coloured blobs each, and their classes."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, IMAGES)
    palette = rng.uniform(0, 255, size=(10, 3))
    rows, cols = np.mgrid[0:32, 0:32]
    images = rng.normal(90, 25, size=(IMAGES, 32, 32, 3))
    for n, label in enumerate(labels):
        for _ in range(3):
            r, c, radius = rng.uniform(6, 26), rng.uniform(6, 26), rng.uniform(3, 8)
            blob = (rows - r) ** 2 + (cols - c) ** 2 < radius**2
            images[n][blob] = palette[label] + rng.normal(0, 20, size=3)
    return np.clip(images, 0, 255).astype(np.uint8), labels.astype(np.int64)


def random_crop_resize(image: tf.Tensor) -> tf.Tensor:
    begin, size, _ = tf.image.sample_distorted_bounding_box(
        tf.shape(image),
        bounding_boxes=tf.constant([0.0, 0.0, 1.0, 1.0], shape=[1, 1, 4]),
        min_object_covered=0.1,
        aspect_ratio_range=(3 / 4, 4 / 3),
        area_range=(0.08, 1.0),
        max_attempts=100,
    )
    crop = tf.slice(image, begin, size)
    return tf.image.resize(crop, [32, 32], method="bicubic")


def color_jitter(image: tf.Tensor, strength: float = 0.5) -> tf.Tensor:
    image = tf.image.random_brightness(image, max_delta=0.8 * strength)
    image = tf.image.random_contrast(image, 1 - 0.8 * strength, 1 + 0.8 * strength)
    image = tf.image.random_saturation(image, 1 - 0.8 * strength, 1 + 0.8 * strength)
    image = tf.image.random_hue(image, max_delta=0.2 * strength)
    return tf.clip_by_value(image, 0.0, 1.0)


def random_apply(transform, p: float, image: tf.Tensor) -> tf.Tensor:
    return tf.cond(tf.random.uniform([]) < p, lambda: transform(image), lambda: image)


def to_grayscale(image: tf.Tensor) -> tf.Tensor:
    return tf.tile(tf.image.rgb_to_grayscale(image), [1, 1, 3])


def preprocess_for_train(image: tf.Tensor) -> tf.Tensor:
    image = tf.image.convert_image_dtype(image, tf.float32)
    image = random_crop_resize(image)
    image = tf.image.random_flip_left_right(image)
    image = random_apply(color_jitter, 0.8, image)
    image = random_apply(to_grayscale, 0.2, image)
    return tf.clip_by_value(tf.reshape(image, [32, 32, 3]), 0.0, 1.0)


def residual_block(x, filters, stride):
    shortcut = x
    if stride != 1 or x.shape[-1] != filters:
        shortcut = tf.keras.layers.Conv2D(filters, 1, strides=stride, use_bias=False)(x)
    x = tf.keras.layers.Conv2D(filters, 3, strides=stride, padding="same", use_bias=False)(x)
    x = tf.keras.layers.BatchNormalization()(x)
    x = tf.keras.layers.ReLU()(x)
    x = tf.keras.layers.Conv2D(filters, 3, padding="same", use_bias=False)(x)
    x = tf.keras.layers.BatchNormalization()(x)
    return tf.keras.layers.ReLU()(x + shortcut)


def simclr_model() -> tf.keras.Model:
    """A small residual encoder and SimCLR's projection head (two dense layers)."""
    inputs = tf.keras.Input((32, 32, 3))
    x = tf.keras.layers.Conv2D(8, 3, padding="same", use_bias=False)(inputs)
    x = tf.keras.layers.ReLU()(tf.keras.layers.BatchNormalization()(x))
    for filters, stride in ((8, 1), (16, 2), (32, 2)):
        x = residual_block(x, filters, stride)
    hidden = tf.keras.layers.GlobalAveragePooling2D()(x)
    x = tf.keras.layers.Dense(64, activation="relu")(hidden)
    projection = tf.keras.layers.Dense(64)(x)
    return tf.keras.Model(inputs, projection)


def contrastive_loss(hidden: tf.Tensor) -> tf.Tensor:
    """NT-Xent over the two views of each image (one replica: no cross-replica gather)."""
    hidden = tf.math.l2_normalize(hidden, -1)
    hidden1, hidden2 = tf.split(hidden, 2, 0)
    batch = tf.shape(hidden1)[0]
    labels = tf.one_hot(tf.range(batch), batch * 2)
    masks = tf.one_hot(tf.range(batch), batch)
    large = 1e9
    logits_aa = tf.matmul(hidden1, hidden1, transpose_b=True) / TEMPERATURE - masks * large
    logits_bb = tf.matmul(hidden2, hidden2, transpose_b=True) / TEMPERATURE - masks * large
    logits_ab = tf.matmul(hidden1, hidden2, transpose_b=True) / TEMPERATURE
    logits_ba = tf.matmul(hidden2, hidden1, transpose_b=True) / TEMPERATURE
    loss_a = tf.nn.softmax_cross_entropy_with_logits(labels, tf.concat([logits_ab, logits_aa], 1))
    loss_b = tf.nn.softmax_cross_entropy_with_logits(labels, tf.concat([logits_ba, logits_bb], 1))
    return tf.reduce_mean(loss_a + loss_b)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    images, labels = cifar_like()
    epoch_steps = IMAGES // BATCH
    train_steps = args.epochs * epoch_steps

    strategy = tf.distribute.MirroredStrategy()

    def input_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        batch = context.get_per_replica_batch_size(BATCH)
        ds = tf.data.Dataset.from_tensor_slices((images, labels))
        ds = ds.shuffle(IMAGES).repeat()
        ds = ds.map(
            lambda image, label: (
                tf.concat([preprocess_for_train(image), preprocess_for_train(image)], -1),
                label,
            ),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
        ds = ds.batch(batch, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
        return _truth.training_dataset(
            ds, epochs=args.epochs, steps_per_epoch=epoch_steps, steps_per_call=STEPS_PER_LOOP
        )

    with strategy.scope():
        model = simclr_model()
        optimizer = tf.keras.optimizers.SGD(0.1, momentum=0.9)
        loss_metric = tf.keras.metrics.Mean("train/contrast_loss")
    ds = strategy.distribute_datasets_from_function(input_fn)

    def single_step(features: tf.Tensor) -> None:
        with tf.GradientTape() as tape:
            views = tf.concat(tf.split(features, 2, -1), 0)
            loss = contrastive_loss(model(views, training=True))
            loss_metric.update_state(loss)
            loss = loss / strategy.num_replicas_in_sync
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))

    with strategy.scope():

        @tf.function
        def train_multiple_steps(iterator):
            for _ in tf.range(STEPS_PER_LOOP):
                images, _ = next(iterator)
                strategy.run(single_step, (images,))

    global_step = optimizer.iterations
    iterator = iter(ds)
    cur_step = int(global_step.numpy())
    while cur_step < train_steps:
        if cur_step % epoch_steps == 0:
            _truth.begin_epoch()
        train_multiple_steps(iterator)
        cur_step = int(global_step.numpy())
        _truth.steps_done(STEPS_PER_LOOP)
        if cur_step % epoch_steps == 0:
            print(f"step {cur_step}/{train_steps}: loss {loss_metric.result().numpy():.3f}")
            loss_metric.reset_state()


if __name__ == "__main__":
    main()
