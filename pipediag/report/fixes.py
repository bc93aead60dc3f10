"""The fixes pipediag knows, one record each: what every layer needs of a fix that is data,
not logic (docs/design.md, "Composing rewrites")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from pipediag.report.vocabulary import SemanticsChange

FIX_PARALLEL_MAP: Final = "parallel-map"
FIX_PARALLEL_INTERLEAVE: Final = "parallel-interleave"
FIX_PREFETCH: Final = "prefetch-end"
FIX_CACHE: Final = "cache"
FIX_VECTORIZE: Final = "vectorize"
FIX_AUTOTUNE: Final = "autotune-on"
FIX_THREAD_CAP: Final = "thread-cap"
# A deterministic map moved above the shuffle before it, and cached (map, cache, shuffle).
FIX_HOIST_CACHE: Final = "hoist-cache"
# Consecutive maps fused into one function (tf.data's `map_fusion`).
FIX_MAP_FUSION: Final = "map-fusion"
# A `from_generator` source read once and held in memory (`from_tensor_slices`).
FIX_MATERIALISE: Final = "materialise-generator"
# The pipeline ended with `prefetch_to_device` on the GPU, where there is one: the batch's
# host-to-device copy overlaps the train step (docs/design.md, "The host-to-device copy").
FIX_DEVICE_PREFETCH: Final = "prefetch-to-device"

# How a fix changes the stage lines of the pipeline written out as code; fixes without one
# change options or add last lines (docs/design.md, "Composing rewrites").
CodeEdit = Literal["parallel", "prefetch", "cache", "vectorize", "hoist-cache", "materialise"]

# Added to a vectorise's words where it runs through `tf.vectorized_map`.
VECTORIZED_MAP_WORDS: Final = "with tf.vectorized_map"
# The last line of a pipeline prefetched to the GPU: after the options, as tf.data wants it.
DEVICE_PREFETCH_TEXT: Final = 'ds = ds.apply(tf.data.experimental.prefetch_to_device("/gpu:0"))'


@dataclass(frozen=True)
class FixFacts:
    """One fix as data (docs/design.md, "Composing rewrites"). `edit_rank`: its place in the order
    kept edits are re-applied (None: after those, as kept); `option_line`'s `{value}`: its number.
    `stage_work`: it makes a stage's own work cheaper: under a kept cache, only epoch 1 changes."""

    name: str
    words: str
    code: CodeEdit | None = None
    edit_rank: int | None = None
    option_line: str | None = None
    last_line: str | None = None
    semantics: tuple[SemanticsChange, ...] = ()
    caches: bool = False
    stage_work: bool = False
    bounded_by_hold: bool = True
    from_epoch_two: bool = False


FIXES: Final[dict[str, FixFacts]] = {
    fix.name: fix
    for fix in (
        FixFacts(
            FIX_PARALLEL_MAP,
            "run the map in parallel",
            code="parallel",
            edit_rank=3,
            stage_work=True,
        ),
        FixFacts(
            FIX_PARALLEL_INTERLEAVE,
            "interleave in parallel, one cycle per core",
            code="parallel",
            edit_rank=4,
            stage_work=True,
        ),
        FixFacts(FIX_PREFETCH, "prefetch at the end (AUTOTUNE)", code="prefetch", edit_rank=6),
        FixFacts(
            FIX_CACHE,
            "cache after the deterministic work",
            code="cache",
            edit_rank=5,
            semantics=("cache",),
            caches=True,
            stage_work=True,
        ),
        FixFacts(
            FIX_VECTORIZE,
            "vectorise: map after the batch",
            code="vectorize",
            edit_rank=2,
            semantics=("batched",),
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
            "cache() after the map, moved above its shuffle",
            code="hoist-cache",
            edit_rank=1,
            semantics=("element-order", "cache"),
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
            code="materialise",
            edit_rank=0,
            semantics=("materialised",),
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
    """The fix's record; for one this version does not know, its id as its words, no other fact."""
    return FIXES.get(fix) or FixFacts(fix, fix)


def fix_words(fix: str) -> str:
    return fix_facts(fix).words
