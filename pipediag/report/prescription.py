"""The pipeline pipediag would write, as the report holds it: lines of tf.data code, each
changed line with the fix that changed it, where the script made the stage, and what the
change does to the data (docs/design.md, "The pipeline pipediag would write").

With it, the rewrites tried on training greedily and what the kept ones came to together.
Also the words for each rewrite and for each change in semantics, spelled once here, below
the candidates that attach them (`bench/fix_candidates.py`) and the layers that print them.
Pure declarations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from pipediag.report.vocabulary import (
    FIX_AUTOTUNE,
    FIX_CACHE,
    FIX_DEVICE_PREFETCH,
    FIX_HOIST_CACHE,
    FIX_MAP_FUSION,
    FIX_MATERIALISE,
    FIX_PARALLEL_INTERLEAVE,
    FIX_PARALLEL_MAP,
    FIX_PREFETCH,
    FIX_THREAD_CAP,
    FIX_VECTORIZE,
    FixName,
)

# Changes in what the pipeline yields, as each rewrite names its own.
SEMANTICS_ORDER: Final = "element order: the map now runs before the shuffle"
SEMANTICS_BATCHED: Final = "the function is applied to whole batches"
SEMANTICS_VECTORIZED_MAP: Final = (
    "the function runs once per batch through tf.vectorized_map: each element's result is "
    "unchanged (to float rounding)"
)
# Added to a vectorise's words where it runs through `tf.vectorized_map`.
VECTORIZED_MAP_WORDS: Final = "with tf.vectorized_map"
SEMANTICS_CACHE: Final = (
    "a cache: the elements are read once and kept in memory; randomness before it is frozen"
)
SEMANTICS_HOIST_CACHE: Final = f"{SEMANTICS_ORDER}; {SEMANTICS_CACHE}"
SEMANTICS_MATERIALISED: Final = (
    "the generator is read once and its elements kept in memory: every epoch yields the "
    "first epoch's elements, and randomness in the generator is frozen"
)

# Each rewrite in a few words, for titles and the code's comments.
FIX_WORDS: Final[dict[str, str]] = {
    FIX_PARALLEL_MAP: "run the map in parallel",
    FIX_PARALLEL_INTERLEAVE: "interleave in parallel, one cycle per core",
    FIX_PREFETCH: "prefetch at the end (AUTOTUNE)",
    FIX_CACHE: "cache after the deterministic work",
    FIX_VECTORIZE: "vectorise: map after the batch",
    FIX_AUTOTUNE: "turn autotune back on",
    FIX_THREAD_CAP: "cap the pipeline's threads",
    FIX_HOIST_CACHE: "map before the shuffle, then cache",
    FIX_MAP_FUSION: "fuse consecutive maps",
    FIX_MATERIALISE: "read the generator once: from_tensor_slices",
    FIX_DEVICE_PREFETCH: "prefetch to the GPU at the end (prefetch_to_device)",
}


def fix_words(fix: str) -> str:
    """The rewrite in words; the id itself for one this version does not know."""
    return FIX_WORDS.get(fix, fix)


@dataclass(frozen=True)
class CodeLine:
    """One line of the rewritten pipeline: `change` is the fix that made or moved it (None:
    the user's line as written), `site` the script line that created the stage
    ("train.py:23"), `semantics` what the change does to the data (None: nothing)."""

    text: str
    site: str | None = None
    change: FixName | None = None
    semantics: str | None = None


@dataclass(frozen=True)
class StageChange:
    """One rewrite kept for the pipeline pipediag would write: the fix, the stage it applies
    to (None: the whole pipeline's options), what it changes in the data, and for an
    interleave or a thread cap the number it sets."""

    fix: FixName
    stage_index: int | None = None
    semantics: str | None = None
    value: int | None = None  # cycle_length for an interleave, threads for a cap
    # A vectorise that runs the function through `tf.vectorized_map`, and whether the
    # element is a tuple passed to the function as its arguments (`TrialFacts`).
    vectorized_map: bool = False
    element_unpacked: bool = False
    # A cache written after the batch that reads its stage (`TrialFacts.cached_in_batches`).
    cached_in_batches: bool = False


@dataclass(frozen=True)
class PrescribedChange:
    """One rewrite tried on training on top of the ones kept before it.

    `training_speedup` is its training rate over theirs (medians of interleaved rounds,
    `variant_steps_per_s` over `baseline_steps_per_s`) with the 90% interval; `kept` says
    whether the interval said it helps; `reason` why it was not kept, or not tried.
    `on_training` is that ratio in the run's own terms (under `fit`, with what fit adds
    around each step on both sides: `analysis/run_terms.py`), filled in by the analysis;
    it is the figure the report shows.
    """

    fix: FixName
    stage_index: int | None = None
    stage: str = ""
    training_speedup: float | None = None
    training_speedup_low: float | None = None
    training_speedup_high: float | None = None
    kept: bool = False
    reason: str | None = None
    # The changes it was tried on top of (the ones kept before it), in order.
    after: list[FixName] = field(default_factory=list)
    baseline_steps_per_s: float | None = None
    variant_steps_per_s: float | None = None
    on_training: float | None = None
    on_training_low: float | None = None
    on_training_high: float | None = None
    # What an epoch's start cost each side beyond a steady step (`FixTrial`'s, alike).
    baseline_start_s: float | None = None
    variant_start_s: float | None = None
    # The variant fed training faster than the train step alone ran: its rate (and the
    # gain) is taken at the step alone's ceiling, the most a pipeline can give.
    at_step_alone: bool = False
    # Not tried: a cache kept before it serves its stage from memory after the first epoch.
    covered_by_cache: bool = False

    @property
    def shown(self) -> tuple[float | None, float | None, float | None]:
        """The gain the report shows, with its interval: in the run's terms where the
        analysis filled them in, else the raw ratio."""
        if self.on_training is not None:
            return self.on_training, self.on_training_low, self.on_training_high
        return self.training_speedup, self.training_speedup_low, self.training_speedup_high


@dataclass(frozen=True)
class Prescription:
    """The rewrites tried greedily on training and what they came to together.

    `training_speedup` is the kept rewrites together over the user's pipeline, on training
    (measured in one trial where two or more were kept, else the one kept's); None with
    nothing kept, and `reason` then says why. `on_training` (with its interval) is that
    gain in the run's own terms, as for each change.
    """

    tried: list[PrescribedChange] = field(default_factory=list)
    training_speedup: float | None = None
    training_speedup_low: float | None = None
    training_speedup_high: float | None = None
    baseline_steps_per_s: float | None = None
    variant_steps_per_s: float | None = None
    code: list[CodeLine] = field(default_factory=list)
    reason: str | None = None
    on_training: float | None = None
    on_training_low: float | None = None
    on_training_high: float | None = None
    baseline_start_s: float | None = None
    variant_start_s: float | None = None
    at_step_alone: bool = False  # as `PrescribedChange.at_step_alone`

    @property
    def shown(self) -> tuple[float | None, float | None, float | None]:
        """The gain the report shows, with its interval (as `PrescribedChange.shown`)."""
        if self.on_training is not None:
            return self.on_training, self.on_training_low, self.on_training_high
        return self.training_speedup, self.training_speedup_low, self.training_speedup_high

    @property
    def kept(self) -> list[PrescribedChange]:
        return [change for change in self.tried if change.kept]
