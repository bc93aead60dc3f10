"""Rates in alternation: the blocks' schedule, their transitions, and the pairs' cost."""

from __future__ import annotations

import dataclasses
import math

import pytest
from loop_serving import RecordedResults, loop_server
from synthetic_reports import FakeClock

from pipediag.analysis.alternation import (
    block_of,
    observer_effect,
    paired_cost,
    pipeline_cores,
    steady_part,
    step_alone_ceiling,
)
from pipediag.analysis.paired import (
    MAX_BLOCK_STEPS,
    MAX_BLOCK_STEPS_UNBOUNDED,
    MAX_ROUNDS,
    MIN_BLOCK_STEPS,
    OBSERVER_PAIRS,
    OBSERVER_S,
    UNBOUNDED_BLOCK_S,
)
from pipediag.bench.interleaved import Rounds
from pipediag.bench.pipeline import BatchTiming
from pipediag.clock import Quiet
from pipediag.report.model import ComputeAlone, RateBlock
from pipediag.report.trials import FixTrial
from pipediag.training.alternation import (
    WARMUP_STEPS,
    Alternation,
    block_steps_for,
    unbounded_block_steps,
)
from pipediag.training.budget import PULL, BudgetServer, CachedBatch
from pipediag.training.prescription import with_training_results


def _blocks(training: list[float], alone: list[float], steps: int = 10) -> list[RateBlock]:
    """A0 T1 A1 ... with the given rates (steps/s)."""
    blocks = [RateBlock("training", 0.0, steps, steps / training[0])]
    for t_rate, a_rate in zip(alone, training[1:], strict=True):
        blocks.append(RateBlock("step-alone", 0.0, steps, steps / t_rate))
        blocks.append(RateBlock("training", 0.0, steps, steps / a_rate))
    return blocks


def test_a_training_block_drops_the_steps_a_refilled_buffer_served() -> None:
    # GIVEN a training block after a step-alone one: 3 steps served from the refilled
    # buffer (1 ms), then the steady 10-ms steps of an input-bound pipeline
    kept, dropped = steady_part([0.001] * 3 + [0.010] * 9)
    assert dropped == 3 and kept == [0.010] * 9
    # a step-alone block drops its slow leading steps (the pipeline refilling beside it)
    kept, dropped = steady_part([0.020, 0.015] + [0.005] * 10)
    assert dropped == 2 and len(kept) == 10
    # and leading steps as far off the other way go too, whatever the block: the host's noise
    # dropped one way only would move the cost that way
    assert steady_part([0.001] + [0.005] * 9)[1] == 1
    assert steady_part([0.050] + [0.005] * 9)[1] == 1
    assert steady_part([0.0055] + [0.005] * 9)[1] == 0


def test_at_most_half_a_block_is_a_transition() -> None:
    # 8 fast leading steps in a block of 14: only 7 go
    kept, dropped = steady_part([0.001] * 8 + [0.010] * 6)
    assert dropped == 7 and kept == [0.001] + [0.010] * 6


def test_a_block_keeps_its_steady_steps_and_the_cpu_of_all() -> None:
    block = block_of("training", 2.0, [0.001, 0.010, 0.010, 0.010], cpu_s=0.08)
    assert (block.steps, block.dropped_steps) == (3, 1)
    assert block.seconds == pytest.approx(0.030)
    assert block.cpu_s_per_step == pytest.approx(0.02)
    assert block.steps_per_s == pytest.approx(100.0)


def test_pairs_give_the_cost_and_a_drift_of_the_host_cancels() -> None:
    # GIVEN a host slowing steadily through the alternation: every rate falls 10% a block,
    # and training runs at 60% of the step alone throughout (a 40% input cost)
    rates = [100.0 * 0.9**i for i in range(7)]
    training = [0.6 * rates[i] for i in range(0, 7, 2)]
    alone = [rates[i] for i in range(1, 7, 2)]
    cost = paired_cost(_blocks(training, alone))
    assert cost is not None and cost.pairs == 3
    # THEN each T block read against the A blocks either side gives 40% exactly (a
    # geometric drift is linear in the logs), where T against the A block before it alone
    # would read 1 - 0.6 * 0.9 = 46%
    assert cost.cost == pytest.approx(0.4)
    assert cost.low == pytest.approx(0.4) and cost.high == pytest.approx(0.4)


