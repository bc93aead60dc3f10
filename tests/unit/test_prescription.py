"""The pipeline pipediag would write: the rewrites tried greedily on training, each on top
of those kept, on a fake clock with scripted trial results (docs/design.md, "The pipeline
pipediag would write")."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest
from synthetic_reports import FakeClock

from pipediag.analysis.stage_bisect import Freed
from pipediag.bench.interleaved import Rounds
from pipediag.bench.pipeline import BatchTiming
from pipediag.bench.whatif import FixPipelines
from pipediag.renderers.reason_words import reason_words
from pipediag.report.model import PipelineBenchmark
from pipediag.report.reasons import Reason
from pipediag.report.stages import StageSettings, StageStats
from pipediag.report.trials import FixTrial
from pipediag.training.prescription import (
    COMBINED,
    PipelineSearch,
    at_ceiling,
    bounded_out,
    order_for_search,
    with_prescription,
)
from pipediag.training.search import run as run_search

BASE_RATE = 100.0  # the kept pipeline's training rate, steps/s


def _fix(name: str, stage: int | None, gain: float = 1.0) -> FixPipelines:
    return FixPipelines(
        fix=name, stage_index=stage, baseline=(), variant=(name,), pipeline_speedup=gain
    )


def _timing(rate: float) -> BatchTiming:
    return BatchTiming(0.001, [1.0 / rate] * 10, 10 / rate, False)


def _rounds(ratio: float, spread: float = 0.02) -> Rounds:
    ratios = [ratio * (1 - spread), ratio, ratio * (1 + spread), ratio, ratio]
    return Rounds(
        baseline=[_timing(BASE_RATE)] * 5,
        variant=[_timing(BASE_RATE * ratio)] * 5,
        ratios=ratios,
        interval=(min(ratios), max(ratios)),
        stopped="clear gain" if ratio > 1 else "clear no gain",
    )


class _Trainer:
    """Answers each trial with the gain scripted for its newest rewrite, and records the
    rewrites each trial's baseline carried."""

    def __init__(self, clock: FakeClock, gains: dict[str, float], seconds: float = 1.0):
        self.clock = clock
        self.gains = gains
        self.seconds = seconds
        self.tried: list[tuple[str, tuple[str, ...]]] = []

    def compose(self, kept: Sequence[FixPipelines], extra: FixPipelines) -> FixPipelines:
        below = tuple(k.fix for k in kept)
        return FixPipelines(
            fix=extra.fix,
            stage_index=extra.stage_index,
            baseline=below,
            variant=(*below, extra.fix),
        )

    def try_one(self, pipelines: FixPipelines, seconds: float) -> tuple[Rounds | None, str | None]:
        self.clock.sleep(self.seconds)  # a trial may overrun its share
        self.tried.append((pipelines.fix, tuple(pipelines.baseline)))
        if pipelines.fix == COMBINED:
            gain = 1.0
            for name in pipelines.variant:
                gain *= self.gains[name]
            return _rounds(gain), None
        return _rounds(self.gains[pipelines.fix]), None


def _search(trainer: _Trainer, fixes: list[FixPipelines], seconds: float = 20.0) -> PipelineSearch:
    return PipelineSearch(
        fixes, compose=trainer.compose, clock=trainer.clock, until_s=trainer.clock.now() + seconds
    )


def test_each_rewrite_is_tried_on_top_of_the_kept_ones_and_the_kept_ones_together_last() -> None:
    # GIVEN three rewrites: two help training (1.5x, 1.3x), one does not (1.01x)
    clock = FakeClock()
    trainer = _Trainer(clock, {"parallel-map": 1.5, "prefetch-end": 1.01, "cache": 1.3})
    fixes = [_fix("parallel-map", 1), _fix("prefetch-end", 3), _fix("cache", 2)]
    # WHEN the search runs
    trials = _search(trainer, fixes)
    run_search(trials, trainer.try_one)
    prescription = trials.prescription()
    # THEN each was tried over the ones kept before it, the useless one dropped
    assert trainer.tried == [
        ("parallel-map", ()),
        ("prefetch-end", ("parallel-map",)),
        ("cache", ("parallel-map",)),
        (COMBINED, ()),  # the kept ones against the user's pipeline
    ]
    assert [c.fix for c in prescription.kept] == ["parallel-map", "cache"]
    dropped = prescription.tried[1]
    assert not dropped.kept and dropped.after == ["parallel-map"]
    assert dropped.reason == Reason("under-worth-it", limit=1.05)
    assert "under the worth-it 1.05x" in reason_words(dropped.reason)
    # and the prescription's gain is the combined trial's
    assert prescription.training_speedup == pytest.approx(1.5 * 1.3)
    assert prescription.baseline_steps_per_s == pytest.approx(BASE_RATE)
    assert prescription.reason is None


