"""The fixes pipediag knows, one record each: what every layer needs to know of a fix that is
data, not logic (docs/design.md, "Every applicable rewrite").

A fix's words, its place in the order edits are re-applied (`bench/compose.py`), the options
line it writes (`analysis/pipeline_code.py`), what it changes in the data, and whether it
caches are spelled here once, below the candidates that build fixes, the search that tries
them on training and the layers that print them. How a fix edits a graph and when a rule
proposes it stay with that code, keyed by the fix's id (`report/vocabulary.py`). Pure
declarations.
"""

from __future__ import annotations

from dataclasses import dataclass
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

# The last line of a pipeline prefetched to the GPU (`bench/device.py` GPU_DEVICE): after
# the options, as tf.data wants it last.
DEVICE_PREFETCH_TEXT: Final = 'ds = ds.apply(tf.data.experimental.prefetch_to_device("/gpu:0"))'


@dataclass(frozen=True)
class FixFacts:
    """One fix as data.

    `words` name it in titles and the code's comments. `edit_rank` is its edit's place when
    kept edits are re-applied together (moves, changes in place, caches, the final prefetch;
    None: after those, in the order kept). `option_line` is the `tf.data.Options` line it
    sets (`{value}`: its number), `last_line` the line it adds after the options, which also
    applies it after every other fix. `semantics` is what it changes in what the pipeline
    yields (None: nothing). `caches`: it keeps its stage's output in memory from the second
    epoch; `stage_work`: it makes a stage's own work cheaper, so under a kept cache it
    changes only the first epoch. `bounded_by_hold`: holding a stage's output on the host
    bounds what it gains there. `from_epoch_two`: its suggestion's bound is what it gains
    from the second epoch on.
    """

    name: str
    words: str
    edit_rank: int | None = None
    option_line: str | None = None
    last_line: str | None = None
    semantics: str | None = None
    caches: bool = False
    stage_work: bool = False
    bounded_by_hold: bool = True
    from_epoch_two: bool = False


FIXES: Final[dict[str, FixFacts]] = {
    fix.name: fix
    for fix in (
        FixFacts(FIX_PARALLEL_MAP, "run the map in parallel", edit_rank=3, stage_work=True),
        FixFacts(
            FIX_PARALLEL_INTERLEAVE,
            "interleave in parallel, one cycle per core",
            edit_rank=4,
            stage_work=True,
        ),
        FixFacts(FIX_PREFETCH, "prefetch at the end (AUTOTUNE)", edit_rank=6),
        FixFacts(
            FIX_CACHE,
            "cache after the deterministic work",
            edit_rank=5,
            semantics=SEMANTICS_CACHE,
            caches=True,
            stage_work=True,
        ),
        FixFacts(
            FIX_VECTORIZE,
            "vectorise: map after the batch",
            edit_rank=2,
            semantics=SEMANTICS_BATCHED,
            stage_work=True,
        ),
        FixFacts(
            FIX_AUTOTUNE, "turn autotune back on", option_line="options.autotune.enabled = True"
        ),
        FixFacts(
            FIX_THREAD_CAP,
            "cap the pipeline's threads",
            option_line="options.threading.private_threadpool_size = {value}",
        ),
        FixFacts(
            FIX_HOIST_CACHE,
            "map before the shuffle, then cache",
            edit_rank=1,
            semantics=SEMANTICS_HOIST_CACHE,
            caches=True,
            stage_work=True,
            from_epoch_two=True,
        ),
        FixFacts(
            FIX_MAP_FUSION,
            "fuse consecutive maps",
            option_line="options.experimental_optimization.map_fusion = True",
            stage_work=True,
        ),
        FixFacts(
            FIX_MATERIALISE,
            "read the generator once: from_tensor_slices",
            edit_rank=0,
            semantics=SEMANTICS_MATERIALISED,
            stage_work=True,
        ),
        FixFacts(
            FIX_DEVICE_PREFETCH,
            "prefetch to the GPU at the end (prefetch_to_device)",
            last_line=DEVICE_PREFETCH_TEXT,
            # A held stage is held on the host: the copy it moves is still paid.
            bounded_by_hold=False,
        ),
    )
}


def fix_facts(fix: str) -> FixFacts:
    """The fix's record; for one this version does not know, its id as its words and no
    other fact."""
    return FIXES.get(fix) or FixFacts(fix, fix)


def fix_words(fix: str) -> str:
    """The rewrite in words; the id itself for one this version does not know."""
    return fix_facts(fix).words