def test_the_interval_holds_the_pairs_spread() -> None:
    blocks = _blocks([50.0, 52.0, 48.0, 51.0], [100.0, 90.0, 110.0])
    cost = paired_cost(blocks)
    assert cost is not None and cost.low is not None and cost.high is not None
    assert cost.low < cost.cost < cost.high
    assert 0.4 < cost.cost < 0.6
    assert cost.half_width == pytest.approx((cost.high - cost.low) / 2)
    # one pair alone has no interval
    single = paired_cost(blocks[:3])
    assert single is not None and single.low is None and single.half_width is None
    assert paired_cost(blocks[:1]) is None


def test_fit_s_time_around_each_step_is_read_into_the_step_alone() -> None:
    # GIVEN fit's 3-ms train function, its callbacks' span 3.3 ms a step (0.3 ms of fit's own
    # Python around the call), a pipeline that costs nothing, and step-alone blocks that call
    # the train function back to back
    blocks = _blocks([1 / 0.0033] * 4, [1 / 0.003] * 3)
    # WHEN read bare, 9% looks like input cost
    bare = paired_cost(blocks)
    assert bare is not None and bare.cost == pytest.approx(1 - 3 / 3.3)
    # THEN with fit's 0.3 ms added to every step-alone step, as fit would run a cached
    # batch (FastFlow's T), it is none
    fitted = paired_cost(blocks, around_s=0.0003)
    assert fitted is not None and fitted.cost == pytest.approx(0.0, abs=1e-9)
    assert fitted.compute == pytest.approx(1 / 0.0033)
    assert fitted.training == pytest.approx(bare.training)


def test_training_faster_than_the_step_alone_reads_as_a_negative_cost() -> None:
    cost = paired_cost(_blocks([110.0, 110.0, 110.0, 110.0], [100.0, 100.0, 100.0]))
    assert cost is not None and cost.cost == pytest.approx(1 - 110 / 100)


def test_the_pipelines_cores_are_the_cpu_training_adds_over_the_step_alone() -> None:
    blocks = [
        RateBlock("training", 0.0, 10, 0.1, cpu_s_per_step=0.015),
        RateBlock("step-alone", 0.0, 10, 0.05, cpu_s_per_step=0.005),
    ]
    # 10 ms more CPU per step at 100 steps/s: one core
    assert pipeline_cores(blocks) == pytest.approx(1.0)
    assert pipeline_cores(blocks[:1]) is None


def test_blocks_are_sized_from_the_measured_step() -> None:
    assert block_steps_for(0.01) == 40
    assert block_steps_for(1.0) == MIN_BLOCK_STEPS
    assert block_steps_for(0.0001) == MAX_BLOCK_STEPS
    # where nothing says how many steps are left (a loop), short steps' blocks stay short:
    # the script may end soon after the budget
    assert block_steps_for(0.003) == 134
    assert block_steps_for(0.003, MAX_BLOCK_STEPS_UNBOUNDED) == MAX_BLOCK_STEPS_UNBOUNDED


def test_a_block_with_nothing_to_bound_it_lasts_long_enough_and_in_whole_calls() -> None:
    # GIVEN a loop whose steps left are unknown
    # WHEN its steps take 3 ms, THEN a block is the 64 steps it always was
    assert unbounded_block_steps(0.003) == MAX_BLOCK_STEPS_UNBOUNDED
    # WHEN they take 0.1 ms (64 of them: 6.4 ms, a scheduler's slice), THEN as many as last
    # UNBOUNDED_BLOCK_S
    assert unbounded_block_steps(0.0001) == round(UNBOUNDED_BLOCK_S / 0.0001)
    # WHEN each call of its function runs 100 steps, THEN whole calls: a block ending inside
    # a call would leave the call's rest in no block
    assert unbounded_block_steps(0.00015, per_call=100) == 700
    assert unbounded_block_steps(0.01, per_call=100) == 100
    assert unbounded_block_steps(0.003, per_call=4) == MAX_BLOCK_STEPS_UNBOUNDED


def _run(alternation: Alternation, clock: FakeClock, rates: dict[str, float]) -> None:
    """Run the schedule to its end, each kind's steps at its rate (quiet: training's, unless
    given)."""
    while (kind := alternation.next) != "done":
        alternation.start_block(kind, clock.now())
        rate = rates.get(kind, rates["training"])
        done = False
        while not done:
            clock.advance(1.0 / rate)
            done = alternation.step_ended(clock.now())


