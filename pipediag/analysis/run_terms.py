"""A trial's ratio in the run's own terms, never above T/A (docs/design.md, "Fixes tried on
training", "Epoch starts in the gains")."""

from __future__ import annotations

import dataclasses
from typing import TypeVar

from pipediag.report.model import Report
from pipediag.report.prescription import GainOnTraining


def fit_added_s(
    measured_s: float | None, fit_per_s: float | None, base_per_s: float | None
) -> float | None:
    """fit's time around its train function per step: as measured, else `1/fit - 1/base` (a
    gap between rates read at different times, which drift also moves); never below 0."""
    if measured_s is not None:
        return max(0.0, measured_s)
    if fit_per_s is None or fit_per_s <= 0 or not base_per_s:
        return None
    return max(0.0, 1.0 / fit_per_s - 1.0 / base_per_s)


def in_run_terms(
    base_per_s: float,
    variant_per_s: float,
    added_s: float | None,
    *,
    shared_by: int = 1,
    base_start_s: float = 0.0,
    variant_start_s: float = 0.0,
) -> float:
    """`added_s` on both sides' step, divided by `shared_by` on the variant's
    (steps_per_execution pays it once a call), and each side's epoch start per step."""
    if added_s is None and not base_start_s and not variant_start_s:
        return variant_per_s / base_per_s
    added = added_s or 0.0
    base_step_s = 1.0 / base_per_s + added + base_start_s
    return base_step_s / (1.0 / variant_per_s + added / shared_by + variant_start_s)


def fit_adds_s(report: Report, base: float | None) -> float | None:
    """`fit_added_s` against a baseline at `base` steps/s; None outside `fit` or where 0."""
    if report.train.style != "keras-fit":
        return None
    return fit_added_s(report.train.fit_overhead_s, report.train.steps_per_s, base) or None


def gain_in_run_terms(
    report: Report, gain: GainOnTraining | None
) -> tuple[float | None, list[float] | None]:
    """A gain on training and its 90% interval, as the run would see them; (None, None): untried."""
    if gain is None:
        return None, None
    base = gain.baseline_steps_per_s
    ratio = _ratio_in_run_terms(report, gain, gain.training_speedup, gain.variant_steps_per_s)
    low, high = gain.training_speedup_low, gain.training_speedup_high
    if low is None or high is None:
        return ratio, None
    ends = [
        _ratio_in_run_terms(report, gain, end, base * end if base else None) for end in (low, high)
    ]
    return ratio, [e for e in ends if e is not None] if None not in ends else None


def _ratio_in_run_terms(
    report: Report, gain: GainOnTraining, raw: float | None, fixed: float | None
) -> float | None:
    """`raw` (from `gain`'s baseline rate and `fixed`, steps/s) as the run would see it; a trial
    on top of kept rewrites reads fit's time, where unmeasured, off the first trials'."""
    base = gain.baseline_steps_per_s
    if raw is None or not base or not fixed:
        return raw
    added_s = _added_on_top_s(report) if gain.after else fit_adds_s(report, base)
    spread, ratio = _spread_starts(report, gain), raw
    if added_s is not None or spread is not None:
        base_start_s, fixed_start_s = spread or (0.0, 0.0)
        ratio = in_run_terms(
            base, fixed, added_s or 0.0, base_start_s=base_start_s, variant_start_s=fixed_start_s
        )
    most = most_input_gives(report)
    return min(ratio, most) if most is not None else ratio


def most_input_gives(report: Report) -> float | None:
    """T/A as the answer states it: from the cost, or its interval's top where the interval
    reaches zero ("at most N%"); None where T was not measured."""
    verdict = report.verdict
    cost = verdict.input_cost_fraction
    if verdict.compute_alone_source != "measured" or cost is None:
        return None
    interval = verdict.input_cost_interval
    top = max(cost, interval[1]) if interval and interval[0] <= 0.0 else cost
    return 1.0 / (1.0 - top) if top < 1.0 else None


def _spread_starts(report: Report, gain: GainOnTraining) -> tuple[float, float] | None:
    """Each side's epoch start per step of a pass, where both were measured."""
    steps = report.pipeline.pass_batches
    base_s, variant_s = gain.baseline_start_s, gain.variant_start_s
    if not steps or base_s is None or variant_s is None or (base_s == 0.0 and variant_s == 0.0):
        return None
    return base_s / steps, variant_s / steps


def with_prescription_in_run_terms(report: Report) -> Report:
    """Filled in once, so that every renderer shows the number the advice does."""
    if (prescription := report.pipeline.prescription) is None:
        return report
    tried = [_filled(report, change) for change in prescription.tried]
    updated = _filled(report, dataclasses.replace(prescription, tried=tried))
    return dataclasses.replace(
        report, pipeline=dataclasses.replace(report.pipeline, prescription=updated)
    )


_Tried = TypeVar("_Tried", bound=GainOnTraining)


def _filled(report: Report, tried: _Tried) -> _Tried:
    gain, interval = gain_in_run_terms(report, tried)
    low, high = interval or (None, None)
    return dataclasses.replace(tried, on_training=gain, on_training_low=low, on_training_high=high)


def _added_on_top_s(report: Report) -> float | None:
    if report.train.fit_overhead_s is not None:
        return fit_adds_s(report, None)
    for trial in report.pipeline.trials:
        training = trial.training
        if training is not None and training.training_speedup is not None and not training.after:
            added = fit_adds_s(report, training.baseline_steps_per_s)
            if added is not None:
                return added
    return None
