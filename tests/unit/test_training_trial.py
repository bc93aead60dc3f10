"""Fixes tried on training itself: the round plan a loop drives, a custom loop served from
two pipelines on a fake clock, and the advisor's use of the measured gain (on real
TensorFlow: tests/integration/test_training_trial_tf.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from synthetic_reports import FakeClock, synthetic_report
from worded import worded_advice

from pipediag.analysis.paired import TRAINING_TRIAL_S, TRIAL_MIN_ROUNDS
from pipediag.bench.interleaved import RoundPlan, Rounds, run_slices
from pipediag.bench.pipeline import BatchTiming
from pipediag.bench.teardown import TearDown
from pipediag.bench.whatif import FixPipelines
from pipediag.renderers.reason_words import reason_words
from pipediag.renderers.text import render_text
from pipediag.report.model import Suggestion
from pipediag.report.prescription import GainOnTraining
from pipediag.report.reasons import Reason
from pipediag.report.stages import StageSettings, StageStats
from pipediag.report.trials import FixTrial
from pipediag.training.loop_search import LoopSearch
from pipediag.training.training_trial import (
    FixRounds,
    TrialResults,
    epoch_start_s,
    with_training,
)

STEP_S = 0.010  # the loop's own train step, in fake seconds


class _Source:
    """An iterable whose batches cost `cost_s` of fake time each to pull."""

    def __init__(
        self,
        clock: FakeClock,
        cost_s: float,
        *,
        fail_after: int | None = None,
        open_s: float = 0.0,
        first_extra_s: float = 0.0,
    ) -> None:
        self.clock = clock
        self.cost_s = cost_s
        self.fail_after = fail_after
        self.open_s = open_s  # making an iterator
        self.first_extra_s = first_extra_s  # its first batch beyond the others (a buffer fill)
        self.iterators = 0

    def __iter__(self) -> Iterator[int]:
        self.iterators += 1
        self.clock.sleep(self.open_s)
        return self._batches()

    def _batches(self) -> Iterator[int]:
        pulled = 0
        while True:
            if self.fail_after is not None and pulled >= self.fail_after:
                raise ValueError("the user's function failed on the fixed pipeline")
            self.clock.sleep(self.cost_s + (self.first_extra_s if pulled == 0 else 0.0))
            pulled += 1
            yield pulled


def _fix(name: str, baseline: Any, variant: Any, speedup: float = 1.5) -> FixPipelines:
    return FixPipelines(
        fix=name, stage_index=2, baseline=baseline, variant=variant, pipeline_speedup=speedup
    )


class _Trials:
    """A search that tries the given fixes in turn, `seconds` each, and keeps what each
    measured."""

    def __init__(self, *fixes: FixPipelines, seconds: float = TRAINING_TRIAL_S) -> None:
        self._due = list(fixes)
        self._seconds = seconds
        self._key: tuple[str, int | None] | None = None
        self.results: TrialResults = {}

    def next_trial(self) -> tuple[FixPipelines, float] | None:
        if not self._due:
            return None
        fix = self._due.pop(0)
        self._key = (fix.fix, fix.stage_index)
        return fix, self._seconds

    def record(self, rounds: Rounds | None, reason: Reason | None = None) -> None:
        assert self._key is not None
        self.results[self._key] = (rounds, reason)


def _drive(trials: _Trials, clock: FakeClock, teardown: TearDown, limit: int = 100_000) -> int:
    """A custom loop served the trials: pull, then run its train step, until they say stop
    (or the script ends after `limit` steps)."""
    served = LoopSearch(trials, clock=clock, step_s=0.03, teardown=teardown)
    steps = 0
    while steps < limit and served.next_batch() is not None:
        clock.sleep(STEP_S)
        steps += 1
    served.close()
    return steps


# --- the round plan --------------------------------------------------------------------------


def test_a_plan_alternates_which_side_goes_first_and_refuses_the_wrong_side() -> None:
    clock = FakeClock()
    plan = RoundPlan(
        slice_s=0.1, until_s=clock.now() + 100, hard_until_s=clock.now() + 100, clock=clock
    )
    order = []
    for _ in range(4):
        due = plan.next_slice()
        assert due is not None
        order.append(due[0])
        clock.sleep(0.1)
        plan.record(due[0], BatchTiming(0.0, [0.01] * 10, 0.1, False))
    assert order == [0, 1, 1, 0]
    due = plan.next_slice()
    assert due is not None
    with pytest.raises(ValueError, match="not the one due"):
        plan.record(1 - due[0], BatchTiming(0.0, [0.01], 0.01, False))


def test_a_plan_cut_short_keeps_only_whole_rounds() -> None:
    clock = FakeClock()
    plan = RoundPlan(
        slice_s=0.1, until_s=clock.now() + 100, hard_until_s=clock.now() + 100, clock=clock
    )
    for _ in range(3):  # one round and a half
        due = plan.next_slice()
        assert due is not None
        plan.record(due[0], BatchTiming(0.0, [0.01] * 10, 0.1, False))
    rounds = plan.rounds()
    assert len(rounds.baseline) == len(rounds.variant) == 1
    assert rounds.stopped == "budget"


# --- a custom loop served from the two copies ------------------------------------------------


def test_a_loop_fed_by_a_faster_pipeline_measures_the_training_gain() -> None:
    clock = FakeClock()
    # input 20 ms a batch, or 0.1 ms fixed: a step of 30 ms against 10.1 ms, ~2.97x
    slow, fast = _Source(clock, 0.020), _Source(clock, 0.0001)
    teardown = TearDown()
    trials = _Trials(_fix("parallel-map", slow, fast))
    steps = _drive(trials, clock, teardown)
    ((rounds, reason),) = trials.results.values()
    assert reason is None and rounds is not None
    assert rounds.stopped == "clear gain" and len(rounds.ratios) == TRIAL_MIN_ROUNDS
    trial = with_training(FixTrial(fix="parallel-map", stage_index=2, verified=True), rounds, None)
    training = trial.training
    assert training is not None
    assert training.training_speedup == pytest.approx(0.0300 / 0.0101, rel=0.01)
    assert training.baseline_steps_per_s == pytest.approx(1 / 0.030, rel=0.01)
    assert training.rounds == TRIAL_MIN_ROUNDS
    assert (training.training_speedup_low or 0.0) > 1.0
    # each slice started a fresh iterator, and every step served was one the loop ran
    assert slow.iterators == fast.iterators == TRIAL_MIN_ROUNDS
    assert steps > 10 * TRIAL_MIN_ROUNDS
    teardown.drain()


def test_each_sides_epoch_start_is_what_a_fresh_iterator_costs_beyond_a_steady_step() -> None:
    clock = FakeClock()
    # the user's pipeline: 300 ms to make an iterator and 100 ms more for its first batch
    # (a shuffle buffer's fill); the rewrite's starts at once
    slow = _Source(clock, 0.020, open_s=0.3, first_extra_s=0.1)
    fast = _Source(clock, 0.0001)
    teardown = TearDown()
    trials = _Trials(_fix("hoist-cache", slow, fast))
    _drive(trials, clock, teardown)
    ((rounds, _),) = trials.results.values()
    assert rounds is not None
    trial = with_training(FixTrial(fix="hoist-cache", stage_index=2, verified=True), rounds, None)
    training = trial.training
    assert training is not None
    assert training.baseline_start_s == pytest.approx(0.4, abs=1e-6)
    assert training.variant_start_s == pytest.approx(0.0, abs=1e-6)
    # the steps' own rates leave the starts out
    assert training.training_speedup == pytest.approx(0.0300 / 0.0101, rel=0.01)
    teardown.drain()


def test_a_sides_epoch_start_leaves_out_its_first_slice_which_may_trace() -> None:
    fresh = [BatchTiming(0.05, [0.01] * 10, 0.1, False, opened_s=o) for o in (9.0, 0.2, 0.4)]
    # the first slice (which may trace the train function) is left out: median of 0.24, 0.44
    assert epoch_start_s(fresh) == pytest.approx(0.34)
    assert epoch_start_s([BatchTiming(None, [], 0.0, True, opened_s=0.1)]) is None


def test_a_failing_fix_is_reported_and_the_next_fix_is_still_tried() -> None:
    clock = FakeClock()
    base = _Source(clock, 0.020)
    broken = _Source(clock, 0.001, fail_after=3)
    good = _Source(clock, 0.0001)
    trials = _Trials(
        _fix("vectorize", base, broken, 2.0), _fix("parallel-map", base, good, 1.5), seconds=1.5
    )
    _drive(trials, clock, TearDown())
    results = trials.results
    rounds, reason = results[("vectorize", 2)]
    assert rounds is None and "failed on the fixed pipeline" in reason_words(reason)
    assert "ValueError" in reason_words(reason)
    rounds, reason = results[("parallel-map", 2)]
    assert reason is None and rounds is not None and rounds.stopped == "clear gain"


def test_a_fix_run_at_once_whose_fixed_pipeline_fails_is_not_measured_and_says_why() -> None:
    # GIVEN a fix whose fixed pipeline fails after a few batches
    clock = FakeClock()
    broken = _fix("vectorize", _Source(clock, 0.020), _Source(clock, 0.001, fail_after=3))
    plan = FixRounds(broken, clock=clock, step_s=0.03, budget_s=1.5, teardown=TearDown())
    # WHEN its slices run at once
    run_slices(plan, plan.run_at_once)
    # THEN no slice is left to run and the trial says why it measured nothing
    rounds, reason = plan.result()
    assert plan.next_slice() is None
    assert rounds is None and reason is not None and reason.code == "fixed-pipeline-failed"


def test_a_copy_that_cannot_fill_fails_only_its_trial() -> None:
    # GIVEN a cache copy whose filling epoch fails, then a fix on a faster copy
    clock = FakeClock()
    base = _Source(clock, 0.020)
    unfillable = _Source(clock, 0.001, fail_after=1)
    cached = FixPipelines(
        fix="cache", stage_index=1, baseline=base, variant=unfillable, fill_batches=4
    )
    trials = _Trials(cached, _fix("parallel-map", base, _Source(clock, 0.0001)))
    # WHEN a loop is served them
    _drive(trials, clock, TearDown())
    # THEN the cache says why it was not measured, and the next fix measured a clear gain
    rounds, reason = trials.results[("cache", 1)]
    assert rounds is None and "ValueError" in reason_words(reason)
    rounds, reason = trials.results[("parallel-map", 2)]
    assert reason is None and rounds is not None and rounds.stopped == "clear gain"


def test_a_loop_that_stops_pulling_leaves_its_fixes_with_a_reason() -> None:
    clock = FakeClock()
    trials = _Trials(_fix("parallel-map", _Source(clock, 0.02), _Source(clock, 0.0001)))
    _drive(trials, clock, TearDown(), limit=5)  # the loop's script ended after five steps
    ((rounds, reason),) = trials.results.values()
    # no whole round was timed: the fix has no training figures, and nothing raised
    trial = with_training(FixTrial(fix="parallel-map", verified=True), rounds, reason)
    assert trial.training is None
    assert trial.training_reason


# --- the advisor reads the measured gain -----------------------------------------------------


def _report_with(trial: FixTrial) -> Any:
    import dataclasses

    report = synthetic_report(steps=60, wait_s=0.02, compute_s=0.005)
    map_stage = StageStats(
        index=2,
        kind="map",
        name="map(decode)",
        settings=StageSettings(num_parallel_calls=1),
        function="decode",
        batches_per_s=40.0,
        own_s_per_batch=0.02,
        bottleneck=True,
        inputs=[1],
        stateful=True,
    )
    stages = [
        StageStats(index=0, kind="range", name="range", batches_per_s=5000.0),
        StageStats(index=1, kind="repeat", name="repeat", batches_per_s=5000.0, inputs=[0]),
        map_stage,
        StageStats(
            index=3,
            kind="batch",
            name="batch(32)",
            settings=StageSettings(batch_size=32),
            batches_per_s=40.0,
            own_s_per_batch=0.0001,
            inputs=[2],
        ),
    ]
    pipeline = dataclasses.replace(
        report.pipeline, measured=True, batches_per_s=40.0, stages=stages, trials=[trial]
    )
    return dataclasses.replace(report, pipeline=pipeline)


def _map_fix(suggestions: list[Suggestion]) -> Suggestion:
    (found,) = [s for s in suggestions if s.stage_index == 2 and s.id.startswith("PD001")]
    return found


def _trial(training_speedup: float | None, reason: Reason | None = None) -> FixTrial:
    base = 30.0
    training = None
    if training_speedup is not None:
        training = GainOnTraining(
            baseline_steps_per_s=base,
            variant_steps_per_s=base * training_speedup,
            training_speedup=training_speedup,
            rounds=6,
        )
    return FixTrial(
        fix="parallel-map",
        stage_index=2,
        stage="map(decode)",
        verified=True,
        baseline_batches_per_s=40.0,
        variant_batches_per_s=70.0,
        speedup=1.75,
        rounds=5,
        training=training,
        training_reason=reason,
    )


def test_a_fix_measured_faster_on_training_is_ranked_by_that_gain() -> None:
    fix = _map_fix(worded_advice(_report_with(_trial(1.3))))
    assert fix.kind == "fix"
    assert fix.gain.on("training") == pytest.approx(1.3)
    assert "Tried on your train function: 30.0 -> 39.0 steps/s (1.30x" in fix.evidence


def test_a_fix_that_helps_the_pipeline_but_not_training_becomes_a_note() -> None:
    fix = _map_fix(worded_advice(_report_with(_trial(0.97))))
    assert fix.kind == "note"
    assert "measured 0.97x on your training: not worth it" in fix.title
    # its one gain is the one measured on training; the pipeline alone's is in the evidence
    assert fix.gain.on("training") == pytest.approx(0.97)
    assert "(1.75x over" in fix.evidence


def test_a_fix_not_tried_on_training_says_why_and_keeps_its_prediction() -> None:
    report = _report_with(_trial(None, Reason("fix-trial-budget-spent")))
    fix = _map_fix(worded_advice(report))
    assert fix.kind == "fix" and fix.gain.basis != "training"
    assert fix.estimate is not None
    assert fix.not_on_training == Reason("fix-trial-budget-spent")
    text = " ".join(render_text(dataclasses.replace(report, suggestions=[fix])).split())
    assert "Not tried on training: training trial budget spent." in text


def test_a_fix_not_verified_on_the_pipeline_says_why_before_why_not_on_training() -> None:
    untimed = dataclasses.replace(
        _trial(None, Reason("fix-trial-budget-spent")),
        verified=False,
        speedup=None,
        rounds=0,
        reason=Reason("left-to-training"),
    )
    report = _report_with(untimed)
    fix = _map_fix(worded_advice(report))
    assert fix.not_verified == Reason("left-to-training")
    assert "Not verified" not in fix.evidence  # the analysis words no reason
    text = " ".join(render_text(dataclasses.replace(report, suggestions=[fix])).split())
    assert (
        "Not verified: not measured: verification budget spent; left to the trials on "
        "training. Not tried on training: training trial budget spent."
    ) in text


def test_a_fix_with_no_what_if_run_says_so() -> None:
    report = _report_with(_trial(None))
    report = dataclasses.replace(report, pipeline=dataclasses.replace(report.pipeline, trials=[]))
    fix = _map_fix(worded_advice(report))
    assert fix.not_verified == Reason("no-whatif-run")
    text = " ".join(render_text(dataclasses.replace(report, suggestions=[fix])).split())
    assert "Not verified: no what-if run." in text


def test_under_fit_the_gain_counts_what_fit_adds_around_the_train_function() -> None:
    import dataclasses

    # GIVEN fit training at 25 steps/s (40 ms a step) while its train function alone ran at
    # 50 steps/s on the unedited copy (20 ms) and 100 on the fixed one (10 ms): fit adds 20 ms
    report = _report_with(_trial(2.0))
    trial = report.pipeline.trials[0]
    assert trial.training is not None
    training = dataclasses.replace(
        trial.training, baseline_steps_per_s=50.0, variant_steps_per_s=100.0
    )
    trial = dataclasses.replace(trial, training=training)
    report = dataclasses.replace(
        report,
        pipeline=dataclasses.replace(report.pipeline, trials=[trial]),
        train=dataclasses.replace(report.train, steps_per_s=25.0),
    )
    fix = _map_fix(worded_advice(report))
    # THEN training gains 40 / (10 + 20) = 1.33x, not the train function's 2x
    assert fix.gain.on("training") == pytest.approx(40 / 30)
    assert "Counting the 20.0 ms fit adds around each step, training runs 1.33x as fast" in (
        fix.evidence
    )
    # and a custom loop's trial, run in the loop itself, is its own gain
    loop = dataclasses.replace(report, train=dataclasses.replace(report.train, style="custom-loop"))
    assert _map_fix(worded_advice(loop)).gain.on("training") == pytest.approx(2.0)


def test_an_unclear_result_on_training_neither_demotes_nor_ranks_the_fix() -> None:
    import dataclasses

    # GIVEN rounds whose 90% interval spans 0.6x to 1.4x (a busy host): median 0.97x
    trial = _trial(0.97)
    assert trial.training is not None
    training = dataclasses.replace(
        trial.training, training_speedup_low=0.6, training_speedup_high=1.4
    )
    unclear = dataclasses.replace(trial, training=training)
    fix = _map_fix(worded_advice(_report_with(unclear)))
    # THEN the fix stays a fix, ranked by its prediction, and says the trial could not tell
    assert fix.kind == "fix" and fix.gain.basis != "training"
    assert fix.estimate is not None
    assert "On training the result was unclear: the gain shown is the pipeline alone's." in (
        fix.evidence
    )
    assert fix.gain.basis == "pipeline-alone"


def test_a_cache_side_fills_on_an_iterator_of_its_own_then_times_a_fresh_one_each_run() -> None:
    from pipediag.bench.whatif import TrialSide

    clock = FakeClock()
    teardown = TearDown()

    def read(iterator: Iterator[Any], _seconds: float) -> BatchTiming:
        next(iterator)
        return BatchTiming(0.02, [0.01] * 4, 0.04, False)

    plain_source = _Source(clock, 0.01, open_s=0.25)
    plain = TrialSide(plain_source, teardown, clock, read=read)
    assert plain_source.iterators == 0
    assert plain.run(1.0).opened_s == pytest.approx(0.25)
    # a cache: its filling epoch read at once on an iterator dropped after it; each run then
    # starts as a later epoch does, on a fresh iterator (never on one whose buffers refilled
    # while the other side ran)
    cached_source = _Source(clock, 0.01, open_s=0.25)
    began = clock.now()
    cached = TrialSide(cached_source, teardown, clock, 2, read=read)
    assert cached_source.iterators == 1
    assert clock.now() - began == pytest.approx(0.25 + 2 * 0.01)
    assert cached.run(1.0).opened_s == pytest.approx(0.25)
    assert cached.run(1.0).opened_s == pytest.approx(0.25)
    assert cached_source.iterators == 3
    teardown.drain()
