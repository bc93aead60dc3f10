"""The paired engine's interval: the mean log ratio's Student-t interval, with the pairs a
host stall disturbed left out, for every comparison alike."""

from __future__ import annotations

import math

import pytest

from pipediag.analysis.paired import (
    TRIAL_MIN_ROUNDS,
    disturbed,
    log_interval,
    pooled,
    ratio_figure,
    t90,
)
from pipediag.bench.interleaved import stop_reason


def test_t90_matches_the_tables_and_refuses_a_single_pair() -> None:
    assert t90(1) == pytest.approx(6.314)
    assert t90(4) == pytest.approx(2.132)
    assert t90(30) == pytest.approx(1.725)  # the table's tail: 1.697 exact
    with pytest.raises(ValueError, match="two pairs"):
        t90(0)


def test_one_pair_has_a_figure_but_no_interval() -> None:
    found = log_interval([math.log(2.0)])
    assert found is not None
    assert math.exp(found.mean) == pytest.approx(2.0)
    assert (found.low, found.high, found.pairs) == (None, None, 1)
    assert log_interval([]) is None


def test_the_interval_narrows_as_pairs_come() -> None:
    logs = [math.log(r) for r in (1.9, 2.1, 1.95, 2.05, 2.0, 1.98, 2.02, 1.97, 2.03, 2.0)]
    widths = []
    for n in (3, 5, 10):
        found = log_interval(logs[:n])
        assert found is not None and found.low is not None and found.high is not None
        assert found.low < math.log(2.0) < found.high
        widths.append(found.high - found.low)
    assert widths[0] > widths[1] > widths[2]


def test_a_stalled_round_is_left_out_of_a_clear_gain() -> None:
    # GIVEN five rounds at 1.9-2.1x and a sixth a host stall cut to 1.2x
    ratios = [1.9, 1.95, 2.0, 2.05, 2.1, 1.2]

    # THEN the stalled round is the one left out, and the gain is clear and tight
    logs = {i: math.log(r) for i, r in enumerate(ratios)}
    assert disturbed(logs) == {5}
    figure = ratio_figure(ratios)
    assert figure is not None and figure.low is not None and figure.high is not None
    assert figure.speedup == pytest.approx(2.0, abs=0.01)
    assert figure.low == pytest.approx(1.93, abs=0.01)
    assert figure.high == pytest.approx(2.08, abs=0.01)
    assert stop_reason((figure.low, figure.high), None) == "clear gain"


def test_a_wide_spread_leaves_nothing_out() -> None:
    # Rounds alternating 0.8x and 1.25x are noise, not one stall: all are kept
    ratios = [0.8, 1.25] * 3
    assert disturbed({i: math.log(r) for i, r in enumerate(ratios)}) == set()
    figure = ratio_figure(ratios)
    assert figure is not None and figure.low is not None and figure.high is not None
    assert figure.low < 1.0 < figure.high


def test_fewer_than_three_values_have_no_median_to_be_far_from() -> None:
    assert disturbed({0: 0.0, 1: math.log(5.0)}) == set()


def test_a_trial_s_fewest_rounds_give_an_interval() -> None:
    figure = ratio_figure([1.5] * (TRIAL_MIN_ROUNDS - 1) + [1.6])
    assert figure is not None and figure.low is not None
    one = ratio_figure([1.5])
    assert one is not None and one.speedup == pytest.approx(1.5) and one.low is None
    assert ratio_figure([]) is None


def test_the_figure_lies_inside_its_interval() -> None:
    # Six rounds at 2.0x and four at 2.3x: the figure is the geometric mean, not the ratio
    # of the two sides' median rates (2.0), so the interval always holds it
    figure = ratio_figure([2.0] * 6 + [2.3] * 4)
    assert figure is not None and figure.low is not None and figure.high is not None
    assert figure.low < figure.speedup < figure.high
    assert figure.speedup == pytest.approx(math.exp(0.6 * math.log(2.0) + 0.4 * math.log(2.3)))


def test_two_stalls_in_seven_are_left_out_but_not_three() -> None:
    rates = {i: math.log(38.0) for i in range(7)}
    rates[2] = rates[5] = math.log(27.0)
    assert disturbed(rates) == {2, 5}
    rates[6] = math.log(27.0)
    assert disturbed(rates) == set()


def test_two_modes_of_noise_are_not_a_stall() -> None:
    # GIVEN rounds at 0.8x and 1.25x in turn, three of one and two of the other
    ratios = [0.8, 1.25, 0.8, 1.25, 0.8]

    # THEN the two at 1.25x, far off the median of five, are not dropped as stalls
    assert disturbed({i: math.log(r) for i, r in enumerate(ratios)}) == set()
    figure = ratio_figure(ratios)
    assert figure is not None and figure.low is not None and figure.high is not None
    assert figure.low < 1.0 < figure.high


def test_readings_that_agree_pool_to_a_narrower_interval_between_them() -> None:
    mean, half = pooled([(0.30, 0.04), (0.34, 0.03)])
    # the more precise reading weighs more; together they know more than either
    assert 0.32 < mean < 0.34
    assert half < 0.03


def test_readings_that_disagree_widen_the_interval_to_reach_toward_each() -> None:
    # three pairs at 7% (6-8%) against a held trial at 1% (0.5-1.5%)
    mean, half = pooled([(0.07, 0.01), (0.01, 0.005)])
    assert 0.01 < mean < 0.07
    assert half >= (0.07 - mean) / 2 and mean - half < 0.02


def test_a_chance_narrow_reading_does_not_outweigh_the_other_without_bound() -> None:
    mean, _ = pooled([(0.20, 1e-9), (0.30, 0.005)])
    assert mean == pytest.approx(0.25)
    with pytest.raises(ValueError):
        pooled([])