def test_the_schedule_alternates_from_the_lead_and_stops_when_the_interval_is_narrow() -> None:
    clock = FakeClock()
    alternation = Alternation(clock=clock, origin=0.0, block_steps=5, lead=(0.0, [0.02] * 5))
    assert alternation.next == "step-alone"
    _run(alternation, clock, {"training": 50.0, "step-alone": 100.0})
    kinds = [b.kind for b in alternation.blocks]
    # steady rates: the interval is nil after the minimum of 3 rounds
    assert kinds == ["training", "step-alone"] * 3 + ["training"]
    result = alternation.result("cached-batch-loop")
    assert isinstance(result, ComputeAlone) and result.measured
    assert result.steps_per_s == pytest.approx(100.0)
    assert result.steps == 15 and result.block_steps == 5 and len(result.blocks) == 7
    cost = paired_cost(result.blocks)
    assert cost is not None and cost.cost == pytest.approx(0.5)


def test_without_a_lead_the_schedule_starts_with_training() -> None:
    clock = FakeClock()
    alternation = Alternation(clock=clock, origin=0.0, block_steps=5, lead=None)
    assert alternation.next == "training"
    _run(alternation, clock, {"training": 50.0, "step-alone": 100.0})
    assert [b.kind for b in alternation.blocks][:2] == ["training", "step-alone"]
    assert alternation.rounds == 3


def test_a_wide_interval_adds_rounds_up_to_the_bound() -> None:
    clock = FakeClock()
    alternation = Alternation(
        clock=clock, origin=0.0, block_steps=5, lead=(0.0, [0.02] * 5), max_rounds=5
    )
    rates = {"training": 50.0, "step-alone": 100.0}
    while alternation.next != "done":
        kind = "step-alone" if alternation.next == "step-alone" else "training"
        alternation.start_block(kind, clock.now())
        # every other step-alone block runs 1.2x as fast: the pairs disagree (not so far
        # that a block reads as disturbed)
        fast = kind == "step-alone" and alternation.rounds % 2 == 0
        done = False
        while not done:
            clock.advance(1.0 / rates[kind] / (1.2 if fast else 1.0))
            done = alternation.step_ended(clock.now())
    assert alternation.rounds == 5


def _in_turn(training: float, alone: tuple[float, float], max_rounds: int | None) -> Alternation:
    """The schedule run with training at `training` steps/s and the step alone at each of
    `alone` in turn (the first on even rounds)."""
    clock = FakeClock()
    alternation = Alternation(
        clock=clock,
        origin=0.0,
        block_steps=5,
        lead=(0.0, [1 / training] * 5),
        max_rounds=max_rounds,
    )
    while alternation.next != "done":
        kind = "step-alone" if alternation.next == "step-alone" else "training"
        alternation.start_block(kind, clock.now())
        rate = training if kind == "training" else alone[alternation.rounds % 2]
        done = False
        while not done:
            clock.advance(1.0 / rate)
            done = alternation.step_ended(clock.now())
    return alternation


def test_a_narrow_interval_across_a_band_s_edge_goes_on_to_the_bound() -> None:
    # GIVEN training at 95 steps/s and the step alone at 100 and 101.5 in turn: costs of 5%
    # and 6.4%, an interval narrow after 3 rounds (4.4-7.1%) that holds the 5% edge
    alternation = _in_turn(95.0, (100.0, 101.5), max_rounds=5)
    # THEN the rounds go on to the bound rather than stop on a label its low end sets
    assert alternation.rounds == 5


def _disagreeing(max_rounds: int | None) -> Alternation:
    """Training at 85 steps/s and the step alone at 100 and 125 in turn: costs of 15% and
    32%, an interval across the 20% edge."""
    return _in_turn(85.0, (100.0, 125.0), max_rounds)


def test_an_interval_across_a_band_s_edge_goes_on_within_the_steps_left_if_known() -> None:
    # GIVEN pairs that disagree across the 20% edge
    # WHEN the steps left allow 20 rounds (fit), THEN rounds go on past the 6 of the bound,
    # up to twice it
    extended = _disagreeing(max_rounds=20)
    assert MAX_ROUNDS < extended.rounds <= 2 * MAX_ROUNDS
    # AND never past what the steps left allow
    assert _disagreeing(max_rounds=7).rounds == 7
    # AND where nothing says how many steps are left (a loop), they go on up to twice the
    # bound as well: the loop's end, if it comes first, ends them
    looped = _disagreeing(max_rounds=None)
    assert MAX_ROUNDS < looped.rounds <= 2 * MAX_ROUNDS


