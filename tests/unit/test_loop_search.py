"""Each stage's cost to a custom loop's training: the stage-hold search served at the loop's
budget after the alternation, on a fake clock, and the step-alone ceiling that keeps a
disturbed held trial's gain out (docs/design.md, "Stage costs on training")."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from loop_serving import RecordedResults, loop_server
from synthetic_reports import FakeClock

from pipediag.bench.hold import HOLD, Holdable
from pipediag.bench.interleaved import Rounds
from pipediag.bench.pipeline import BatchTiming
from pipediag.bench.teardown import TearDown
from pipediag.bench.whatif import FixPipelines
from pipediag.renderers.reason_words import reason_words
from pipediag.report.stages import StageStats
from pipediag.training.budget import PULL, BudgetServer, LoopWork
from pipediag.training.loop_search import HoldPlan, LoopSearch
from pipediag.training.search import run
from pipediag.training.stage_cost import Searched, StageSearch, held_ceiling, with_freed

STEP_S = 0.010  # the loop's own train step, in fake seconds
SLOW_S = 0.020  # a batch of the unchanged pipeline
FREE_S = 0.0001  # a batch served from memory


class _Source:
    """An iterable whose batches cost `cost_s` of fake time each to pull."""

    def __init__(self, clock: FakeClock, cost_s: float) -> None:
        self.clock = clock
        self.cost_s = cost_s

    def __iter__(self) -> Iterator[int]:
        while True:
            self.clock.sleep(self.cost_s)
            yield 1


class _Copies:
    """`HeldCopies` without a dataset: source, map (20 ms a batch), batch, prefetch. Holding
    the map or any stage after it frees the pipeline's whole cost."""

    def __init__(self, clock: FakeClock, free_from: int = 1) -> None:
        self.chain = [Holdable(i, f"n{i}", 1.0, 8) for i in range(4)]
        self.clock = clock
        self.free_from = free_from
        self.held: list[int] = []

    def pipelines(self, stage: Holdable) -> FixPipelines:
        self.held.append(stage.index)
        cost = FREE_S if stage.index >= self.free_from else SLOW_S
        return FixPipelines(
            fix=HOLD,
            stage_index=stage.index,
            baseline=_Source(self.clock, SLOW_S),
            variant=_Source(self.clock, cost),
        )


def _plan(copies: _Copies, seconds: float, ceiling: float | None = None) -> HoldPlan:
    return HoldPlan(copies, seconds=seconds, ceiling=ceiling)  # type: ignore[arg-type]


def test_a_loop_served_the_held_copies_finds_the_jump_by_bisection() -> None:
    # GIVEN a loop whose step is 10 ms, fed 20 ms batches unless the map is held
    clock = FakeClock()
    copies = _Copies(clock)
    stages = _plan(copies, 12.0).start(clock)
    holds = LoopSearch(stages, clock=clock, step_s=STEP_S, teardown=TearDown())
    # WHEN the loop pulls until it is told to stop
    began = clock.now()
    while holds.next_batch() is not None:
        clock.sleep(STEP_S)
    holds.close()
    found = stages.searched
    # THEN the output first, then the bisection, each decided from the last result
    assert copies.held == [3, 1, 0]
    assert found.jump == 1
    whole = found.measured[3]
    assert whole is not None and whole.speedup == pytest.approx(0.030 / 0.0101, rel=0.05)
    source = found.measured[0]
    assert source is not None and source.speedup == pytest.approx(1.0, abs=0.05)
    # and nothing ran past the plan's time (a trial may overrun its share by 30%)
    assert clock.now() - began <= 12.0 * 1.3


def _server(clock: FakeClock, work: LoopWork, held: list[Searched]) -> BudgetServer:
    return loop_server(clock, RecordedResults(work=work, held=held), step_s=STEP_S)


def _drive(server: BudgetServer, clock: FakeClock, limit: int = 100_000) -> int:
    pulls = 0
    while pulls < limit and (answer := server.next_batch()) is not None:
        clock.advance(SLOW_S + STEP_S if answer is PULL else STEP_S)
        pulls += 1
    return pulls


def test_the_budget_server_runs_the_holds_after_the_alternation_and_reports_them_once() -> None:
    clock = FakeClock()
    copies = _Copies(clock)
    held: list[Searched] = []
    server = _server(clock, LoopWork(holds=_plan(copies, 12.0)), held)
    _drive(server, clock)
    server.finish()  # the budget ended the script: told once only
    (found,) = held
    assert found.jump == 1 and copies.held == [3, 1, 0]


def test_a_loop_that_stops_during_the_holds_reports_what_it_measured() -> None:
    clock = FakeClock()
    copies = _Copies(clock)
    held: list[Searched] = []
    server = _server(clock, LoopWork(holds=_plan(copies, 12.0)), held)
    _drive(server, clock, limit=60)  # the script ended during the first trial
    server.finish()
    (found,) = held
    assert copies.held == [3] and found.jump is None


def test_a_loop_that_stops_during_the_alternation_is_concluded_and_served_nothing_more() -> None:
    # GIVEN holds and the model side to follow the alternation
    clock = FakeClock()
    copies = _Copies(clock)
    results = RecordedResults(work=LoopWork(holds=_plan(copies, 12.0), model_s=2.0))
    server = loop_server(clock, results, step_s=STEP_S)
    _drive(server, clock, limit=5)
    # WHEN the script ends during the alternation (and the hook says so twice)
    server.finish()
    server.finish()
    # THEN the alternation's blocks so far are handed on once, and nothing else starts
    assert results.order == ["concluded"] and copies.held == []
    assert server.next_batch() is None


