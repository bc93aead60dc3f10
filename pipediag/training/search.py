"""A search on training (the stage holds' or the rewrites'): trials decided one at a time,
each from the last one's rounds, run here on a train function pipediag calls at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from pipediag.bench.interleaved import Rounds
from pipediag.bench.teardown import TearDown
from pipediag.bench.whatif import FixPipelines
from pipediag.clock import Clock
from pipediag.report.reasons import Reason
from pipediag.training.training_trial import Trial, try_at_once


class Search(Protocol):
    """Trials decided one at a time: the next one's pipelines and seconds, then its rounds."""

    def next_trial(self) -> tuple[FixPipelines, float] | None: ...
    def record(self, rounds: Rounds | None, reason: Reason | None = None) -> None: ...


def run(search: Search, try_one: Callable[[FixPipelines, float], Trial]) -> None:
    """Each trial by `try_one(pipelines, seconds)`, at once, until the search or its time ends."""
    while (due := search.next_trial()) is not None:
        search.record(*try_one(*due))


def run_at_once(
    search: Search, trainer: Any, *, clock: Clock, step_s: float, teardown: TearDown
) -> None:
    """Run the search on fit's model or a loop's tf.function, each trial by `try_at_once`."""

    def try_one(pipelines: FixPipelines, seconds: float) -> Trial:
        return try_at_once(
            trainer, pipelines, clock=clock, step_s=step_s, budget_s=seconds, teardown=teardown
        )

    run(search, try_one)
