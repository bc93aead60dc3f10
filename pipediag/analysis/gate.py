"""`pipediag check`: thresholds over a saved report, so a CI job can fail on a regression; a
slowdown fails only beyond the runs' noise (docs/design.md, "History, trend and check")."""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import Literal

from pipediag.analysis import noise
from pipediag.analysis.compare import run_figures, training_rate
from pipediag.analysis.noise import DEFAULT_RULES, NoiseRules
from pipediag.report.model import Report


@dataclass(frozen=True)
class Thresholds:
    """The limits to check; None leaves a figure unchecked. Shares are fractions (0.2)."""

    max_input_cost: float | None = None
    max_input_wait: float | None = None
    min_steps_per_s: float | None = None
    max_slowdown: float | None = None  # against a baseline report

    def any(self) -> bool:
        return any(value is not None for value in astuple(self))


# The checks, named by the option that sets each.
MAX_INPUT_COST = "max-input-cost"
MAX_INPUT_WAIT = "max-input-wait"
MIN_STEPS_PER_S = "min-steps-per-s"
MAX_SLOWDOWN = "max-slowdown"


@dataclass(frozen=True)
class RateChange:
    """The training rates of the baseline and the report, new/base with its 95% interval."""

    baseline: float
    new: float
    change: noise.Interval


@dataclass(frozen=True)
class CheckResult:
    """One threshold's facts; `renderers/check_words.py` words them."""

    name: str  # MAX_INPUT_COST, ...
    passed: bool
    limit: float
    value: float | None  # a share, steps/s, or how much slower (0.07); None: not measured
    # Where `value` is None, the run that lacked it (None: the report).
    lacking_in: Literal["report", "baseline"] | None = None
    rates: RateChange | None = None  # MAX_SLOWDOWN's, where both runs have a rate


def check_report(
    report: Report,
    thresholds: Thresholds,
    baseline: Report | None = None,
    rules: NoiseRules = DEFAULT_RULES,
) -> list[CheckResult]:
    """Every threshold given, in the order of the options."""
    verdict = report.verdict
    most = (
        (MAX_INPUT_COST, verdict.input_cost_fraction, thresholds.max_input_cost),
        (MAX_INPUT_WAIT, verdict.input_wait_fraction, thresholds.max_input_wait),
    )
    results = [_at_most(name, value, limit) for name, value, limit in most if limit is not None]
    if thresholds.min_steps_per_s is not None:
        limit, rate = thresholds.min_steps_per_s, training_rate(report)
        passed = rate is not None and rate >= limit
        results.append(CheckResult(MIN_STEPS_PER_S, passed, limit=limit, value=rate))
    if thresholds.max_slowdown is not None:
        if baseline is None:
            raise ValueError("max_slowdown needs a baseline report")
        results.append(_slowdown(baseline, report, thresholds.max_slowdown, rules))
    return results


def _at_most(name: str, value: float | None, limit: float) -> CheckResult:
    return CheckResult(name, value is not None and value <= limit, limit=limit, value=value)


def _slowdown(baseline: Report, report: Report, limit: float, rules: NoiseRules) -> CheckResult:
    base, new = run_figures(baseline, rules).training, run_figures(report, rules).training
    if base is None or new is None:
        lacking_in: Literal["report", "baseline"] = "baseline" if base is None else "report"
        return CheckResult(MAX_SLOWDOWN, False, limit=limit, value=None, lacking_in=lacking_in)
    change = noise.interval(base, new, rules)
    slowdown = 1.0 - change.change
    passed = slowdown <= 0 or slowdown <= limit or noise.is_noise(change)
    rates = RateChange(baseline=base.value, new=new.value, change=change)
    return CheckResult(MAX_SLOWDOWN, passed, limit=limit, value=slowdown, rates=rates)
