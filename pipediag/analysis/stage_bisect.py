"""Which stage to hold in memory next when stage costs are measured on training: the
output-most, then a bisection (docs/design.md, "Stage costs on training")."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pipediag.report.stage_facts import VERIFIED_MIN_GAIN

# Share of the step time the whole pipeline's hold frees (time adds up along a chain, not speedup).
JUMP_SHARE = 0.5


@dataclass(frozen=True)
class Freed:
    speedup: float
    low: float | None = None
    high: float | None = None
    held_steps_per_s: float | None = None  # the held side's own rate


# Stage index -> what holding it measured; None where its trial gave no rate.
Measured = Mapping[int, Freed | None]


def material(freed: Freed | None) -> bool:
    """At least the advisor's 1.05, and clear of 1 where an interval exists."""
    if freed is None or freed.speedup < VERIFIED_MIN_GAIN:
        return False
    return freed.low is None or freed.low > 1.0


def next_stage(chain: Sequence[int], measured: Measured) -> int | None:
    """None when the search is over; `chain`: stage indices, source-most first."""
    return _walk(chain, measured)[0]


def jump_stage(chain: Sequence[int], measured: Measured) -> int | None:
    """The stage whose holding first frees most of the pipeline's cost, once found."""
    pending, found = _walk(chain, measured)
    return found if pending is None else None


def planned_trials(chain: Sequence[int], measured: Measured) -> int:
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
        if (found := measured.get(chain[middle])) is None:
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
    if (last := chain[-1]) not in measured:
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
