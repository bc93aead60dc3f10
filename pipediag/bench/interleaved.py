"""Every change's trial: rounds of the original (A) and the changed side (B), alternating
which goes first, each one ratio of rates (docs/design.md, "The paired engine")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Protocol

from pipediag.analysis.paired import TRIAL_MIN_ROUNDS, RatioFigure, ratio_figure
from pipediag.bench.pipeline import BatchTiming
from pipediag.clock import Clock
from pipediag.report.stage_facts import VERIFIED_MIN_GAIN
from pipediag.report.vocabulary import TrialStop

# One side's read: given the time it may take, the timing of a fresh (or kept) iterator.
Run = Callable[[float], BatchTiming]


@dataclass(frozen=True)
class Rounds:
    """What a trial's runs measured, and why they stopped; `speedup` and `interval` are the
    paired engine's (`analysis/paired.py`), the interval from `TRIAL_MIN_ROUNDS` rounds on."""

    baseline: list[BatchTiming]
    variant: list[BatchTiming]
    ratios: list[float]
    interval: tuple[float, float] | None
    stopped: TrialStop
    speedup: float | None = None

    def rates(self) -> tuple[float | None, float | None]:
        """The baseline's median rate, and the variant's as baseline times `speedup`."""
        if (base := median_rate(self.baseline)) is None or base <= 0:
            return None, None
        if self.speedup is None:
            return base, median_rate(self.variant)
        return base, base * self.speedup


def stop_reason(interval: tuple[float, float] | None, best_low: float | None) -> TrialStop | None:
    """Why a trial with this interval should stop now, or None to go on."""
    if interval is None:
        return None
    low, high = interval
    if low > 1.0:
        return "clear gain"
    if high < VERIFIED_MIN_GAIN:
        return "clear no gain"
    return "outranked" if best_low is not None and high < best_low else None


class RoundPlan:
    """One trial's rounds, apart from who runs the slices (a loop's trial may: `loop_search`)."""

    def __init__(
        self,
        *,
        slice_s: float,
        until_s: float,
        hard_until_s: float,
        clock: Clock,
        best_low: float | None = None,
    ) -> None:
        self._slice_s, self._until_s = slice_s, until_s
        self._hard_until_s, self._clock = hard_until_s, clock
        self._best_low = best_low
        self._runs: tuple[list[BatchTiming], list[BatchTiming]] = ([], [])
        self._first_s = [0.0, 0.0]
        self._ratios: list[float] = []
        self._figure: RatioFigure | None = None
        self._round_s = 2 * slice_s  # until one round is measured
        self._round_began: float | None = None
        self._pending: list[int] = []
        self.stopped: TrialStop | None = None

    def next_slice(self) -> tuple[int, float] | None:
        """The side to run next (0 baseline, 1 variant) and its seconds; None once stopped."""
        if self.stopped is not None:
            return None
        if not self._pending:
            now, done = self._clock.now(), len(self._runs[0])
            soft_limit = self._until_s if done >= TRIAL_MIN_ROUNDS else self._hard_until_s
            if now + self._round_s > min(soft_limit, self._hard_until_s):
                self.stopped = "budget"
                return None
            self._round_began = now
            self._pending = [0, 1] if done % 2 == 0 else [1, 0]
        side = self._pending[0]
        return side, self._slice_s + self._first_s[side]

    def record(self, side: int, timing: BatchTiming) -> None:
        """The timing of the slice `next_slice` asked for."""
        if not self._pending or self._pending[0] != side:
            raise ValueError(f"side {side} was not the one due")
        self._pending.pop(0)
        self._first_s[side] = timing.first_batch_s or 0.0
        self._runs[side].append(timing)
        if self._pending:
            return
        assert self._round_began is not None
        self._round_s = self._clock.now() - self._round_began
        base, fixed = self._runs[0][-1].batches_per_s, self._runs[1][-1].batches_per_s
        if base and fixed is not None:
            self._ratios.append(fixed / base)
        self._figure = ratio_figure(self._ratios)
        self.stopped = stop_reason(self._interval(), self._best_low)

    def _interval(self) -> tuple[float, float] | None:
        figure = self._figure
        if len(self._ratios) < TRIAL_MIN_ROUNDS or figure is None or figure.low is None:
            return None
        return None if figure.high is None else (figure.low, figure.high)

    def rounds(self) -> Rounds:
        """What the rounds measured; a plan cut short (the loop ended) stopped on `budget`."""
        return Rounds(
            self._runs[0][: len(self._runs[1])] if self._pending else self._runs[0],
            self._runs[1][: len(self._runs[0])] if self._pending else self._runs[1],
            list(self._ratios),
            self._interval(),
            self.stopped or "budget",
            None if self._figure is None else self._figure.speedup,
        )


def run_rounds(
    baseline: Run,
    variant: Run,
    *,
    slice_s: float,
    until_s: float,
    hard_until_s: float,
    clock: Clock,
    best_low: float | None = None,
) -> Rounds:
    """A/B rounds until the speedup is clear or the time is spent: no round starts that would
    end after `until_s` once `TRIAL_MIN_ROUNDS` ran, nor after `hard_until_s` at all. A side
    whose untimed first batch took long gets that much more than `slice_s` later."""
    plan = RoundPlan(
        slice_s=slice_s, until_s=until_s, hard_until_s=hard_until_s, clock=clock, best_low=best_low
    )
    sides = (baseline, variant)
    run_slices(plan, lambda side, seconds: sides[side](seconds))
    return plan.rounds()


class SlicePlan(Protocol):
    """A measurement as a plan: the side due next and its seconds, then what its slice read."""

    def next_slice(self) -> tuple[int, float] | None: ...

    def record(self, side: int, timing: BatchTiming) -> None: ...


def run_slices(plan: SlicePlan, run: Callable[[int, float], BatchTiming | None]) -> None:
    """Every slice the plan asks for, run at once by `run` (not by a loop's pulls) and recorded;
    a run that returns None failed, and has told the plan why: no slice runs after it."""
    while (due := plan.next_slice()) is not None:
        side, seconds = due
        if (timing := run(side, seconds)) is None:
            return
        plan.record(side, timing)


def median_rate(runs: Sequence[BatchTiming]) -> float | None:
    rates = [r for r in (t.batches_per_s for t in runs) if r is not None]
    return median(rates) if rates else None
