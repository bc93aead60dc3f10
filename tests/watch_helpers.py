"""Shared by the watcher's unit and integration tests: a watcher over a real step timeline
on a fake clock, fed steps of known waits."""

from __future__ import annotations

from synthetic_reports import FakeClock

from pipediag.config import WatchConfig
from pipediag.report.reasons import Reason
from pipediag.report.watch import WatchAlert
from pipediag.timeline import StepTimeline
from pipediag.watch.watcher import Watcher

STEP_S = 0.01


class Said:
    """Collects what the watcher says and notes."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.notes: list[Reason] = []


def make_watcher(
    config: WatchConfig, clock: FakeClock, said: Said, warmup: int = 0
) -> tuple[Watcher, StepTimeline]:
    timeline = StepTimeline(warmup_steps=warmup, measured_steps=None)
    watcher = Watcher(
        config,
        timeline,
        clock=clock,
        warmup_steps=warmup,
        script="train.py",
        log=said.lines.append,
        note=said.notes.append,
    )
    watcher.start(clock.now(), background=False)
    return watcher, timeline


def train_steps(
    timeline: StepTimeline, clock: FakeClock, waits: list[float | None], epoch: int = 0
):
    for wait in waits:
        start = clock.now()
        clock.advance(STEP_S)
        timeline.add(start, clock.now(), wait, epoch)


def alert(index: int = 3) -> WatchAlert:
    """An alert as the rule makes one: 41% wait for 3 windows in a row, ending at `index`."""
    return WatchAlert(
        t_s=12.5,
        window_index=index,
        first_step=100,
        last_step=399,
        windows=3,
        threshold=0.2,
        input_wait_fraction=0.41,
        steps_per_s=55.5,
        epoch=2,
    )
