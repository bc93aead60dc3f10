"""A trial's ratio in the run's own terms: under `fit`, fit's time around the train function
added to both sides (docs/design.md, "Fixes tried on training"), each side's epoch start
spread over the pass (docs/design.md, "Epoch starts in the gains"), never above T/A."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TypeVar

from pipediag.report.model import Report
from pipediag.report.prescription import GainOnTraining
from pipediag.report.trials import FixTrial


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
    added = fit_added_s(report.train.fit_overhead_s, report.train.steps_per_s, base)
    return added or None


@dataclass(frozen=True)
class Starts:
    """What an epoch's start cost each side of a trial beyond a steady step, seconds."""

    baseline_s: float | None = None
    variant_s: float | None = None


NO_STARTS = Starts()


def ratio_in_run_terms(
    report: Report,
    raw: float | None,
    base: float | None,
    fixed: float | None,
    *,
    on_top: bool = False,
    starts: Starts = NO_STARTS,
) -> float | None:
    """`raw`, from rates `base` and `fixed` (steps/s), as the run would see it. A trial on top
    of kept rewrites reads fit's time, where not measured, off the first trials'."""
    if raw is None or not base or not fixed:
        return raw
    added_s = _added_on_top_s(report) if on_top else fit_adds_s(report, base)
    spread = _spread_starts(report, starts)
    ratio = raw
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


def _spread_starts(report: Report, starts: Starts) -> tuple[float, float] | None:
    """Each side's epoch start per step of a pass, where both were measured."""
    steps = report.pipeline.pass_batches
    if not steps or starts.baseline_s is None or starts.variant_s is None:
        return None
    if starts.baseline_s == 0.0 and starts.variant_s == 0.0:
        return None
    return starts.baseline_s / steps, starts.variant_s / steps


def gain_in_run_terms(
    report: Report,
    raw: float | None,
    low: float | None,
    high: float | None,
    base: float | None,
    fixed: float | None,
    *,
    on_top: bool = False,
    starts: Starts = NO_STARTS,
) -> tuple[float | None, list[float] | None]:
    """The ratio and each end of its 90% interval read as `ratio_in_run_terms` reads it."""
    gain = ratio_in_run_terms(report, raw, base, fixed, on_top=on_top, starts=starts)
    if low is None or high is None:
        return gain, None
    ends = [
        ratio_in_run_terms(
            report, end, base, base * end if base else None, on_top=on_top, starts=starts
        )
        for end in (low, high)
    ]
    return gain, [e for e in ends if e is not None] if None not in ends else None


def trial_in_run_terms(report: Report, trial: FixTrial) -> tuple[float | None, list[float] | None]:
    return gain_in_run_terms(
        report,
        trial.training_speedup,
        trial.facts.training_speedup_low,
        trial.facts.training_speedup_high,
        trial.training_baseline_steps_per_s,
        trial.training_variant_steps_per_s,
        on_top=bool(trial.facts.training_after),
        starts=Starts(trial.training_baseline_start_s, trial.training_variant_start_s),
    )


def with_prescription_in_run_terms(report: Report) -> Report:
    """Filled in once, so that every renderer shows the number the advice does."""
    prescription = report.pipeline.prescription
    if prescription is None:
        return report
    tried = [_filled(report, change, on_top=bool(change.after)) for change in prescription.tried]
    updated = _filled(report, dataclasses.replace(prescription, tried=tried), on_top=False)
    return dataclasses.replace(
        report, pipeline=dataclasses.replace(report.pipeline, prescription=updated)
    )


_Tried = TypeVar("_Tried", bound=GainOnTraining)


def rewrite_in_run_terms(
    report: Report, tried: GainOnTraining, *, on_top: bool = False
) -> tuple[float | None, list[float] | None]:
    return gain_in_run_terms(
        report,
        tried.training_speedup,
        tried.training_speedup_low,
        tried.training_speedup_high,
        tried.baseline_steps_per_s,
        tried.variant_steps_per_s,
        on_top=on_top,
        starts=Starts(tried.baseline_start_s, tried.variant_start_s),
    )


def _filled(report: Report, tried: _Tried, *, on_top: bool) -> _Tried:
    gain, interval = rewrite_in_run_terms(report, tried, on_top=on_top)
    low, high = interval or (None, None)
    return dataclasses.replace(tried, on_training=gain, on_training_low=low, on_training_high=high)


def _added_on_top_s(report: Report) -> float | None:
    if report.train.fit_overhead_s is not None:
        return fit_adds_s(report, None)
    for trial in report.pipeline.trials:
        if trial.training_speedup is not None and not trial.facts.training_after:
            added = fit_adds_s(report, trial.training_baseline_steps_per_s)
            if added is not None:
                return added
    return None
