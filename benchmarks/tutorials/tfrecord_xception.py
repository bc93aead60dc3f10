"""How to train a Keras model on TFRecord files: a frozen Xception (weights=None) with a small
head on melanoma-like JPEGs read from TFRecord shards (TFRecordDataset, non-deterministic order,
parse + decode_jpeg map, shuffle, prefetch, batch).

Source: keras-team/keras-io examples/keras_recipes/tfrecord.py @ 39c1ef25d453788de5f3855a18d16697f4ed0130 (https://keras.io/examples/keras_recipes/tfrecord/)
License: Apache-2.0, Copyright The Keras Authors (example by Amy MiHyun Jang)
Split: held-out
Changes:
- the download of the SIIM-ISIC melanoma TFRecords (GCS_PATH on Google Cloud Storage) replaced by
  generated shards in the same format under /tmp/pipediag-corpus/tfrecord_xception/tfrecords:
  25 train*.tfrec of 8 tf.train.Example each ("image": JPEG bytes, JFIF, quality 90, 71x71 RGB;
  "target": int64 0/1, 1 in 10 positive) and 2 test*.tfrec ("image" only), made once, reused;
- scaled: IMAGE_SIZE [71, 71] instead of [1024, 1024] (71 is the smallest input Xception takes;
  the JPEGs are written at that size so `decode_image`'s reshape is unchanged), 200 examples
  (22 shards to train, 3 to validate, the example's 90/10 split of files), BATCH_SIZE 8 instead of
  64 (22 full steps per epoch), and epochs 3 instead of 2 (the truth drops the first epoch): with a
  frozen Xception a step of 64 takes ~3 s on 2 cores, and tracing its graph ~15 s, so this is
  the least that keeps a plain run near a minute; GCS_PATH now names the local folder;
- the model is the example's own Xception base (with weights=None: no download), kept as written;
- Keras 3: `metrics` must be a list (`[tf.keras.metrics.AUC(name="auc")]`); the checkpoint
  melanoma_model.h5 is written under the data folder instead of the working directory;
- the truth's switch: `_truth.training_dataset(...)` around `train_dataset` where it is handed to
  fit, `_truth.callbacks()` in fit; inert unless PIPEDIAG_TRUTH is set;
- dropped: the plot cells (`show_batch` on a first batch of the training set, and
  `show_batch_predictions` on the test set after training);
- the data flow: TFRecordDataset(22 files) -> with_options(deterministic=False) ->
  map(read_tfrecord: parse_single_example, decode_jpeg, cast, reshape; AUTOTUNE) -> shuffle(2048)
  -> prefetch(AUTOTUNE) -> batch(8) -> fit (validation on the other 3 files);
- a hand-tuned variant (`PIPEDIAG_TUNED=1`, for the prescription's truth):
  TFRecordDataset(num_parallel_reads=AUTOTUNE), and prefetch after batch rather than before it;
  `_truth.training_dataset(tuned=...)` builds it with `get_dataset`.
"""  # noqa: E501

from __future__ import annotations

import os
from functools import partial

import _truth
import numpy as np
import tensorflow as tf

SPLIT = "held-out"
STYLE = "keras-fit"
TUNED_CHANGE = "TFRecordDataset(num_parallel_reads=AUTOTUNE); prefetch after batch"
TUNED_FIX = "parallel-interleave"

DATA_DIR = "/tmp/pipediag-corpus/tfrecord_xception"
NUM_TRAIN_FILES = 25
NUM_TEST_FILES = 2
EXAMPLES_PER_FILE = 8


def make_melanoma_tfrecords(data_dir=DATA_DIR, image_size=(71, 71), seed=0):
    """TFRecord shards like the melanoma ones: "image" (JPEG bytes) and "target" (int64)."""
    out = os.path.join(data_dir, "tfrecords")
    done = os.path.join(out, ".complete")
    if os.path.exists(done):
        return data_dir
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(seed)
    height, width = image_size
    yy, xx = np.mgrid[0:height, 0:width]

    def lesion(target):
        skin = rng.uniform(150, 230, size=3)
        cy, cx = rng.uniform(0.3, 0.7, size=2) * (height, width)
        ry, rx = rng.uniform(0.1, 0.3, size=2) * (height, width)
        inside = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1.0
        dark = rng.uniform(40, 90) if target else rng.uniform(90, 140)
        image = np.broadcast_to(skin, (height, width, 3)).copy()
        image[inside] = dark
        image += rng.normal(0, 10, size=image.shape)
        return tf.io.encode_jpeg(np.clip(image, 0, 255).astype(np.uint8), quality=90).numpy()

    def bytes_feature(value):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))

    def int64_feature(value):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))

    for prefix, count, labeled in (
        ("train", NUM_TRAIN_FILES, True),
        ("test", NUM_TEST_FILES, False),
    ):
        for shard in range(count):
            path = os.path.join(out, f"{prefix}{shard:02d}-{EXAMPLES_PER_FILE}.tfrec")
            with tf.io.TFRecordWriter(path) as writer:
                for _ in range(EXAMPLES_PER_FILE):
                    target = int(rng.random() < 0.1)
                    feature = {"image": bytes_feature(lesion(target))}
                    if labeled:
                        feature["target"] = int64_feature(target)
                    example = tf.train.Example(features=tf.train.Features(feature=feature))
                    writer.write(example.SerializeToString())
    open(done, "w").close()
    return data_dir


