"""Each stage's cost to training: which stage is held next (the bisection on fake rates),
how many elements are held, and how the results reach the report and the summary."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from synthetic_reports import FakeClock, synthetic_cost_report

from pipediag.analysis.stage_bisect import Freed, jump_stage, next_stage, planned_trials
from pipediag.bench.hold import (
    MAX_HELD_ELEMENTS,
    UNSIZED_ELEMENTS,
    Holdable,
    fill_batches,
    held_count,
)
from pipediag.bench.interleaved import Rounds
from pipediag.bench.pipeline import BatchTiming
from pipediag.renderers.text import render_text
from pipediag.report.io import from_dict, to_dict
from pipediag.report.stages import StageStats
from pipediag.training.search import run
from pipediag.training.stage_cost import Searched, StageSearch, freed_from, with_freed


def _searched(gains: dict[int, float], chain: list[int]) -> tuple[list[int], int | None]:
    """The order the bisection holds stages in, and the jump it finds, with fake gains."""
    measured: dict[int, Freed | None] = {}
    order = []
    while (index := next_stage(chain, measured)) is not None:
        order.append(index)
        measured[index] = Freed(gains[index], gains[index] * 0.9, gains[index] * 1.1)
    return order, jump_stage(chain, measured)


def test_the_output_stage_goes_first_and_a_bisection_finds_the_jump() -> None:
    # GIVEN source, map (slow), batch, prefetch: holding the map or later frees 5x
    gains = {0: 1.0, 1: 5.0, 2: 5.1, 3: 5.2}
    # WHEN the stages are searched
    order, jump = _searched(gains, [0, 1, 2, 3])
    # THEN the output first, then two halvings name the map
    assert order == [3, 1, 0]
    assert jump == 1


def test_a_jump_at_the_source_and_one_at_the_output() -> None:
    assert _searched({0: 3.0, 1: 3.0, 2: 3.0, 3: 3.0}, [0, 1, 2, 3]) == ([3, 1, 0], 0)
    assert _searched({0: 1.0, 1: 1.0, 2: 1.0, 3: 3.0}, [0, 1, 2, 3]) == ([3, 1, 2], 3)


def test_the_jump_is_where_half_the_freed_step_time_is_freed_not_half_the_speedup() -> None:
    # GIVEN a sleeping map held at 7.8x (87% of the step freed), the map after it at 12x and
    # the whole pipeline at 20x (95%): 7.8x is under half of 20x, yet holds the cost's bulk
    gains = {0: 1.0, 1: 7.8, 2: 12.0, 3: 20.0}
    assert _searched(gains, [0, 1, 2, 3])[1] == 1
    # AND a stage freeing under half the freed time is not the jump: 1.2x (17%) of 3x (67%)
    assert _searched({0: 1.0, 1: 1.2, 2: 3.0, 3: 3.0}, [0, 1, 2, 3])[1] == 2


def test_a_long_chain_takes_a_logarithmic_number_of_trials() -> None:
    chain = list(range(16))
    gains = {i: (1.0 if i < 11 else 4.0) for i in chain}
    order, jump = _searched(gains, chain)
    assert jump == 11
    assert len(order) <= 1 + 4
    assert planned_trials(chain, {}) == 5


def test_nothing_more_runs_when_holding_the_whole_pipeline_frees_nothing() -> None:
    chain = [0, 1, 2]
    measured: dict[int, Freed | None] = {2: Freed(1.02, 0.98, 1.04)}
    assert next_stage(chain, measured) is None
    assert jump_stage(chain, measured) is None
    # a median over 1.05 whose interval still reaches 1 is not material either
    assert next_stage(chain, {2: Freed(1.2, 0.99, 1.5)}) is None


def test_a_trial_without_a_rate_stops_the_bisection() -> None:
    chain = [0, 1, 2, 3]
    measured: dict[int, Freed | None] = {3: Freed(4.0, 3.5, 4.5), 1: None}
    assert next_stage(chain, measured) is None
    assert jump_stage(chain, measured) is None
    assert next_stage(chain, {3: None}) is None


def test_an_empty_chain_measures_nothing() -> None:
    assert next_stage([], {}) is None
    assert planned_trials([], {}) == 0


def test_held_elements_are_bounded_by_memory_and_by_the_first_pass() -> None:
    per_element = Holdable(1, "MapDataset/_1", elements_per_batch=32.0, element_bytes=64)
    assert held_count(per_element, None) == MAX_HELD_ELEMENTS
    huge = dataclasses.replace(per_element, element_bytes=100 * 2**20)
    assert held_count(huge, None) == 2  # 256 MiB / 100 MiB
    unsized = dataclasses.replace(per_element, element_bytes=None)
    assert held_count(unsized, None) == UNSIZED_ELEMENTS
    # 2 batches/s of 32 elements: half a second is 32 elements
    assert held_count(per_element, 2.0) == 32
    # never nothing
    assert held_count(dataclasses.replace(per_element, elements_per_batch=1.0), 0.1) == 1
    # the first pass is read whole, one batch beyond
    assert fill_batches(per_element, 32) == 2
    assert fill_batches(dataclasses.replace(per_element, elements_per_batch=1.0), 5) == 6


def _timing(rate: float) -> BatchTiming:
    return BatchTiming(0.01, [1.0 / rate] * 10, 10.0 / rate, False)


def _rounds(base: float, held: float, interval: tuple[float, float] | None) -> Rounds:
    return Rounds([_timing(base)] * 5, [_timing(held)] * 5, [held / base] * 5, interval, "gain")


def test_the_speedup_is_the_ratio_of_the_median_rates_with_the_rounds_interval() -> None:
    freed = freed_from(_rounds(20.0, 50.0, (2.2, 2.7)))
    assert freed is not None
    assert abs(freed.speedup - 2.5) < 1e-9 and (freed.low, freed.high) == (2.2, 2.7)
    assert freed_from(None) is None


class _FakeCopies:
    """`HeldCopies` without a dataset: a chain of four stages."""

    def __init__(self) -> None:
        self.chain = [Holdable(i, f"n{i}", 1.0, 8) for i in range(4)]
        self.held: list[int] = []

    def pipelines(self, stage: Holdable) -> Any:
        self.held.append(stage.index)
        return stage.index


def test_search_shares_the_time_left_and_stops_when_it_runs_out() -> None:
    # GIVEN each trial takes the whole share it is given
    clock = FakeClock()
    copies = _FakeCopies()
    shares: list[float] = []
    gains = {0: 1.0, 1: 3.0, 2: 3.0, 3: 3.0}

    def try_one(index: Any, seconds: float) -> tuple[Rounds | None, str | None]:
        shares.append(seconds)
        clock.advance(seconds)
        return _rounds(10.0, 10.0 * gains[index], (gains[index] * 0.9, gains[index] * 1.1)), None

    # WHEN there is time for all three trials
    bisection = StageSearch(copies, clock=clock, until_s=clock.now() + 6.0)  # type: ignore[arg-type]
    run(bisection, try_one)  # type: ignore[arg-type]
    found = bisection.searched
    # THEN the output, then the bisection; the first share plans for three trials
    assert copies.held == [3, 1, 0] and found.jump == 1
    assert abs(shares[0] - 2.0) < 1e-9
    assert found.measured[0] is not None and abs(found.measured[0].speedup - 1.0) < 1e-9

    # WHEN the time left is short, the output stage still gets a whole trial's minimum
    copies, shares = _FakeCopies(), []
    bisection = StageSearch(copies, clock=clock, until_s=clock.now() + 1.8)  # type: ignore[arg-type]
    run(bisection, try_one)  # type: ignore[arg-type]
    assert copies.held == [3] and shares == [pytest.approx(1.2)]

    # WHEN there is time for less than one trial, nothing runs
    copies = _FakeCopies()
    bisection = StageSearch(copies, clock=clock, until_s=clock.now() + 0.5)  # type: ignore[arg-type]
    run(bisection, try_one)  # type: ignore[arg-type]
    found = bisection.searched
    assert copies.held == [] and found.measured == {} and found.jump is None


def test_the_output_s_hold_gets_the_time_a_verdict_rests_on_and_the_rest_none_more() -> None:
    # GIVEN each trial takes the whole share it is given, and no time left at all
    clock = FakeClock()
    copies = _FakeCopies()
    shares: list[float] = []

    def try_one(index: Any, seconds: float) -> tuple[Rounds | None, str | None]:
        shares.append(seconds)
        clock.advance(seconds)
        return _rounds(10.0, 30.0, (2.7, 3.3)), None

    # WHEN the verdict rests on the output's hold
    bisection = StageSearch(
        copies,  # type: ignore[arg-type]
        clock=clock,
        until_s=clock.now() + 0.5,
        output_s=4.0,
    )
    run(bisection, try_one)  # type: ignore[arg-type]
    # THEN the output is held for its 4 s, and the bisection after it gets no time
    assert copies.held == [3] and shares == [pytest.approx(4.0)]


def test_the_output_check_s_time_only_where_the_verdict_s_interval_holds_an_edge() -> None:
    from pipediag.phases import OUTPUT_CHECK_MAX_S, output_check_s
    from pipediag.report.model import Verdict

    def check(label: str, interval: list[float] | None, call_s: float = 0.11) -> float:
        verdict = Verdict(label=label, input_cost_interval=interval)  # type: ignore[arg-type]
        return output_check_s(verdict, call_s)

    assert check("input-bound", [0.25, 0.35]) == 0.0
    assert check("balanced", [0.07, 0.18]) == 0.0
    assert check("input-bound", None) == 0.0
    across = check("balanced", [0.12, 0.26])
    assert across == pytest.approx(12 * (2 * 0.11 + 0.1))
    assert check("uncertain", [0.15, 0.19]) == across  # a busy host's, within one band
    # twelve of the shortest slices for a short step; a slow one is capped
    assert check("compute-bound", [0.0, 0.07], call_s=0.001) == pytest.approx(12 * 0.102)
    assert check("balanced", [0.04, 0.3], call_s=2.0) == OUTPUT_CHECK_MAX_S
    # each slice's iterator start and untimed first call, twice a round for five rounds
    verdict = Verdict(label="balanced", input_cost_interval=[0.18, 0.27])
    started = output_check_s(verdict, 0.094, start_s=0.28)
    assert started == pytest.approx(12 * (2 * 0.094 + 0.1) + 10 * 0.28)


def test_results_reach_the_stages_the_json_and_the_summary() -> None:
    # GIVEN a report whose map stage measured the jump on training
    stages = [
        StageStats(0, "source", "RangeDataset"),
        StageStats(1, "map", "MapDataset", function="parse", bottleneck=True, batches_per_s=9.0),
        StageStats(2, "batch", "BatchDatasetV2"),
    ]
    measured: dict[int, Freed | None] = {0: Freed(1.0, 0.97, 1.03), 1: Freed(2.4, 2.1, 2.7)}
    updated = with_freed(stages, Searched(measured, jump=1))
    base = synthetic_cost_report()
    report = dataclasses.replace(base, pipeline=dataclasses.replace(base.pipeline, stages=updated))
    # WHEN it goes through JSON and is rendered
    again = from_dict(to_dict(report))
    text = render_text(again)
    # THEN the fields survive and the slowest-stage line says what holding the map did
    assert again.pipeline.stages[1].training_speedup_if_free == 2.4
    assert again.pipeline.stages[1].training_cost_jump
    assert again.pipeline.stages[2].training_speedup_if_free is None
    assert "holding map(parse) in memory: training 2.4x (2.1-2.7x)" in " ".join(text.split())


def test_the_jump_names_the_bottleneck_where_prefix_timing_put_it_on_a_neighbour() -> None:
    # GIVEN prefix timing on a busy host put the map's cost on the batch after it, and
    # holding the shuffle gained nothing, holding the map 7x
    stages = [
        StageStats(0, "source", "TensorSlice", own_s_per_batch=0.0001),
        StageStats(1, "shuffle", "ShuffleDataset", inputs=[0], own_s_per_batch=0.0002),
        StageStats(2, "map", "MapDataset", inputs=[1], own_s_per_batch=0.004),
        StageStats(3, "batch", "BatchDatasetV2", inputs=[2], own_s_per_batch=0.02),
        StageStats(4, "prefetch", "PrefetchDataset", inputs=[3], bottleneck=False),
    ]
    stages[3] = dataclasses.replace(stages[3], bottleneck=True)
    measured: dict[int, Freed | None] = {1: Freed(1.0, 0.9, 1.1), 2: Freed(7.0, 6.0, 8.0)}
    updated = with_freed(stages, Searched(measured, jump=2))
    # THEN the map is the bottleneck: the batch's hold was never the jump
    assert [s.index for s in updated if s.bottleneck] == [2]
    # and where the jump frees several unheld stages, the costliest alone among them
    measured = {1: Freed(1.0, 0.9, 1.1), 4: Freed(7.0, 6.0, 8.0)}
    updated = with_freed(stages, Searched(measured, jump=4))
    assert [s.index for s in updated if s.bottleneck] == [3]
    # and with no jump the prefix timing's stands
    assert [s.index for s in with_freed(stages, Searched({}, jump=None)) if s.bottleneck] == [3]
    # and where prefix timing's bottleneck is among those the jump frees, it stands over a
    # neighbour whose cost by medians was larger but inside its input's noise
    stages[3] = dataclasses.replace(stages[3], bottleneck=False)
    stages[2] = dataclasses.replace(stages[2], bottleneck=True)
    updated = with_freed(stages, Searched(measured, jump=4))
    assert [s.index for s in updated if s.bottleneck] == [2]


def test_a_search_ended_before_its_jump_names_what_its_largest_step_freed() -> None:
    # GIVEN prefix timing that blames the map, whose hold gained training 1.02x (1.0-1.04x),
    # while the whole pipeline held gained 4.8x, and the search ended between the two
    stages = [
        StageStats(0, "source", "TensorSlice", own_s_per_batch=0.0001),
        StageStats(1, "map", "MapDataset", inputs=[0], own_s_per_batch=0.02, bottleneck=True),
        StageStats(2, "map", "MapDataset", inputs=[1], own_s_per_batch=0.004),
        StageStats(3, "padded-batch", "PaddedBatchDataset", inputs=[2], own_s_per_batch=0.01),
        StageStats(4, "prefetch", "PrefetchDataset", inputs=[3]),
    ]
    measured: dict[int, Freed | None] = {1: Freed(1.02, 1.0, 1.04), 4: Freed(4.8, 4.5, 5.0)}
    updated = with_freed(stages, Searched(measured, jump=None))
    # THEN the bottleneck is the costliest stage alone that the hold did not clear
    assert [s.index for s in updated if s.bottleneck] == [3]
    # and so does a hold whose interval reaches a gain: the output's hold freed 4.7x more
    unclear = {1: Freed(1.02, 0.98, 1.2), 4: Freed(4.8, 4.5, 5.0)}
    assert [s.index for s in with_freed(stages, Searched(unclear)) if s.bottleneck] == [3]
    # and where the map's hold clearly gained nothing, the costliest stage after it that
    # computes is named: never the prefetch, however much reading through it added
    cleared = {1: Freed(1.0, 0.98, 1.02)}
    timed = [*stages[:4], dataclasses.replace(stages[4], own_s_per_batch=0.05)]
    assert [s.index for s in with_freed(timed, Searched(cleared)) if s.bottleneck] == [3]
    # and where no step between holds gained, a hold that could have clears nothing
    flat = {1: Freed(1.02, 0.98, 1.2), 4: Freed(1.04, 0.99, 1.1)}
    assert [s.index for s in with_freed(stages, Searched(flat)) if s.bottleneck] == [1]


def test_unread_alone_the_jump_names_the_stage_that_computes_not_the_prefetch() -> None:
    # GIVEN stage timing ran out of time (no stage's own cost), holding the batch gained
    # nothing and holding the prefetch after a random augmentation map 1.37x
    stages = [
        StageStats(0, "source", "GeneratorDataset"),
        StageStats(1, "batch", "BatchDatasetV2", inputs=[0]),
        StageStats(2, "parallel-map", "ParallelMapDatasetV2", inputs=[1], function="augment"),
        StageStats(3, "batch", "BatchDatasetV2", inputs=[2]),
        StageStats(4, "repeat", "RepeatDataset", inputs=[3]),
        StageStats(5, "prefetch", "PrefetchDataset", inputs=[4]),
    ]
    measured: dict[int, Freed | None] = {1: Freed(0.93, 0.9, 1.0), 5: Freed(1.37, 1.3, 1.44)}
    # THEN the map is named, over the batch, repeat and prefetch after it, whether the
    # search found its jump or ended before it
    for jump in (5, None):
        updated = with_freed(stages, Searched(measured, jump=jump))
        assert [s.index for s in updated if s.bottleneck] == [2]
    # and with no function to run anywhere, a stage that computes goes before a repeat
    plain = [dataclasses.replace(s, function=None) for s in stages]
    updated = with_freed(plain, Searched(measured, jump=5))
    assert [s.index for s in updated if s.bottleneck] == [3]
    # and read alone, reading through the prefetch adding more than the map (its thread
    # beside the map's on busy cores) names the map still
    timed = list(stages)
    timed[2] = dataclasses.replace(stages[2], own_s_per_batch=0.0001)
    timed[5] = dataclasses.replace(stages[5], own_s_per_batch=0.0015)
    updated = with_freed(timed, Searched(measured, jump=5))
    assert [s.index for s in updated if s.bottleneck] == [2]


def test_the_stage_named_is_the_bottleneck_the_jump_frees_not_the_zip_it_was_held_at() -> None:
    from pipediag.renderers.stage_cost_words import costliest_stage

    # GIVEN holds that jumped at a zip, which only pairs its inputs, and the bottleneck the
    # jump named among the stages its hold frees: the map before it
    stages = [
        StageStats(0, "source", "RangeDataset", own_s_per_batch=0.0001),
        StageStats(1, "parallel-map", "ParallelMapDatasetV2", inputs=[0], own_s_per_batch=0.002),
        StageStats(2, "source", "RangeDataset", own_s_per_batch=0.0001),
        StageStats(3, "zip", "ZipDataset", inputs=[1, 2], own_s_per_batch=0.0),
        StageStats(4, "prefetch", "PrefetchDataset", inputs=[3]),
    ]
    updated = with_freed(stages, Searched({3: Freed(1.8, 1.4, 2.3)}, jump=3))
    # THEN the map is named, and the summary's line gives the zip's hold beside it
    named = costliest_stage(updated)
    assert named is not None and named.index == 1
    base = synthetic_cost_report()
    report = dataclasses.replace(base, pipeline=dataclasses.replace(base.pipeline, stages=updated))
    line = next(x for x in render_text(report).splitlines() if x.strip().startswith("Slowest"))
    assert "parallel-map" in line.split(";")[0] and "holding zip in memory" in line


def test_an_old_report_without_the_fields_loads_with_none() -> None:
    base = synthetic_cost_report()
    stage = StageStats(0, "source", "RangeDataset", bottleneck=True, batches_per_s=9.0)
    data = to_dict(
        dataclasses.replace(base, pipeline=dataclasses.replace(base.pipeline, stages=[stage]))
    )
    for row in data["pipeline"]["stages"]:
        for key in [k for k in row if "if_free" in k or k == "training_cost_jump"]:
            del row[key]
    loaded = from_dict(data)
    assert loaded.pipeline.stages[0].training_speedup_if_free is None
    assert not loaded.pipeline.stages[0].training_cost_jump
    assert "in memory" not in render_text(loaded)
