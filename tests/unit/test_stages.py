"""measure_stages' pure helpers (`own_costs`, `pick_bottleneck`, `elements_per_output_batch`)
on hand-built data. Per-prefix rates and the bottleneck on real small pipelines, and the
deadlines on a fake clock: tests/integration/test_stages_tf.py.
"""

from __future__ import annotations

import pytest

from pipediag.bench.stages import (
    clear_of_noise,
    elements_per_output_batch,
    own_costs,
    pick_bottleneck,
)
from pipediag.bench.structure import Stage
from pipediag.report.stages import StageStats


def _stage(index: int, kind: str, inputs: list[int], batch_size: int | None = None) -> Stage:
    stats = StageStats(index=index, kind=kind, inputs=inputs)
    return Stage(stats=stats, dataset=None, batch_size=batch_size)


# --- pure helpers, no TensorFlow ------------------------------------------------------------


def test_elements_per_output_batch_multiplies_batch_sizes_upstream() -> None:
    stages = [
        _stage(0, "source", []),
        _stage(1, "map", [0]),
        _stage(2, "batch", [1], batch_size=4),
        _stage(3, "prefetch", [2]),
    ]

    assert elements_per_output_batch(stages) == [4.0, 4.0, 1.0, 1.0]


def test_elements_per_output_batch_unknown_above_interleave() -> None:
    stages = [
        _stage(0, "source", []),
        _stage(1, "parallel-interleave", [0]),
        _stage(2, "batch", [1], batch_size=8),
    ]

    assert elements_per_output_batch(stages) == [None, 8.0, 1.0]


def test_own_cost_is_time_added_over_the_input() -> None:
    # GIVEN a sequential map that adds 20 ms per batch over a near-free source, and a batch
    # and prefetch that only inherit it
    stages = [
        StageStats(0, "source"),
        StageStats(1, "map", inputs=[0]),
        StageStats(2, "batch", inputs=[1]),
        StageStats(3, "prefetch", inputs=[2]),
    ]
    per_batch = [0.0004, 0.0204, 0.0210, 0.0205]

    # WHEN own costs are computed
    own = own_costs(stages, per_batch)

    # THEN the map owns the time, the prefetch never goes negative
    assert own == pytest.approx([0.0004, 0.02, 0.0006, 0.0])
    assert pick_bottleneck(own) == 1


def test_zip_sums_its_inputs_and_unknown_inputs_count_as_free() -> None:
    stages = [
        StageStats(0, "source"),
        StageStats(1, "source"),
        StageStats(2, "zip", inputs=[0, 1]),
        StageStats(3, "interleave", inputs=[2]),
    ]

    own = own_costs(stages, [0.01, 0.02, 0.035, 0.05])
    own_unknown_input = own_costs(stages, [0.01, 0.02, None, 0.05])

    assert own[2] == pytest.approx(0.005)
    assert own_unknown_input[3] == pytest.approx(0.05)
    assert own_unknown_input[2] is None


def test_no_bottleneck_when_nothing_costs_anything() -> None:
    assert pick_bottleneck([None, 0.0, None]) is None
    assert pick_bottleneck([]) is None


def test_a_cost_inside_its_input_s_noise_is_not_the_bottleneck() -> None:
    # GIVEN a sequential map read at 11-18 ms a batch in three rounds, and the batch after it
    # at 15-17 ms in the same rounds, once faster: by medians (14 and 16 ms) the batch owns
    # 2 ms, the map 14 ms less its near-free source
    stages = [
        StageStats(0, "source"),
        StageStats(1, "map", inputs=[0]),
        StageStats(2, "batch", inputs=[1]),
    ]
    rounds_s = [[0.0001, 0.0002, 0.0001], [0.011, 0.018, 0.014], [0.015, 0.017, 0.016]]
    own = own_costs(stages, [0.0001, 0.014, 0.016])
    # WHEN the bottleneck is picked with the rounds' pairs
    clear = clear_of_noise(stages, rounds_s, own)
    # THEN only the map's cost stands clear of its input's noise
    assert clear == [True, True, False]
    assert pick_bottleneck(own, clear) == 1
    # and where the batch reads well over the map in every round, it stands
    heavy_rounds = [*rounds_s[:2], [0.035, 0.045, 0.040]]
    heavy = own_costs(stages, [0.0001, 0.014, 0.040])
    assert pick_bottleneck(heavy, clear_of_noise(stages, heavy_rounds, heavy)) == 2
    # and where no cost is clear, the largest by medians
    assert pick_bottleneck([0.001, 0.002], [False, False]) == 1


def test_a_cost_is_read_against_its_input_in_the_same_round() -> None:
    # GIVEN a host that slowed down over the rounds: each reading of the map is 10% over
    # its input's in the same round, though its fastest is not over its input's slowest
    stages = [StageStats(0, "source"), StageStats(1, "map", inputs=[0])]
    rounds_s = [[0.010, 0.015, 0.020], [0.011, 0.0166, 0.0219]]
    own = own_costs(stages, [0.015, 0.0166])
    # THEN the pairs see its cost: the host's drift falls on both sides alike
    assert clear_of_noise(stages, rounds_s, own) == [True, True]
    # and one round's pair, with no interval, is read as it stands
    assert clear_of_noise(stages, [r[:1] for r in rounds_s], own) == [True, True]
    assert clear_of_noise(stages, [[0.012], [0.011]], own) == [True, False]


def test_a_costly_stage_read_once_is_still_the_bottleneck() -> None:
    # GIVEN a 20 ms source read in three rounds, and a 150 ms decode map after it whose slow
    # first element had its prefix read once
    stages = [StageStats(0, "source"), StageStats(1, "map", inputs=[0])]
    rounds_s = [[0.020, 0.021, 0.019], [0.170]]
    own = own_costs(stages, [0.020, 0.170])
    # THEN the map, not the source that owns an eighth of the time
    assert pick_bottleneck(own, clear_of_noise(stages, rounds_s, own)) == 1


def test_a_prefetch_is_never_the_bottleneck() -> None:
    # GIVEN a time-series pipeline read on 2 busy cores: its gather map owns 1.1 ms a
    # batch but reads within its input's noise, and reading through the prefetch after it
    # adds 0.3 ms, clear of noise (the prefetch's thread beside the map's)
    own = [0.0011, 0.0003, 0.0002]
    clear = [False, True, False]
    kinds = ["parallel-map", "prefetch", "batch"]
    # WHEN the bottleneck is picked
    # THEN the map is: a prefetch does no work of its own to make cheaper
    assert pick_bottleneck(own, clear, kinds) == 0
    # and a stage clear of noise that adds a sliver of the time is not it either
    assert pick_bottleneck([0.0011, 0.00004], [False, True]) == 0
    assert pick_bottleneck([0.0011, 0.0003], [False, True]) == 1
