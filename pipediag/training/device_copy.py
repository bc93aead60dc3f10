"""The host-to-device copy's share of fit's train step, where there is a GPU: the step on the
cached batch on the host against the batch placed on the device once (docs/design.md, "The
host-to-device copy"). The placement is injected (`bench/device.py`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pipediag.bench.device import DevicePlacement
from pipediag.clock import Clock
from pipediag.report.model_side import ModelTrial
from pipediag.report.reasons import Reason
from pipediag.training.step_rounds import FitFacts, Side, measure

DEVICE_COPY_CODE = 'dataset = dataset.apply(tf.data.experimental.prefetch_to_device("{device}"))'


def device_copy_trial(
    step: Callable[[Any], None],  # one synced train step on the batch given
    batch: Any,
    placement: DevicePlacement,
    facts: FitFacts,
    *,
    clock: Clock,
    share_s: float,
) -> ModelTrial:
    """The step on the host batch (baseline) against the device batch (variant)."""
    host, on_device = placement.on_host(batch), placement.on_device(batch)
    baseline, variant = Side(lambda: step(host)), Side(lambda: step(on_device))
    trial = measure("device_copy", baseline, variant, facts, clock=clock, share_s=share_s)
    share = copy_share(trial)
    return replace(
        trial,
        code=DEVICE_COPY_CODE.format(device=placement.name),
        setting=placement.name,
        share=share,
        # The fix overlaps the copy with the step, it does not remove it.
        reason=trial.reason or (Reason("copy-at-most") if share else None),
    )


def copy_share(trial: ModelTrial) -> float | None:
    """The share of the host-fed step the copy takes (a slower device-fed step is noise)."""
    base, variant = trial.baseline_steps_per_s, trial.variant_steps_per_s
    return max(0.0, 1.0 - base / variant) if base and variant else None


def no_gpu_trial() -> ModelTrial:
    """The trial where TensorFlow sees no GPU: the batch is already where the step runs."""
    return ModelTrial("device_copy", reason=Reason("no-gpu-copy"))