def test_kept_rewrites_that_together_gain_less_than_the_first_alone_fall_back_to_it() -> None:
    # GIVEN two rewrites each kept on its own trial (1.5x, then 1.2x on top), whose combined
    # trial reads only 1.1x over the user's pipeline
    clock = FakeClock()
    trainer = _Trainer(clock, {"cache": 1.5, "thread-cap": 1.2})
    together = trainer.try_one

    def try_one(pipelines: FixPipelines, seconds: float) -> tuple[Rounds | None, str | None]:
        if pipelines.fix == COMBINED:
            clock.sleep(1.0)
            return _rounds(1.1), None
        return together(pipelines, seconds)

    trials = _search(trainer, [_fix("cache", 2), _fix("thread-cap", None)])
    run_search(trials, try_one)
    prescription = trials.prescription()
    # THEN the prescription is the first alone, at its own trial's gain
    assert [c.fix for c in prescription.kept] == ["cache"]
    assert prescription.training_speedup == pytest.approx(1.5)
    assert [c.fix for c in trials.changes()] == ["cache"]
    # and the dropped one says why, its own trial's figure kept
    dropped = prescription.tried[1]
    assert not dropped.kept and dropped.training_speedup == pytest.approx(1.2)
    assert dropped.reason is not None and dropped.reason.code == "fell-back"
    assert "together gained training less" in reason_words(dropped.reason)


def test_kept_rewrites_that_together_beat_the_first_alone_stay_together() -> None:
    clock = FakeClock()
    trainer = _Trainer(clock, {"cache": 1.5, "thread-cap": 1.2})
    trials = _search(trainer, [_fix("cache", 2), _fix("thread-cap", None)])
    run_search(trials, trainer.try_one)
    prescription = trials.prescription()
    assert [c.fix for c in prescription.kept] == ["cache", "thread-cap"]
    assert prescription.training_speedup == pytest.approx(1.8)


def test_a_single_kept_rewrite_is_the_prescription_without_a_combined_trial() -> None:
    clock = FakeClock()
    trainer = _Trainer(clock, {"vectorize": 2.0, "prefetch-end": 0.98})
    fixes = [_fix("vectorize", 1), _fix("prefetch-end", 3)]
    trials = _search(trainer, fixes)
    run_search(trials, trainer.try_one)
    prescription = trials.prescription()
    assert [name for name, _ in trainer.tried] == ["vectorize", "prefetch-end"]
    assert prescription.training_speedup == pytest.approx(2.0)


def test_a_gain_whose_interval_reaches_one_is_not_kept() -> None:
    clock = FakeClock()
    trainer = _Trainer(clock, {"parallel-map": 1.08})
    trials = _search(trainer, [_fix("parallel-map", 1)])
    due = trials.next_trial()
    assert due is not None
    wide = _rounds(1.08, spread=0.1)  # 0.97x-1.19x
    trials.record(wide)
    prescription = trials.prescription()
    assert not prescription.kept
    assert prescription.training_speedup is None
    assert prescription.reason == Reason("no-rewrite-helped")
    assert "reaches 1" in reason_words(prescription.tried[0].reason)


def test_a_rewrite_that_cannot_be_combined_is_reported_and_the_search_goes_on() -> None:
    clock = FakeClock()
    trainer = _Trainer(clock, {"parallel-map": 1.5, "vectorize": 1.4, "cache": 1.2})

    def compose(kept: Sequence[FixPipelines], extra: FixPipelines) -> FixPipelines:
        if extra.fix == "vectorize" and kept:
            raise ValueError("the map was moved")
        return trainer.compose(kept, extra)

    fixes = [_fix("parallel-map", 1), _fix("vectorize", 1), _fix("cache", 2)]
    trials = PipelineSearch(fixes, compose=compose, clock=clock, until_s=clock.now() + 20)
    run_search(trials, trainer.try_one)
    prescription = trials.prescription()
    by_fix = {c.fix: c for c in prescription.tried}
    assert "could not be built on top of the kept rewrites" in reason_words(
        by_fix["vectorize"].reason
    )
    assert by_fix["cache"].kept and by_fix["cache"].after == ["parallel-map"]


