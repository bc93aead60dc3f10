"""The steps pipediag says it is taking while it diagnoses, each a name with the figures its
line shows; their words are made in `renderers/progress_words.py`. Typed here, not beside the
progress line (`progress.py`): the code that takes the steps (`phases`, `training`,
`scale_out`) may import `report`, never the session's pieces. No report field holds one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ProgressStepName = Literal[
    "pipeline-alone",  # phase 1: the input pipeline alone
    "train-steps",  # the user's measured steps
    "cached-epoch",  # the step budget extended into the epoch that reads a filling cache
    "step-alone",  # the train step alone on a cached batch, under fit
    "alternation",  # training and the train step alone in turn
    "stage-timing",
    "candidate-fixes",  # the what-if fixes on the pipeline alone
    "stage-holds",  # each stage held in memory on training
    "rewrites-on-training",
    "model-side",  # model-side changes on the train step alone
    "loop-profile",  # a custom loop's step time, profiled
    "loop-xla",  # XLA on a custom loop's own train step
    "service-local",  # the pipeline read through local tf.data service workers
    "service-cluster",  # the pipeline read through an existing tf.data service
]


@dataclass(frozen=True)
class ProgressStep:
    """A step said on the progress line: its name and the figures its words show."""

    name: ProgressStepName
    workers: int = 0  # "service-local": the local workers started
    service: str = ""  # "service-cluster": the dispatcher's address
