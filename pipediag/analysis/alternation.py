"""Blocks of training (A) and of the train step alone (T) taken in turn, read as pairs: each
T block against the A blocks either side (docs/design.md, "Rates in alternation")."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from pipediag.analysis.paired import MAX_ROUNDS, disturbed, log_interval, robust_sd
from pipediag.report.model import ObserverEffect, RateBlock
from pipediag.report.stage_facts import output_stage
from pipediag.report.stages import StageStats
from pipediag.report.vocabulary import RateBlockKind

# Watched or with the samplers paused: training blocks alike for the cost.
TRAINING_KINDS: tuple[RateBlockKind, ...] = ("training", "quiet-training")

# A leading step under this share of its block's steady median (served from a refilled
# buffer), or over this multiple (beside the refill), is the block's transition.
FAST_LEADING = 0.8
SLOW_LEADING = 1.25
# At most this share of a block is ever dropped as its transition.
MAX_DROPPED_SHARE = 0.5
# Blocks whose rates fall in two groups at least this far apart (and as many spreads of
# each), each group holding both kinds of block, ran in two modes of the host; a block
# further from its mode's median than this share of the modes' distance straddled a switch
# (docs/design.md, "Rates in alternation").
HOST_MODE_GAP = 1.15
MODE_SPREADS = 2.0
MODE_REACH = 1 / 3


def steady_part(durations: Sequence[float]) -> tuple[list[float], int]:
    """Without its leading steps far off the second half's median, and how many were dropped:
    never more than `MAX_DROPPED_SHARE` of the block."""
    if len(durations) < 2:
        return list(durations), 0
    steady = statistics.median(durations[len(durations) // 2 :])
    limit, dropped = int(len(durations) * MAX_DROPPED_SHARE), 0
    for duration in durations[:limit]:
        share = duration / steady if steady > 0 else 1.0
        if FAST_LEADING <= share <= SLOW_LEADING:
            break
        dropped += 1
    return list(durations[dropped:]), dropped


def block_of(
    kind: RateBlockKind,
    start_s: float,
    durations: Sequence[float],
    *,
    cpu_s: float | None = None,
    whole: bool = False,
) -> RateBlock:
    """`whole`: keep every step, dispatched asynchronously (docs/design.md, "JAX")."""
    kept, dropped = (list(durations), 0) if whole else steady_part(durations)
    per_step = cpu_s / len(durations) if cpu_s is not None and durations else None
    return RateBlock(kind, start_s, len(kept), sum(kept), dropped, per_step)


@dataclass(frozen=True)
class PairedCost:
    """`cost`: 1 - A/T from the pairs' mean log ratio, `low`-`high` its 90% interval;
    negative where training ran faster than the step alone (callers clamp them)."""

    training: float  # A, steps/s, the training blocks pooled
    compute: float  # T, steps/s, the step-alone blocks pooled
    cost: float
    low: float | None
    high: float | None
    pairs: int
    # The in-epoch cost the pipeline's output held in memory read on training, where pooled
    # into `cost` (docs/design.md, "The held output").
    held: float | None = None

    @property
    def half_width(self) -> float | None:
        return None if self.low is None or self.high is None else (self.high - self.low) / 2


def host_modes(blocks: Sequence[RateBlock]) -> dict[int, int] | None:
    """Each block's mode, 0 slow and 1 fast; None where the host had no two modes, and none
    for a block that straddled a switch (docs/design.md, "Rates in alternation")."""
    logs = _log_rates(blocks, (*TRAINING_KINDS, "step-alone"))
    if len(order := sorted(logs, key=logs.__getitem__)) < 4:
        return None
    gap, split = max((logs[order[k + 1]] - logs[order[k]], k + 1) for k in range(len(order) - 1))
    sides = (order[:split], order[split:])
    if gap < math.log(HOST_MODE_GAP) or not all(_both_kinds(blocks, side) for side in sides):
        return None
    if any(gap < MODE_SPREADS * robust_sd(logs[i] for i in side) for side in sides):
        return None  # a wide spread with a gap in it, not two levels
    middles = [statistics.median(logs[i] for i in side) for side in sides]
    reach = (middles[1] - middles[0]) * MODE_REACH
    return {
        i: mode
        for mode, side in enumerate(sides)
        for i in side
        if abs(logs[i] - middles[mode]) <= reach
    }


def disturbed_blocks(blocks: Sequence[RateBlock], modes: dict[int, int] | None = None) -> set[int]:
    """Blocks a host stall slowed, in each mode (docs/design.md, "Rates in alternation")."""
    found: set[int] = set()
    for kinds in (TRAINING_KINDS, ("step-alone",)):
        logs = _log_rates(blocks, kinds)
        for group in [logs] if modes is None else _by_mode(logs, modes):
            found |= disturbed(group)
    return found


def _by_mode(logs: dict[int, float], modes: dict[int, int]) -> list[dict[int, float]]:
    # a block between the modes is in neither
    return [{i: value for i, value in logs.items() if modes.get(i) == mode} for mode in (0, 1)]


def _log_rates(blocks: Sequence[RateBlock], kinds: tuple[RateBlockKind, ...]) -> dict[int, float]:
    return {
        i: math.log(rate)
        for i, b in enumerate(blocks)
        if b.kind in kinds and (rate := b.steps_per_s) is not None and rate > 0
    }


def _both_kinds(blocks: Sequence[RateBlock], indices: Sequence[int]) -> bool:
    kinds = {blocks[i].kind for i in indices}
    return "step-alone" in kinds and any(kind in kinds for kind in TRAINING_KINDS)


def _left_out(blocks: Sequence[RateBlock]) -> tuple[set[int], dict[int, int] | None]:
    """The blocks no pair reads (stalled, or between the host's modes), and the modes."""
    modes = host_modes(blocks)
    left_out = disturbed_blocks(blocks, modes)
    if modes is not None:
        left_out |= {i for i in range(len(blocks)) if i not in modes}
    return left_out, modes


def paired_cost(blocks: list[RateBlock], *, around_s: float = 0.0) -> PairedCost | None:
    """None without a T block beside an A block; disturbed blocks left out. `around_s`, what
    the script's loop adds around each step (fit's callbacks), is added to each T step."""
    left_out, modes = _left_out(blocks)
    kept = [b for i, b in enumerate(blocks) if i not in left_out]
    ratios = _logs_against_training(blocks, "step-alone", left_out, modes, around_s)  # log(T/A)
    if (found := log_interval(ratios)) is None:
        return None
    low, high = found.ends(log_cost)
    return PairedCost(
        training=_pooled(kept, *TRAINING_KINDS),
        compute=_pooled(kept, "step-alone", around_s=around_s),
        cost=log_cost(found.mean),
        low=low,
        high=high,
        pairs=found.pairs,
    )


def widened_for_looks(cost: PairedCost, rounds: int) -> float:
    """How far the pairs' low end moves down where the rounds read on past `MAX_ROUNDS`: the
    90% split over the looks made from there (Bonferroni), each a chance to stop where the
    interval left an edge (docs/design.md, "Rates in alternation"). 0 within the bound."""
    if rounds <= MAX_ROUNDS or cost.low is None:
        return 0.0
    normal = statistics.NormalDist()
    factor = normal.inv_cdf(1 - 0.05 / (rounds - MAX_ROUNDS + 1)) / normal.inv_cdf(0.95)
    mean, low = -math.log(1.0 - cost.cost), -math.log(1.0 - cost.low)
    return max(0.0, cost.low - log_cost(mean - factor * (mean - low)))


def observer_effect(
    blocks: Sequence[RateBlock], observer_blocks: Sequence[RateBlock] = ()
) -> ObserverEffect | None:
    """Training's rate with pipediag's samplers running over that with them paused."""
    if (found := log_interval(observer_logs(blocks, observer_blocks))) is None:
        return None
    low, high = found.ends(math.exp)
    return ObserverEffect(ratio=math.exp(found.mean), low=low, high=high, pairs=found.pairs)


def observer_logs(
    blocks: Sequence[RateBlock], observer_blocks: Sequence[RateBlock] = ()
) -> list[float]:
    """`observer_effect`'s pairs as log ratios, for pooling over runs: each quiet block, in
    the rounds or in the check's own blocks after them, against the watched blocks beside it."""
    every = [*blocks, *observer_blocks]
    left_out, modes = _left_out(every)
    if every and every[0].kind == "training":
        # No quiet block reads against the first: the measured steps' last block (the lead),
        # or the first after them, it reads off the rest (docs/design.md, "What pipediag
        # costs a step").
        left_out = left_out | {0}
    logs = _logs_against_training(
        every, "quiet-training", left_out, modes, against=("training",), both_sides=True
    )
    return [-value for value in logs]


def _logs_against_training(
    blocks: Sequence[RateBlock],
    kind: RateBlockKind,
    left_out: set[int],
    modes: dict[int, int] | None,
    around_s: float = 0.0,
    *,
    against: tuple[RateBlockKind, ...] = TRAINING_KINDS,
    both_sides: bool = False,
) -> list[float]:
    """log(rate / training's) per block of `kind`, against the `against` blocks either side in
    its own host mode (docs/design.md, "Rates in alternation"); `both_sides`: only a block
    with one on each side, whose mean cancels a steady drift."""
    logs: list[float] = []
    skip = kind != "step-alone"
    for i, block in enumerate(blocks):
        if block.kind != kind or block.steps_per_s is None or i in left_out:
            continue
        beside = [
            rate
            for j in (_beside(blocks, i, -1, skip), _beside(blocks, i, 1, skip))
            if j is not None
            and j not in left_out
            and (modes is None or modes[j] == modes[i])
            and blocks[j].kind in against
            and (rate := blocks[j].steps_per_s) is not None
        ]
        if len(beside) == 2 or (beside and not both_sides):
            training_log = sum(math.log(rate) for rate in beside) / len(beside)
            rate = block.steps / (block.seconds + block.steps * around_s)
            logs.append(math.log(rate) - training_log)
    return logs


def _beside(blocks: Sequence[RateBlock], i: int, step: int, past_step_alone: bool) -> int | None:
    j = i + step
    while past_step_alone and 0 <= j < len(blocks) and blocks[j].kind == "step-alone":
        j += step
    return j if 0 <= j < len(blocks) else None


def log_cost(log_ratio: float) -> float:
    """The cost 1 - A/T of log(T/A)."""
    return 1.0 - math.exp(-log_ratio)


def _pooled(blocks: Sequence[RateBlock], *kinds: RateBlockKind, around_s: float = 0.0) -> float:
    steps = sum(b.steps for b in blocks if b.kind in kinds)
    seconds = sum(b.seconds for b in blocks if b.kind in kinds) + steps * around_s
    return steps / seconds if seconds > 0 else 0.0


# A rate on training this far over the fastest step-alone block was disturbed.
ABOVE_STEP_ALONE = 1.05


def step_alone_ceiling(blocks: Sequence[RateBlock]) -> float | None:
    """The fastest training rate a fix can honestly show."""
    rates = [rate for b in blocks if b.kind == "step-alone" and (rate := b.steps_per_s) is not None]
    return max(rates) * ABOVE_STEP_ALONE if rates else None


def pipeline_cores(blocks: Sequence[RateBlock]) -> float | None:
    timed = [(b.kind, b.cpu_s_per_step) for b in blocks if b.cpu_s_per_step is not None]
    training = [cpu for kind, cpu in timed if kind in TRAINING_KINDS]
    alone = [cpu for kind, cpu in timed if kind == "step-alone"]
    rate = _pooled(blocks, *TRAINING_KINDS)
    if not training or not alone or rate <= 0:
        return None
    return max(0.0, (statistics.fmean(training) - statistics.fmean(alone)) * rate)


def held_beyond_step_alone(
    blocks: Sequence[RateBlock], stages: Sequence[StageStats]
) -> tuple[float, float] | None:
    """The whole pipeline held fed training faster than any step-alone block: (its rate, the
    fastest block's); the live pipeline's refills slowed those, so their cost is a lower bound."""
    ceiling, output = step_alone_ceiling(blocks), output_stage(stages)
    if ceiling is None or output is None or (rate := output.training_held_steps_per_s) is None:
        return None
    return (rate, ceiling / ABOVE_STEP_ALONE) if rate > ceiling else None
