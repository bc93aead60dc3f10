"""Which stage to hold in memory next, when each stage's cost is measured on training.

Holding stage k's output in memory frees stages 0..k at once, so along a chain (each stage
reading the one before) the training speedup "if free" can only grow toward the output.
The output-most stage is measured first: if freeing the whole pipeline gains nothing, no
stage can, and nothing else runs. Otherwise a bisection finds where the gain crosses half
of the whole pipeline's: that stage is the one whose cost training pays (docs/design.md,
"Stage costs on training"). Pure: it reads measured speedups and names stage indices.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pipediag.report.stage_facts import VERIFIED_MIN_GAIN

# The jump is where holding a stage frees this share of the step time that holding the whole
# pipeline frees. Time, not the speedup, is what adds up along the chain: a map freeing 87%
# of the step (7.8x) beside a whole pipeline freeing 95% (20x) holds most of the cost,
# though 7.8x is under half of 20x.
JUMP_SHARE = 0.5


@dataclass(frozen=True)
class Freed:
    """What holding one stage in memory measured on training: the speedup and its interval."""

    speedup: float
    low: float | None = None
    high: float | None = None
    held_steps_per_s: float | None = None  # the held side's own rate


# Stage index -> what holding it measured; None where its trial gave no rate.
Measured = Mapping[int, Freed | None]


def material(freed: Freed | None) -> bool:
    """Whether freeing gains enough to be worth naming: at least the advisor's 1.05, and
    clear of 1 where an interval exists."""
    if freed is None or freed.speedup < VERIFIED_MIN_GAIN:
        return False
    return freed.low is None or freed.low > 1.0


def next_stage(chain: Sequence[int], measured: Measured) -> int | None:
    """The stage to measure next, or None when the search is over.

    Args:
        chain: stage indices, source-most first; each holds every stage before it.
        measured: what the stages measured so far.
    """
    return _walk(chain, measured)[0]


def jump_stage(chain: Sequence[int], measured: Measured) -> int | None:
    """The stage whose holding first frees most of the pipeline's cost; None when it is not
    found (nothing material, a trial without a rate, or the search not finished)."""
    pending, found = _walk(chain, measured)
    return found if pending is None else None


def planned_trials(chain: Sequence[int], measured: Measured) -> int:
    """About how many trials are left: the output stage, then the bisection's halvings."""
    if not chain:
        return 0
    if chain[-1] not in measured:
        return 1 + math.ceil(math.log2(len(chain)))
    low, high = _bounds(chain, measured)
    return math.ceil(math.log2(high - low)) if high - low > 1 else 0


def _bounds(chain: Sequence[int], measured: Measured) -> tuple[int, int]:
    """The bisection's bracket as positions in `chain` (-1: nothing held, no gain)."""
    whole = measured[chain[-1]]
    assert whole is not None
    target = 1.0 / (1.0 - JUMP_SHARE * (1.0 - 1.0 / whole.speedup))
    low, high = -1, len(chain) - 1
    while high - low > 1:
        middle = (low + high) // 2
        found = measured.get(chain[middle])
        if found is None:
            break
        if found.speedup >= target:
            high = middle
        else:
            low = middle
    return low, high


def _walk(chain: Sequence[int], measured: Measured) -> tuple[int | None, int | None]:
    """(the stage to measure next, the jump stage once found)."""
    if not chain:
        return None, None
    last = chain[-1]
    if last not in measured:
        return last, None
    if not material(measured[last]):
        return None, None
    low, high = _bounds(chain, measured)
    if high - low <= 1:
        return None, chain[high]
    middle = chain[(low + high) // 2]
    if middle in measured:  # measured without a rate: the bisection cannot go on
        return None, None
    return middle, None
