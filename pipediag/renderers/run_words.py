"""The run in words: how it ran and ended, and what it could not measure."""

from __future__ import annotations

import shlex
import statistics

from pipediag.analysis.input_cost import counted_epoch_starts
from pipediag.renderers.cost_words import of_an_epoch
from pipediag.renderers.numbers import NOT_MEASURED, counted
from pipediag.renderers.reason_words import reason_words
from pipediag.report.model import CostSplit, DataPass, Report, TrainSection
from pipediag.report.reasons import Reason

NO_SCRIPT = "(no script)"
STOP_REASONS = {
    "step-budget": "step budget reached, script stopped",
    "script-finished": "the script finished",
    "system-exit": "the script exited with code {code}",
    "script-error": "the script failed ({error})",
    "interrupted": "interrupted",
}
NO_REASON = "no reason recorded"
INPUT_WAIT_SOURCES = {
    "profiler-trace": "input wait from TF profiler trace",
    "batch-stamps": "input wait from batch time stamps",
    "iterator-timing": "input wait timed at the iterator",
}
HOST_TIMING_ONLY = "Verdict from host timing alone."
# An epoch start under this long is not worth a line: a few calls between two steps.
EPOCH_START_SHOWN_S = 0.005
# The Keras backends as the style line names them (the TensorFlow backend goes unsaid).
KERAS_BACKEND_NAMES = {"jax": "JAX", "torch": "PyTorch"}


def command_line(report: Report) -> str:
    """The script and its arguments, quoted as a shell would take them back."""
    return shlex.join([report.script, *report.args]) if report.script else NO_SCRIPT


def stop_reason_text(report: Report) -> str:
    if (words := STOP_REASONS.get(report.stop_reason)) is None:
        return report.stop_reason or NO_REASON
    return words.format(code=report.exit.code, error=report.exit.error)


def run_status(report: Report) -> str:
    return f"{'complete' if report.complete else 'incomplete'}: {stop_reason_text(report)}"


def epoch_start_text(train: TrainSection, split: CostSplit | None = None) -> str:
    """'' when short or unseen; says whether the start is in the input cost."""
    if not (later := counted_epoch_starts(train.epoch_starts)):
        return ""
    if (duration := float(statistics.median(e.duration_s for e in later))) < EPOCH_START_SHOWN_S:
        return ""
    text = (
        f"epoch starts: {duration:.2f} s before each epoch's first step (median of "
        f"{counted(len(later), 'epoch')})"
    )
    if split is not None and split.epoch_steps is not None and split.epoch_start_s is not None:
        of_epoch = of_an_epoch(split.epoch_start, split.epoch_steps)
        return f"{text}; {of_epoch}, counted in the input cost above"
    steps = later[-1].steps_per_epoch
    step = train.step_time.median_s if train.step_time is not None else None
    if steps and step:
        text += f"; {of_an_epoch(duration / (duration + steps * step), steps)}"
    if not any(e.steps_per_epoch for e in later):
        return text + "; not part of the input cost above: the epoch's length is unknown"
    return text + "; not part of the input cost above"


def data_pass_text(record: DataPass) -> str:
    why = "the dataset was empty" if record.batches == 0 else "no train step between its pulls"
    if record.passes > 1:
        text = f"{record.passes} passes ({record.batches:,} batches)"
    elif record.batches == 0:
        text = "an empty pass"
    else:
        text = f"a {record.batches:,}-batch pass"
    if record.by:
        text += f" by {record.by}"
        why = "not training"
    if record.where:
        text += f" at {record.where}"
    return f"{text} ({why})"


def deep_skipped_text(reason: Reason) -> str:
    return f"{NOT_MEASURED}: {reason_words(reason)}"


def input_wait_source_text(train: TrainSection) -> str:
    return INPUT_WAIT_SOURCES.get(train.input_wait_source, "input wait not measured")


def training_text(train: TrainSection) -> str:
    style: str = train.style
    backend = KERAS_BACKEND_NAMES.get(train.keras_backend or "")
    if style == "keras-fit" and backend is not None:
        style = f"{train.style} on the {backend} backend"
    return f"{style}, {input_wait_source_text(train)}"


def why_text(reason: Reason | None) -> str:
    return reason_words(reason) if reason is not None else NO_REASON


def no_gpu_text(reason: Reason | None) -> str:
    return f"no GPU found: {why_text(reason)}"