def test_a_block_the_host_disturbed_is_left_out_of_the_pairs_whichever_its_kind() -> None:
    from pipediag.analysis.alternation import disturbed_blocks

    # GIVEN pairs at T/A 1.05, and one training block a stall slowed to 27 steps/s
    training, alone = [38.0, 38.0, 27.0, 38.0, 38.0], [40.0, 40.0, 40.0, 40.0]
    blocks = _blocks(training, alone)
    # THEN that block alone is left out, and the cost is the other pairs' 1 - 38/40
    assert disturbed_blocks(blocks) == {4}
    cost = paired_cost(blocks)
    assert cost is not None and cost.pairs == 4
    assert cost.cost == pytest.approx(1 - 38 / 40) and cost.training == pytest.approx(38.0)
    # AND a step-alone block sped up as far is left out the same way, its pair with it
    fast = _blocks([38.0] * 5, [40.0, 40.0, 56.0, 40.0])
    assert disturbed_blocks(fast) == {5}
    fast_cost = paired_cost(fast)
    assert fast_cost is not None and fast_cost.pairs == 3
    assert fast_cost.cost == pytest.approx(1 - 38 / 40)
    # AND blocks that all vary as much are no outliers: their spread is the noise
    wild = _blocks([20.0, 38.0, 27.0, 45.0, 33.0], [30.0, 44.0, 25.0, 40.0])
    assert disturbed_blocks(wild) == set()


def test_the_observer_check_makes_every_other_training_block_a_quiet_one() -> None:
    # GIVEN the observer check: training runs at 50 steps/s watched, 55 with the samplers
    # paused, and the step alone at 100
    clock = FakeClock()
    quiet = Quiet(clock.now)
    alternation = Alternation(
        clock=clock, origin=0.0, block_steps=5, lead=(0.0, [0.02] * 5), quiet=quiet
    )
    rates = {"training": 50.0, "quiet-training": 55.0, "step-alone": 100.0}
    held_quiet = []
    while (kind := alternation.next) != "done":
        # held before a quiet block's first step: fit runs it before its callback opens it
        assert quiet.holding() == (kind == "quiet-training")
        alternation.start_block(kind, clock.now())
        done = False
        while not done:
            held_quiet.append((kind, quiet.holding()))
            clock.advance(1.0 / rates[kind])
            done = alternation.step_ended(clock.now())
    # THEN every other training block is quiet, the samplers held only through the quiet
    # blocks, and where the rounds that decide the cost (3) would end on a quiet block, one
    # more round ends them on a watched one
    kinds = [b.kind for b in alternation.blocks]
    assert kinds == [
        "training",
        "step-alone",
        "quiet-training",
        "step-alone",
        "training",
        "step-alone",
        "quiet-training",
        "step-alone",
        "training",
    ]
    assert all(held == (kind == "quiet-training") for kind, held in held_quiet)
    assert not quiet.holding()
    # AND after the rounds, the check's own blocks: quiet and watched training in turn,
    # adjacent, up to its pairs, ending on a watched block
    assert [b.kind for b in alternation.observer_blocks] == [
        "quiet-training",
        "training",
    ] * OBSERVER_PAIRS
    # AND each quiet block reads against the watched blocks on both sides (past the
    # step-alone ones in the rounds; never the first, the lead), while the cost reads each
    # step-alone block against both kinds of training in the rounds alone
    effect = observer_effect(alternation.blocks)
    assert effect is not None and effect.pairs == 1
    assert effect.ratio == pytest.approx(50 / 55)
    effect = observer_effect(alternation.blocks, alternation.observer_blocks)
    assert effect is not None and effect.pairs == 1 + OBSERVER_PAIRS
    assert effect.ratio == pytest.approx(50 / 55)
    cost = paired_cost(alternation.blocks)
    assert cost is not None and cost.pairs == 4
    assert cost.cost == pytest.approx(1 - math.sqrt(50 * 55) / 100)


