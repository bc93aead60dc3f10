"""Rewrites applied together, for the greedy search on training: the fixes kept so far, and
one more, re-applied in one fixed order (docs/design.md, "Composing rewrites")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pipediag.bench.candidate import Candidate
from pipediag.bench.graph_edit import PipelineGraph, RewriteError
from pipediag.bench.whatif import FixPipelines
from pipediag.report.fixes import FIXES, fix_facts


def compose_fixes(dataset: Any, kept: Sequence[FixPipelines], extra: FixPipelines) -> FixPipelines:
    """`kept` applied as the baseline, `kept` and `extra` as the variant."""
    fixes = [*kept, extra]
    graph, spec = _graph_of(dataset, fixes)
    if any(k.fix == extra.fix and k.stage_index == extra.stage_index for k in kept):
        raise RewriteError("already-kept", detail=extra.fix)
    return replace(
        extra,
        baseline=apply_fixes(graph, spec, kept),
        variant=apply_fixes(graph, spec, fixes),
        fill_batches=max(f.fill_batches for f in fixes),
        graph=graph,
        element_spec=spec,
        baseline_fill_batches=max((f.fill_batches for f in kept), default=0),
        semantics=tuple(s for f in fixes for s in f.semantics),
        applied=tuple(f.fix for f in fixes),
    )


def apply_fixes(graph: Any, spec: Any, fixes: Sequence[FixPipelines]) -> Any:
    """The user's graph, isolated, with every fix's edit and options applied, rebuilt."""
    candidates, edited = [_candidate(f) for f in fixes], PipelineGraph.copy_of(graph)
    edited.isolate()
    for candidate in sorted(candidates, key=lambda c: _edit_rank(c.fix)):
        if candidate.edit is not None:
            candidate.edit(edited)
    dataset = edited.rebuild(spec)
    for candidate in sorted(candidates, key=lambda c: fix_facts(c.fix).last_line is not None):
        if candidate.with_options is not None:
            dataset = candidate.with_options(dataset)
    return dataset


def _candidate(fix: FixPipelines) -> Candidate:
    if fix.candidate is None or (fix.candidate.edit is None and fix.candidate.with_options is None):
        raise RewriteError("no-rewrite-kept", detail=fix.fix)
    return fix.candidate


def _edit_rank(fix: str) -> int:
    """The fix's place in the order edits are re-applied; unranked fixes go last, as kept."""
    rank = fix_facts(fix).edit_rank
    return len(FIXES) if rank is None else rank


def _graph_of(dataset: Any, fixes: Sequence[FixPipelines]) -> tuple[Any, Any]:
    """The user's GraphDef the fixes were built on: the walk's, which every kept fix holds."""
    for fix in fixes:
        if fix.graph is not None:
            return fix.graph, fix.element_spec or dataset.element_spec
    raise RewriteError("walked-graph-not-kept")
