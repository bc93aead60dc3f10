"""Copies of a pipeline with one stage's output held in memory, `take(N) -> cache("") ->
repeat(-1)` after it (docs/design.md, "Stage costs on training")."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipediag.bench import cache_sizing
from pipediag.bench.graph_edit import PipelineGraph
from pipediag.bench.stages import PASS_THROUGH_KINDS, elements_per_output_batch
from pipediag.bench.structure import Stage, WalkedPipeline
from pipediag.bench.whatif import FixPipelines

HOLD = "hold-in-memory"
# Elements held at most: batches not all alike, yet a first pass that fits a trial.
MAX_HELD_ELEMENTS = 256
# Memory the held elements may take; only one held copy lives at a time.
MAX_HELD_BYTES = 256 * 2**20
# Held elements when an element's size is not known statically (strings, ragged dims).
UNSIZED_ELEMENTS = 32
# The first pass (computing the held elements, at the pipeline's own rate) may take this long.
MAX_FILL_S = 0.5
# The unchanged copy's in-memory caches are filled first where a pass is at most this long,
# in batches and in seconds at the pipeline's rate alone (its first pass, uncached).
MAX_BASE_FILL_BATCHES = 2000
MAX_BASE_FILL_S = 3.0


@dataclass(frozen=True)
class Holdable:
    index: int
    node: str
    elements_per_batch: float
    element_bytes: int | None


def holdable_chain(walked: Sequence[Stage], nodes: dict[int, str]) -> list[Holdable]:
    """The stages to hold, source-most first: elements per batch known, no filter after them."""
    if not walked:
        return []
    factors = elements_per_output_batch(walked)
    chain: list[Holdable] = []
    current: Stage | None = walked[-1]
    while current is not None:
        stats = current.stats
        factor = factors[stats.index]
        if factor is None or factor <= 0:
            break
        if stats.kind not in PASS_THROUGH_KINDS and stats.index in nodes:
            spec = getattr(current.dataset, "element_spec", None)
            chain.append(Holdable(stats.index, nodes[stats.index], factor, element_bytes(spec)))
        # A filter may reject every held element and never yield: stages before one are not held.
        if stats.kind == "filter" or len(stats.inputs) != 1:
            break  # a multi-input stage is held whole; its inputs are not on one line
        current = walked[stats.inputs[0]]
    return list(reversed(chain))


def element_bytes(spec: Any) -> int | None:
    """One element's size from its spec; None where not static (strings, variants, datasets)."""
    try:
        import tensorflow as tf

        if any(getattr(c, "dtype", None) == tf.variant for c in tf.nest.flatten(spec)):
            return None
        return cache_sizing.static_element_bytes(spec)
    except Exception:
        return None


def held_count(stage: Holdable, pipeline_batches_per_s: float | None) -> int:
    """N, at least one: below `MAX_HELD_ELEMENTS` where over `MAX_HELD_BYTES` or `MAX_FILL_S`."""
    count = MAX_HELD_ELEMENTS
    if stage.element_bytes is None:
        count = UNSIZED_ELEMENTS
    elif stage.element_bytes > 0:
        count = min(count, MAX_HELD_BYTES // stage.element_bytes)
    if pipeline_batches_per_s is not None and pipeline_batches_per_s > 0:
        count = min(count, int(MAX_FILL_S * pipeline_batches_per_s * stage.elements_per_batch))
    return max(1, count)


def fill_batches(stage: Holdable, count: int) -> int:
    """Output batches to read before all held elements are in memory (one more: a partial)."""
    return math.ceil(count / stage.elements_per_batch) + 1


class HeldCopies:
    """The unchanged copy of a walked dataset and, per stage, a copy with that stage held."""

    def __init__(self, walked: WalkedPipeline, pipeline_batches_per_s: float | None) -> None:
        if walked.graph is None:
            detail = walked.graph_error.detail if walked.graph_error is not None else "no graph"
            raise ValueError(f"the dataset graph is unavailable: {detail}")
        self._graph = walked.graph
        self._spec = walked.dataset.element_spec
        self._rate = pipeline_batches_per_s
        self.chain = holdable_chain(walked.stages, walked.nodes)
        isolated, _ = walked.isolated
        self.baseline = isolated.rebuild(self._spec)
        self._baseline_fill = base_fill_batches(walked, self.baseline, pipeline_batches_per_s)

    def pipelines(self, stage: Holdable) -> FixPipelines:
        """Both copies for holding `stage`, as a fix trial on training takes them."""
        count = held_count(stage, self._rate)
        edited = PipelineGraph.copy_of(self._graph)
        edited.isolate()
        edited.hold_after(stage.node, count)
        return FixPipelines(
            fix=HOLD,
            stage_index=stage.index,
            baseline=self.baseline,
            variant=edited.rebuild(self._spec),
            fill_batches=fill_batches(stage, count),
            baseline_fill_batches=self._baseline_fill,
        )


def base_fill_batches(walked: WalkedPipeline, baseline: Any, batches_per_s: float | None) -> int:
    """Batches to read through the unchanged copy before its in-memory caches are complete, as
    the script's were after its first epoch (docs/design.md, "The held output"): a pass and
    the read past its end; 0 where it has none, or its pass is unknown or too long."""
    stats = [stage.stats for stage in walked.stages]
    if not any(s.kind == "cache" and not s.settings.filename for s in stats):
        return 0
    count = cache_sizing.cardinality(baseline)
    if count is None or count <= 0 or count > MAX_BASE_FILL_BATCHES:
        return 0
    if batches_per_s is not None and batches_per_s > 0 and count / batches_per_s > MAX_BASE_FILL_S:
        return 0
    return count + 1
