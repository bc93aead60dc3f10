"""Each stage's cost to training, measured: the user's train step fed by the pipeline with
that stage's output held in memory, in turn with the unchanged pipeline.

Under `fit` (and in a loop that pulls inside a tf.function) each held copy is one trial of
`run_at_once`; a custom loop at its step budget is served them instead
(`training/loop_search.py`). The stages are chosen by `analysis/stage_bisect.py`: the output
stage first, then a bisection toward the jump. A held rate above the train step alone's is
not used, and the bisection reads that stage as unmeasured. Method: (docs/design.md, "Stage
costs on training").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pipediag.analysis.alternation import ABOVE_STEP_ALONE
from pipediag.analysis.paired import TRAINING_SLICES
from pipediag.analysis.stage_bisect import Freed, jump_stage, next_stage, planned_trials
from pipediag.bench.hold import HeldCopies
from pipediag.bench.interleaved import Rounds
from pipediag.bench.teardown import TearDown
from pipediag.bench.whatif import FixPipelines
from pipediag.clock import Clock
from pipediag.report.model import StageStats
from pipediag.report.reasons import HELD_ABOVE_STEP_ALONE, Reason
from pipediag.report.stage_facts import (
    NO_OWN_WORK_KINDS,
    VERIFIED_MIN_GAIN,
    if_free_clearly_under,
    upstream_of,
)
from pipediag.training.search import TryOne, run, run_at_once

# A trial with less time than this cannot run its five rounds (`FixRounds` refuses it).
MIN_SHARE_S = 6 * TRAINING_SLICES.shortest_s
# A trial is given at least this (five rounds of two shortest slices, with their untimed
# first steps), when there is that much left: a short budget then still measures the output
# stage, which says whether the pipeline's cost is worth searching at all.
MIN_TRIAL_S = 12 * TRAINING_SLICES.shortest_s


def freed_from(rounds: Rounds | None) -> Freed | None:
    """The speedup of the held side over the unchanged one, as a fix's is read on training."""
    if rounds is None:
        return None
    base, held = rounds.rates()
    if base is None or held is None or base <= 0:
        return None
    low, high = rounds.interval if rounds.interval is not None else (None, None)
    return Freed(held / base, low, high, held)


def held_ceiling(stages: Sequence[StageStats], ceiling: float | None) -> float | None:
    """The step-alone ceiling, raised to the output stage's held rate where that ran faster
    (docs/design.md, "Rates in alternation"): the whole pipeline held is the train step on
    held batches, timed while the live pipeline sat idle with its buffers full, where the
    step-alone blocks run while it refills them. None where no ceiling was measured."""
    held = [s for s in stages if s.training_held_steps_per_s is not None]
    if ceiling is None or not held:
        return ceiling
    # The search holds the output-most stage first, and every stage before it with it.
    output = max(held, key=lambda s: s.index)
    return max(ceiling, (output.training_held_steps_per_s or 0.0) * ABOVE_STEP_ALONE)


def above_ceiling(rounds: Rounds | None, ceiling: float | None) -> Reason | None:
    """Why a held trial's gain cannot be used: its held side fed training faster than the
    train step alone ran (`analysis.alternation.step_alone_ceiling`), which no pipeline
    can make it do, so the trial was disturbed. None when it is within the ceiling."""
    held = rounds.rates()[1] if rounds is not None else None
    if ceiling is None or held is None or held <= ceiling:
        return None
    return Reason(HELD_ABOVE_STEP_ALONE, value=held, limit=ceiling)


@dataclass
class Searched:
    """What the search measured: each held stage's speedup (None: no usable rate), why a
    stage's gain is not used (above the step-alone ceiling), and the jump stage."""

    measured: dict[int, Freed | None] = field(default_factory=dict)
    unused: dict[int, Reason] = field(default_factory=dict)
    jump: int | None = None


class StageSearch:
    """The bisection's trials one at a time, each decided from the last one's result: the
    loop at its budget asks for the next between its pulls (`training/loop_search.py`), fit
    runs them at once (`search`).

    Args:
        copies: the held copies of the training dataset.
        clock: the session's clock.
        until_s: when the last trial is to end, on `clock`.
        ceiling: the train step alone's rate with its noise; a held rate above it is
            flagged and counts as unmeasured (None: not known).
    """

    def __init__(
        self, copies: HeldCopies, *, clock: Clock, until_s: float, ceiling: float | None = None
    ) -> None:
        self._copies = copies
        self._clock = clock
        self._until_s = until_s
        self._ceiling = ceiling
        self._chain = [stage.index for stage in copies.chain]
        self._by_index = {stage.index: stage for stage in copies.chain}
        self._pending: int | None = None
        self.searched = Searched()

    def next_trial(self) -> tuple[FixPipelines, float] | None:
        """The held copies to try next and the seconds they get; None when the search is
        over or the time left cannot hold a trial."""
        measured = self.searched.measured
        index = next_stage(self._chain, measured)
        if index is None:
            return None
        left_s = self._until_s - self._clock.now()
        planned_s = left_s / max(1, planned_trials(self._chain, measured))
        share_s = min(left_s, max(planned_s, MIN_TRIAL_S))
        if share_s < MIN_SHARE_S:
            return None
        self._pending = index
        return self._copies.pipelines(self._by_index[index]), share_s

    def record(self, rounds: Rounds | None, reason: Reason | None = None) -> None:
        """The pending trial's rounds (None: it gave none, and `reason` may say why)."""
        index, self._pending = self._pending, None
        if index is None:
            return
        searched = self.searched
        freed = freed_from(rounds)
        if index == self._chain[-1] and self._ceiling is not None and freed is not None:
            # The whole pipeline held is the step alone, on held batches: a faster rate
            # there says the step-alone blocks were slowed, not this trial
            # (`held_ceiling`); it bounds the holds after it.
            held = freed.held_steps_per_s or 0.0
            self._ceiling = max(self._ceiling, held * ABOVE_STEP_ALONE)
        unused = above_ceiling(rounds, self._ceiling)
        if unused is not None:
            searched.unused[index] = unused
            freed = None  # the bisection cannot read a disturbed trial
        searched.measured[index] = freed
        searched.jump = jump_stage(self._chain, searched.measured)


