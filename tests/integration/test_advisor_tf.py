"""The advisor end to end on real small pipelines, one per smell: the right rule fires, on the
right stage, first (the rules one by one: tests/unit/test_advisor.py).
"""

from __future__ import annotations

from typing import Any

import pipelines  # tests/ is on sys.path under pytest (rootdir-relative prepend)
import pytest

from pipediag.analysis.advisor import (
    advise,
)
from pipediag.report.model import (
    COMPUTE_BOUND,
)

# --- real pipelines ------------------------------------------------------------------------------

SMELLS: list[tuple[str, str, str | None, dict[str, Any]]] = [
    ("sequential_map", "PD001-sequential-map", "map(slow_py_map)", {}),
    ("sequential_interleave", "PD002-sequential-interleave", "interleave(read_shard)", {}),
    ("no_prefetch", "PD003-no-prefetch", "batch", {"overlapped": False}),
    ("per_element_map", "PD004-vectorize-map", "parallel-map(scale)", {}),
    ("uncached_prefix", "PD005-cache-prefix", "parallel-map(decode)", {}),
    ("cache_after_random", "PD006-cache-after-random", "cache", {}),
    ("parallel_py_function", "PD007-py-function", "parallel-map(slow_py_map)", {}),
    ("tiny_shuffle", "PD008-small-shuffle-buffer", "shuffle", {}),
    ("autotune_off", "PD009-autotune-off", None, {}),
]


@pytest.mark.tensorflow
@pytest.mark.parametrize(("builder", "rule", "stage", "kwargs"), SMELLS, ids=[s[0] for s in SMELLS])
def test_each_smell_gets_its_rule_first_on_the_right_stage(
    builder: str, rule: str, stage: str | None, kwargs: dict[str, Any]
) -> None:
    pytest.importorskip("tensorflow")
    # GIVEN a real pipeline with the smell, in an input-bound run
    report = pipelines.diagnose(getattr(pipelines, builder)(), **kwargs)

    # WHEN advised
    suggestions = advise(report)

    # THEN its rule comes first and names the stage a tf.data expert would
    stages = [(st.kind, st.own_s_per_batch) for st in report.pipeline.stages]
    trials = [(t.fix, t.verified, t.speedup, t.facts) for t in report.pipeline.trials]
    assert suggestions, f"no suggestion at all; stages {stages}; trials {trials}"
    top = suggestions[0]
    assert (top.id, top.stage) == (rule, stage), [(s.id, s.stage) for s in suggestions]


@pytest.mark.tensorflow
def test_sequential_map_top_fix_is_verified_above_1_3x() -> None:
    pytest.importorskip("tensorflow")
    report = pipelines.diagnose(pipelines.sequential_map())

    top = advise(report)[0]

    assert top.id == "PD001-sequential-map"
    assert top.verified_speedup is not None and top.verified_speedup > 1.3
    assert top.predicted_speedup is not None and 1.0 < top.predicted_speedup < top.verified_speedup


@pytest.mark.tensorflow
def test_well_tuned_pipeline_gets_no_input_fix() -> None:
    pytest.importorskip("tensorflow")
    ds = pipelines.well_tuned()

    input_bound = advise(pipelines.diagnose(ds))
    compute_bound = advise(pipelines.diagnose(ds, label=COMPUTE_BOUND))

    assert [s.id for s in input_bound if s.kind != "note"] == []
    assert [s.id for s in compute_bound] == ["PD000-pipeline-fine"]