def test_once_a_cache_is_kept_the_rewrites_of_the_stages_it_serves_are_not_tried() -> None:
    # GIVEN source -> decode map -> batch, a cache after the decode kept at 1.4x
    stages = [
        StageStats(index=0, kind="source", name="source"),
        StageStats(index=1, kind="map", name="map(decode)", inputs=[0]),
        StageStats(index=2, kind="batch", name="batch", inputs=[1]),
    ]
    clock = FakeClock()
    trainer = _Trainer(
        clock, {"cache": 1.4, "parallel-map": 1.1, "vectorize": 1.2, "prefetch-end": 1.1}
    )
    fixes = [_fix("cache", 1), _fix("parallel-map", 1), _fix("vectorize", 1)]
    fixes.append(_fix("prefetch-end", 2))
    trials = PipelineSearch(
        fixes, compose=trainer.compose, clock=clock, until_s=clock.now() + 20, stages=stages
    )
    run_search(trials, trainer.try_one)
    prescription = trials.prescription()
    # THEN the decode's own rewrites are not tried under it (they would change only the
    # first epoch); the final prefetch, after it, is
    assert [name for name, _ in trainer.tried] == ["cache", "prefetch-end", COMBINED]
    by_fix = {c.fix: c for c in prescription.tried}
    for moot in ("parallel-map", "vectorize"):
        assert "the kept cache after map(decode) serves it from memory" in (
            reason_words(by_fix[moot].reason)
        )
        assert not by_fix[moot].kept
    assert [c.fix for c in prescription.kept] == ["cache", "prefetch-end"]
    # and the pipeline's trials carry it, for the rules that word those rewrites
    pipeline = PipelineBenchmark(
        measured=True,
        stages=stages,
        trials=[FixTrial("parallel-map", 1, "map(decode)"), FixTrial("cache", 1, "map(decode)")],
    )
    moot, cache = with_prescription(pipeline, trials, ceiling=None).trials
    assert moot.facts.covered_by_cache and "serves it from memory" in reason_words(
        moot.training_reason
    )
    assert not cache.facts.covered_by_cache and cache.training is not None
    assert cache.training.training_speedup == pytest.approx(1.4)


def test_rewrites_left_when_the_time_runs_out_are_named() -> None:
    clock = FakeClock()
    trainer = _Trainer(clock, {"a": 1.5, "b": 1.5, "c": 1.5}, seconds=1.5)
    fixes = [_fix("a", 1), _fix("b", 2), _fix("c", 3)]
    trials = _search(trainer, fixes, seconds=2.0)
    run_search(trials, trainer.try_one)
    prescription = trials.prescription()
    assert [name for name, _ in trainer.tried] == ["a"]  # 0.5 s left: under a trial's least
    assert prescription.training_speedup == pytest.approx(1.5)
    assert all("ran out" in reason_words(c.reason) for c in prescription.tried[1:])


def test_a_fixed_rate_above_the_step_alone_is_taken_at_the_step_alone() -> None:
    from pipediag.renderers.prescription_words import together_text

    clock = FakeClock()
    trainer = _Trainer(clock, {"cache": 3.0})
    trials = PipelineSearch(
        [_fix("cache", 2)],
        compose=trainer.compose,
        clock=clock,
        until_s=clock.now() + 20,
        ceiling=200.0,
    )
    run_search(trials, trainer.try_one)
    prescription = trials.prescription()  # 300 steps/s fed, the step alone 200
    # THEN the gain is the most the step allows, 200 / 100, its interval scaled alike
    (change,) = prescription.kept
    assert change.at_step_alone and change.variant_steps_per_s == pytest.approx(200.0)
    assert change.training_speedup == pytest.approx(2.0)
    assert change.training_speedup_low == pytest.approx(3.0 * 0.98 * 2 / 3)
    assert prescription.training_speedup == pytest.approx(2.0) and prescription.at_step_alone
    # and a variant within the ceiling is left as measured
    assert at_ceiling(Freed(1.5, 1.4, 1.6, 150.0), 200.0) == Freed(1.5, 1.4, 1.6, 150.0)
    assert "(at the train step alone's rate: it fed training faster)" in together_text(prescription)


def test_a_rewrite_clearly_slower_on_training_is_said_to_be_slower() -> None:
    # GIVEN a parallel map measured 0.71x on training, its interval well under 1
    clock = FakeClock()
    trainer = _Trainer(clock, {"parallel-map": 0.71})
    trials = _search(trainer, [_fix("parallel-map", 1)])
    run_search(trials, trainer.try_one)
    tried = trials.prescription().tried[0]
    # THEN it is not kept because it is slower, not because it is under the worth-it 1.05x
    assert not tried.kept and tried.reason == Reason("slower")
    assert reason_words(tried.reason) == "slower"


def _stage(index: int, if_free: float | None, kind: str = "map") -> StageStats:
    return StageStats(
        index=index,
        kind=kind,
        name=f"{kind.title()}Dataset",
        function=f"f{index}",
        training_speedup_if_free=if_free,
        inputs=[index - 1] if index else [],  # a chain
    )


