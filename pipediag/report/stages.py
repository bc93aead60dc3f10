"""A pipeline's stages in the report, and the latency statistics stages and steps share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from pipediag.report.reasons import Reason
from pipediag.report.vocabulary import AutoParallelBlocker

AUTOTUNE: Final = -1  # tf.data's AUTOTUNE, as the graph holds it in a parallelism or buffer
UNBOUNDED: Final = -1  # `repeat()`'s and `take(-1)`'s `count`: forever, everything


@dataclass(frozen=True)
class LatencyStats:
    """Distribution of a duration over many events (batches or steps)."""

    count: int
    mean_s: float
    median_s: float
    p90_s: float
    min_s: float
    max_s: float


@dataclass(frozen=True)
class StageSettings:
    """A stage's own tf.data settings, read from the dataset graph as the user would write
    them; None where the op has no such setting, or its value is computed at run time."""

    # RangeDataset.
    start: int | None = None
    stop: int | None = None
    step: int | None = None
    # Parallel map, filter and interleave, parallel batch, map-and-batch.
    num_parallel_calls: int | None = None
    # Interleave.
    cycle_length: int | None = None
    block_length: int | None = None
    buffer_output_elements: int | None = None
    prefetch_input_elements: int | None = None
    batch_size: int | None = None
    drop_remainder: bool | None = None
    # Shuffle and prefetch.
    buffer_size: int | None = None
    seed: int | None = None
    seed2: int | None = None
    reshuffle_each_iteration: bool | None = None
    # The file a cache() writes, as tf.data holds it: "" caches in memory.
    filename: str | None = None
    # Repeat, take, skip.
    count: int | None = None
    num_shards: int | None = None
    index: int | None = None
    # A parallel stage's own order; None also where it follows the `deterministic` option.
    deterministic: bool | None = None


@dataclass(frozen=True)
class StageStats:
    """One stage of the input pipeline, listed from source (index 0) to output. `inputs`: the
    indices of the stages it reads, so multi-input stages (zip, concatenate, choose) keep the
    pipeline's shape in a flat list. `function`/`source`: the user's Python callable and where
    it is defined ("file.py:LINE"). Rates are its prefix's, `own_s_per_batch` its own cost
    (docs/design.md, "Stage timing"). `kind` is `str`, not `StageKind`, for unknown ops."""

    index: int
    kind: str
    name: str = ""
    settings: StageSettings = field(default_factory=StageSettings)
    function: str | None = None
    source: str | None = None
    batches_per_s: float | None = None
    bottleneck: bool = False
    inputs: list[int] = field(default_factory=list)
    uses_py_function: bool = False
    stateful: bool = False
    # A function TF adds itself (unbatch's `normalize`): the user cannot edit it.
    tf_internal: bool = False
    # Its functions draw random numbers: not deterministic, not cacheable.
    random: bool = False
    stateful_ops: list[str] = field(default_factory=list)
    elements_per_s: float | None = None
    own_s_per_batch: float | None = None
    # A sequential map: does `map_parallelization` parallelize it anyway, else why (None: unknown).
    auto_parallel: bool | None = None
    auto_parallel_blocker: AutoParallelBlocker | None = None
    # Why stage timing gave this stage no rate (the time ran out, a file cache); None if timed.
    not_measured: Reason | None = None
    # Why the dataset graph could not be read (on the last stage only); None when it was.
    graph_error: str | None = None
    # Training's speedup with this stage's output held in memory, and its 90% interval
    # (docs/design.md, "Stage costs on training"); None where not measured.
    training_speedup_if_free: float | None = None
    training_speedup_if_free_low: float | None = None
    training_speedup_if_free_high: float | None = None
    # Why the measured speedup is not used: the held pipeline fed training faster than the
    # train step alone ran (the trial was disturbed); None where it is used or not measured.
    training_speedup_if_free_unused: Reason | None = None
    # The training rate with this stage held (the output stage: the step alone on held batches).
    training_held_steps_per_s: float | None = None
    # Where that speedup jumps past half the whole pipeline's: the cost training pays.
    training_cost_jump: bool = False
    # The script's line that created this stage ("train.py:23"); None where not recorded.
    created_at: str | None = None
    # The library call that built this stage at `created_at` ("image_dataset_from_directory"):
    # its settings are that call's, which the script cannot edit.
    made_by: str | None = None
