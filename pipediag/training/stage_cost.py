"""Each stage's cost to training: the train step fed by the pipeline with that stage's output
held in memory, in turn with the unchanged pipeline, the stages chosen by a bisection toward
the jump (docs/design.md, "Stage costs on training")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pipediag.analysis.alternation import ABOVE_STEP_ALONE
from pipediag.analysis.paired import HOLD_MIN_SHARE_S, HOLD_MIN_TRIAL_S
from pipediag.analysis.stage_bisect import Freed, jump_stage, next_stage, planned_trials
from pipediag.bench.hold import HeldCopies
from pipediag.bench.interleaved import Rounds
from pipediag.bench.teardown import TearDown
from pipediag.bench.whatif import FixPipelines
from pipediag.clock import Clock
from pipediag.report import stage_facts
from pipediag.report.reasons import Reason
from pipediag.report.stages import StageStats
from pipediag.training.search import run_at_once


def trial_share_s(left_s: float, planned: int) -> float | None:
    """An equal share of `left_s` over the trials `planned`; None under `HOLD_MIN_SHARE_S`."""
    share_s = min(left_s, max(left_s / max(1, planned), HOLD_MIN_TRIAL_S))
    return share_s if share_s >= HOLD_MIN_SHARE_S else None


def freed_from(rounds: Rounds | None) -> Freed | None:
    """The speedup of the held side over the unchanged one."""
    if rounds is None:
        return None
    base, held = rounds.rates()
    if base is None or held is None or base <= 0:
        return None
    low, high = rounds.interval if rounds.interval is not None else (None, None)
    return Freed(held / base, low, high, held)


def held_ceiling(stages: Sequence[StageStats], ceiling: float | None) -> float | None:
    """The step-alone ceiling, raised to the output stage's held rate where that ran faster
    (docs/design.md, "Rates in alternation")."""
    # The search holds the output stage first: without its rate no other stage is held.
    output = stage_facts.output_stage(stages)
    if ceiling is None or output is None or output.training_held_steps_per_s is None:
        return ceiling
    return max(ceiling, output.training_held_steps_per_s * ABOVE_STEP_ALONE)


def above_ceiling(rounds: Rounds | None, ceiling: float | None) -> Reason | None:
    """Why a held trial was disturbed: it ran faster than the step alone; None within."""
    held = rounds.rates()[1] if rounds is not None else None
    if ceiling is None or held is None or held <= ceiling:
        return None
    return Reason("held-above-step-alone", value=held, limit=ceiling)


@dataclass
class Searched:
    """Each held stage's speedup (None: no usable rate), why one is not used, the jump."""

    measured: dict[int, Freed | None] = field(default_factory=dict)
    unused: dict[int, Reason] = field(default_factory=dict)
    jump: int | None = None


class StageSearch:
    """The bisection's trials one at a time; a held rate above `ceiling` counts as unmeasured."""

    def __init__(
        self,
        copies: HeldCopies,
        *,
        clock: Clock,
        until_s: float,
        ceiling: float | None = None,
        output_s: float = 0.0,
    ) -> None:
        self._copies = copies
        self._clock = clock
        self._until_s = until_s
        self._ceiling = ceiling
        # The output's hold (the first trial) is given at least this where the verdict rests
        # on it (docs/design.md, "The held output").
        self._output_s = output_s
        self._chain = [stage.index for stage in copies.chain]
        self._by_index = {stage.index: stage for stage in copies.chain}
        self._pending: int | None = None
        self.searched = Searched()

    def next_trial(self) -> tuple[FixPipelines, float] | None:
        measured = self.searched.measured
        index = next_stage(self._chain, measured)
        if index is None:
            return None
        left_s = self._until_s - self._clock.now()
        share_s = trial_share_s(left_s, planned_trials(self._chain, measured))
        if index == self._chain[-1] and self._output_s > (share_s or 0.0):
            share_s = self._output_s
        if share_s is None:
            return None
        self._pending = index
        return self._copies.pipelines(self._by_index[index]), share_s

    def record(self, rounds: Rounds | None, reason: Reason | None = None) -> None:
        index, self._pending = self._pending, None
        if index is None:
            return
        searched = self.searched
        freed = freed_from(rounds)
        if index == self._chain[-1] and self._ceiling is not None and freed is not None:
            # A faster whole-pipeline hold says the step-alone blocks were slowed (`held_ceiling`).
            self._ceiling = max(self._ceiling, (freed.held_steps_per_s or 0.0) * ABOVE_STEP_ALONE)
        unused = above_ceiling(rounds, self._ceiling)
        if unused is not None:
            searched.unused[index] = unused
            freed = None  # the bisection cannot read a disturbed trial
        searched.measured[index] = freed
        searched.jump = jump_stage(self._chain, searched.measured)


