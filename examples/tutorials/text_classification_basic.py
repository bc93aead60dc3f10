"""The TF-docs "Basic text classification" tutorial, run on review text made here.

As the tutorial does: a `TextVectorization` layer adapted on the raw training text
(`vectorize_layer.adapt(train_text)`: a pass over the data before training), the text
vectorised in the dataset, then `cache().prefetch()`, an Embedding and pooling model,
and `model.fit`. The IMDB download is replaced by generated reviews of the same shape
(no network here); `--cached` trains on one cached batch instead (the train step alone).

    pipediag run examples/tutorials/text_classification_basic.py
"""

from __future__ import annotations

import argparse

import keras
import numpy as np
import tensorflow as tf

MAX_FEATURES = 10_000
SEQUENCE_LENGTH = 250
EMBEDDING_DIM = 16
REVIEWS = 8_000
BATCH = 32


def reviews(n: int, seed: int) -> tuple[list[str], np.ndarray]:
    """Reviews of 100-300 words from a 20,000-word vocabulary; the label shifts word use."""
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(20_000)])
    labels = rng.integers(0, 2, n)
    texts = []
    for label in labels:
        length = int(rng.integers(100, 300))
        ranks = rng.zipf(1.3, length) % 20_000
        ranks = np.where(rng.random(length) < 0.05, ranks + 1 + int(label), ranks) % 20_000
        texts.append("<br /> " + " ".join(words[ranks]))
    return texts, labels.astype("float32")


def custom_standardization(input_data: tf.Tensor) -> tf.Tensor:
    """Lower case, line breaks and punctuation out, as the tutorial does."""
    lowercase = tf.strings.lower(input_data)
    stripped_html = tf.strings.regex_replace(lowercase, "<br />", " ")
    return tf.strings.regex_replace(stripped_html, "[!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~]", "")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--cached", action="store_true", help="train on one cached batch")
    args = parser.parse_args()

    texts, labels = reviews(REVIEWS, seed=42)
    raw_train_ds = tf.data.Dataset.from_tensor_slices((texts, labels)).batch(BATCH)

    vectorize_layer = keras.layers.TextVectorization(
        standardize=custom_standardization,
        max_tokens=MAX_FEATURES,
        output_mode="int",
        output_sequence_length=SEQUENCE_LENGTH,
    )
    train_text = raw_train_ds.map(lambda x, y: x)
    vectorize_layer.adapt(train_text)
    print("Vocabulary size:", len(vectorize_layer.get_vocabulary()), flush=True)

    def vectorize_text(text: tf.Tensor, label: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return vectorize_layer(tf.expand_dims(text, -1)), label

    train_ds = raw_train_ds.map(vectorize_text)
    train_ds = train_ds.cache().prefetch(buffer_size=tf.data.AUTOTUNE)
    if args.cached:
        train_ds = train_ds.take(1).cache().repeat(REVIEWS // BATCH)

    model = keras.Sequential(
        [
            keras.layers.Embedding(MAX_FEATURES, EMBEDDING_DIM),
            keras.layers.Dropout(0.2),
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.Dropout(0.2),
            keras.layers.Dense(1, activation="sigmoid"),
        ]
    )
    model.compile(
        loss=keras.losses.BinaryCrossentropy(),
        optimizer="adam",
        metrics=[keras.metrics.BinaryAccuracy(threshold=0.5)],
    )
    model.fit(train_ds, epochs=args.epochs, verbose=2)


if __name__ == "__main__":
    main()
