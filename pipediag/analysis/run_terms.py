"""A ratio measured on a trial, in the run's own terms.

A custom loop's trial runs in the loop itself: its ratio is the gain. Under `fit` a trial
times the compiled train function alone, without what `fit` adds to every step (callbacks,
the progress bar, pipediag's own marks): that time is added to both sides, since a rewrite
leaves it as it is (docs/design.md, "Fixes tried on training"). It is what fit's steps were
measured to take beyond their train function (`train.fit_overhead_s`), or in a report
without that figure, the measured steps' time less the trial's baseline step.

Both sides of the gain are the trial's own, measured in alternation: the measured steps'
rate (A) is read at another time, and the host's drift between the two reads must not
count as a gain (a 0.99x trial had read 1.65x through it).

Where the run's iterator restarts every pass (a finite dataset), each side's epoch start
(a fresh iterator made, and its first step beyond a steady one, as the trial measured it)
is spread over the pass's steps on both sides: a rewrite that makes a cheaper start (a
hoisted cache) gains there too (docs/design.md, "Epoch starts in the gains").

No gain so read exceeds what all of input's cost gives back, T/A (`most_input_gives`):
the trial's two sides are measured in their own window, and a baseline read slower than A
there made a cache fix read 2.47x beside a T/A of 2.14x (docs/design.md, "Fixes tried on
training").

Also the prescription's figures so read, filled in once so that every renderer shows the
same number the advice does.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pipediag.report.model import FixTrial, Report
from pipediag.report.prescription import PrescribedChange, Prescription
from pipediag.report.vocabulary import KERAS_FIT, MEASURED


def fit_adds_s(report: Report, base: float | None) -> float | None:
    """What `fit` adds to each step beyond its train function: as fit's steps measured it,
    else the measured steps' time less that of a trial baseline at `base` steps/s (over the
    user's pipeline); None outside `fit`, or where it is nothing."""
    if report.train.style != KERAS_FIT:
        return None
    measured = report.train.fit_overhead_s
    if measured is not None:
        return measured if measured > 0 else None
    train_rate = report.train.steps_per_s
    if not train_rate or not base:
        return None
    added = 1.0 / train_rate - 1.0 / base
    return added if added > 0 else None


@dataclass(frozen=True)
class Starts:
    """What an epoch's start cost each side of a trial beyond a steady step, seconds (None:
    not measured)."""

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
    """A trial's ratio (`raw`, from its rates `base` and `fixed`, steps/s) as the run would
    see it: fit's time around the train function added to both sides' step time, and each
    side's epoch start spread over the pass (`starts`). A trial on top of kept rewrites has
    no baseline over the user's pipeline, so where fit's time was not measured it is read
    off the first trials'."""
    if raw is None or not base or not fixed:
        return raw
    added_s = _added_on_top_s(report) if on_top else fit_adds_s(report, base)
    spread = _spread_starts(report, starts)
    ratio = raw
    if added_s is not None or spread is not None:
        added_s = added_s or 0.0
        base_start_s, fixed_start_s = spread or (0.0, 0.0)
        ratio = (1.0 / base + added_s + base_start_s) / (1.0 / fixed + added_s + fixed_start_s)
    most = most_input_gives(report)
    return min(ratio, most) if most is not None else ratio


def most_input_gives(report: Report) -> float | None:
    """T/A, the most that making input free gains the run, as the answer states it: from the
    input cost, or from its interval's top where the cost is not measurable above noise
    (its interval reaches zero: "at most N%"); None where T was not measured or the cost
    is unknown."""
    verdict = report.verdict
    cost = verdict.input_cost_fraction
    if verdict.compute_alone_source != MEASURED or cost is None:
        return None
    interval = verdict.input_cost_interval
    top = max(cost, interval[1]) if interval and interval[0] <= 0.0 else cost
    return 1.0 / (1.0 - top) if top < 1.0 else None


def _spread_starts(report: Report, starts: Starts) -> tuple[float, float] | None:
    """Each side's epoch start per step of a pass, where both were measured and the run's
    iterator restarts every pass; None otherwise."""
    steps = report.pipeline.pass_batches
    if not steps or starts.baseline_s is None or starts.variant_s is None:
        return None
    if starts.baseline_s == 0.0 and starts.variant_s == 0.0:
        return None
    return starts.baseline_s / steps, starts.variant_s / steps


