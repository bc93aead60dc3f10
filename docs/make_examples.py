"""Regenerate the example report images in docs/: `python docs/make_examples.py`.

They are drawn from synthetic reports (`pipediag.testing.synthetic_report`), so no TensorFlow
or GPU is needed; the input-bound one adds pipeline stages and suggestions to show every panel.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pipediag.renderers.png import render_png
from pipediag.report.model import Report, StageStats, Suggestion
from pipediag.testing import synthetic_report

DOCS = Path(__file__).resolve().parent


def input_bound_example() -> Report:
    report = synthetic_report(200, wait_s=0.03, compute_s=0.01, with_gpu=True)
    stages = [
        StageStats(0, "TFRecord", "train-*.tfrecord", batches_per_s=410.0),
        StageStats(1, "map", "decode_and_augment", batches_per_s=34.0, bottleneck=True),
        StageStats(2, "shuffle", "shuffle(1024)", batches_per_s=35.5),
        StageStats(3, "batch", "batch(64)", batches_per_s=36.0),
        StageStats(4, "prefetch", "prefetch(AUTOTUNE)", batches_per_s=35.0),
    ]
    suggestions = [
        Suggestion(
            "PD001-parallel-map",
            "Run decode_and_augment in parallel: .map(f, num_parallel_calls=tf.data.AUTOTUNE)",
            stage="map: decode_and_augment",
            estimated_speedup=2.4,
            verified_speedup=2.1,
        ),
        Suggestion(
            "PD004-cache",
            "Cache decoded images before augmentation: .cache() after the decode step",
            stage="map: decode_and_augment",
            estimated_speedup=2.9,
            correctness_warning=True,
        ),
        Suggestion(
            "PD007-vectorize",
            "Batch before map so augmentation runs on whole batches",
            estimated_speedup=1.6,
        ),
    ]
    pipeline = dataclasses.replace(report.pipeline, stages=stages)
    return dataclasses.replace(report, pipeline=pipeline, suggestions=suggestions)


def compute_bound_example() -> Report:
    return synthetic_report(200, wait_s=0.0005, compute_s=0.02, with_gpu=True)


def main() -> None:
    render_png(input_bound_example(), DOCS / "report-input-bound.png")
    render_png(compute_bound_example(), DOCS / "report-compute-bound.png")


if __name__ == "__main__":
    main()
