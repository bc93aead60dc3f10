"""Dataset op names map to the stage kinds they always had.

The op -> kind table in `bench/structure.py` lists only the ops whose kind is not their name in
kebab case; every other op falls back to kebab case. This pins the kinds an op name gave when
the table listed every op, so shrinking the table, or changing the fallback, cannot change a
stage's kind (rules, reports and saved runs key on it).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pipediag.bench.structure import kind_and_name

# Written out by hand from the full table, version suffixes included where TF uses them.
EXPECTED_KINDS = {
    # Common ops: kebab-case fallback, version suffix dropped.
    "MapDataset": "map",
    "ParallelMapDatasetV2": "parallel-map",
    "BatchDatasetV2": "batch",
    "ShuffleDatasetV3": "shuffle",
    "CacheDatasetV2": "cache",
    "PrefetchDataset": "prefetch",
    "FlatMapDataset": "flat-map",
    # The ops the table lists: their kind is not their name in kebab case.
    "LegacyParallelInterleaveDataset": "parallel-interleave",
    "LegacyParallelInterleaveDatasetV2": "parallel-interleave",
    "ParallelBatchDataset": "batch",
    "MaxIntraOpParallelismDataset": "options",
    "PrivateThreadPoolDataset": "options",
    "DirectedInterleaveDataset": "choose",
    "DenseToSparseBatchDataset": "sparse-batch",
}


@pytest.mark.parametrize(("op", "kind"), sorted(EXPECTED_KINDS.items()))
def test_graph_op_kind(op: str, kind: str) -> None:
    assert kind_and_name(None, SimpleNamespace(op=op), has_inputs=True) == (kind, op)


@pytest.mark.parametrize(("op", "kind"), sorted(EXPECTED_KINDS.items()))
def test_python_dataset_kind(op: str, kind: str) -> None:
    """Without a graph node the dataset's class name is read, leading underscores dropped."""
    dataset = type(f"_{op}", (), {})()
    assert kind_and_name(dataset, None, has_inputs=True) == (kind, op)


def test_op_without_inputs_is_a_source() -> None:
    assert kind_and_name(None, SimpleNamespace(op="MapDataset"), has_inputs=False) == (
        "source",
        "MapDataset",
    )
