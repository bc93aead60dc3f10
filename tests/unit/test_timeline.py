"""The step budget: a count of measured steps, bounded by time for slow steps."""

from __future__ import annotations

import math

from pipediag.timeline import BRIEF_MEASURED_S, MIN_MEASURED_STEPS, StepTimeline


def _add(timeline: StepTimeline, count: int, step_s: float, t: float = 0.0) -> list[bool]:
    reached = []
    for _ in range(count):
        reached.append(timeline.add(t, t + step_s, 0.0))
        t += step_s
    return reached


def test_fast_steps_stop_at_the_step_count() -> None:
    timeline = StepTimeline(warmup_steps=5, measured_steps=100, measured_seconds=5.0)
    reached = _add(timeline, 105, 0.01)
    assert reached.index(True) == 104 and timeline.budget_reached


def test_slow_steps_stop_once_the_measured_steps_span_the_time_bound() -> None:
    # GIVEN 125 ms steps after a slow warm-up, and a 5 s bound
    timeline = StepTimeline(warmup_steps=5, measured_steps=100, measured_seconds=5.0)
    assert not any(_add(timeline, 5, 2.0))  # the warm-up's time does not count
    reached = _add(timeline, 100, 0.125, t=10.0)
    # THEN the budget is reached at the 40th measured step (5 s), and stays reached
    assert reached.index(True) == 39
    assert all(reached[39:])
    assert timeline.budget_reached


def test_the_time_bound_never_stops_before_the_minimum_steps() -> None:
    timeline = StepTimeline(warmup_steps=0, measured_steps=100, measured_seconds=1.0)
    reached = _add(timeline, 40, 1.0)
    assert reached.index(True) == MIN_MEASURED_STEPS - 1


def test_an_exact_count_has_no_time_bound() -> None:
    timeline = StepTimeline(warmup_steps=0, measured_steps=30, measured_seconds=None)
    assert _add(timeline, 30, 1.0).index(True) == 29


def test_an_extended_budget_goes_on_after_the_time_bound() -> None:
    timeline = StepTimeline(warmup_steps=0, measured_steps=100, measured_seconds=2.0)
    reached = _add(timeline, 20, 0.125)
    assert reached.index(True) == 19  # 2 s passed at step 16; 20 steps are the least
    timeline.extend_budget(20)
    assert not any(_add(timeline, 19, 0.125, t=3.0))
    assert _add(timeline, 1, 0.125, t=6.0) == [True]


def test_a_loop_whose_waits_are_not_timed_measures_briefly() -> None:
    # GIVEN 30 ms steps and a 3 s bound, then the brief bound asked for
    timeline = StepTimeline(warmup_steps=5, measured_steps=100, measured_seconds=3.0)
    timeline.measure_briefly()
    reached = _add(timeline, 100, 0.03)
    # THEN the budget is reached once the measured steps span BRIEF_MEASURED_S (34 steps)
    assert reached.index(True) == 5 + math.ceil(BRIEF_MEASURED_S / 0.03) - 1
    # and slow steps still measure the fewest steps
    slow = StepTimeline(warmup_steps=0, measured_steps=100, measured_seconds=3.0)
    slow.measure_briefly()
    assert _add(slow, 40, 0.5).index(True) == MIN_MEASURED_STEPS - 1


def test_the_brief_bound_leaves_an_exact_count_and_workers_in_lockstep_alone() -> None:
    exact = StepTimeline(warmup_steps=0, measured_steps=30, measured_seconds=None)
    lockstep = StepTimeline(warmup_steps=0, measured_steps=30, measured_seconds=3.0, fixed_end=True)
    for timeline in (exact, lockstep):
        timeline.measure_briefly()
    assert _add(exact, 30, 0.1).index(True) == 29
    assert not any(_add(lockstep, 29, 0.1))
