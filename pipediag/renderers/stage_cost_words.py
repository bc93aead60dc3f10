"""What holding a stage's output in memory did to the training rate, in words
(docs/design.md, "Stage costs on training")."""

from __future__ import annotations

from collections.abc import Sequence

from pipediag.renderers.numbers import speedup
from pipediag.renderers.reason_words import reason_words
from pipediag.report.names import stage_name
from pipediag.report.stage_facts import upstream_of
from pipediag.report.stages import StageStats


def held_stage(stages: Sequence[StageStats]) -> StageStats | None:
    """The jump stage, else the output-most one measured, else one whose gain was not used."""
    measured = [s for s in stages if s.training_speedup_if_free is not None]
    jump = next((s for s in measured if s.training_cost_jump), None)
    unused = [s for s in stages if s.training_speedup_if_free_unused]
    return jump or (measured[-1] if measured else None) or (unused[-1] if unused else None)


def costliest_stage(stages: Sequence[StageStats]) -> StageStats | None:
    """The bottleneck the jump names, else the jump stage (a zip only passes elements on)."""
    marked = next((s for s in stages if s.bottleneck), None)
    jump = next((s for s in stages if s.training_cost_jump), None)
    if jump is None or (marked is not None and marked.index in upstream_of(stages, jump.index)):
        return marked or jump
    return jump  # a mark the jump's hold does not free is prefix timing's, not the jump's


def if_free_text(stats: StageStats) -> str:
    if (value := stats.training_speedup_if_free) is None:
        return "if free: not used" if stats.training_speedup_if_free_unused else ""
    text = f"{speedup(value)} if free"
    return f"{text} (jump)" if stats.training_cost_jump else text


def holding_text(stats: StageStats) -> str:
    return f"holding {stage_name(stats)} in memory"


def held_text(stats: StageStats) -> str:
    """ "holding map(parse) in memory: training 2.4x (2.1-2.7x)", or why it is not used."""
    if (value := stats.training_speedup_if_free) is None:
        unused = stats.training_speedup_if_free_unused
        return f"{holding_text(stats)}: {reason_words(unused)}" if unused else ""
    text = f"{holding_text(stats)}: training {speedup(value)}"
    low, high = stats.training_speedup_if_free_low, stats.training_speedup_if_free_high
    if low is not None and high is not None:
        text += f" ({low:.1f}-{speedup(high)})"
    return text