def test_the_observer_checks_own_blocks_stay_within_fits_steps_and_its_time() -> None:
    rates = {"training": 50.0, "quiet-training": 50.0, "step-alone": 100.0}
    # GIVEN fit's steps left allow 6 training blocks besides the lead (`max_rounds` 6, the
    # rounds taking 4 of them)
    clock = FakeClock()
    alternation = Alternation(
        clock=clock,
        origin=0.0,
        block_steps=5,
        lead=(0.0, [0.02] * 5),
        max_rounds=6,
        quiet=Quiet(clock.now),
    )
    _run(alternation, clock, rates)
    # THEN the check's blocks take the 3 left, and a quiet block starts only with room for
    # the watched one after it: one pair
    assert sum(b.kind != "step-alone" for b in alternation.blocks) == 5
    assert [b.kind for b in alternation.observer_blocks] == ["quiet-training", "training"]
    # GIVEN training slow enough (2.5 steps/s, 2-s blocks) that the check's time ends first
    clock = FakeClock()
    slow = {"training": 2.5, "quiet-training": 2.5, "step-alone": 5.0}
    alternation = Alternation(
        clock=clock, origin=0.0, block_steps=5, lead=(0.0, [0.4] * 5), quiet=Quiet(clock.now)
    )
    _run(alternation, clock, slow)
    # THEN a quiet block starts only within `OBSERVER_S` of the check's start (at 0 s and
    # 4 s, not 8 s), and its watched one follows it past that
    kinds = [b.kind for b in alternation.observer_blocks]
    assert kinds == ["quiet-training", "training", "quiet-training", "training"]
    assert 4.0 < OBSERVER_S <= 8.0
    # AND without the check, the rounds end the alternation
    clock = FakeClock()
    alternation = Alternation(clock=clock, origin=0.0, block_steps=5, lead=(0.0, [0.02] * 5))
    _run(alternation, clock, rates)
    assert alternation.observer_blocks == []
    assert alternation.result("cached-batch-loop").observer_blocks == []


def test_the_observer_checks_own_blocks_never_enter_the_cost() -> None:
    # GIVEN the observer check on training at 50 steps/s in the rounds, the step alone at 100,
    # and the host slowing training to 10 steps/s in the check's own blocks
    clock = FakeClock()
    quiet = Quiet(clock.now)
    alternation = Alternation(
        clock=clock, origin=0.0, block_steps=5, lead=(0.0, [0.02] * 5), quiet=quiet
    )
    started = 0  # training blocks: the rounds start 4 after the lead (the last quiet, then A)
    while (kind := alternation.next) != "done":
        alternation.start_block(kind, clock.now())
        started += kind != "step-alone"
        done = False
        while not done:
            rate = 100.0 if kind == "step-alone" else 10.0 if started > 4 else 50.0
            clock.advance(1.0 / rate)
            done = alternation.step_ended(clock.now())
    result = alternation.result("cached-batch-loop")
    assert result.observer_blocks
    assert all(b.steps_per_s == pytest.approx(10.0) for b in result.observer_blocks)
    # THEN the cost and A read the rounds alone: half the step alone's rate
    cost = paired_cost(result.blocks)
    assert cost is not None and cost.cost == pytest.approx(0.5)
    assert cost.training == pytest.approx(50.0)


def test_a_quiet_block_with_a_watched_block_on_one_side_only_is_no_pair() -> None:
    # GIVEN training whose rate climbs steadily, 50 steps/s and 10% more each training block,
    # the samplers costing nothing, and an alternation cut short after a quiet block
    rates = [50.0 * 1.1**k for k in range(6)]
    blocks = _blocks(rates, [100.0] * 5)
    blocks = [
        dataclasses.replace(b, kind="quiet-training")
        if b.kind == "training" and i in (2, 6, 10)
        else b
        for i, b in enumerate(blocks)
    ]
    # THEN only the quiet block between two watched ones past the first is read, and reads
    # no cost: the one at the end would read the climb as one (1.1)
    effect = observer_effect(blocks)
    assert effect is not None and effect.pairs == 1
    assert effect.ratio == pytest.approx(1.0)


def test_no_quiet_block_reads_against_the_first_training_block() -> None:
    # GIVEN the measured steps' last block leading the alternation at 40 steps/s (timed under
    # the measured phase's own work), the alternation's training at 50 and 50 quiet
    blocks = _blocks([40.0, 50.0, 50.0, 50.0, 50.0], [100.0] * 4)
    blocks = [
        dataclasses.replace(b, kind="quiet-training") if b.kind == "training" and i in (2, 6) else b
        for i, b in enumerate(blocks)
    ]
    # THEN the quiet block beside it is no pair, and the samplers read as costing nothing
    effect = observer_effect(blocks)
    assert effect is not None and effect.pairs == 1
    assert effect.ratio == pytest.approx(1.0)


