"""Text classification from scratch: a 1-D convnet on review .txt folders, vectorised in tf.data.

Source: keras-team/keras-io examples/nlp/text_classification_from_scratch.py
    @ 01ae2db402523e96f804c6fc3b0a59582e6a671e
    (https://keras.io/examples/nlp/text_classification_from_scratch/)
License: Apache-2.0, Copyright the keras-io authors (example by Mark Omernick, Francois Chollet)
Split: tune
Changes:
- the download of aclImdb_v1 replaced by 1,600 generated reviews (100-300 words of a
  20,000-word vocabulary with `<br />` tags and punctuation; the label shifts word use), written
  as aclImdb/train/{pos,neg}/<id>_<rating>.txt; no test folder and no `unsup` folder;
- scaled: 1,600 reviews instead of 25,000 (40 training steps of 32 per epoch; the example's 3
  epochs kept), so that a plain run takes ~40 s on 2 cores; `--epochs` sets the epochs;
- the truth's switch: `_truth.training_dataset(...)` around the training dataset,
  `_truth.callbacks()` in fit; inert unless PIPEDIAG_TRUTH is set;
- the sample preview, the test set (its dataset and `evaluate`) and the end-to-end export
  model dropped; `fit` prints one line per epoch (verbose=2).
"""

from __future__ import annotations

import argparse
import os
import re
import string

os.environ["KERAS_BACKEND"] = "tensorflow"

import _truth
import keras
import numpy as np
import tensorflow as tf
from keras import layers

SPLIT = "tune"
STYLE = "keras-fit"

DATA_DIR = "/tmp/pipediag-corpus/text_from_scratch"
REVIEWS = 1_600
VOCABULARY = 20_000


def generate_reviews(dataset_dir, n=REVIEWS, seed=1337):
    """aclImdb/train/{pos,neg}/<id>_<rating>.txt, made once and reused (replaces the download)."""
    train_dir = os.path.join(dataset_dir, "train")
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
parser.add_argument("--epochs", type=int, default=3)
args = parser.parse_args()

"""
## Load the data: IMDB movie review sentiment classification
"""

# The download replaced by generated reviews in the same folder layout.
dataset_dir = os.path.join(DATA_DIR, "aclImdb")
generate_reviews(dataset_dir)

batch_size = 32
train_dir = os.path.join(dataset_dir, "train")

raw_train_ds = keras.utils.text_dataset_from_directory(
    train_dir,
    batch_size=batch_size,
    validation_split=0.2,
    subset="training",
    seed=1337,
    class_names=["pos", "neg"],
)
raw_val_ds = keras.utils.text_dataset_from_directory(
    train_dir,
    batch_size=batch_size,
    validation_split=0.2,
    subset="validation",
    seed=1337,
    class_names=["pos", "neg"],
)

print(f"Number of batches in raw_train_ds: {raw_train_ds.cardinality()}")
print(f"Number of batches in raw_val_ds: {raw_val_ds.cardinality()}")

"""
## Prepare the data

In particular, we remove `<br />` tags.
"""


# Having looked at our data above, we see that the raw text contains HTML break
# tags of the form '<br />'. These tags will not be removed by the default
# standardizer (which doesn't strip HTML). Because of this, we will need to
# create a custom standardization function.
def custom_standardization(input_data):
    lowercase = tf.strings.lower(input_data)
    stripped_html = tf.strings.regex_replace(lowercase, "<br />", " ")
    return tf.strings.regex_replace(stripped_html, f"[{re.escape(string.punctuation)}]", "")


# Model constants.
max_features = 20000
embedding_dim = 128
sequence_length = 500

# Now that we have our custom standardization, we can instantiate our text
# vectorization layer. We are using this layer to normalize, split, and map
# strings to integers, so we set our 'output_mode' to 'int'.
# Note that we're using the default split function,
# and the custom standardization defined above.
# We also set an explicit maximum sequence length, since the CNNs later in our
# model won't support ragged sequences.
vectorize_layer = keras.layers.TextVectorization(
    standardize=custom_standardization,
    max_tokens=max_features,
    output_mode="int",
    output_sequence_length=sequence_length,
)

# Now that the vectorize_layer has been created, call `adapt` on a text-only
# dataset to create the vocabulary. You don't have to batch, but for very large
# datasets this means you're not keeping spare copies of the dataset in memory.

# Let's make a text-only dataset (no labels):
text_ds = raw_train_ds.map(lambda x, y: x)
# Let's call `adapt`:
vectorize_layer.adapt(text_ds)

"""
## Two options to vectorize the data: option 2, apply it to the text dataset
"""


def vectorize_text(text, label):
    text = tf.expand_dims(text, -1)
    return vectorize_layer(text), label


# Vectorize the data.
train_ds = raw_train_ds.map(vectorize_text)
val_ds = raw_val_ds.map(vectorize_text)

# Do async prefetching / buffering of the data for best performance on GPU.
train_ds = train_ds.cache().prefetch(buffer_size=10)
val_ds = val_ds.cache().prefetch(buffer_size=10)

"""
## Build a model

We choose a simple 1D convnet starting with an `Embedding` layer.
"""

# A integer input for vocab indices.
inputs = keras.Input(shape=(None,), dtype="int64")

# Next, we add a layer to map those vocab indices into a space of dimensionality
# 'embedding_dim'.
x = layers.Embedding(max_features, embedding_dim)(inputs)
x = layers.Dropout(0.5)(x)

# Conv1D + global max pooling
x = layers.Conv1D(128, 7, padding="valid", activation="relu", strides=3)(x)
x = layers.Conv1D(128, 7, padding="valid", activation="relu", strides=3)(x)
x = layers.GlobalMaxPooling1D()(x)

# We add a vanilla hidden layer:
x = layers.Dense(128, activation="relu")(x)
x = layers.Dropout(0.5)(x)

# We project onto a single unit output layer, and squash it with a sigmoid:
predictions = layers.Dense(1, activation="sigmoid", name="predictions")(x)

model = keras.Model(inputs, predictions)

# Compile the model with binary crossentropy loss and an adam optimizer.
model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])

"""
## Train the model
"""

epochs = args.epochs

# Fit the model using the train and test datasets.
train_ds = _truth.training_dataset(train_ds, epochs=epochs)
model.fit(
    train_ds,
    validation_data=val_ds,
    epochs=epochs,
    verbose=2,
    callbacks=[*_truth.callbacks()],
)
