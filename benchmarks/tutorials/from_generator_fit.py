"""tf.data: Build TensorFlow input pipelines, "Consuming Python generators": Keras'
ImageDataGenerator.flow_from_directory over flower JPEG folders wrapped by
tf.data.Dataset.from_generator, feeding the small CNN of the load_images tutorial in fit.

Source: tensorflow/docs site/en/guide/data.ipynb @ eb1a63871415df766002b9ef2ada097f421d1bf9 (https://www.tensorflow.org/guide/data#consuming_python_generators)
  and, for the model (the guide trains none here), tensorflow/docs
  site/en/tutorials/load_data/images.ipynb @ a68c452e3da63207a8648d704b9c2d4e901fd9b0 (https://www.tensorflow.org/tutorials/load_data/images)
License: Apache-2.0, Copyright 2018 The TensorFlow Authors (data guide), 2020 The TensorFlow Authors (images tutorial)
Split: held-out
Changes:
- the download of flower_photos.tgz (3,670 JPEGs in 5 class folders) replaced by 640 generated
  JPEGs (PIL, quality 90, 180-300 px a side, a class tint over smooth noise) in the same layout
  (daisy/ dandelion/ roses/ sunflowers/ tulips/) under
  /tmp/pipediag-corpus/from_generator_fit/flower_photos, made once, then reused;
- `tf.keras.preprocessing.image.ImageDataGenerator(rescale=1./255, rotation_range=20)` and
  `flow_from_directory` are kept as the guide writes them (Keras 3 still serves them through
  tf.keras); the guide's output_types/output_shapes are kept too;
- scaled: flow_from_directory's target_size (128, 128) instead of its default (256, 256), and
  output_shapes ([32, 128, 128, 3], [32, 5]) to match: at 256 one step of the CNN takes ~1 s on
  2 cores; 640 images, a multiple of 32 since the guide's output_shapes fix the batch at 32
  (a short last batch would fail); flow_from_directory loops forever, so fit gets
  steps_per_epoch = 640 // 32 = 20, and epochs = 3 (the load_images tutorial's);
- the model: the guide trains nothing here, so the small CNN of the load_images tutorial, with
  two changes for this generator's output: no Rescaling(1./255) layer (the generator already
  rescales) and CategoricalCrossentropy(from_logits=True) instead of the sparse one
  (flow_from_directory yields one-hot labels);
- the truth's switch: `_truth.training_dataset(..., steps_per_epoch=...)` around `ds` where it is
  handed to fit, `_truth.callbacks()` in fit; inert unless PIPEDIAG_TRUTH is set;
- dropped: the loop that only prints the shapes of `ds.take(1)`;
- the data flow: class folders of JPEGs -> flow_from_directory (PIL load + resize to 128x128,
  random rotation up to 20 degrees with scipy, rescale, shuffled batches of 32, one-hot labels;
  all in Python) -> Dataset.from_generator -> fit, no prefetch;
- a hand-tuned variant (`PIPEDIAG_TUNED=1`, for the prescription's truth): the generator
  replaced by TF ops (image_dataset_from_directory, the rescale and a RandomRotation in a
  parallel map, prefetch), built in `tuned_dataset()` so that
  `_truth.training_dataset(tuned=...)` can build it too.
"""  # noqa: E501

from __future__ import annotations

import os

import _truth
import numpy as np
import PIL.Image
import tensorflow as tf

SPLIT = "held-out"
STYLE = "keras-fit"
TUNED_CHANGE = (
    "the generator replaced by TF ops: image_dataset_from_directory, the rescale and "
    "RandomRotation in a parallel map, prefetch"
)
TUNED_FIX = "port-to-tf-ops"

DATA_DIR = "/tmp/pipediag-corpus/from_generator_fit"
CLASS_NAMES = ["daisy", "dandelion", "roses", "sunflowers", "tulips"]
IMAGE_COUNT = 640


def make_flower_photos(data_dir=DATA_DIR, count=IMAGE_COUNT, seed=0):
    """`count` JPEGs in 5 class folders, like flower_photos: smooth noise, 180-300 px a side."""
    root = os.path.join(data_dir, "flower_photos")
    done = os.path.join(root, ".complete")
    if os.path.exists(done):
        return root
    rng = np.random.default_rng(seed)
    tints = rng.uniform(-60, 60, size=(len(CLASS_NAMES), 3))
    for i in range(count):
        label = i % len(CLASS_NAMES)
        height, width = (int(v) for v in rng.integers(180, 301, size=2))
        coarse = rng.uniform(0, 255, size=(8, 8, 3)) + tints[label]
        coarse = PIL.Image.fromarray(np.clip(coarse, 0, 255).astype(np.uint8))
        smooth = np.asarray(coarse.resize((width, height), PIL.Image.BICUBIC), dtype=np.float32)
        pixels = np.clip(smooth + rng.normal(0, 12, size=smooth.shape), 0, 255).astype(np.uint8)
        class_dir = os.path.join(root, CLASS_NAMES[label])
        os.makedirs(class_dir, exist_ok=True)
        PIL.Image.fromarray(pixels).save(os.path.join(class_dir, f"{i:05d}.jpg"), quality=90)
    open(done, "w").close()
    return root


# For a more realistic example, try wrapping `preprocessing.image.ImageDataGenerator` as a
# `tf.data.Dataset`.
#
# First download the data:

flowers = make_flower_photos()

# Create the `image.ImageDataGenerator`

img_gen = tf.keras.preprocessing.image.ImageDataGenerator(rescale=1.0 / 255, rotation_range=20)

images, labels = next(img_gen.flow_from_directory(flowers, target_size=(128, 128)))

print(images.dtype, images.shape)
print(labels.dtype, labels.shape)

ds = tf.data.Dataset.from_generator(
    lambda: img_gen.flow_from_directory(flowers, target_size=(128, 128)),
    output_types=(tf.float32, tf.float32),
    output_shapes=([32, 128, 128, 3], [32, 5]),
)


def tuned_dataset():
    rotate = tf.keras.layers.RandomRotation(20 / 360)  # the generator's 20 degrees
    tuned = tf.keras.utils.image_dataset_from_directory(
        flowers, image_size=(128, 128), batch_size=32, label_mode="categorical"
    )
    tuned = tuned.map(
        lambda x, y: (rotate(x / 255.0, training=True), y), num_parallel_calls=tf.data.AUTOTUNE
    )
    return tuned.repeat().prefetch(tf.data.AUTOTUNE)  # endless, as flow_from_directory is


if _truth.TUNED:
    ds = tuned_dataset()

print(ds.element_spec)

# The model: the small CNN of the "Load and preprocess images" tutorial.

num_classes = 5

model = tf.keras.Sequential(
    [
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
    loss=tf.keras.losses.CategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
)

epochs = 3
steps_per_epoch = IMAGE_COUNT // 32
ds = _truth.training_dataset(
    ds, epochs=epochs, steps_per_epoch=steps_per_epoch, tuned=tuned_dataset
)
model.fit(
    ds,
    epochs=epochs,
    steps_per_epoch=steps_per_epoch,
    callbacks=[*_truth.callbacks()],
)
