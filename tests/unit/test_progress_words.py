"""The progress lines' words: every step has its words, with its figures in place."""

from __future__ import annotations

from typing import get_args

from pipediag.progress import ProgressStep, ProgressStepName
from pipediag.renderers.progress_words import STEP_WORDS, progress_words


def test_every_step_has_its_words() -> None:
    assert set(STEP_WORDS) == set(get_args(ProgressStepName))


def test_a_step_without_figures_is_said_as_written() -> None:
    assert progress_words(ProgressStep("stage-timing")) == "timing each pipeline stage"


def test_the_service_steps_show_their_figures() -> None:
    # GIVEN the two steps of the tf.data service check, with their figures
    local = ProgressStep("service-local", workers=4)
    cluster = ProgressStep("service-cluster", service="grpc://dispatcher:5050")
    # THEN each is said with its figure in place
    assert progress_words(local) == ("reading the pipeline through 4 local tf.data service workers")
    assert progress_words(cluster) == (
        "reading the pipeline through the tf.data service at grpc://dispatcher:5050"
    )
