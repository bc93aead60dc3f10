"""Under fit, the measured steps end early where fit's steps left are what the alternation
wants (docs/design.md, "Rates in alternation"): a short script's cost then has its interval.
The fit tracker driven with a fake clock; the alternation itself is stubbed."""

from __future__ import annotations

import pytest
from synthetic_reports import FakeClock

from pipediag.config import RunConfig
from pipediag.hooks.batch_stamps import BatchStamps
from pipediag.hooks.keras_fit import FitTracker
from pipediag.session import DiagnosticSession
from pipediag.timeline import StepBudgetReached, StepTimeline


def _fit(
    epochs: int,
    steps: int,
    step_s: float,
    *,
    fixed_end: bool = False,
    extends: bool = False,
    observer_check: bool = False,
) -> int:
    """The step count at which the budget was reached (the alternation started)."""
    clock = FakeClock()
    config = RunConfig(
        measured_steps=40,
        warmup_steps=5,
        sample_host=False,
        sample_gpu=False,
        observer_check=observer_check,
    )
    session = DiagnosticSession("x", [], config, clock=clock, log=None, install_hooks=False)
    if fixed_end:
        session.timeline = StepTimeline(warmup_steps=5, measured_steps=40, fixed_end=True)
    tracker = FitTracker(session)
    tracker.stamps = BatchStamps(clock)
    started: list[int] = []

    def alternate(*, ends_fit: bool, batch: int) -> bool:
        started.append(len(session.timeline))
        raise StepBudgetReached

    tracker._alternate = alternate  # type: ignore[method-assign]
    if extends:  # a cache fills in epoch 1: every budget asks to measure on
        session.keep_measuring = lambda: True  # type: ignore[method-assign]
    tracker.on_train_begin(epochs, steps)
    with pytest.raises(StepBudgetReached):
        for epoch in range(epochs):
            tracker.on_epoch_begin(epoch, steps)
            for batch in range(steps):
                tracker.on_batch_begin(batch)
                clock.advance(step_s)
                tracker.on_batch_end(batch)
    return started[0]


def test_a_short_fit_leaves_the_alternation_its_steps() -> None:
    # GIVEN a tutorial's 3 epochs of 20 steps of 120 ms (blocks of 4 steps: 8 blocks want 32)
    # WHEN it is measured with the default 40 steps after 5 of warm-up
    # THEN the measured steps end at step 28, leaving 32 for the alternation, not 12
    assert _fit(3, 20, 0.12) == 28


def test_a_long_fit_keeps_the_default_budget() -> None:
    assert _fit(3, 1000, 0.01) == 45


def test_workers_in_lockstep_end_at_the_step_count_only() -> None:
    # Each worker's own step time would end its budget at its own step.
    assert _fit(3, 20, 0.12, fixed_end=True) == 45


def test_too_few_steps_for_the_fewest_measured_keep_them() -> None:
    # 30 steps of 120 ms: 20 measured after the warm-up come first, at step 25
    assert _fit(1, 30, 0.12) == 25


def test_an_extension_into_a_cached_epoch_still_leaves_the_alternation_its_steps() -> None:
    # GIVEN a budget that is extended each time it is reached (a cache filling in epoch 1)
    # THEN the measured steps still end where fit's steps left are what the alternation wants
    assert _fit(3, 20, 0.12, extends=True) == 28


def test_the_observer_check_leaves_room_for_its_own_blocks_too() -> None:
    # GIVEN 5 epochs of 44 steps of 45 ms (blocks of 9 steps): the rounds want 8 blocks (72
    # steps), the observer check's own 12 more (180 in all)
    # THEN without the check the default budget holds (175 steps left at step 45); with it,
    # the measured steps end at step 40, leaving the 180
    assert _fit(5, 44, 0.045) == 45
    assert _fit(5, 44, 0.045, observer_check=True) == 40
