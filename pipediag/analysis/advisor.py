"""The advisor: a table of rules over the report, each with a stable id, whose suggestions
carry their numbers and code, in a deterministic order (docs/design.md, "The advisor")."""

from __future__ import annotations

import math

from pipediag.analysis import cost_rules, prescription_rules, stage_rules
from pipediag.analysis.advice_context import Rule, build_context
from pipediag.analysis.cost_rules import CONTENTION_RULE, FETCH_RULE, SATURATED_RULE
from pipediag.analysis.stage_rules import HOIST_RULE, PORT_RULE
from pipediag.report.model import Report, Suggestion
from pipediag.report.stage_facts import VERIFIED_MIN_GAIN

# A stage's hold, or T/A where that capped it: what a port or a hoisted cache is ranked by.
BOUNDS = ("held", "input-free")
# The fixes that make a stage cheaper, not faster with more threads (`_said_once`).
CHEAPER_RULES = frozenset(
    {
        "PD004-vectorize-map",
        "PD005-cache-prefix",
        PORT_RULE,
        HOIST_RULE,
        prescription_rules.MEASURED_RULE,
    }
)


def advise(report: Report) -> list[Suggestion]:
    """Every suggestion the rules make for this report, best first (`_sort_key`)."""
    context, compute_bound = build_context(report), report.verdict.label == "compute-bound"
    # Passes over the data but no training: nothing input could cost.
    untrained = bool(report.train.skipped_passes) and not report.train.steps
    found: list[tuple[int, Suggestion]] = []
    for position, rule in enumerate(RULES):
        if rule.when == "input" and (compute_bound or untrained):
            continue
        if rule.when == "compute-bound" and not compute_bound:
            continue
        found.extend((position, s) for s in rule.check(context, rule.id))
    if not (compute_bound or untrained):
        measured = prescription_rules.measured_rewrites(context, [s for _, s in found])
        found.extend((len(RULES), s) for s in measured)
    why_none = cost_rules.why_no_input_fix(context, [s for _, s in found])
    found.extend((len(RULES), s) for s in why_none)
    found.sort(key=lambda item: _sort_key(item[0], item[1]))
    return _said_once([s for _, s in found])


def _said_once(found: list[Suggestion]) -> list[Suggestion]:
    """Without the contention fix for a stage another fix already says how to make cheaper
    (more threads, unmeasured on training, is no such fix)."""
    how = {
        s.stage_index
        for s in found
        if s.kind == "fix"
        and s.id != CONTENTION_RULE
        and (s.id in CHEAPER_RULES or (s.gain.on("training") or 0.0) >= VERIFIED_MIN_GAIN)
    }
    return [
        s
        for s in found
        if not (s.id == CONTENTION_RULE and s.stage_index is not None and s.stage_index in how)
    ]


RULES: tuple[Rule, ...] = (
    Rule("PD000-pipeline-fine", "compute-bound", cost_rules.check_pipeline_fine),
    Rule(SATURATED_RULE, "input", cost_rules.check_cpu_saturated),
    Rule(CONTENTION_RULE, "input", cost_rules.check_contention),
    Rule(FETCH_RULE, "input", cost_rules.check_fetch),
    Rule("PD015-epoch-start", "input", cost_rules.check_epoch_start),
    Rule(prescription_rules.PRESCRIPTION_RULE, "input", prescription_rules.check_prescription),
    Rule("PD001-sequential-map", "input", stage_rules.check_sequential_map),
    Rule("PD002-sequential-interleave", "input", stage_rules.check_sequential_interleave),
    Rule("PD005-cache-prefix", "input", stage_rules.check_cache),
    Rule(HOIST_RULE, "input", stage_rules.check_hoist_cache),
    Rule("PD004-vectorize-map", "input", stage_rules.check_vectorize),
    Rule("PD003-no-prefetch", "input", stage_rules.check_prefetch_at_end),
    Rule("PD009-autotune-off", "input", stage_rules.check_autotune_off),
    Rule(PORT_RULE, "input", stage_rules.check_py_function),
    Rule("PD006-cache-after-random", "always", stage_rules.check_cache_after_random),
    Rule("PD008-small-shuffle-buffer", "always", stage_rules.check_shuffle_buffer),
    Rule("PD011-gpu-idle-cause", "always", cost_rules.check_gpu_idle_cause),
)


def _sort_key(position: int, suggestion: Suggestion) -> tuple[int, int, float, int, int]:
    """The advisor's order (docs/design.md, "The advisor")."""
    group = 0 if suggestion.correctness_warning else (2 if suggestion.kind == "note" else 1)
    gain = suggestion.gain
    if gain.basis == "training" and gain.speedup is not None:
        tier, figure = (0 if gain.speedup >= VERIFIED_MIN_GAIN else 2), gain.speedup
    elif suggestion.id in (PORT_RULE, HOIST_RULE) and gain.basis in BOUNDS and gain.speedup:
        # A hoisted cache's hold is its gain from epoch 2; a port gains from nothing to all its
        # stage costs, so it ranks at the middle of that range on a log scale, among the gains
        # measured (docs/design.md, "The advisor").
        figure = gain.speedup if suggestion.id == HOIST_RULE else math.sqrt(gain.speedup)
        tier = 0 if figure >= VERIFIED_MIN_GAIN else 1
    else:
        elsewhere = gain.speedup if gain.basis in ("held", "input-free", "step-alone") else None
        tier, figure = 1, suggestion.estimate or elsewhere or 1.0
    stage = -1 if suggestion.stage_index is None else suggestion.stage_index
    return (group, tier, -round(figure, 6), position, stage)
