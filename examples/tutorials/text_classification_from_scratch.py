"""The keras-io "Text classification from scratch" example, run on review text made here.

As the example does: a `TextVectorization` layer adapted on the raw text (a pass over the
data before training), then either the text vectorised in the dataset (`--variant
dataset`, the example's choice for CPU training) or the layer inside the model (`--variant
model`), a 1-D convnet over 500 tokens, and `model.fit` with validation. The IMDB download
is replaced by generated reviews (no network here); `--cached` trains on one cached batch
instead (the train step alone).

    pipediag run examples/tutorials/text_classification_from_scratch.py --variant model
"""

from __future__ import annotations

import argparse

import keras
import tensorflow as tf
from keras import layers
from text_classification_basic import custom_standardization, reviews

MAX_FEATURES = 20_000
EMBEDDING_DIM = 128
SEQUENCE_LENGTH = 500
REVIEWS = 4_000
BATCH = 32


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--variant", choices=("dataset", "model"), default="dataset")
    parser.add_argument("--cached", action="store_true", help="train on one cached batch")
    args = parser.parse_args()

    texts, labels = reviews(REVIEWS, seed=1337)
    split = REVIEWS * 4 // 5
    raw_train_ds = tf.data.Dataset.from_tensor_slices((texts[:split], labels[:split])).batch(BATCH)
    raw_val_ds = tf.data.Dataset.from_tensor_slices((texts[split:], labels[split:])).batch(BATCH)

    vectorize_layer = layers.TextVectorization(
        standardize=custom_standardization,
        max_tokens=MAX_FEATURES,
        output_mode="int",
        output_sequence_length=SEQUENCE_LENGTH,
    )
    text_ds = raw_train_ds.map(lambda x, y: x)
    vectorize_layer.adapt(text_ds)
    print("Vocabulary size:", len(vectorize_layer.get_vocabulary()), flush=True)

    if args.variant == "dataset":

        def vectorize_text(text: tf.Tensor, label: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            return vectorize_layer(tf.expand_dims(text, -1)), label

        train_ds = raw_train_ds.map(vectorize_text).cache().prefetch(buffer_size=10)
        val_ds = raw_val_ds.map(vectorize_text).cache().prefetch(buffer_size=10)
        inputs = keras.Input(shape=(None,), dtype="int64")
        x = inputs
    else:
        train_ds = raw_train_ds.map(lambda x, y: (tf.expand_dims(x, -1), y)).prefetch(10)
        val_ds = raw_val_ds.map(lambda x, y: (tf.expand_dims(x, -1), y)).prefetch(10)
        inputs = keras.Input(shape=(1,), dtype="string")
        x = vectorize_layer(inputs)
    if args.cached:
        train_ds = train_ds.take(1).cache().repeat(split // BATCH)

    x = layers.Embedding(MAX_FEATURES, EMBEDDING_DIM)(x)
    x = layers.Dropout(0.5)(x)
    x = layers.Conv1D(128, 7, padding="valid", activation="relu", strides=3)(x)
    x = layers.Conv1D(128, 7, padding="valid", activation="relu", strides=3)(x)
    x = layers.GlobalMaxPooling1D()(x)
    x = layers.Dense(128, activation="relu")(x)
    x = layers.Dropout(0.5)(x)
    predictions = layers.Dense(1, activation="sigmoid", name="predictions")(x)
    model = keras.Model(inputs, predictions)
    model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
    model.fit(train_ds, validation_data=val_ds, epochs=args.epochs, verbose=2)


if __name__ == "__main__":
    main()
