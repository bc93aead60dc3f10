"""Load and preprocess images (tf.data for finer control): a small CNN on flower JPEGs via tf.data.

Source: tensorflow/docs site/en/tutorials/load_data/images.ipynb @ 7c3650212740204359d4ceae481abc79345541be (https://www.tensorflow.org/tutorials/load_data/images)
License: Apache-2.0, Copyright 2020 The TensorFlow Authors
Split: tune
Changes:
- the download of flower_photos.tgz (3,670 JPEGs in 5 class folders) replaced by 400 generated
  JPEGs (PIL, quality 90) of random smooth noise with grain and a class tint, 200-500 px a side,
  in the same folder layout (daisy/ dandelion/ roses/ sunflowers/ tulips/) under
  /tmp/pipediag-corpus/load_images_tfdata/flower_photos (made once by `_data.make_flower_photos`, then reused);
- scaled: 400 images instead of 3,670 and batch_size 16 instead of 32 (320 images to train:
  20 steps per epoch) so that a plain run fits 60 s on 2 cores (a step of 32 at 180x180 costs
  ~1.2 CPU-s here); halving the batch rather than the image keeps the tutorial's balance of
  JPEG decoding to model compute per image; img_height/img_width 180 and 3 epochs as in the
  tutorial;
- the notebook's "Using tf.data for finer control" part alone: it continues training the model
  built and compiled in the first part, so that model (the same cells) is built and compiled
  here from scratch before fit; the first part's image_dataset_from_directory datasets and the
  TFDS part are not here (see load_images_keras.py);
- the truth's switch: `_truth.training_dataset(...)` around the training dataset, `_truth.callbacks()`
  in fit; inert unless PIPEDIAG_TRUTH is set;
- the cells that only show images or print file names, shapes and cardinalities are dropped;
- the data flow: list_files -> shuffle(image_count, no reshuffle) -> skip/take split ->
  map(process_path: read_file, decode_jpeg, resize to 180x180, num_parallel_calls=AUTOTUNE) ->
  cache -> shuffle(1000) -> batch(16) -> prefetch(AUTOTUNE) -> fit, Rescaling inside the model.
"""  # noqa: E501

from __future__ import annotations

import os
import pathlib

import _truth
import numpy as np
import tensorflow as tf
from _data import make_flower_photos

SPLIT = "tune"
STYLE = "keras-fit"

CLASS_NAMES = ["daisy", "dandelion", "roses", "sunflowers", "tulips"]
IMAGE_COUNT = 400
DATA_ROOT = pathlib.Path("/tmp/pipediag-corpus/load_images_tfdata")


data_dir = make_flower_photos(DATA_ROOT, IMAGE_COUNT)

image_count = len(list(data_dir.glob("*/*.jpg")))
print(image_count)

batch_size = 16  # the tutorial's 32, halved to fit the 60 s budget
img_height = 180
img_width = 180

AUTOTUNE = tf.data.AUTOTUNE

# The first part's model, which this part continues to train.
num_classes = 5

model = tf.keras.Sequential(
    [
        tf.keras.layers.Rescaling(1.0 / 255),
        tf.keras.layers.Conv2D(32, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Conv2D(32, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Conv2D(32, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dense(num_classes),
    ]
)

model.compile(
    optimizer="adam",
    loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
)

# Using tf.data for finer control
list_ds = tf.data.Dataset.list_files(str(data_dir / "*/*"), shuffle=False)
list_ds = list_ds.shuffle(image_count, reshuffle_each_iteration=False)

class_names = np.array(
    sorted([item.name for item in data_dir.glob("*") if item.name != "LICENSE.txt"])
)
print(class_names)

val_size = int(image_count * 0.2)
train_ds = list_ds.skip(val_size)
val_ds = list_ds.take(val_size)


def get_label(file_path):
    # Convert the path to a list of path components
    parts = tf.strings.split(file_path, os.path.sep)
    # The second to last is the class-directory
    one_hot = parts[-2] == class_names
    # Integer encode the label
    return tf.argmax(one_hot)


def decode_img(img):
    # Convert the compressed string to a 3D uint8 tensor
    img = tf.io.decode_jpeg(img, channels=3)
    # Resize the image to the desired size
    return tf.image.resize(img, [img_height, img_width])


def process_path(file_path):
    label = get_label(file_path)
    # Load the raw data from the file as a string
    img = tf.io.read_file(file_path)
    img = decode_img(img)
    return img, label


# Set `num_parallel_calls` so multiple images are loaded/processed in parallel.
train_ds = train_ds.map(process_path, num_parallel_calls=AUTOTUNE)
val_ds = val_ds.map(process_path, num_parallel_calls=AUTOTUNE)


def configure_for_performance(ds):
    ds = ds.cache()
    ds = ds.shuffle(buffer_size=1000)
    ds = ds.batch(batch_size)
    ds = ds.prefetch(buffer_size=AUTOTUNE)
    return ds


train_ds = configure_for_performance(train_ds)
val_ds = configure_for_performance(val_ds)

epochs = 3
train_ds = _truth.training_dataset(train_ds, epochs=epochs)
model.fit(train_ds, validation_data=val_ds, epochs=epochs, callbacks=[*_truth.callbacks()])
