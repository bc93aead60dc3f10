"""Why there is no verdict, in words from the report's own figures."""

from __future__ import annotations

from pipediag.analysis.classifier import pipeline_seems_limiting
from pipediag.renderers.numbers import percent, rate_text
from pipediag.report.model import TrainSection
from pipediag.report.vocabulary import NoVerdictReason

# A verdict never judged, or an older report's reason its train section does not tell.
NOT_ENOUGH_MEASURED = "not enough was measured to tell"
NO_STEPS_TEXT = (
    "No training steps were seen: the script did not call Keras fit, pull a tf.data dataset "
    "eagerly, or call a tf.function that stepped an optimizer on an iterator or a dataset it "
    "was given or closes over. To get one: name the function that trains "
    "(--train-function NAME), pass it the training iterator or dataset, or mark each step "
    "with pipediag.monitor() (README, 'Python API')."
)
WAIT_NOT_MEASURED_TEXT = "The input wait of the measured steps could not be measured"


def no_verdict_text(
    reason: NoVerdictReason, train: TrainSection, pipeline_batches_per_s: float | None
) -> str:
    """A sentence or two that stand on their own."""
    if reason == "no-training":
        passes = sum(p.passes for p in train.skipped_passes)
        return (
            f"No training was found: the script made {passes} pass(es) over its data, none of "
            "them training (no train step between their pulls, or made by Keras), so there is "
            "no verdict."
        )
    if reason == "no-steps":
        return NO_STEPS_TEXT
    if reason == "warmup-only":
        return (
            f"Only {len(train.steps)} step(s) ran, all in the warm-up: run more steps or "
            "lower --warmup."
        )
    if reason != "wait-not-measured":
        return NOT_ENOUGH_MEASURED
    # Without waits, A against P: close suggests the pipeline limits training (DS-Analyzer).
    training, pipeline = train.steps_per_s, pipeline_batches_per_s
    if training is None or not pipeline:
        return WAIT_NOT_MEASURED_TEXT + "."
    text = (
        f"{WAIT_NOT_MEASURED_TEXT}. Training ran at {rate_text(training)} steps/s, "
        f"{percent(training / pipeline)} of the {rate_text(pipeline)} batches/s the pipeline "
        "delivers alone"
    )
    if pipeline_seems_limiting(training, pipeline):
        text += ", which suggests the input pipeline limits it"
    return text + "."