def test_a_stage_is_bounded_by_a_hold_downstream_of_it_not_by_the_other_branch_of_a_zip() -> None:
    from pipediag.report.stage_facts import if_free_bound

    # GIVEN a zip of two branches, the second branch's map held at 1.0x, the zip at 3x
    stages = [
        _stage(0, None, "source"),
        _stage(1, None),
        _stage(2, None, "source"),
        _stage(3, 1.0),
        dataclasses.replace(_stage(4, 3.0, "zip"), inputs=[1, 3]),
    ]
    stages[2] = dataclasses.replace(stages[2], inputs=[])
    # THEN the first branch's map is bounded by the zip, which reads it, not by the map
    # with a later index on the other branch
    bound = if_free_bound(stages, 1)
    assert bound is not None and bound.index == 4
    assert (if_free_bound(stages, 3) or stages[0]).index == 3
    assert (if_free_bound(stages, None) or stages[0]).index == 4


def test_a_rewrite_is_bounded_by_the_nearest_held_stage_at_or_after_it() -> None:
    # GIVEN the source and a map freed gain nothing; the batch and prefetch do
    stages = [_stage(0, 1.0, "source"), _stage(1, None), _stage(2, 1.01), _stage(3, 3.0)]
    # THEN a rewrite of the unheld map is bounded by the batch after it: not tried
    reason = bounded_out(_fix("parallel-map", 1), stages)
    assert reason == Reason("bounded-out", detail="map(f2)", value=1.01)
    assert "gained training only 1.01x" in reason_words(reason)
    # and one of the end (or the options) by the output stage's 3x: tried
    assert bounded_out(_fix("prefetch-end", 3), stages) is None
    assert bounded_out(_fix("thread-cap", None), stages) is None
    # unmeasured stages bound nothing
    assert bounded_out(_fix("parallel-map", 1), [_stage(1, None)]) is None
    # nor does a hold whose median is under 1.05x while its interval reaches past it
    unclear = dataclasses.replace(stages[2], training_speedup_if_free_high=1.4)
    assert bounded_out(_fix("parallel-map", 1), [*stages[:2], unclear, stages[3]]) is None
    clear = dataclasses.replace(stages[2], training_speedup_if_free_high=1.04)
    assert bounded_out(_fix("parallel-map", 1), [*stages[:2], clear, stages[3]]) is not None


def test_the_search_order_is_the_pipeline_alone_gain_and_bounded_rewrites_are_skipped() -> None:
    stages = [_stage(0, 1.0, "source"), _stage(1, 2.0), _stage(2, 2.5)]
    fixes = [_fix("cache", 0, 3.0), _fix("parallel-map", 1, 1.2), _fix("vectorize", 1, 1.8)]
    order, skipped = order_for_search(fixes, stages)
    assert [f.fix for f in order] == ["vectorize", "parallel-map"]
    assert [(s.fix, s.kept) for s in skipped] == [("cache", False)]
    assert skipped[0].reason is not None


def test_a_kept_vectorise_through_vectorized_map_is_written_so() -> None:
    from pipediag.bench.candidate import Candidate
    from pipediag.report.trials import TrialFacts

    # GIVEN a vectorise whose check passed only through tf.vectorized_map, kept on training
    facts = TrialFacts(vectorized_map=True, element_unpacked=True)
    candidate = Candidate("vectorize", 1, "map(decode)", facts=facts, semantics=("vectorized-map",))
    fix = FixPipelines(fix="vectorize", stage_index=1, baseline=(), variant=(), candidate=candidate)
    clock = FakeClock()
    trainer = _Trainer(clock, {"vectorize": 1.6})
    trials = _search(trainer, [fix])
    run_search(trials, trainer.try_one)
    stages = [
        StageStats(0, "source", "TensorSliceDataset"),
        StageStats(1, "map", "MapDataset", function="decode", inputs=[0]),
        StageStats(2, "batch", "BatchDatasetV2", StageSettings(batch_size=32), inputs=[1]),
    ]
    # WHEN the pipeline is written
    code = trials.prescription(stages).code
    # THEN the map after the batch runs the function on each element, its arguments unpacked
    (change,) = trials.changes()
    assert (change.vectorized_map, change.element_unpacked) == (True, True)
    assert code[-1].text == (
        "ds = ds.map(lambda *batch: tf.vectorized_map(lambda e: decode(*e), batch, "
        "fallback_to_while_loop=True), num_parallel_calls=tf.data.AUTOTUNE)"
    )
    assert code[-1].semantics == ["vectorized-map"]