def test_training_cut_short_never_leaves_the_samplers_paused_for_long() -> None:
    # GIVEN a quiet block due after a step-alone block, training at 50 steps/s
    clock = FakeClock()
    quiet = Quiet(clock.now)
    alternation = Alternation(
        clock=clock, origin=0.0, block_steps=5, lead=(0.0, [0.02] * 5), quiet=quiet
    )
    alternation.start_block("step-alone", clock.now())
    for _ in range(5):
        clock.advance(0.01)
        alternation.step_ended(clock.now())
    assert alternation.next == "quiet-training" and quiet.holding()
    # WHEN training stops there: the samplers read again after three blocks' time and a
    # second, and at once when the alternation's result is taken
    clock.advance(3 * 5 / 50 + 1.0 + 0.01)
    assert not quiet.holding()
    alternation.start_block("quiet-training", clock.now())
    assert quiet.holding()
    alternation.result("cached-batch-loop")
    assert not quiet.holding()


def test_without_the_observer_check_there_is_no_observer_effect() -> None:
    assert observer_effect(_blocks([50.0] * 4, [100.0] * 3)) is None


def test_a_loop_is_served_its_own_pulls_in_the_quiet_blocks_too() -> None:
    clock = FakeClock()
    concluded: list[ComputeAlone] = []
    quiet = Quiet(clock.now)
    alternation = Alternation(
        clock=clock, origin=0.0, block_steps=4, lead=(0.0, [0.02] * 4), quiet=quiet
    )
    server = loop_server(clock, RecordedResults(concluded=concluded), alternation=alternation)
    answers = []
    while (answer := server.next_batch()) is not None:
        answers.append("quiet" if quiet.holding() else "pull" if answer is PULL else answer)
        clock.advance(0.02 if answer is PULL else 0.01)
    blocks = [["cached"] * 4, ["quiet"] * 4, ["cached"] * 4, ["pull"] * 4] * 2
    # (a fourth round, so that the last quiet block has a watched one after it), then the
    # check's own blocks
    blocks += [["quiet"] * 4, ["pull"] * 4] * OBSERVER_PAIRS
    assert answers == ["cached"] * WARMUP_STEPS + [a for block in blocks for a in block]
    (result,) = concluded
    effect = observer_effect(result.blocks, result.observer_blocks)
    assert effect is not None and effect.ratio == pytest.approx(1.0)
    assert effect.pairs == 1 + OBSERVER_PAIRS


def test_an_untimed_step_is_left_out_of_its_block() -> None:
    clock = FakeClock()
    alternation = Alternation(clock=clock, origin=0.0, block_steps=3, lead=None)
    alternation.start_block("training", clock.now())
    clock.advance(0.01)
    assert not alternation.step_ended(clock.now())
    alternation.skip_step()  # an epoch ended: the next iterator's start-up is not timed
    clock.advance(5.0)
    assert not alternation.step_ended(clock.now())
    for _ in range(2):
        clock.advance(0.01)
        done = alternation.step_ended(clock.now())
    assert done
    assert alternation.blocks[0].seconds == pytest.approx(0.03)


def _server(
    clock: FakeClock,
    concluded: list[ComputeAlone],
    cached: CachedBatch | None = None,
    lead_step_s: float = 0.02,
) -> BudgetServer:
    alternation = Alternation(clock=clock, origin=0.0, block_steps=4, lead=(0.0, [lead_step_s] * 4))
    results = RecordedResults(concluded=concluded)
    return loop_server(clock, results, cached=cached, alternation=alternation)


def test_a_loop_at_its_budget_is_served_the_cached_batch_and_its_own_pulls_in_turn() -> None:
    clock = FakeClock()
    concluded: list[ComputeAlone] = []
    server = _server(clock, concluded)
    answers = []
    while (answer := server.next_batch()) is not None:
        answers.append("pull" if answer is PULL else answer)
        clock.advance(0.02 if answer is PULL else 0.01)
    # the warm-up, then 3 rounds of 4 cached batches and 4 of the loop's own pulls
    round_ = ["cached"] * 4 + ["pull"] * 4
    assert answers == ["cached"] * WARMUP_STEPS + round_ * 3
    (result,) = concluded
    assert result.measured and result.method == "cached-batch-loop"
    assert result.steps_per_s == pytest.approx(100.0)
    cost = paired_cost(result.blocks)
    assert cost is not None and cost.cost == pytest.approx(0.5)


