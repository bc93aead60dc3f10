"""Words for each stage's cost measured on training (docs/design.md, "Stage costs on
training"): what holding a stage's output in memory did to the training rate."""

from __future__ import annotations

from collections.abc import Sequence

from pipediag.renderers.numbers import speedup
from pipediag.report.names import stage_name
from pipediag.report.stages import StageStats


def held_stage(stages: Sequence[StageStats]) -> StageStats | None:
    """The stage to name: the jump stage, else the output-most one measured (nothing
    material was found: holding the most shows how little the pipeline costs)."""
    measured = [s for s in stages if s.training_speedup_if_free is not None]
    jump = next((s for s in measured if s.training_cost_jump), None)
    return jump or (measured[-1] if measured else None)


def held_text(stats: StageStats) -> str:
    """ "holding map(parse) in memory: training 2.4x (2.1-2.7x)"; "" when not measured."""
    value = stats.training_speedup_if_free
    if value is None:
        return ""
    text = f"holding {stage_name(stats)} in memory: training {speedup(value)}"
    low, high = stats.training_speedup_if_free_low, stats.training_speedup_if_free_high
    if low is not None and high is not None:
        text += f" ({low:.1f}-{speedup(high)})"
    return text