def search(
    copies: HeldCopies,
    try_one: TryOne,
    *,
    clock: Clock,
    until_s: float,
    ceiling: float | None = None,
) -> Searched:
    """Hold stages in the bisection's order until it ends or the time does."""
    stages = StageSearch(copies, clock=clock, until_s=until_s, ceiling=ceiling)
    run(stages, try_one)
    return stages.searched


def on_fit(
    trainer: Any,
    copies: HeldCopies,
    stages: Sequence[StageStats],
    *,
    step_s: float,
    clock: Clock,
    until_s: float,
    teardown: TearDown,
    ceiling: float | None = None,
) -> list[StageStats]:
    """`stages` with what holding each measured on a train function pipediag calls at once
    (fit's model, or the tf.function a loop pulls inside), until `until_s`: `copies` holds
    each stage of the pipeline in turn, as a custom loop's `HoldPlan` does.

    The caller keeps the pipeline's own variables (`bench.isolate.preserved_variables`);
    `run_at_once` puts back the trained ones.
    """

    search = StageSearch(copies, clock=clock, until_s=until_s, ceiling=ceiling)
    run_at_once(search, trainer, clock=clock, step_s=step_s, teardown=teardown)
    return with_freed(stages, search.searched)


def with_freed(stages: Sequence[StageStats], searched: Searched) -> list[StageStats]:
    """Each stage with its speedup if free and interval, or why its gain is not used; the
    jump stage marked."""
    updated = []
    for stats in stages:
        freed = searched.measured.get(stats.index)
        unused = searched.unused.get(stats.index)
        if freed is not None:
            stats = dataclasses.replace(
                stats,
                training_speedup_if_free=freed.speedup,
                training_speedup_if_free_low=freed.low,
                training_speedup_if_free_high=freed.high,
                training_held_steps_per_s=freed.held_steps_per_s,
            )
        if unused is not None:
            stats = dataclasses.replace(stats, training_speedup_if_free_unused=unused)
        if searched.jump is not None and stats.index == searched.jump:
            stats = dataclasses.replace(stats, training_cost_jump=True)
        updated.append(stats)
    if searched.jump is None:
        return _bottleneck_not_freed(updated)
    named = bottleneck_at_jump(updated, searched.jump, set(searched.measured))
    return [dataclasses.replace(s, bottleneck=s.index == named) for s in updated]


def _bottleneck_not_freed(stages: list[StageStats]) -> list[StageStats]:
    """Where the search ended before its jump: the stages its largest step between holds
    freed, where that step gained training; else prefix timing's bottleneck, unless a hold
    cleared it. A run named map(1) with its hold at 1.02x (0.98-1.2x) and the output's at
    4.8x: the output's hold freed 4.7x more than map(1)'s, so the cost lies after map(1)."""
    held = sorted((s for s in stages if s.training_speedup_if_free), key=lambda s: s.index)
    steps, before = {}, 1.0
    for stats in held:
        gain = stats.training_speedup_if_free or 1.0
        steps[stats.index] = gain / before
        before = max(before, gain)
    largest = max(steps, key=lambda index: steps[index], default=None)
    if largest is not None and steps[largest] >= VERIFIED_MIN_GAIN:
        named = bottleneck_at_jump(stages, largest, set(steps))
        return [dataclasses.replace(s, bottleneck=s.index == named) for s in stages]
    cleared: set[int] = set()
    for stats in stages:
        if if_free_clearly_under(stats):
            cleared |= upstream_of(stages, stats.index)
    marked = next((s for s in stages if s.bottleneck), None)
    if marked is None or marked.index not in cleared:
        return stages
    left = [s for s in stages if s.index not in cleared and s.own_s_per_batch]
    named_stage = max(left, key=lambda s: s.own_s_per_batch or 0.0, default=None)
    return [
        dataclasses.replace(s, bottleneck=named_stage is not None and s.index == named_stage.index)
        for s in stages
    ]


def bottleneck_at_jump(stages: Sequence[StageStats], jump: int, held: set[int]) -> int:
    """The bottleneck the jump names: of the stages its hold frees that the held stage
    before it did not, prefix timing's bottleneck where it is one of them (its cost stands
    clear of noise), else the one that costs most read alone, else one that runs the
    script's function, else one that computes over one that only passes elements on, else
    the jump stage. Prefix
    timing alone can put a stage's cost on its neighbour on a busy host; the jump is
    measured on training (docs/design.md, "Stage costs on training")."""
    freed = upstream_of(stages, jump)
    for index in held:
        if index != jump and index in freed:
            freed -= upstream_of(stages, index)
    marked = [i for i in freed if stages[i].bottleneck]
    if marked:
        return marked[0]
    # Unread alone (stage timing ran out of time), a stage that runs the script's function
    # goes first, then one that computes, before one that only buffers or passes elements
    # on: holding a prefetch frees the map before it.
    costs = [
        (
            stages[i].own_s_per_batch or 0.0,
            stages[i].function is not None,
            stages[i].kind not in NO_OWN_WORK_KINDS,
            i == jump,
            i,
        )
        for i in freed
    ]
    return max(costs)[-1] if costs else jump
