"""Which stages get rewrites: their measured cost to training, not pipeline-alone timing."""

from __future__ import annotations

from pipediag.bench.fix_candidates import fix_candidates
from pipediag.report.model import PipelineOptions
from pipediag.report.reasons import Reason
from pipediag.report.stage_facts import rewrite_site
from pipediag.report.stages import StageStats


def _sequential_map(**changes: object) -> list[StageStats]:
    """A sequential, random py_function map (no batch after it, random: no vectorise, no
    cache point)."""
    return [
        StageStats(0, "source", "RangeDataset"),
        StageStats(
            1,
            "map",
            "MapDataset",
            function="slow",
            inputs=[0],
            uses_py_function=True,
            stateful=True,
            random=True,
            auto_parallel=False,
            **changes,  # type: ignore[arg-type]
        ),
    ]


def _fixes(stages: list[StageStats]) -> list[str]:
    return [c.fix for c in fix_candidates([], stages, {1: "MapDataset/_1"}, PipelineOptions(), 2)]


def test_a_cheap_unmeasured_map_is_still_a_site() -> None:
    # GIVEN stage timing that gives the map 0.1% of the time per batch
    stages = _sequential_map(own_s_per_batch=1e-6, batches_per_s=1000.0)

    assert "parallel-map" in _fixes(stages)


def test_a_stage_measured_free_on_training_is_not_a_site() -> None:
    stages = _sequential_map(training_speedup_if_free=1.02)

    assert _fixes(stages) == []  # nor a prefetch: the whole pipeline is nearly free


def test_a_stage_measured_costly_on_training_is_a_site() -> None:
    assert "parallel-map" in _fixes(_sequential_map(training_speedup_if_free=1.8))


def test_an_unused_measure_leaves_the_stage_a_site() -> None:
    stats = StageStats(
        1,
        "map",
        training_speedup_if_free=1.0,
        training_speedup_if_free_unused=Reason("held-above-step-alone", value=9.0, limit=8.0),
    )

    assert rewrite_site(stats)
    assert not rewrite_site(StageStats(1, "map", training_speedup_if_free=1.04))
    assert rewrite_site(StageStats(1, "map", training_speedup_if_free=1.05))
