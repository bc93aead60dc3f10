"""Each stage's cost to training, measured: the user's train step fed by the pipeline with
that stage's output held in memory, in turn with the unchanged pipeline.

Under `fit` each held copy is one trial of `try_on_fit` (the compiled train function, every
variable it writes put back, rounds stopped when the interval is clear). The stages are
chosen by `analysis/stage_bisect.py`: the output stage first, then a bisection toward the
jump, each trial taking an equal share of what is left of the time (docs/design.md, "Stage
costs on training").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from pipediag.analysis.stage_bisect import Freed, jump_stage, next_stage, planned_trials
from pipediag.bench.hold import HOLD, HeldCopies
from pipediag.bench.interleaved import Rounds, median_rate
from pipediag.bench.teardown import TearDown
from pipediag.bench.whatif import FixPipelines
from pipediag.clock import Clock
from pipediag.report.model import StageStats
from pipediag.training.training_trial import MIN_SLICE_S, TrialResults, try_on_fit

# A trial with less time than this cannot run its five rounds (`try_on_fit` refuses it).
MIN_SHARE_S = 6 * MIN_SLICE_S
# A trial is given at least this (five rounds of two shortest slices, with their untimed
# first steps), when there is that much left: a short budget then still measures the output
# stage, which says whether the pipeline's cost is worth searching at all.
MIN_TRIAL_S = 12 * MIN_SLICE_S

# Runs the trial of one held copy within the seconds given: its rounds, or why none.
TryOne = Callable[[FixPipelines, float], tuple[Rounds | None, str | None]]


def freed_from(rounds: Rounds | None) -> Freed | None:
    """The speedup of the held side over the unchanged one, as a fix's is read on training."""
    if rounds is None:
        return None
    base, held = median_rate(rounds.baseline), median_rate(rounds.variant)
    if base is None or held is None or base <= 0:
        return None
    low, high = rounds.interval if rounds.interval is not None else (None, None)
    return Freed(held / base, low, high)


def search(
    copies: HeldCopies, try_one: TryOne, *, clock: Clock, until_s: float
) -> tuple[dict[int, Freed | None], int | None]:
    """Hold stages in the bisection's order until it ends or the time does: what each
    measured, and the jump stage where found."""
    chain = [stage.index for stage in copies.chain]
    by_index = {stage.index: stage for stage in copies.chain}
    measured: dict[int, Freed | None] = {}
    while (index := next_stage(chain, measured)) is not None:
        left_s = until_s - clock.now()
        planned_s = left_s / max(1, planned_trials(chain, measured))
        share_s = min(left_s, max(planned_s, MIN_TRIAL_S))
        if share_s < MIN_SHARE_S:
            break
        rounds, _ = try_one(copies.pipelines(by_index[index]), share_s)
        measured[index] = freed_from(rounds)
    return measured, jump_stage(chain, measured)


def on_fit(
    model: Any,
    dataset: Any,
    stages: Sequence[StageStats],
    *,
    pipeline_batches_per_s: float | None,
    step_s: float,
    clock: Clock,
    until_s: float,
    teardown: TearDown,
) -> list[StageStats]:
    """`stages` with what holding each measured on fit's train function, until `until_s`.

    The caller keeps the pipeline's own variables (`bench.isolate.preserved_variables`);
    `try_on_fit` puts back the model's.
    """

    def try_one(pipelines: FixPipelines, seconds: float) -> tuple[Rounds | None, str | None]:
        results: TrialResults = try_on_fit(
            model, [pipelines], clock=clock, step_s=step_s, budget_s=seconds, teardown=teardown
        )
        return results.get((HOLD, pipelines.stage_index), (None, "not tried"))

    copies = HeldCopies(dataset, pipeline_batches_per_s)
    measured, jump = search(copies, try_one, clock=clock, until_s=until_s)
    return with_freed(stages, measured, jump)


def with_freed(
    stages: Sequence[StageStats], measured: dict[int, Freed | None], jump: int | None
) -> list[StageStats]:
    """Each stage with its speedup if free and interval; the jump stage marked."""
    updated = []
    for stats in stages:
        freed = measured.get(stats.index)
        if freed is not None:
            stats = dataclasses.replace(
                stats,
                training_speedup_if_free=freed.speedup,
                training_speedup_if_free_low=freed.low,
                training_speedup_if_free_high=freed.high,
            )
        if jump is not None and stats.index == jump:
            stats = dataclasses.replace(stats, training_cost_jump=True)
        updated.append(stats)
    return updated
