"""Interleaved A/B rounds stop when the speedup is clear: the stop rules, and the rounds loop
on a fake clock (the interval itself: `test_paired.py`).

The loop runs on iterators that advance a `FakeClock` per batch (20 ms against 0.1 ms, or
alternating costs), so the rates, and therefore the stops, are exact: no sleeps.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import pytest
from synthetic_reports import FakeClock

from pipediag.analysis.paired import TRIAL_MIN_ROUNDS
from pipediag.bench.interleaved import Rounds, Run, run_rounds, stop_reason
from pipediag.bench.pipeline import BatchTiming, time_iterator

SLICE_S = 0.2


class _Batches(Iterator[int]):
    """An endless iterator whose batches take `cost_s` of fake time each."""

    def __init__(self, clock: FakeClock, cost_s: float, first_s: float = 0.0) -> None:
        self.clock = clock
        self.cost_s = cost_s
        self.first_s = first_s

    def __next__(self) -> int:
        self.clock.sleep(self.first_s or self.cost_s)
        self.first_s = 0.0
        return 0


def _side(
    clock: FakeClock, costs_s: Sequence[float], first_s: float = 0.0
) -> tuple[list[float], Run]:
    """A side whose runs cost each of `costs_s` per batch in turn; the seconds each was given."""
    given: list[float] = []
    cycle = itertools.cycle(costs_s)

    def run(max_seconds: float) -> BatchTiming:
        given.append(max_seconds)
        batches = _Batches(clock, next(cycle), first_s)
        return time_iterator(batches, max_batches=10_000, max_seconds=max_seconds, clock=clock)

    return given, run


# --- the stop rules ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("interval", "best_low", "expected"),
    [
        (None, None, None),
        ((1.2, 2.5), None, "clear gain"),
        ((0.7, 0.95), None, "clear no gain"),
        ((0.97, 1.04), None, "clear no gain"),  # any gain is under the advisor's 1.05 floor
        ((0.9, 1.3), None, None),
        ((0.9, 1.3), 1.5, "outranked"),
        ((0.9, 1.3), 1.2, None),  # the intervals overlap: it may still be the best
        ((1.1, 1.3), 2.0, "clear gain"),  # a clear gain is said so, even if not the best
    ],
)
def test_stop_reason(
    interval: tuple[float, float] | None, best_low: float | None, expected: str | None
) -> None:
    assert stop_reason(interval, best_low) == expected


# --- the rounds ------------------------------------------------------------------------------


def _rounds(
    base_costs: Sequence[float],
    variant_costs: Sequence[float],
    *,
    until_s: float = 100.0,
    best_low: float | None = None,
) -> Rounds:
    clock = FakeClock()
    _, base = _side(clock, base_costs)
    _, variant = _side(clock, variant_costs)
    rounds = run_rounds(
        base,
        variant,
        slice_s=SLICE_S,
        until_s=clock.now() + until_s,
        hard_until_s=clock.now() + 2 * until_s,
        clock=clock,
        best_low=best_low,
    )
    return rounds


def test_a_clear_gain_stops_after_the_minimum_rounds() -> None:
    # GIVEN a baseline at 20 ms per batch and a variant at 0.1 ms
    rounds = _rounds([0.020], [0.0001])

    assert rounds.stopped == "clear gain"
    assert len(rounds.ratios) == TRIAL_MIN_ROUNDS
    assert rounds.ratios == pytest.approx([200.0] * TRIAL_MIN_ROUNDS)


def test_a_fix_that_changes_nothing_stops_as_no_gain() -> None:
    rounds = _rounds([0.010], [0.010])

    assert rounds.stopped == "clear no gain"
    assert len(rounds.ratios) == TRIAL_MIN_ROUNDS


def test_an_unclear_fix_runs_until_its_time_is_spent() -> None:
    # GIVEN a variant 0.8x in one run and 1.25x the next: its interval always straddles 1
    rounds = _rounds([0.010], [0.0125, 0.008], until_s=3.0)

    # THEN it stops at the budget: rounds of ~0.4 s, none started that would end after 3 s
    assert rounds.stopped == "budget"
    assert TRIAL_MIN_ROUNDS < len(rounds.ratios) <= 3.0 / (2 * SLICE_S)


def test_an_unclear_fix_that_cannot_beat_the_best_stops_as_outranked() -> None:
    rounds = _rounds([0.010], [0.0125, 0.008], best_low=1.5)

    assert rounds.stopped == "outranked"
    assert len(rounds.ratios) == TRIAL_MIN_ROUNDS


def test_rounds_alternate_which_side_goes_first() -> None:
    clock = FakeClock()
    order: list[str] = []

    def side(name: str, cost_s: float) -> Run:
        def run(max_seconds: float) -> BatchTiming:
            order.append(name)
            return time_iterator(_Batches(clock, cost_s), max_seconds=max_seconds, clock=clock)

        return run

    run_rounds(
        side("A", 0.02),
        side("B", 0.0001),
        slice_s=SLICE_S,
        until_s=clock.now() + 100,
        hard_until_s=clock.now() + 100,
        clock=clock,
    )

    assert "".join(order) == "ABBAABBAAB"


def test_a_slow_first_batch_gets_its_time_back_in_later_rounds() -> None:
    # GIVEN a baseline whose first batch (a buffer filling) takes 1 s, longer than a slice
    clock = FakeClock()
    given, base = _side(clock, [0.010], first_s=1.0)
    _, variant = _side(clock, [0.001])

    rounds = run_rounds(
        base,
        variant,
        slice_s=SLICE_S,
        until_s=clock.now() + 100,
        hard_until_s=clock.now() + 100,
        clock=clock,
    )

    # THEN round 1 has no baseline rate, and later rounds give it the slice plus that second
    assert rounds.baseline[0].batches_per_s is None
    assert given[1:] == pytest.approx([SLICE_S + 1.0] * (len(given) - 1))
    assert rounds.stopped == "clear gain"
    assert len(rounds.ratios) == TRIAL_MIN_ROUNDS


def test_no_round_starts_past_the_hard_limit() -> None:
    clock = FakeClock()
    _, base = _side(clock, [0.01])
    _, variant = _side(clock, [0.01])

    rounds = run_rounds(
        base,
        variant,
        slice_s=SLICE_S,
        until_s=clock.now() + 100,
        hard_until_s=clock.now() + SLICE_S,  # not even one round fits
        clock=clock,
    )

    assert rounds.stopped == "budget" and rounds.baseline == [] and rounds.ratios == []


def test_a_stalled_round_is_left_out_of_the_figure_and_its_interval() -> None:
    # GIVEN a variant twice as fast, but one of its five runs stalled to 1.25x
    rounds = _rounds([0.010], [0.005, 0.005, 0.005, 0.005, 0.008])

    # THEN the trial stops at its fewest rounds on a clear gain of 2x, the stall left out
    assert rounds.stopped == "clear gain"
    assert len(rounds.ratios) == TRIAL_MIN_ROUNDS
    assert min(rounds.ratios) == pytest.approx(1.25)
    assert rounds.interval == pytest.approx((2.0, 2.0))
    assert rounds.speedup == pytest.approx(2.0)
    base, variant = rounds.rates()
    assert base == pytest.approx(100.0)
    assert variant == pytest.approx(200.0)
