"""The progress lines' words, one entry per step (`progress.py` adds the prefix and budget)."""

from __future__ import annotations

from typing import Final

from pipediag.progress import ProgressStep, ProgressStepName

# `{workers}` and `{service}`: the step's figures.
STEP_WORDS: Final[dict[ProgressStepName, str]] = {
    "pipeline-alone": "benchmarking the input pipeline alone",
    "train-steps": "measuring train steps",
    "cached-epoch": (
        "the pipeline caches: measuring on into the next epoch, where it reads the cache"
    ),
    "step-alone": "measuring the train step alone on a cached batch",
    "alternation": "measuring training and the train step alone in turn",
    "stage-timing": "timing each pipeline stage",
    "candidate-fixes": "measuring candidate fixes",
    "stage-holds": "holding each stage in memory on training",
    "rewrites-on-training": "trying the rewrites on training",
    "model-side": "trying model-side changes on the train step alone",
    "loop-profile": "profiling where the loop's step time goes",
    "loop-xla": "trying XLA on the loop's train step",
    "service-local": "reading the pipeline through {workers} local tf.data service workers",
    "service-cluster": "reading the pipeline through the tf.data service at {service}",
}


def progress_words(step: ProgressStep) -> str:
    return STEP_WORDS[step.name].format(workers=step.workers, service=step.service)
