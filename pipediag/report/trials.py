"""A what-if trial in the report: a fix on a copy of the dataset graph, timed beside the
original, alone and on training."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipediag.report.prescription import GainOnTraining
from pipediag.report.reasons import Reason
from pipediag.report.vocabulary import FixName, SemanticsChange, TrialStop


@dataclass(frozen=True)
class TrialFacts:
    """The facts beside a trial's rates a rule needs to explain a fix. `speedup_low`/`speedup_high`:
    the rounds' 90% interval; the rest one fix's each, None where not found or not applying."""

    stopped: TrialStop = ""
    speedup_low: float | None = None
    speedup_high: float | None = None
    # What was made private in the copies so the user's state is untouched (a file cache).
    isolation: list[Reason] = field(default_factory=list)
    # vectorize: elements the function was checked on, both ways.
    sample_elements: int | None = None
    # vectorize: the function as written failed or differed on a batch (`batch_refusal` says
    # how), and the variant runs it through `tf.vectorized_map`, which passed the same check;
    # `element_unpacked`: a tuple element passed as the function's arguments.
    vectorized_map: bool = False
    batch_refusal: Reason | None = None
    element_unpacked: bool = False
    # parallel-interleave: the cycle length tried (the cores).
    cycle_length: int | None = None
    # thread-cap: the private thread pool's size tried.
    threads: int | None = None
    # prefetch-end: the buffer size of the final prefetch raised to AUTOTUNE, None if added.
    existing_buffer: str | None = None
    # cache: the work it keeps, one epoch's elements (None: unknown), their size, memory, fill time.
    prefix_s_per_batch: float | None = None
    elements: int | None = None
    cache_bytes: int | None = None
    available_bytes: int | None = None
    fill_s: float | None = None
    # cache: after the batch that reads the stage (docs/design.md, "Every applicable rewrite").
    cached_in_batches: bool = False
    # cache, hoist-cache: the Python stages it keeps gave the same values for the same elements read
    # twice (`bench/candidate.py::same_elements_twice`); None: no Python there, or not checked.
    python_repeatable: bool | None = None
    # Not tried on training, under a kept cache (`training_reason` says so).
    covered_by_cache: bool = False
    # What the rewrite changes in what the pipeline yields; empty: nothing.
    semantics: list[SemanticsChange] = field(default_factory=list)


@dataclass(frozen=True)
class FixTrial:
    """`speedup` is the pipeline-alone speedup (variant over original, interleaved rounds), not
    the end-to-end one (`training` where tried on training, else the advisor's prediction);
    `verified` is False when the fix could not be rewritten or run (`reason`)."""

    fix: FixName
    stage_index: int | None = None
    stage: str = ""
    verified: bool = False
    reason: Reason | None = None
    baseline_batches_per_s: float | None = None
    variant_batches_per_s: float | None = None
    speedup: float | None = None
    rounds: int = 0
    facts: TrialFacts = field(default_factory=TrialFacts)
    # Process CPU seconds per batch (medians of the same runs): a fix can make batches come
    # faster yet cost the cores more (parallel calls) or less (vectorised, cached).
    baseline_cpu_s_per_batch: float | None = None
    variant_cpu_s_per_batch: float | None = None
    # Tried on training (docs/design.md, "Fixes tried on training"); None: `training_reason`.
    training: GainOnTraining | None = None
    training_reason: Reason | None = None
    # The vectorise check found the function not elementwise (or failing on a batch).
    unsafe: bool = False
    fits_in_memory: bool | None = None  # a cache trial's data fits the memory available
