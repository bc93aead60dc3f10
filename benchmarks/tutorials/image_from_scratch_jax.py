"""Image classification from scratch, on the JAX backend: a small Xception-like convnet trained on
Cats-vs-Dogs-like JPEG folders read by image_dataset_from_directory, augmented in a tf.data map.

Source: keras-team/keras-io examples/vision/image_classification_from_scratch.py @ 0e918412690b44285f82f699ce19d919fb14cee2 (https://keras.io/examples/vision/image_classification_from_scratch/)
License: Apache-2.0, Copyright The Keras Authors (example by fchollet)
Split: held-out
Changes:
- KERAS_BACKEND=jax is set at the very top, before keras is imported
  (`os.environ.setdefault("KERAS_BACKEND", "jax")`): the model trains in JAX (jit_compile=True as
  in the example), the input pipeline stays tf.data, the augmentation layers run as TF ops in it;
- the download of kagglecatsanddogs_5340.zip (PetImages/Cat, PetImages/Dog, ~25,000 JPEGs)
  replaced by 800 generated JFIF JPEGs (PIL, quality 90, 48-96 px a side, a faint class tint
  over smooth noise) in the same layout under /tmp/pipediag-corpus/image_from_scratch_jax/PetImages,
  made once, then reused; the example's JFIF filter still runs on them (all pass, 0 deleted);
- scaled: 800 images instead of ~23,400 (640 to train: 20 steps of 32 per epoch), image_size
  (24, 24) instead of (180, 180), batch_size 32 instead of 128, epochs 3 instead of 25: on JAX's
  CPU backend this model is slow (its SeparableConv2D layers are grouped convolutions in XLA:CPU):
  one step of 128 at 40x40 took ~17 s here, one of 32 at 24x24 ~0.7 s, and XLA compiles the train
  and eval steps for ~30 s; the model itself is unchanged;
- `data_augmentation` is the list of the same two layers applied by a function instead of a
  `keras.Sequential`, as the example's later Keras 3 revision writes it: on the JAX backend a
  Sequential called inside `Dataset.map` runs JAX ops on symbolic tf.Tensors and fails, while
  the preprocessing layers called one by one switch to TF ops there;
- checkpoints (save_at_{epoch}.keras) are written under the data folder, not the working one;
- the truth's switch: `_truth.training_dataset(...)` around `train_ds` where it is handed to fit,
  `_truth.callbacks()` in fit; inert unless PIPEDIAG_TRUTH is set;
- dropped: the plot cells (first 9 images, augmented samples), `keras.utils.plot_model`, and
  inference on a new image after training;
- the data flow: class folders of JPEGs -> image_dataset_from_directory (decode, resize to 24x24,
  shuffle, batches of 32; 80/20 split) -> map(data_augmentation: RandomFlip, RandomRotation;
  AUTOTUNE) -> prefetch(AUTOTUNE) -> fit (Option 2 of the example: augmentation on the CPU in
  the dataset).
"""  # noqa: E501

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import _truth  # noqa: E402
import numpy as np  # noqa: E402
import PIL.Image  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow import keras  # noqa: E402
from tensorflow.keras import layers  # noqa: E402

SPLIT = "held-out"
STYLE = "keras-fit"

DATA_DIR = "/tmp/pipediag-corpus/image_from_scratch_jax"
IMAGE_COUNT = 800


def make_pet_images(data_dir=DATA_DIR, count=IMAGE_COUNT, seed=0):
    """PetImages/Cat and PetImages/Dog with `count` JFIF JPEGs in all, 48-96 px a side."""
    root = os.path.join(data_dir, "PetImages")
    done = os.path.join(root, ".complete")
    if os.path.exists(done):
        return root
    rng = np.random.default_rng(seed)
    tints = {"Cat": np.array([12.0, 0.0, -12.0]), "Dog": np.array([-12.0, 0.0, 12.0])}
    for i in range(count):
        folder_name = ("Cat", "Dog")[i % 2]
        height, width = (int(v) for v in rng.integers(48, 97, size=2))
        coarse = rng.uniform(40, 215, size=(6, 6, 3)) + tints[folder_name]
        coarse = PIL.Image.fromarray(np.clip(coarse, 0, 255).astype(np.uint8))
        smooth = np.asarray(coarse.resize((width, height), PIL.Image.BICUBIC), dtype=np.float32)
        pixels = np.clip(smooth + rng.normal(0, 20, size=smooth.shape), 0, 255).astype(np.uint8)
        os.makedirs(os.path.join(root, folder_name), exist_ok=True)
        PIL.Image.fromarray(pixels).save(os.path.join(root, folder_name, f"{i}.jpg"), quality=90)
    open(done, "w").close()
    return root


