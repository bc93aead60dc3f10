"""How a stage and a rewrite are named to the user, spelled once below every layer that names
them, so a stage reads the same everywhere (docs/design.md, "Architecture")."""

from __future__ import annotations

import re

from pipediag.report.fixes import VECTORIZED_MAP_WORDS, fix_words
from pipediag.report.stages import StageStats


def stage_name(stage: StageStats) -> str:
    """How a stage is named to the user: `map(parse)` when it runs a user function, else its
    kind, with the dataset op when that says more (`source: TFRecord`)."""
    if stage.function:
        return f"{stage.kind}({stage.function})"
    name = re.sub(r"V\d+$", "", stage.name).removesuffix("Dataset")  # BatchDatasetV2 -> Batch
    kind = stage.kind.replace("-", "").lower()
    if not name or name.lower() == kind:
        return stage.kind
    return name if name.lower().startswith(kind) else f"{stage.kind}: {name}"


def fix_words_at(fix: str, stage: str | None = None, *, vectorized_map: bool = False) -> str:
    """A rewrite in words, with its stage where it has one: "run the map in parallel at
    map(parse)"; a vectorise run through `tf.vectorized_map` says so."""
    words = fix_words(fix)
    if vectorized_map:
        words = f"{words}, {VECTORIZED_MAP_WORDS}"
    return f"{words} at {stage}" if stage and stage != "options" else words
