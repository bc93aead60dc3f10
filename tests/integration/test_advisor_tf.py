"""The advisor end to end on real small pipelines, one per smell: the right rule fires, on the
right stage, first (the rules one by one: tests/unit/test_advisor.py).
"""

from __future__ import annotations

from typing import Any

import pipelines  # tests/ is on sys.path under pytest (rootdir-relative prepend)
import pytest

from pipediag.analysis.advisor import advise
from pipediag.report.stage_facts import VERIFIED_MIN_GAIN

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


def _ahead_of(earlier: Any, later: Any) -> bool:
    """Whether the advisor's order may put `earlier` first (its `_sort_key`): a gain measured
    on training (at least 1.05x) before any that is not, by that gain; else by estimate."""

    def measured(s: Any) -> float | None:
        gain = s.gain.on("training")
        return gain if gain is not None and gain >= VERIFIED_MIN_GAIN else None

    first, second = measured(earlier), measured(later)
    if first is not None:
        return second is None or first >= second
    return second is None and (earlier.estimate or 1.0) >= (later.estimate or 1.0)


@pytest.mark.tensorflow
def test_autotune_off_is_named_and_only_a_larger_measured_gain_goes_before_it() -> None:
    # Turning autotune back on and vectorising the map both measure near 1.0x on this pipeline
    # (0.97-1.18x and 0.91-0.97x in three diagnoses on one host; another host put vectorising
    # ahead), so which comes first is the host's noise: the order itself is what holds.
    pytest.importorskip("tensorflow")
    # GIVEN a pipeline with autotune turned off, in an input-bound run
    report = pipelines.diagnose(pipelines.autotune_off())

    # WHEN advised
    suggestions = advise(report)

    # THEN the option is named, pipeline-wide
    ids = [s.id for s in suggestions]
    assert "PD009-autotune-off" in ids, ids
    autotune = suggestions[ids.index("PD009-autotune-off")]
    assert autotune.stage is None
    # AND each change before it is a correctness warning or ranked ahead by what it gained
    for earlier in suggestions[: ids.index("PD009-autotune-off")]:
        assert earlier.correctness_warning or _ahead_of(earlier, autotune), [
            (s.id, s.gain, s.estimate) for s in suggestions
        ]


@pytest.mark.tensorflow
def test_sequential_map_top_fix_is_verified_faster() -> None:
    pytest.importorskip("tensorflow")
    report = pipelines.diagnose(pipelines.sequential_map())

    top = advise(report)[0]

    # (about 1.5x on 2 cores: AUTOTUNE gives the map two threads there)
    assert top.id == "PD001-sequential-map"
    trial = next(t for t in report.pipeline.trials if t.fix == top.fix)
    assert trial.verified and trial.speedup is not None and trial.speedup > VERIFIED_MIN_GAIN
    assert top.gain.speedup is not None and top.gain.speedup > VERIFIED_MIN_GAIN
    assert top.estimate is not None and 1.0 < top.estimate < trial.speedup


@pytest.mark.tensorflow
def test_well_tuned_pipeline_gets_no_input_fix() -> None:
    pytest.importorskip("tensorflow")
    ds = pipelines.well_tuned()

    input_bound = advise(pipelines.diagnose(ds))
    compute_bound = advise(pipelines.diagnose(ds, label="compute-bound"))

    assert [s.id for s in input_bound if s.kind != "note"] == []
    assert [s.id for s in compute_bound] == ["PD000-pipeline-fine"]