PET_IMAGES = make_pet_images()

# ### Filter out corrupted images
#
# When working with lots of real-world image data, corrupted images are a common
# occurence. Let's filter out badly-encoded images that do not feature the string "JFIF"
# in their header.

num_skipped = 0
for folder_name in ("Cat", "Dog"):
    folder_path = os.path.join(PET_IMAGES, folder_name)
    for fname in os.listdir(folder_path):
        fpath = os.path.join(folder_path, fname)
        try:
            fobj = open(fpath, "rb")  # noqa: SIM115
            is_jfif = tf.compat.as_bytes("JFIF") in fobj.peek(10)
        finally:
            fobj.close()

        if not is_jfif:
            num_skipped += 1
            # Delete corrupted image
            os.remove(fpath)

print("Deleted %d images" % num_skipped)  # noqa: UP031

# ## Generate a `Dataset`

image_size = (24, 24)
batch_size = 32

train_ds, val_ds = tf.keras.preprocessing.image_dataset_from_directory(
    PET_IMAGES,
    validation_split=0.2,
    subset="both",
    seed=1337,
    image_size=image_size,
    batch_size=batch_size,
)

# ## Using image data augmentation

data_augmentation_layers = [
    layers.RandomFlip("horizontal"),
    layers.RandomRotation(0.1),
]


def data_augmentation(images):
    for layer in data_augmentation_layers:
        images = layer(images)
    return images


# ## Configure the dataset for performance

train_ds = train_ds.prefetch(buffer_size=32)
val_ds = val_ds.prefetch(buffer_size=32)

# ## Build a model


def make_model(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)

    # Entry block
    x = layers.Rescaling(1.0 / 255)(inputs)
    x = layers.Conv2D(32, 3, strides=2, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)

    x = layers.Conv2D(64, 3, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)

    previous_block_activation = x  # Set aside residual

    for size in [128, 256, 512, 728]:
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)

        # Project residual
        residual = layers.Conv2D(size, 1, strides=2, padding="same")(previous_block_activation)
        x = layers.add([x, residual])  # Add back residual
        previous_block_activation = x  # Set aside next residual

    x = layers.SeparableConv2D(1024, 3, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)

    x = layers.GlobalAveragePooling2D()(x)
    if num_classes == 2:
        activation = "sigmoid"
        units = 1
    else:
        activation = "softmax"
        units = num_classes

    x = layers.Dropout(0.5)(x)
    outputs = layers.Dense(units, activation=activation)(x)
    return keras.Model(inputs, outputs)


model = make_model(input_shape=image_size + (3,), num_classes=2)

# And let's apply data augmentation to our training dataset:

# Apply `data_augmentation` to the training images.
train_ds = train_ds.map(
    lambda img, label: (data_augmentation(img), label),
    num_parallel_calls=tf.data.AUTOTUNE,
)
# Prefetching samples in GPU memory helps maximize GPU utilization.
train_ds = train_ds.prefetch(tf.data.AUTOTUNE)

# ## Train the model

epochs = 3

callbacks = [
    keras.callbacks.ModelCheckpoint(os.path.join(DATA_DIR, "save_at_{epoch}.keras")),
]
model.compile(
    optimizer=keras.optimizers.Adam(1e-3),
    loss="binary_crossentropy",
    metrics=["accuracy"],
    jit_compile=True,  # Enable XLA compilation for faster execution
)
train_ds = _truth.training_dataset(train_ds, epochs=epochs)
model.fit(
    train_ds,
    epochs=epochs,
    callbacks=[*callbacks, *_truth.callbacks()],
    validation_data=val_ds,
)
