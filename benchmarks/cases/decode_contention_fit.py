"""Decode map under contention (Keras fit): TFRecord images decoded one by one, on one core,
beside a small CNN whose step uses both cores.

Intended bottleneck: input. Raw uint8 images stored in TFRecord shards are parsed and
decoded record by record (`parse_single_example`, `decode_raw`, scale, resize from
64x64 to 32x32) by a map
that runs sequentially: the script's options turn tf.data's `map_parallelization` off, as
a script does that pins its threads. The CNN's convolutions take both cores, so the decode
thread competes with the step for CPU: the input's cost to training is its own time plus
what it takes from the step.

Hand-written fixes: `--fix parallel-map` (`num_parallel_calls=AUTOTUNE`: what PD001 says),
`--fix cache` (cache after the decode, which is deterministic, in whole batches: right
after the batch that follows it, as PD005 and pipediag's rewrite write it),
`--fix vectorize` (batch the records first and decode whole batches with `parse_example`:
what PD004 says), `--fix prefetch-end` (a final prefetch). Hand-tuned (`--tuned`): the
vectorised decode in parallel, cached, prefetched.

    python benchmarks/cases/decode_contention_fit.py --epochs 2 [--tuned]
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf
from _case import FIT, main, wants

BOTTLENECK = "sequential decode map of TFRecord images beside a CNN that uses both cores"
INTENDED = "input-bound"
STYLE = FIT
EXPECTED_SUGGESTION = "PD001"
FIXES = {"PD001": "parallel-map", "PD005": "cache", "PD004": "vectorize", "PD003": "prefetch-end"}

SHARDS = 4
RECORDS_PER_SHARD = 512
STORED = 64
IMAGE = 32
CHANNELS = 3
BATCH = 32
CLASSES = 10

FEATURE_SPEC = {
    "image": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}


def write_shards() -> list[str]:
    """Write the shards once per machine (a temp folder named by their content)."""
    key = hashlib.sha1(f"{SHARDS}-{RECORDS_PER_SHARD}-{STORED}-{CHANNELS}".encode()).hexdigest()
    folder = Path(tempfile.gettempdir()) / f"pipediag-bench-decode-{key[:8]}"
    paths = [folder / f"shard-{i:03d}.tfrecord" for i in range(SHARDS)]
    if all(p.is_file() for p in paths):
        return [str(p) for p in paths]
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for path in paths:
        tmp = path.with_suffix(".partial")
        with tf.io.TFRecordWriter(str(tmp)) as writer:
            for _ in range(RECORDS_PER_SHARD):
                image = rng.integers(0, 256, size=(STORED, STORED, CHANNELS), dtype=np.uint8)
                features = {
                    "image": tf.train.Feature(
                        bytes_list=tf.train.BytesList(value=[image.tobytes()])
                    ),
                    "label": tf.train.Feature(
                        int64_list=tf.train.Int64List(value=[int(rng.integers(CLASSES))])
                    ),
                }
                example = tf.train.Example(features=tf.train.Features(feature=features))
                writer.write(example.SerializeToString())
        tmp.replace(path)
    return [str(p) for p in paths]


def _decoded(parsed: dict[str, tf.Tensor]) -> tuple[tf.Tensor, tf.Tensor]:
    pixels = tf.io.decode_raw(parsed["image"], tf.uint8)
    shape = tf.concat([tf.shape(parsed["label"]), [STORED, STORED, CHANNELS]], axis=0)
    image = tf.cast(tf.reshape(pixels, shape), tf.float32) / 255.0
    return tf.image.resize(image, [IMAGE, IMAGE]), parsed["label"]


def decode_one(record: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    return _decoded(tf.io.parse_single_example(record, FEATURE_SPEC))


def decode_batch(records: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    return _decoded(tf.io.parse_example(records, FEATURE_SPEC))


def make_dataset(fixes: frozenset[str] = frozenset()) -> tf.data.Dataset:
    records = tf.data.TFRecordDataset(write_shards())
    parallel = tf.data.AUTOTUNE if wants(fixes, "parallel-map") else None
    if wants(fixes, "vectorize"):
        ds = records.batch(BATCH).map(decode_batch, num_parallel_calls=parallel)
        if wants(fixes, "cache"):
            ds = ds.cache()
    else:
        ds = records.map(decode_one, num_parallel_calls=parallel).batch(BATCH)
        if wants(fixes, "cache"):
            ds = ds.cache()
    if wants(fixes, "prefetch-end"):
        ds = ds.prefetch(tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.experimental_optimization.map_parallelization = False
    return ds.with_options(options)


def make_model() -> keras.Model:
    model = keras.Sequential(
        [
            keras.layers.Input((IMAGE, IMAGE, CHANNELS)),
            keras.layers.Conv2D(8, 3, strides=2, activation="relu"),
            keras.layers.Conv2D(16, 3, strides=2, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(CLASSES),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


if __name__ == "__main__":
    main(make_dataset, make_model, style=STYLE, description=__doc__)