def test_each_step_on_the_cached_batch_pays_a_pull_as_the_script_s_own_steps_do() -> None:
    # GIVEN a pull from an iterator over the cached batch that takes 5 ms (FastFlow's T pays
    # the pull of `take(1).cache().repeat()`)
    clock = FakeClock()
    pulls: list[float] = []

    def pull() -> None:
        pulls.append(clock.now())
        clock.advance(0.005)

    concluded: list[ComputeAlone] = []
    server = _server(clock, concluded, CachedBatch("cached", pull), lead_step_s=0.01)
    answers = []
    # WHEN the loop runs steps of 10 ms on either answer
    while (answer := server.next_batch()) is not None:
        answers.append(answer)
        clock.advance(0.01)
    # THEN every cached answer paid one pull, no pull of the loop's own did, and the steps
    # alone ran at 1 / 15 ms, the rate training would have with input free
    assert len(pulls) == answers.count("cached") == WARMUP_STEPS + 3 * 4
    (result,) = concluded
    assert result.steps_per_s == pytest.approx(1 / 0.015)
    cost = paired_cost(result.blocks)
    assert cost is not None and cost.cost == pytest.approx(1 - 0.015 / 0.01)


def test_a_loop_that_ends_during_the_alternation_still_concludes_once() -> None:
    clock = FakeClock()
    concluded: list[ComputeAlone] = []
    server = _server(clock, concluded)
    for _ in range(WARMUP_STEPS + 6):
        server.next_batch()
        clock.advance(0.01)
    server.finish()
    server.finish()
    (result,) = concluded
    assert result.measured and result.steps == 4
    assert math.isclose(result.steps_per_s or 0.0, 100.0)


def _timing(rate: float) -> BatchTiming:
    return BatchTiming(
        first_batch_s=None, latencies_s=[1.0 / rate] * 10, duration_s=10 / rate, exhausted=False
    )


def test_a_fix_faster_on_training_than_the_step_alone_is_flagged_and_taken_at_it() -> None:
    # GIVEN step-alone blocks at 100 and 104 steps/s, and two fixes tried on training
    blocks = _blocks([50.0, 50.0, 50.0], [100.0, 104.0])
    ceiling = step_alone_ceiling(blocks)
    assert ceiling == pytest.approx(104.0 * 1.05)
    trials = [FixTrial(fix="parallel-map", stage_index=1), FixTrial(fix="prefetch", stage_index=2)]
    rounds = {
        # a fixed rate of 98: within what the step can do
        ("parallel-map", 1): (Rounds([_timing(50.0)], [_timing(98.0)], [1.96], None, ""), None),
        # 130 steps/s: faster than the train step alone ever ran
        ("prefetch", 2): (Rounds([_timing(50.0)], [_timing(130.0)], [2.6], None, ""), None),
    }
    honest, disturbed = (t.training for t in with_training_results(trials, rounds, ceiling=ceiling))
    assert honest is not None and disturbed is not None
    # THEN the first keeps its gain; the second is flagged, its rate taken at the ceiling
    assert honest.training_speedup == pytest.approx(98.0 / 50.0)
    assert not honest.at_step_alone
    assert disturbed.at_step_alone
    assert disturbed.variant_steps_per_s == pytest.approx(ceiling)
    assert disturbed.training_speedup == pytest.approx(ceiling / 50.0)


def test_an_interval_pinned_to_a_measured_wait_is_not_printed_as_a_range() -> None:
    from pipediag.renderers.numbers import shown_interval

    # a material wait above the pairs' interval pins both ends to it: "87-87%" says nothing
    assert shown_interval([0.871, 0.874]) is None
    assert shown_interval(None) is None
    assert shown_interval([0.17, 0.24]) == [0.17, 0.24]


