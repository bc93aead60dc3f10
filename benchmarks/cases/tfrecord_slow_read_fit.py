"""Slow file reading (Keras fit): TFRecord shards read one after another from slow storage.

Intended bottleneck: input. The data lives in 16 small TFRecord shards, read through
`interleave(..., cycle_length=1)`, i.e. one shard at a time, and parsed record by record.
Local disk is never slow on a benchmark machine (the page cache holds the shards), so the
latency of remote storage (GCS, NFS) is simulated with tf.data's own `SleepDataset`: a fixed
delay per record, in the reader, not in Python. Sequential reading pays every delay in turn.

Hand-tuned (`--tuned`): read 4 shards in parallel (`cycle_length=4`,
`num_parallel_calls=AUTOTUNE`; the default cycle length did not run in parallel on 2 cores:
docs/design.md, "tf.data behaviours"), parse whole batches with `parse_example`, prefetch.
`--fix parallel-interleave` applies only the parallel read (what PD002 says).

    python benchmarks/cases/tfrecord_slow_read_fit.py --epochs 2 [--tuned]
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf
from _case import FIT, main, wants
from tensorflow.python.data.experimental.ops import testing

BOTTLENECK = "slow file reading: sequential TFRecord shards with storage latency"
INTENDED = "input-bound"
STYLE = FIT
EXPECTED_SUGGESTION = "PD002"
FIXES = {"PD002": "parallel-interleave"}

SHARDS = 16
RECORDS_PER_SHARD = 128
FEATURES = 64
BATCH = 32
CLASSES = 10
# Simulated storage latency per record: 32 records per batch make ~13 ms per batch when
# read sequentially, several times the model's step.
RECORD_LATENCY_US = 400
PARALLEL_SHARDS = 4

FEATURE_SPEC = {
    "x": tf.io.FixedLenFeature([FEATURES], tf.float32),
    "y": tf.io.FixedLenFeature([], tf.int64),
}


def write_shards() -> list[str]:
    """Write the shards once per machine (a temp folder named by their content)."""
    key = hashlib.sha1(f"{SHARDS}-{RECORDS_PER_SHARD}-{FEATURES}".encode()).hexdigest()[:8]
    folder = Path(tempfile.gettempdir()) / f"pipediag-bench-tfrecords-{key}"
    paths = [folder / f"shard-{i:03d}.tfrecord" for i in range(SHARDS)]
    if all(p.is_file() for p in paths):
        return [str(p) for p in paths]
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for path in paths:
        tmp = path.with_suffix(".partial")
        with tf.io.TFRecordWriter(str(tmp)) as writer:
            for _ in range(RECORDS_PER_SHARD):
                features = {
                    "x": tf.train.Feature(
                        float_list=tf.train.FloatList(value=rng.normal(size=FEATURES))
                    ),
                    "y": tf.train.Feature(
                        int64_list=tf.train.Int64List(value=[int(rng.integers(CLASSES))])
                    ),
                }
                example = tf.train.Example(features=tf.train.Features(feature=features))
                writer.write(example.SerializeToString())
        tmp.replace(path)
    return [str(p) for p in paths]


def read_shard(path: tf.Tensor) -> tf.data.Dataset:
    return tf.data.TFRecordDataset(path).apply(testing.sleep(RECORD_LATENCY_US))


def parse_one(record: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    parsed = tf.io.parse_single_example(record, FEATURE_SPEC)
    return parsed["x"], parsed["y"]


def parse_batch(records: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    parsed = tf.io.parse_example(records, FEATURE_SPEC)
    return parsed["x"], parsed["y"]


def make_dataset(fixes: frozenset[str] = frozenset()) -> tf.data.Dataset:
    files = tf.data.Dataset.from_tensor_slices(write_shards())
    if wants(fixes, "parallel-interleave"):
        records = files.interleave(
            read_shard, cycle_length=PARALLEL_SHARDS, num_parallel_calls=tf.data.AUTOTUNE
        )
    else:
        records = files.interleave(read_shard, cycle_length=1)
    if wants(fixes, "tuned"):
        ds = records.batch(BATCH).map(parse_batch, num_parallel_calls=tf.data.AUTOTUNE)
        return ds.prefetch(tf.data.AUTOTUNE)
    return records.map(parse_one).batch(BATCH)


def make_model() -> keras.Model:
    model = keras.Sequential(
        [
            keras.layers.Input((FEATURES,)),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(CLASSES),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


if __name__ == "__main__":
    main(make_dataset, make_model, style=STYLE, description=__doc__)