def interval_in_run_terms(
    report: Report,
    low: float | None,
    high: float | None,
    base: float | None,
    *,
    on_top: bool = False,
    starts: Starts = NO_STARTS,
) -> list[float] | None:
    """A trial's 90% interval of ratios, each end read as `ratio_in_run_terms` reads the
    ratio."""
    if low is None or high is None:
        return None
    ends = [
        ratio_in_run_terms(
            report, end, base, base * end if base else None, on_top=on_top, starts=starts
        )
        for end in (low, high)
    ]
    return [e for e in ends if e is not None] if None not in ends else None


def trial_in_run_terms(report: Report, trial: FixTrial) -> float | None:
    """A fix trial's gain on training as the run would see it."""
    return ratio_in_run_terms(
        report,
        trial.training_speedup,
        trial.training_baseline_steps_per_s,
        trial.training_variant_steps_per_s,
        on_top=bool(trial.facts.training_after),
        starts=Starts(trial.training_baseline_start_s, trial.training_variant_start_s),
    )


def trial_interval_in_run_terms(report: Report, trial: FixTrial) -> list[float] | None:
    return interval_in_run_terms(
        report,
        trial.facts.training_speedup_low,
        trial.facts.training_speedup_high,
        trial.training_baseline_steps_per_s,
        on_top=bool(trial.facts.training_after),
        starts=Starts(trial.training_baseline_start_s, trial.training_variant_start_s),
    )


def with_prescription_in_run_terms(report: Report) -> Report:
    """The report with each rewrite tried, and the kept ones together, in the run's terms
    (`PrescribedChange.on_training`, `Prescription.on_training`)."""
    prescription = report.pipeline.prescription
    if prescription is None:
        return report
    tried = [_change_in_run_terms(report, change) for change in prescription.tried]
    together, together_interval = _together_in_run_terms(report, prescription)
    low, high = together_interval or (None, None)
    updated = dataclasses.replace(
        prescription,
        tried=tried,
        on_training=together,
        on_training_low=low,
        on_training_high=high,
    )
    return dataclasses.replace(
        report, pipeline=dataclasses.replace(report.pipeline, prescription=updated)
    )


def _change_in_run_terms(report: Report, change: PrescribedChange) -> PrescribedChange:
    on_top = bool(change.after)
    base = change.baseline_steps_per_s
    starts = Starts(change.baseline_start_s, change.variant_start_s)
    gain = ratio_in_run_terms(
        report,
        change.training_speedup,
        base,
        change.variant_steps_per_s,
        on_top=on_top,
        starts=starts,
    )
    interval = interval_in_run_terms(
        report,
        change.training_speedup_low,
        change.training_speedup_high,
        base,
        on_top=on_top,
        starts=starts,
    )
    low, high = interval or (None, None)
    return dataclasses.replace(change, on_training=gain, on_training_low=low, on_training_high=high)


def _together_in_run_terms(
    report: Report, prescription: Prescription
) -> tuple[float | None, list[float] | None]:
    base = prescription.baseline_steps_per_s
    starts = Starts(prescription.baseline_start_s, prescription.variant_start_s)
    gain = ratio_in_run_terms(
        report, prescription.training_speedup, base, prescription.variant_steps_per_s, starts=starts
    )
    interval = interval_in_run_terms(
        report,
        prescription.training_speedup_low,
        prescription.training_speedup_high,
        base,
        starts=starts,
    )
    return gain, interval


def _added_on_top_s(report: Report) -> float | None:
    """What fit adds to each step where the trial's baseline is not the user's pipeline: as
    measured, else as the trials over the user's pipeline read it."""
    if report.train.style != KERAS_FIT:
        return None
    if report.train.fit_overhead_s is not None:
        return fit_adds_s(report, None)
    for trial in report.pipeline.trials:
        if trial.training_speedup is not None and not trial.facts.training_after:
            added = fit_adds_s(report, trial.training_baseline_steps_per_s)
            if added is not None:
                return added
    return None
