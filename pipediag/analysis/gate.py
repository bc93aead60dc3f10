"""`pipediag check`: thresholds over a saved report, so a CI job can fail on a regression; a
slowdown fails only beyond the runs' noise (docs/design.md, "History, trend and check")."""

from __future__ import annotations

from dataclasses import dataclass

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
        limits = (self.max_input_cost, self.max_input_wait, self.min_steps_per_s, self.max_slowdown)
        return any(value is not None for value in limits)


@dataclass(frozen=True)
class CheckResult:
    name: str  # the option that set it: "max-input-cost"
    passed: bool
    line: str


def check_report(
    report: Report,
    thresholds: Thresholds,
    baseline: Report | None = None,
    rules: NoiseRules = DEFAULT_RULES,
) -> list[CheckResult]:
    """Every threshold given, in the order of the options."""
    results = []
    verdict = report.verdict
    if thresholds.max_input_cost is not None:
        lacking = "no input cost (no compute-alone rate, or no measured steps)"
        cost = verdict.input_cost_fraction
        results.append(
            _at_most("max-input-cost", "input cost", cost, thresholds.max_input_cost, lacking)
        )
    if thresholds.max_input_wait is not None:
        lacking = "no input wait (the steps' waits were not measured)"
        wait = verdict.input_wait_fraction
        results.append(
            _at_most("max-input-wait", "input wait", wait, thresholds.max_input_wait, lacking)
        )
    if thresholds.min_steps_per_s is not None:
        results.append(_min_rate(report, thresholds.min_steps_per_s))
    if thresholds.max_slowdown is not None:
        if baseline is None:
            raise ValueError("max_slowdown needs a baseline report")
        results.append(_slowdown(baseline, report, thresholds.max_slowdown, rules))
    return results


def _at_most(name: str, what: str, value: float | None, limit: float, lacking: str) -> CheckResult:
    if value is None:
        return _unchecked(name, what, lacking)
    passed = value <= limit
    sign = "<=" if passed else ">"
    status = "ok  " if passed else "FAIL"
    shown, allowed = _pcts(value, limit)
    return CheckResult(name, passed, f"{status} {what} {shown} {sign} {allowed} allowed (--{name})")


def _min_rate(report: Report, limit: float) -> CheckResult:
    name = "min-steps-per-s"
    rate = training_rate(report)
    if rate is None:
        return _unchecked(name, "training rate", "no measured steps")
    passed = rate >= limit
    sign = ">=" if passed else "<"
    status = "ok  " if passed else "FAIL"
    return CheckResult(
        name, passed, f"{status} training {rate:.1f} steps/s {sign} {limit:g} required (--{name})"
    )


def _slowdown(baseline: Report, report: Report, limit: float, rules: NoiseRules) -> CheckResult:
    name = "max-slowdown"
    base, new = run_figures(baseline, rules).training, run_figures(report, rules).training
    if base is None or new is None:
        which = "baseline" if base is None else "report"
        return _unchecked(name, "training rate", "no measured steps", which)
    change = noise.interval(base, new, rules)
    slowdown = 1.0 - change.change
    rates = (
        f"{base.value:.1f} -> {new.value:.1f} steps/s, 95% interval "
        f"{change.low:.2f}-{change.high:.2f}x"
    )
    if slowdown <= 0:
        how = f"{change.change:.2f}x faster" if change.change > 1 else "as fast"
        return CheckResult(name, True, f"ok   training {how} than the baseline ({rates})")
    slower = f"training {_pct(slowdown)} slower than the baseline ({rates})"
    if slowdown <= limit:
        return CheckResult(name, True, f"ok   {slower}, within the {_pct(limit)} allowed")
    if noise.is_noise(change):
        line = f"ok   {slower}: over the {_pct(limit)} allowed but within the runs' noise"
        return CheckResult(name, True, line)
    line = f"FAIL {slower}: over the {_pct(limit)} allowed (--{name}), beyond the runs' noise"
    return CheckResult(name, False, line)


def _unchecked(name: str, what: str, lacking: str, which: str = "report") -> CheckResult:
    return CheckResult(
        name, False, f"FAIL {what}: the {which} has {lacking}; --{name} cannot be checked"
    )


def _pct(fraction: float, digits: int | None = None) -> str:
    """A share as a percentage: whole points, tenths under 10% (5% stays "5%")."""
    if digits is None:
        digits = 1 if abs(fraction) < 0.1 else 0
    text = f"{fraction * 100:.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text}%"


def _pcts(value: float, limit: float) -> tuple[str, str]:
    """Two shares with enough digits to tell them apart: never "20% > 20%"."""
    digits = 1 if min(abs(value), abs(limit)) < 0.1 else 0
    while _pct(value, digits) == _pct(limit, digits) and value != limit and digits < 4:
        digits += 1
    return _pct(value, digits), _pct(limit, digits)
