"""Basic text classification: an Embedding model on review .txt folders, vectorised in tf.data.

Source: tensorflow/docs site/en/tutorials/keras/text_classification.ipynb
    @ 7c3650212740204359d4ceae481abc79345541be
    (https://www.tensorflow.org/tutorials/keras/text_classification)
License: Apache-2.0, Copyright 2019 The TensorFlow Authors (the notebook also carries the MIT
    License, Copyright (c) 2017 François Chollet)
Split: tune
Changes:
- the download of aclImdb_v1 replaced by 4,000 generated reviews (100-300 words of a
  20,000-word vocabulary with `<br />` tags and punctuation; the label shifts word use), written
  as aclImdb/train/{pos,neg}/<id>_<rating>.txt; no test folder and no `unsup` folder;
- scaled: 4,000 reviews instead of 25,000 (100 training steps of 32 per epoch; the tutorial's
  10 epochs kept), so that a plain run takes ~30 s on 2 cores; `--epochs` sets the epochs;
- the truth's switch: `_truth.training_dataset(...)` around the training dataset,
  `_truth.callbacks()` in fit; inert unless PIPEDIAG_TRUTH is set;
- cells that only display (samples, vocabulary), plot, evaluate on the test set or export the
  model dropped; `fit` prints one line per epoch (verbose=2).
"""

from __future__ import annotations

import argparse
import os
import re
import string

import _truth
import numpy as np
import tensorflow as tf
from tensorflow.keras import layers, losses

SPLIT = "tune"
STYLE = "keras-fit"

DATA_DIR = "/tmp/pipediag-corpus/text_classification"
REVIEWS = 4_000
VOCABULARY = 20_000


def generate_reviews(dataset_dir, n=REVIEWS, seed=42):
    """aclImdb/train/{pos,neg}/<id>_<rating>.txt, made once and reused (replaces the download)."""
    train_dir = os.path.join(dataset_dir, "aclImdb", "train")
    done = os.path.join(dataset_dir, ".complete")
    if os.path.exists(done):
        return
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(VOCABULARY)])
    punctuation = np.array([",", ".", "!", "?", ";", ""])
    for name in ("neg", "pos"):
        os.makedirs(os.path.join(train_dir, name), exist_ok=True)
    labels = rng.integers(0, 2, n)
    for i, label in enumerate(labels):
        length = int(rng.integers(100, 300))
        ranks = rng.zipf(1.3, length) % VOCABULARY
        ranks = np.where(rng.random(length) < 0.05, ranks + 1 + int(label), ranks) % VOCABULARY
        marks = rng.choice(punctuation, length, p=[0.05] * 5 + [0.75])
        tokens = [
            word.capitalize() + mark if k % 17 == 0 else word + mark
            for k, (word, mark) in enumerate(zip(words[ranks], marks, strict=True))
        ]
        sentences = [" ".join(tokens[k : k + 40]) for k in range(0, length, 40)]
        rating = int(rng.integers(7, 11)) if label else int(rng.integers(1, 5))
        name = "pos" if label else "neg"
        with open(os.path.join(train_dir, name, f"{i}_{rating}.txt"), "w") as f:
            f.write("<br /><br />".join(sentences))
    with open(done, "w") as f:
        f.write("ok\n")


parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=10)
args = parser.parse_args()

print(tf.__version__)

generate_reviews(DATA_DIR)
dataset_dir = DATA_DIR

train_dir = os.path.join(dataset_dir, "aclImdb", "train")

batch_size = 32
seed = 42

raw_train_ds = tf.keras.utils.text_dataset_from_directory(
    train_dir, batch_size=batch_size, validation_split=0.2, subset="training", seed=seed
)

print("Label 0 corresponds to", raw_train_ds.class_names[0])
print("Label 1 corresponds to", raw_train_ds.class_names[1])

raw_val_ds = tf.keras.utils.text_dataset_from_directory(
    train_dir, batch_size=batch_size, validation_split=0.2, subset="validation", seed=seed
)


def custom_standardization(input_data):
    lowercase = tf.strings.lower(input_data)
    stripped_html = tf.strings.regex_replace(lowercase, "<br />", " ")
    return tf.strings.regex_replace(stripped_html, f"[{re.escape(string.punctuation)}]", "")


max_features = 10000
sequence_length = 250

vectorize_layer = layers.TextVectorization(
    standardize=custom_standardization,
    max_tokens=max_features,
    output_mode="int",
    output_sequence_length=sequence_length,
)

# Make a text-only dataset (without labels), then call adapt
train_text = raw_train_ds.map(lambda x, y: x)
vectorize_layer.adapt(train_text)


def vectorize_text(text, label):
    text = tf.expand_dims(text, -1)
    return vectorize_layer(text), label


print(f"Vocabulary size: {len(vectorize_layer.get_vocabulary())}")

train_ds = raw_train_ds.map(vectorize_text)
val_ds = raw_val_ds.map(vectorize_text)

AUTOTUNE = tf.data.AUTOTUNE

train_ds = train_ds.cache().prefetch(buffer_size=AUTOTUNE)
val_ds = val_ds.cache().prefetch(buffer_size=AUTOTUNE)

embedding_dim = 16

model = tf.keras.Sequential(
    [
        layers.Embedding(max_features, embedding_dim),
        layers.Dropout(0.2),
        layers.GlobalAveragePooling1D(),
        layers.Dropout(0.2),
        layers.Dense(1, activation="sigmoid"),
    ]
)

model.summary()

model.compile(
    loss=losses.BinaryCrossentropy(),
    optimizer="adam",
    metrics=[tf.metrics.BinaryAccuracy(threshold=0.5)],
)

epochs = args.epochs
train_ds = _truth.training_dataset(train_ds, epochs=epochs)
history = model.fit(
    train_ds,
    validation_data=val_ds,
    epochs=epochs,
    verbose=2,
    callbacks=[*_truth.callbacks()],
)
