"""Image classification: a CNN with in-model data augmentation and dropout on flower JPEGs.

Source: tensorflow/docs site/en/tutorials/images/classification.ipynb @ 7c3650212740204359d4ceae481abc79345541be (https://www.tensorflow.org/tutorials/images/classification)
License: Apache-2.0, Copyright 2018 The TensorFlow Authors
Split: tune
Changes:
- the download of flower_photos.tgz (3,670 JPEGs in 5 class folders) replaced by 400 generated
  JPEGs (PIL, quality 90) of random smooth noise with grain and a class tint, 200-500 px a side,
  in the same folder layout (daisy/ dandelion/ roses/ sunflowers/ tulips/) under
  /tmp/pipediag-corpus/image_classification/flower_photos (made once by `_data.make_flower_photos`, then reused);
- scaled: 400 images instead of 3,670 and batch_size 16 instead of 32 (320 images to train:
  20 steps per epoch), 3 epochs instead of 15, so that a plain run fits 60 s on 2 cores (a step
  of 32 at 180x180 costs ~1.2 CPU-s here); halving the batch rather than the image keeps the
  tutorial's balance of JPEG decoding to model compute per image; img_height/img_width 180 as
  in the tutorial;
- only the notebook's final model (data_augmentation layers inside the model, Dropout) is
  trained: the first, basic model's 10-epoch fit is dropped;
- the truth's switch: `_truth.training_dataset(...)` around the training dataset, `_truth.callbacks()`
  in fit; inert unless PIPEDIAG_TRUTH is set;
- the cells that only show images, print shapes, demonstrate `Dataset.map` with the
  normalization layer, summarize, plot, predict on a new image or convert to TensorFlow Lite
  are dropped;
- the data flow: class folders of JPEGs -> image_dataset_from_directory (decode, resize to
  180x180, batches of 16) -> cache().shuffle(1000).prefetch(AUTOTUNE) -> fit; RandomFlip,
  RandomRotation, RandomZoom and Rescaling run inside the model.
"""  # noqa: E501

from __future__ import annotations

import pathlib

import _truth
import tensorflow as tf
from _data import make_flower_photos
from tensorflow import keras
from tensorflow.keras import layers
from tensorflow.keras.models import Sequential

SPLIT = "tune"
STYLE = "keras-fit"

CLASS_NAMES = ["daisy", "dandelion", "roses", "sunflowers", "tulips"]
IMAGE_COUNT = 400
DATA_ROOT = pathlib.Path("/tmp/pipediag-corpus/image_classification")


data_dir = make_flower_photos(DATA_ROOT, IMAGE_COUNT)

image_count = len(list(data_dir.glob("*/*.jpg")))
print(image_count)

batch_size = 16  # the tutorial's 32, halved to fit the 60 s budget
img_height = 180
img_width = 180

train_ds = tf.keras.utils.image_dataset_from_directory(
    data_dir,
    validation_split=0.2,
    subset="training",
    seed=123,
    image_size=(img_height, img_width),
    batch_size=batch_size,
)

val_ds = tf.keras.utils.image_dataset_from_directory(
    data_dir,
    validation_split=0.2,
    subset="validation",
    seed=123,
    image_size=(img_height, img_width),
    batch_size=batch_size,
)

class_names = train_ds.class_names
print(class_names)

AUTOTUNE = tf.data.AUTOTUNE

train_ds = train_ds.cache().shuffle(1000).prefetch(buffer_size=AUTOTUNE)
val_ds = val_ds.cache().prefetch(buffer_size=AUTOTUNE)

num_classes = len(class_names)

data_augmentation = keras.Sequential(
    [
        layers.RandomFlip("horizontal", input_shape=(img_height, img_width, 3)),
        layers.RandomRotation(0.1),
        layers.RandomZoom(0.1),
    ]
)

model = Sequential(
    [
        data_augmentation,
        layers.Rescaling(1.0 / 255),
        layers.Conv2D(16, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(64, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(),
        layers.Dropout(0.2),
        layers.Flatten(),
        layers.Dense(128, activation="relu"),
        layers.Dense(num_classes, name="outputs"),
    ]
)

model.compile(
    optimizer="adam",
    loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
)

epochs = 3  # the tutorial's 15, cut to fit the 60 s budget
train_ds = _truth.training_dataset(train_ds, epochs=epochs)
history = model.fit(
    train_ds, validation_data=val_ds, epochs=epochs, callbacks=[*_truth.callbacks()]
)