try:
    tpu = tf.distribute.cluster_resolver.TPUClusterResolver.connect()
    print("Device:", tpu.master())
    strategy = tf.distribute.TPUStrategy(tpu)
except:  # noqa: E722
    strategy = tf.distribute.get_strategy()
print("Number of replicas:", strategy.num_replicas_in_sync)

# We want a bigger batch size as our data is not balanced.

AUTOTUNE = tf.data.AUTOTUNE
GCS_PATH = make_melanoma_tfrecords()
BATCH_SIZE = 8
IMAGE_SIZE = [71, 71]

# ## Load the data

FILENAMES = tf.io.gfile.glob(GCS_PATH + "/tfrecords/train*.tfrec")
split_ind = int(0.9 * len(FILENAMES))
TRAINING_FILENAMES, VALID_FILENAMES = FILENAMES[:split_ind], FILENAMES[split_ind:]

TEST_FILENAMES = tf.io.gfile.glob(GCS_PATH + "/tfrecords/test*.tfrec")
print("Train TFRecord Files:", len(TRAINING_FILENAMES))
print("Validation TFRecord Files:", len(VALID_FILENAMES))
print("Test TFRecord Files:", len(TEST_FILENAMES))

# ### Decoding the data


def decode_image(image):
    image = tf.image.decode_jpeg(image, channels=3)
    image = tf.cast(image, tf.float32)
    image = tf.reshape(image, [*IMAGE_SIZE, 3])
    return image


def read_tfrecord(example, labeled):
    tfrecord_format = (
        {
            "image": tf.io.FixedLenFeature([], tf.string),
            "target": tf.io.FixedLenFeature([], tf.int64),
        }
        if labeled
        else {
            "image": tf.io.FixedLenFeature([], tf.string),
        }
    )
    example = tf.io.parse_single_example(example, tfrecord_format)
    image = decode_image(example["image"])
    if labeled:
        label = tf.cast(example["target"], tf.int32)
        return image, label
    return image


# ### Define loading methods


def load_dataset(filenames, labeled=True):
    ignore_order = tf.data.Options()
    ignore_order.experimental_deterministic = False  # disable order, increase speed
    dataset = tf.data.TFRecordDataset(
        filenames, num_parallel_reads=AUTOTUNE if _truth.TUNED else None
    )  # automatically interleaves reads from multiple files
    dataset = dataset.with_options(
        ignore_order
    )  # uses data as soon as it streams in, rather than in its original order
    dataset = dataset.map(partial(read_tfrecord, labeled=labeled), num_parallel_calls=AUTOTUNE)
    # returns a dataset of (image, label) pairs if labeled=True or just images if labeled=False
    return dataset


def get_dataset(filenames, labeled=True):
    dataset = load_dataset(filenames, labeled=labeled)
    dataset = dataset.shuffle(2048)
    if _truth.TUNED:
        return dataset.batch(BATCH_SIZE).prefetch(buffer_size=AUTOTUNE)
    dataset = dataset.prefetch(buffer_size=AUTOTUNE)
    dataset = dataset.batch(BATCH_SIZE)
    return dataset


train_dataset = get_dataset(TRAINING_FILENAMES)
valid_dataset = get_dataset(VALID_FILENAMES)
test_dataset = get_dataset(TEST_FILENAMES, labeled=False)

# ## Building our model
#
# ### Define callbacks

initial_learning_rate = 0.01
lr_schedule = tf.keras.optimizers.schedules.ExponentialDecay(
    initial_learning_rate, decay_steps=20, decay_rate=0.96, staircase=True
)

checkpoint_cb = tf.keras.callbacks.ModelCheckpoint(
    os.path.join(DATA_DIR, "melanoma_model.h5"), save_best_only=True
)

early_stopping_cb = tf.keras.callbacks.EarlyStopping(patience=10, restore_best_weights=True)

# ### Build our base model


def make_model():
    base_model = tf.keras.applications.Xception(
        input_shape=(*IMAGE_SIZE, 3), include_top=False, weights=None
    )

    base_model.trainable = False

    inputs = tf.keras.layers.Input([*IMAGE_SIZE, 3])
    x = tf.keras.applications.xception.preprocess_input(inputs)
    x = base_model(x)
    x = tf.keras.layers.GlobalAveragePooling2D()(x)
    x = tf.keras.layers.Dense(8, activation="relu")(x)
    x = tf.keras.layers.Dropout(0.7)(x)
    outputs = tf.keras.layers.Dense(1, activation="sigmoid")(x)

    model = tf.keras.Model(inputs=inputs, outputs=outputs)

    model.compile(
        optimizer=tf.keras.optimizers.Adam(learning_rate=lr_schedule),
        loss="binary_crossentropy",
        metrics=[tf.keras.metrics.AUC(name="auc")],
    )

    return model


# ## Train the model

with strategy.scope():
    model = make_model()

epochs = 3
train_dataset = _truth.training_dataset(
    train_dataset, epochs=epochs, tuned=lambda: get_dataset(TRAINING_FILENAMES)
)
history = model.fit(
    train_dataset,
    epochs=epochs,
    validation_data=valid_dataset,
    callbacks=[checkpoint_cb, early_stopping_cb, *_truth.callbacks()],
)