def test_no_holds_without_a_plan() -> None:
    clock = FakeClock()
    held: list[Searched] = []
    server = _server(clock, LoopWork(), held)
    _drive(server, clock)
    server.finish()
    assert held == []


# --- the step-alone ceiling -----------------------------------------------------------------


def _timing(rate: float) -> BatchTiming:
    return BatchTiming(0.01, [1.0 / rate] * 10, 10.0 / rate, False)


def test_a_held_rate_above_the_step_alone_ceiling_is_flagged_and_stops_the_bisection() -> None:
    # GIVEN the step alone ran at 100 steps/s at most (the ceiling, with its noise, 105),
    # and the whole pipeline held, the step on held batches, at 130: those blocks were slowed
    clock = FakeClock()
    copies = _Copies(clock)

    def try_one(pipelines: FixPipelines, seconds: float) -> tuple[Rounds | None, str | None]:
        clock.advance(seconds)
        held = 130.0 if pipelines.stage_index == 3 else 150.0  # past the output: disturbed
        return Rounds([_timing(30.0)] * 5, [_timing(held)] * 5, [held / 30.0] * 5, None, ""), None

    # WHEN the stages are searched
    bisection = StageSearch(copies, clock=clock, until_s=clock.now() + 10.0, ceiling=105.0)  # type: ignore[arg-type]
    run(bisection, try_one)  # type: ignore[arg-type]
    found = bisection.searched
    # THEN the output stage's hold counts, and raises the ceiling to its own rate (136.5)
    freed = found.measured[3]
    assert freed is not None and freed.held_steps_per_s == pytest.approx(130.0)
    assert 3 not in found.unused
    # AND the next hold, faster than that, is not used, with why; the bisection stops there
    (next_held,) = (i for i in copies.held if i != 3)
    assert found.measured[next_held] is None and found.jump is None
    assert "faster than the train step alone" in reason_words(found.unused[next_held])
    stages = with_freed([StageStats(i, "map", "MapDataset") for i in range(4)], found)
    assert stages[next_held].training_speedup_if_free is None
    assert "150.0 steps/s" in reason_words(stages[next_held].training_speedup_if_free_unused)
    # AND the rewrites' trials after the holds are bounded by the raised ceiling
    assert stages[3].training_held_steps_per_s == pytest.approx(130.0)
    assert held_ceiling(stages, 105.0) == pytest.approx(130.0 * 1.05)
    assert held_ceiling(stages, None) is None

    # WHEN the held rates are within the ceiling, the same search goes on to the jump
    copies = _Copies(clock)
    bisection = StageSearch(copies, clock=clock, until_s=clock.now() + 10.0, ceiling=160.0)  # type: ignore[arg-type]
    run(bisection, try_one)  # type: ignore[arg-type]
    found = bisection.searched
    assert copies.held[0] == 3 and found.measured[3] is not None and not found.unused


def test_a_search_records_a_trial_given_no_rounds_as_unmeasured() -> None:
    clock = FakeClock()
    stages = StageSearch(_Copies(clock), clock=clock, until_s=clock.now() + 10.0)  # type: ignore[arg-type]
    due = stages.next_trial()
    assert due is not None and due[0].stage_index == 3
    stages.record(None)
    assert stages.searched.measured == {3: None} and stages.next_trial() is None


def test_a_loop_is_served_the_holds_then_the_rewrites_bounded_by_them() -> None:
    from pipediag.training.prescription import PipelineSearch, SearchPlan

    # GIVEN holding the map frees the pipeline (the jump), the source frees nothing; and
    # two rewrites: one of the source (bounded out by its 1.0x), one of the map
    clock = FakeClock()
    copies = _Copies(clock)
    rewrites = [
        FixPipelines("cache", 0, _Source(clock, SLOW_S), _Source(clock, FREE_S), stage="source"),
        FixPipelines(
            "parallel-map", 1, _Source(clock, SLOW_S), _Source(clock, FREE_S), stage="map"
        ),
    ]
    stages = [
        StageStats(index=i, kind=k) for i, k in enumerate(("source", "map", "batch", "prefetch"))
    ]

    def compose(kept: object, extra: FixPipelines) -> FixPipelines:
        return extra

    plan = SearchPlan(None, rewrites, stages, until_s=clock.now() + 30, compose=compose)
    held: list[Searched] = []
    searched: list[PipelineSearch] = []
    work = LoopWork(holds=_plan(copies, 12.0), search=plan)
    results = RecordedResults(work=work, held=held, tried=searched)
    server = loop_server(clock, results, step_s=STEP_S)
    # WHEN the loop pulls until it is told to stop
    _drive(server, clock)
    server.finish()
    # THEN the holds ran first, and the rewrites after, told once each
    (found,) = held
    assert found.jump == 1
    (search,) = searched
    prescription = search.prescription()
    by_fix = {c.fix: c for c in prescription.tried}
    assert "no rewrite up to it can gain more" in reason_words(by_fix["cache"].reason)
    assert by_fix["parallel-map"].kept
    assert prescription.training_speedup == pytest.approx(0.030 / 0.0101, rel=0.1)
