"""`pipediag check`'s lines: "ok   ..." or "FAIL ...", one per threshold."""

from __future__ import annotations

from pipediag.analysis.gate import (
    MAX_INPUT_COST,
    MAX_INPUT_WAIT,
    MAX_SLOWDOWN,
    MIN_STEPS_PER_S,
    CheckResult,
    RateChange,
)

SHARE_NAMES = {MAX_INPUT_COST: "input cost", MAX_INPUT_WAIT: "input wait"}
# Why a check could not run; {run} is the run without the figure: "report" or "baseline".
LACKING = {
    MAX_INPUT_COST: "input cost: the {run} has no input cost (no compute-alone rate, or no "
    "measured steps)",
    MAX_INPUT_WAIT: "input wait: the {run} has no input wait (the steps' waits were not measured)",
    MIN_STEPS_PER_S: "training rate: the {run} has no measured steps",
    MAX_SLOWDOWN: "training rate: the {run} has no measured steps",
}


def check_line(result: CheckResult) -> str:
    name, value = result.name, result.value
    if value is None:
        lacking = LACKING[name].format(run=result.lacking_in or "report")
        return f"FAIL {lacking}; --{name} cannot be checked"
    if result.rates is not None:
        return _slowdown_line(result.rates, value, result.limit, passed=result.passed)
    status = "ok  " if result.passed else "FAIL"
    if name == MIN_STEPS_PER_S:
        sign = ">=" if result.passed else "<"
        return f"{status} training {value:.1f} steps/s {sign} {result.limit:g} required (--{name})"
    sign = "<=" if result.passed else ">"
    shown, allowed = _pcts(value, result.limit)
    return f"{status} {SHARE_NAMES[name]} {shown} {sign} {allowed} allowed (--{name})"


def _slowdown_line(rates: RateChange, slowdown: float, limit: float, *, passed: bool) -> str:
    change = rates.change
    figures = (
        f"{rates.baseline:.1f} -> {rates.new:.1f} steps/s, 95% interval "
        f"{change.low:.2f}-{change.high:.2f}x"
    )
    if slowdown <= 0:
        how = f"{change.change:.2f}x faster" if change.change > 1 else "as fast"
        return f"ok   training {how} than the baseline ({figures})"
    slower = f"training {_pct(slowdown)} slower than the baseline ({figures})"
    if slowdown <= limit:
        return f"ok   {slower}, within the {_pct(limit)} allowed"
    if passed:  # within the runs' noise
        return f"ok   {slower}: over the {_pct(limit)} allowed but within the runs' noise"
    return (
        f"FAIL {slower}: over the {_pct(limit)} allowed (--{MAX_SLOWDOWN}), beyond the runs' noise"
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