def test_a_whole_pipeline_held_faster_than_every_step_alone_block_bounds_the_cost_below() -> None:
    from synthetic_reports import synthetic_cost_report

    from pipediag.analysis.alternation import held_beyond_step_alone
    from pipediag.renderers.answer import render_answer
    from pipediag.renderers.text import render_text
    from pipediag.report.stages import StageStats

    # GIVEN step-alone blocks at most 104 steps/s, and the output stage (the whole pipeline)
    # held in memory training at 150: over 104 x 1.05
    blocks = _blocks([50.0, 50.0, 50.0], [100.0, 104.0])
    stages = [
        StageStats(0, "map", "MapDataset", training_held_steps_per_s=60.0),
        StageStats(1, "batch", "BatchDataset", training_held_steps_per_s=150.0),
    ]
    assert held_beyond_step_alone(blocks, stages) == (150.0, 104.0)
    within = [dataclasses.replace(stages[1], training_held_steps_per_s=108.0)]
    assert held_beyond_step_alone(blocks, within) is None
    assert held_beyond_step_alone([], stages) is None
    # WHEN a report with them is rendered
    report = synthetic_cost_report()
    report = dataclasses.replace(
        report,
        compute_alone=ComputeAlone(measured=True, blocks=blocks),
        pipeline=dataclasses.replace(report.pipeline, stages=stages),
    )
    text = render_text(report)
    # THEN the input cost's own row says why a hold's gain can exceed "faster if input were
    # free": the blocks that figure comes from were slowed
    row = text[text.index("  Input cost") : text.index("  Input wait")]
    assert "a lower bound: with the whole pipeline held in memory, training ran 150.0" in " ".join(
        row.split()
    )
    assert "faster than any step-alone block (104.0)" in " ".join(row.split())
    # and the gain if input were free is a floor, in the row as in the answer
    assert "(at least " in row and "faster if input were free)" in row
    assert "at least" in " ".join(render_answer(report, "Report: x").split())
    plain = dataclasses.replace(
        report, pipeline=dataclasses.replace(report.pipeline, stages=within)
    )
    assert "lower bound" not in render_text(plain) and "at least" not in render_text(plain)
    # nor where the cost pooled the held output's reading: the blocks' alone bound nothing
    pooled = dataclasses.replace(
        report, verdict=dataclasses.replace(report.verdict, held_output_cost=0.6)
    )
    assert "lower bound" not in render_text(pooled) and "at least" not in render_text(pooled)


def test_a_host_running_at_two_speeds_is_read_within_each_speed() -> None:
    from pipediag.analysis.alternation import host_modes

    # GIVEN the text classification tutorial's blocks in one run: the host ran at about 260
    # or 385 steps/s, four of the seven training blocks and one step-alone block slow, and
    # one step-alone block (320) between the two
    rates = [259, 257, 260, 389, 371, 384, 274, 396, 360, 395, 254, 320, 383]
    blocks = _blocks([float(r) for r in rates[0::2]], [float(r) for r in rates[1::2]])
    # THEN each block has the mode it ran in, the one between them none
    modes = host_modes(blocks)
    assert modes is not None
    assert {i for i, mode in modes.items() if mode == 0} == {0, 1, 2, 6, 10}
    assert 11 not in modes
    # AND the cost is read within each mode: about 5%, not the 17% that pairing a fast
    # step-alone block with a slow training block read
    cost = paired_cost(blocks)
    assert cost is not None and cost.pairs == 5
    assert cost.cost == pytest.approx(0.051, abs=0.005)
    # AND a real cost with one stalled step-alone block is no second mode: only training
    # blocks would be slow, so the stall is left out and the cost stays
    stalled = _blocks([300.0, 300.0, 305.0, 298.0, 302.0], [400.0, 300.0, 400.0, 405.0])
    assert host_modes(stalled) is None
    stalled_cost = paired_cost(stalled)
    assert stalled_cost is not None and stalled_cost.cost == pytest.approx(0.25, abs=0.01)


def test_rounds_go_on_while_the_host_s_modes_leave_too_few_pairs_for_an_interval() -> None:
    # GIVEN blocks whose first three rounds ran in two host modes, so that only one pair
    # is read within a mode (no interval), then steady blocks
    rates = [354.0, 267.0, 339.0, 384.0, 226.0, 256.0, 345.0] + [350.0, 380.0] * 6
    clock = FakeClock()
    alternation = Alternation(clock=clock, origin=0.0, block_steps=5, lead=None)
    while alternation.next != "done":
        kind = "step-alone" if alternation.next == "step-alone" else "training"
        rate = rates[len(alternation.blocks)]
        alternation.start_block(kind, clock.now())
        done = False
        while not done:
            clock.advance(1.0 / rate)
            done = alternation.step_ended(clock.now())
    # THEN the schedule does not stop at the third round without an interval
    first = paired_cost(alternation.blocks[:7])
    assert first is not None and first.half_width is None
    assert alternation.rounds > 3
    cost = paired_cost(alternation.blocks)
    assert cost is not None and cost.half_width is not None
