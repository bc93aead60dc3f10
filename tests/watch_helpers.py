"""Shared by the watcher's unit and integration tests: a watcher over a real step timeline
on a fake clock, fed steps of known waits."""

from __future__ import annotations

from pipediag.config import WatchConfig
from pipediag.testing import FakeClock
from pipediag.timeline import StepTimeline
from pipediag.watch.watcher import Watcher

STEP_S = 0.01


class Said:
    """Collects what the watcher says and notes."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.notes: list[str] = []


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