def on_fit(
    trainer: Any,
    search: StageSearch,
    stages: Sequence[StageStats],
    *,
    step_s: float,
    clock: Clock,
    teardown: TearDown,
) -> list[StageStats]:
    """`stages` with what holding each measured on a train function pipediag calls."""
    run_at_once(search, trainer, clock=clock, step_s=step_s, teardown=teardown)
    return with_freed(stages, search.searched)


def with_freed(stages: Sequence[StageStats], searched: Searched) -> list[StageStats]:
    """Each stage with its speedup if free, or why it is not used; the jump marked."""
    updated = []
    for stats in stages:
        freed, unused = searched.measured.get(stats.index), searched.unused.get(stats.index)
        if freed is not None:
            stats = replace(
                stats,
                training_speedup_if_free=freed.speedup,
                training_speedup_if_free_low=freed.low,
                training_speedup_if_free_high=freed.high,
                training_held_steps_per_s=freed.held_steps_per_s,
            )
        if unused is not None:
            stats = replace(stats, training_speedup_if_free_unused=unused)
        if searched.jump is not None and stats.index == searched.jump:
            stats = replace(stats, training_cost_jump=True)
        updated.append(stats)
    if searched.jump is None:
        return _bottleneck_not_freed(updated)
    named = bottleneck_at_jump(updated, searched.jump, set(searched.measured))
    return [replace(s, bottleneck=s.index == named) for s in updated]


def _bottleneck_not_freed(stages: list[StageStats]) -> list[StageStats]:
    """Where the search ended before its jump (docs/design.md, "Stage costs on training")."""
    held = sorted((s for s in stages if s.training_speedup_if_free), key=lambda s: s.index)
    steps, before = {}, 1.0
    for stats in held:
        gain = stats.training_speedup_if_free or 1.0
        steps[stats.index] = gain / before
        before = max(before, gain)
    largest = max(steps, key=lambda index: steps[index], default=None)
    if largest is not None and steps[largest] >= stage_facts.VERIFIED_MIN_GAIN:
        named = bottleneck_at_jump(stages, largest, set(steps))
        return [replace(s, bottleneck=s.index == named) for s in stages]
    cleared: set[int] = set()
    for stats in stages:
        if stage_facts.if_free_clearly_under(stats):
            cleared |= stage_facts.upstream_of(stages, stats.index)
    marked = next((s for s in stages if s.bottleneck), None)
    if marked is None or marked.index not in cleared:
        return stages
    left = [
        s
        for s in stages
        if s.index not in cleared
        and s.own_s_per_batch
        and s.kind not in stage_facts.NO_OWN_WORK_KINDS
    ]
    costliest = max(left, key=lambda s: s.own_s_per_batch or 0.0, default=None)
    return [replace(s, bottleneck=s is costliest) for s in stages]


def bottleneck_at_jump(stages: Sequence[StageStats], jump: int, held: set[int]) -> int:
    """The bottleneck among the stages the jump's hold frees and the hold before did not:
    prefix timing's, else the costliest read alone, those that compute first, ties to the
    script's function, then the jump (docs/design.md, "Stage costs on training")."""
    freed = stage_facts.upstream_of(stages, jump)
    for index in held:
        if index != jump and index in freed:
            freed -= stage_facts.upstream_of(stages, index)
    marked = [i for i in freed if stages[i].bottleneck]
    if marked:
        return marked[0]
    # Holding a prefetch frees the map before it: computing stages first, whatever it added.
    costs = [
        (
            stages[i].kind not in stage_facts.NO_OWN_WORK_KINDS,
            stages[i].own_s_per_batch or 0.0,
            stages[i].function is not None,
            i == jump,
            i,
        )
        for i in freed
    ]
    return max(costs)[-1] if costs else jump
