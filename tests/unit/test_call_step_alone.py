"""The step alone of a loop that pulls inside a tf.function: blocks of whole calls."""

from __future__ import annotations

from typing import Any

import pytest

from pipediag.training.driver import TrainDriver
from pipediag.training.function_loop import CallStepAlone
from tests.synthetic_reports import FakeClock

CALL_S = 0.6


class _Calls:
    """What `CallStepAlone` reads of a found training function: a call runs `steps_per_call`
    steps and takes `CALL_S` on the clock."""

    def __init__(self, steps_per_call: int, clock: FakeClock) -> None:
        self.steps_per_call, self.calls_made, self._clock = steps_per_call, 0, clock
        self.function: Any = None
        self.calls = 0

    @property
    def batches_per_call(self) -> int:
        return max(1, self.steps_per_call)

    def count(self) -> int:
        return self.calls_made

    def call(self) -> None:
        self.calls += 1
        self.calls_made += self.steps_per_call
        self._clock.advance(CALL_S)


def _block(steps_per_call: int, warmup: int, block_steps: int) -> tuple[_Calls, list[float]]:
    clock = FakeClock(start=0.0)
    calls = _Calls(steps_per_call, clock)
    runner = CallStepAlone(calls, TrainDriver(train=calls.call, batches_per_call=steps_per_call))  # type: ignore[arg-type]
    marks: list[float] = []

    def step_ended(at: float) -> bool:
        marks.append(at)
        return len(marks) > block_steps  # the first mark opens the block

    runner.block(step_ended, clock=clock, warmup=warmup)
    return calls, marks


def test_a_multi_step_call_warms_up_once_and_its_block_is_whole_calls() -> None:
    calls, marks = _block(steps_per_call=15, warmup=3, block_steps=15)
    # One call warms up (three steps' worth), then one call is the block, from its start.
    assert calls.calls == 2
    assert marks[0] == pytest.approx(CALL_S)
    assert marks[1:] == pytest.approx([CALL_S + CALL_S * k / 15 for k in range(1, 16)])


def test_single_step_calls_warm_up_for_each_step() -> None:
    calls, marks = _block(steps_per_call=1, warmup=3, block_steps=4)
    assert calls.calls == 3 + 4
    assert marks == pytest.approx([3 * CALL_S + CALL_S * k for k in range(5)])


def test_the_calls_steps_are_put_back_after_the_block() -> None:
    calls, _ = _block(steps_per_call=4, warmup=3, block_steps=8)
    assert calls.calls == 1 + 2
    assert calls.calls_made == 0
