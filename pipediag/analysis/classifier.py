"""Label each step and the whole run: input-bound, compute-bound or balanced.

A step, as recorded::

    |<------------------- duration_s ------------------->|
    |<-- input_wait_s -->|<---------- compute ---------->|
    pull the next batch    run the train step on it

The verdict is one aggregate, as in XProf's Input Pipeline Analyzer: the share of
measured step time spent waiting for input, sum(wait) / sum(duration). A step is
labelled input-bound when its own wait share reaches the same threshold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipediag.analysis.stats import latency_stats
from pipediag.report.model import (
    BALANCED,
    COMPUTE_BOUND,
    INPUT_BOUND,
    UNKNOWN,
    WARMUP,
    PipelineBenchmark,
    StepRecord,
    TrainSection,
    Verdict,
)
from pipediag.timeline import RawStep


@dataclass(frozen=True)
class Thresholds:
    """Input-wait shares that decide the wording.

    From XProf (openxla/xprof, convert/op_stats_to_input_pipeline_analysis.cc):
    kHighlyInfeedBoundThresholdInPercent = 20 and kModeratelyInfeedBoundThresholdInPercent = 5.
    At 20% or more, input is the first thing to fix (input-bound); from 5% to 20% both
    input and compute need work (balanced); under 5% the model limits the rate.
    """

    highly_input_bound: float = 0.20
    moderately_input_bound: float = 0.05


DEFAULT_THRESHOLDS = Thresholds()

# Without measured waits, training at 80% or more of the pipeline-alone rate suggests the
# pipeline limits it (DS-Analyzer's differential reading); said as a suggestion only.
PIPELINE_LIMITED_SHARE = 0.8

SEVERITY_HIGH = "highly input-bound"
SEVERITY_MODERATE = "moderately input-bound"
SEVERITY_NONE = "not input-bound"
SEVERITY_UNKNOWN = "unknown"


def label_step(raw: RawStep, *, warmup: bool, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> str:
    if warmup:
        return WARMUP
    if raw.input_wait_s is None or raw.duration_s <= 0:
        return UNKNOWN
    share = raw.input_wait_s / raw.duration_s
    return INPUT_BOUND if share >= thresholds.highly_input_bound else COMPUTE_BOUND


def build_train_section(
    raw_steps: Sequence[RawStep],
    *,
    origin: float,
    warmup_steps: int,
    style: str,
    input_wait_source: str,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> TrainSection:
    """Steps on the report's time axis (seconds since `origin`), labelled, with rates.

    A record may stand for several merged steps (`count`); its index is that of its first
    step, and per-step statistics use its mean step.
    """
    steps: list[StepRecord] = []
    index = 0
    for raw in raw_steps:
        steps.append(
            StepRecord(
                index=index,
                start_s=raw.start - origin,
                duration_s=raw.duration_s,
                input_wait_s=raw.input_wait_s,
                label=label_step(raw, warmup=index < warmup_steps, thresholds=thresholds),
                epoch=raw.epoch,
                count=raw.count,
            )
        )
        index += raw.count
    measured = [s for s in steps if s.label != WARMUP]
    count = sum(s.count for s in measured)
    durations = [s.duration_s / s.count for s in measured]
    waits = [s.input_wait_s / s.count for s in measured if s.input_wait_s is not None]
    total = sum(s.duration_s for s in measured)
    return TrainSection(
        style=style,
        input_wait_source=input_wait_source if waits else "unavailable",
        warmup_steps=min(warmup_steps, index),
        measured_steps=count,
        merged_records=sum(s.count > 1 for s in steps),
        steps_per_s=count / total if total > 0 else None,
        step_time=latency_stats(durations),
        input_wait=latency_stats(waits),
        steps=steps,
    )


def judge(
    train: TrainSection,
    pipeline: PipelineBenchmark,
    *,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    why_unknown: str | None = None,
) -> Verdict:
    """The overall verdict, with the figures behind it and one sentence that says why."""
    timed = [s for s in train.steps if s.label in (INPUT_BOUND, COMPUTE_BOUND)]
    if not timed:
        return Verdict(summary=why_unknown or _why_no_verdict(train, pipeline))
    total = sum(s.duration_s for s in timed)
    wait = sum(s.input_wait_s or 0.0 for s in timed)
    fraction = wait / total if total > 0 else 0.0
    computes = [s.compute_s / s.count for s in timed if s.compute_s is not None]
    median_compute = float(np.median(computes)) if computes else 0.0
    compute_alone = 1.0 / median_compute if median_compute > 0 else None
    headroom = (
        pipeline.batches_per_s / compute_alone
        if pipeline.batches_per_s is not None and compute_alone
        else None
    )
    if fraction >= thresholds.highly_input_bound:
        label, severity = INPUT_BOUND, SEVERITY_HIGH
    elif fraction >= thresholds.moderately_input_bound:
        label, severity = BALANCED, SEVERITY_MODERATE
    else:
        label, severity = COMPUTE_BOUND, SEVERITY_NONE
    return Verdict(
        label=label,
        input_wait_fraction=fraction,
        severity=severity,
        summary=_summary(label, fraction, train, pipeline, compute_alone, headroom),
        input_bound_steps=sum(s.count for s in timed if s.label == INPUT_BOUND),
        compute_bound_steps=sum(s.count for s in timed if s.label == COMPUTE_BOUND),
        compute_alone_steps_per_s=compute_alone,
        pipeline_headroom=headroom,
    )


def _summary(
    label: str,
    fraction: float,
    train: TrainSection,
    pipeline: PipelineBenchmark,
    compute_alone: float | None,
    headroom: float | None,
) -> str:
    share = f"{fraction:.0%} of step time was spent waiting for the input pipeline"
    rates = []
    if pipeline.batches_per_s is not None:
        rates.append(f"the pipeline alone delivers {pipeline.batches_per_s:.1f} batches/s")
    if compute_alone is not None:
        rates.append(f"the train step alone could run at {compute_alone:.1f} steps/s")
    rate_text = " and ".join(rates)
    if label == INPUT_BOUND:
        return f"{share}: {rate_text}." if rates else f"{share}."
    if label == BALANCED:
        return (
            f"{share}: the pipeline nearly keeps up with the model"
            + (f" ({rate_text})" if rates else "")
            + ", so both input and compute limit the rate."
        )
    text = f"Only {share}: the model's train step sets the rate"
    if train.steps_per_s is not None:
        text += f" ({train.steps_per_s:.1f} steps/s)"
    if headroom is not None and pipeline.batches_per_s is not None:
        text += f"; the pipeline alone delivers {pipeline.batches_per_s:.1f} batches/s"
        text += f", {headroom:.1f}x what the train step needs"
    return text + "."


def _why_no_verdict(train: TrainSection, pipeline: PipelineBenchmark) -> str:
    if not train.steps:
        return (
            "No training steps were seen: the script did not iterate a tf.data dataset "
            "eagerly or call Keras fit."
        )
    if train.measured_steps == 0:
        return (
            f"Only {len(train.steps)} step(s) ran, all in the warm-up: run more steps "
            "or lower --warmup."
        )
    text = "The input wait of the measured steps could not be measured"
    if train.steps_per_s is not None and pipeline.batches_per_s is not None:
        share = train.steps_per_s / pipeline.batches_per_s
        text += (
            f". Training ran at {train.steps_per_s:.1f} steps/s, {share:.0%} of the "
            f"{pipeline.batches_per_s:.1f} batches/s the pipeline delivers alone"
        )
        if share >= PIPELINE_LIMITED_SHARE:
            text += ", which suggests the input pipeline limits it"
    return text + "."
