"""Advice that follows the part of input cost that dominates, rule by rule, on built reports."""

from __future__ import annotations

import dataclasses

import pytest
from synthetic_reports import CostEvidence, synthetic_cost_report
from worded import worded_advice

from pipediag.analysis.advisor import advise
from pipediag.analysis.run_terms import most_input_gives
from pipediag.renderers.answer import the_change
from pipediag.renderers.suggestion_words import best_fix_figure
from pipediag.renderers.text import render_text
from pipediag.report.model import Report
from pipediag.report.reasons import Reason
from pipediag.report.stages import StageStats
from pipediag.report.trials import TrialFacts


def _ids(report) -> list[str]:  # type: ignore[no-untyped-def]
    return [s.id for s in worded_advice(report)]


def test_contention_gets_a_cheaper_pipeline_with_its_cores_left_to_the_step() -> None:
    # GIVEN input costing 44%, 40 points of it contention, the step waiting 4%
    report = synthetic_cost_report(wait=0.04, contention=0.40)
    suggestions = worded_advice(report)
    contention = next(s for s in suggestions if s.id == "PD012-input-contention")
    # THEN the fix says what contention is, with its evidence and the code to write
    assert "yet the step waited only 4% of the time" in contention.evidence
    assert "1.1 more cores busy while training" in contention.evidence
    assert "private_threadpool_size" in contention.code
    assert contention.estimate is not None
    assert abs(contention.estimate - 1 / (1 - 0.40)) < 1e-6
    assert "PD013-per-pull-overhead" not in _ids(report)


def test_per_pull_overhead_gets_fewer_larger_pulls() -> None:
    report = synthetic_cost_report(
        wait=0.0,
        contention=0.02,
        fetch=0.24,
        evidence=CostEvidence(pipeline_batches_per_s=5100.0, pull_s=0.0002),
    )
    fetch = next(s for s in worded_advice(report) if s.id == "PD013-per-pull-overhead")
    assert "0.20 ms" in fetch.evidence and "24% of training time" in fetch.evidence
    # the report's style decides the code: a custom loop gets the loop inside tf.function
    expected = "steps_per_execution" if report.train.style == "keras-fit" else "tf.range"
    assert expected in fetch.code
    assert "PD012-input-contention" not in _ids(report)


def test_per_pull_overhead_under_fit_takes_the_calls_size_measured_on_the_step_alone() -> None:
    # GIVEN per-pull overhead leading under fit, and steps_per_execution=8 measured 1.41x
    # on the train step alone (the model-side trials)
    from pipediag.report.model_side import ModelTrial

    def with_multi_step(speedup: float) -> Report:
        report = synthetic_cost_report(
            wait=0.0,
            contention=0.02,
            fetch=0.24,
            evidence=CostEvidence(pipeline_batches_per_s=5100.0, pull_s=0.0002),
        )
        train = dataclasses.replace(report.train, style="keras-fit")
        tried = ModelTrial("steps_per_execution", speedup=speedup, setting="8", code="...")
        assert report.compute_alone is not None
        alone = dataclasses.replace(report.compute_alone, trials=[tried])
        return dataclasses.replace(report, train=train, compute_alone=alone)

    fetch = next(
        s for s in worded_advice(with_multi_step(1.41)) if s.id == "PD013-per-pull-overhead"
    )
    # THEN the fix writes the size measured, and says what it measured where
    assert fetch.kind == "fix"
    assert "steps_per_execution=8" in fetch.code and "=32" not in fetch.code
    assert "steps_per_execution=8 was tried on the train step alone" in fetch.evidence
    assert (fetch.gain.basis, fetch.gain.speedup) == ("step-alone", 1.41)
    # and the answer gives that gain, labelled, with the code
    report = with_multi_step(1.41)
    change = the_change(dataclasses.replace(report, suggestions=advise(report)))
    assert change.words == (
        "each step pulls one small batch: fewer, larger pulls: 1.41x on the train step alone, "
        "not on your training"
    )
    assert change.code == ["model.compile(..., steps_per_execution=8)  # 8 steps per call"]
    advised = dataclasses.replace(report, suggestions=advise(report))
    assert best_fix_figure(advised) == ("Best fix (step alone)", "1.41x")
    # and the summary says its figure once: on the fix, not again among the model's changes
    assert render_text(advised).count("1.41x") == 1
    # and where the step alone gained nothing from it, the rule is a note with no code
    none = next(
        s for s in worded_advice(with_multi_step(1.01)) if s.id == "PD013-per-pull-overhead"
    )
    assert (none.kind, none.code) == ("note", "")
    assert "it did not help, not the way here" in none.evidence
    # with no second note saying no input-side change helped
    assert "PD014-no-input-fix" not in _ids(with_multi_step(1.01))


def test_an_input_cost_with_no_fix_says_why() -> None:
    # GIVEN input costing 30%, but stage timing skipped and nothing else to suggest
    report = synthetic_cost_report(wait=0.30, contention=0.0)
    pipeline = dataclasses.replace(
        report.pipeline, stages=[], deep_skipped_reason=Reason("deep-skipped", value=0.3, limit=0.4)
    )
    report = dataclasses.replace(report, pipeline=pipeline)
    suggestions = worded_advice(report)
    assert not [s for s in suggestions if s.kind == "fix"]
    note = next(s for s in suggestions if s.id == "PD014-no-input-fix")
    assert note.title.startswith("input costs 30%")
    assert note.reason == Reason("deep-skipped", value=0.3, limit=0.4)
    text = render_text(dataclasses.replace(report, suggestions=suggestions))
    assert "input costs 30% of training (under 40%): no pipeline fix can gain more" in text


def test_a_compute_bound_run_gets_no_cost_advice() -> None:
    report = synthetic_cost_report(wait=0.01, contention=0.01)
    ids = _ids(report)
    assert not {"PD012-input-contention", "PD013-per-pull-overhead", "PD014-no-input-fix"} & set(
        ids
    )


def _with_thread_cap(training_speedup: float) -> object:
    from pipediag.report.prescription import GainOnTraining
    from pipediag.report.trials import FixTrial

    report = synthetic_cost_report(wait=0.04, contention=0.40)
    cap = FixTrial(
        fix="thread-cap",
        stage="options",
        verified=True,
        speedup=0.8,
        facts=TrialFacts(threads=1),
        training=GainOnTraining(
            training_speedup=training_speedup,
            training_speedup_low=1.1,
            training_speedup_high=1.4,
            baseline_steps_per_s=20.0,
            variant_steps_per_s=20.0 * training_speedup,
            rounds=5,
        ),
    )
    pipeline = dataclasses.replace(report.pipeline, trials=[cap])
    return dataclasses.replace(report, pipeline=pipeline)


def test_a_thread_cap_measured_faster_on_training_backs_the_contention_fix() -> None:
    suggestions = worded_advice(_with_thread_cap(1.25))
    contention = next(s for s in suggestions if s.id == "PD012-input-contention")
    assert contention.gain.on("training") == 1.25
    assert "Capped at 1 thread: Tried on your train function: 20.0 -> 25.0 steps/s" in (
        contention.evidence
    )
    assert "90% interval 1.10-1.40x" in contention.evidence
    assert "private_threadpool_size = " in contention.code
    # and the cap is said once: no second fix for the same trial
    assert [s.id for s in suggestions if s.kind == "fix"] == ["PD012-input-contention"]


def test_a_thread_cap_that_does_not_help_training_is_not_suggested() -> None:
    contention = next(
        s for s in worded_advice(_with_thread_cap(0.97)) if s.id == "PD012-input-contention"
    )
    # the rule's one change did not help: a note, no code to paste, and no other note
    # saying again that no input-side change helped
    assert (contention.kind, contention.code) == ("note", "")
    assert "Not the way here" in contention.evidence
    assert contention.gain.speedup is None
    assert "PD014-no-input-fix" not in [s.id for s in worded_advice(_with_thread_cap(0.97))]


def _with_augmentation_map(cap_gain: float, held: float) -> Report:
    """Contention, the thread cap at `cap_gain` on training, and a random augmentation map
    costing nearly all of each batch, the prefetch after it held in memory at `held`."""
    base = _with_thread_cap(cap_gain)
    assert isinstance(base, Report)
    stages = [
        StageStats(0, "source", "TensorSlice", own_s_per_batch=0.001),
        StageStats(1, "batch", "BatchDatasetV2", inputs=[0], own_s_per_batch=0.0001),
        StageStats(
            2,
            "parallel-map",
            "ParallelMapDatasetV2",
            inputs=[1],
            function="augment",
            source="train.py:147",
            random=True,
            own_s_per_batch=0.019,
            bottleneck=True,
        ),
        StageStats(3, "prefetch", "PrefetchDataset", inputs=[2], training_speedup_if_free=held),
    ]
    return dataclasses.replace(base, pipeline=dataclasses.replace(base.pipeline, stages=stages))


def test_contention_names_the_costliest_stage_with_what_holding_it_gave_training() -> None:
    # GIVEN contention dominating, a thread cap that did not help, and a random augmentation
    # map costing nearly all of each batch, the prefetch after it held in memory at 1.3x
    report = _with_augmentation_map(0.97, 1.3)
    contention = next(s for s in worded_advice(report) if s.id == "PD012-input-contention")
    # THEN the change names that stage and line, and its gain is the hold's bound
    assert contention.title == "make parallel-map(augment) at train.py:147 cheaper"
    assert (contention.gain.basis, contention.gain.speedup) == ("held", 1.3)
    assert "It draws random numbers" in contention.evidence
    assert "Holding prefetch in memory ran training 1.30x faster" in contention.evidence
    assert contention.stage is None  # one suggestion to compare, whichever stage it names
    # and the answer says no change helped, and where the cost lies with the most it gives
    change = the_change(dataclasses.replace(report, suggestions=advise(report)))
    assert change.words == (
        "none measured to help on your training; make parallel-map(augment) at train.py:147 "
        "cheaper: at most 1.30x on your training (measured with its output held in memory)"
    )
    assert change.code == []
    # a hold under the worth-it 1.05x is no gain to show
    under = next(
        s
        for s in worded_advice(_with_augmentation_map(0.97, 1.02))
        if s.id == "PD012-input-contention"
    )
    assert under.gain.speedup is None and "ran training" not in under.evidence
    # a hold read above what all input free gives (the host's noise) gives that bound
    noisy = _with_augmentation_map(0.97, 9.0)
    above = next(s for s in worded_advice(noisy) if s.id == "PD012-input-contention")
    assert above.gain.basis == "input-free"
    assert above.gain.speedup == pytest.approx(most_input_gives(noisy))
    assert "With input free, training would run" in above.evidence
    # and where the cap helped, the cap is the change, with its own gain
    capped = next(
        s
        for s in worded_advice(_with_augmentation_map(1.25, 1.3))
        if s.id == "PD012-input-contention"
    )
    assert "make it cheaper" in capped.title and capped.gain.on("training") == 1.25


def test_contention_gives_way_to_the_fix_that_says_how_at_its_stage() -> None:
    # GIVEN the case above, its augmentation map running Python (a py_function)
    report = _with_augmentation_map(0.97, 1.3)
    stages = list(report.pipeline.stages)
    stages[2] = dataclasses.replace(stages[2], uses_py_function=True)
    report = dataclasses.replace(
        report, pipeline=dataclasses.replace(report.pipeline, stages=stages)
    )
    ids = [s.id for s in worded_advice(report)]
    # THEN the fix that says how to make that stage cheaper is said, not both
    assert "PD007-py-function" in ids and "PD012-input-contention" not in ids
    # but more threads for it (a sequential map made parallel, not measured on training)
    # is no way to make it cheaper: the contention fix stays
    sequential = list(_with_augmentation_map(0.97, 1.3).pipeline.stages)
    sequential[2] = dataclasses.replace(sequential[2], kind="map", name="MapDataset")
    threads = dataclasses.replace(
        report, pipeline=dataclasses.replace(report.pipeline, stages=sequential)
    )
    found = {s.id: s for s in worded_advice(threads)}
    assert "PD001-sequential-map" in found
    assert found["PD012-input-contention"].stage_index == found["PD001-sequential-map"].stage_index


def test_contention_beside_python_with_cores_free_gets_the_python_taken_out() -> None:
    # GIVEN contention dominating while 1.2 cores were free, beside a generator source
    base = synthetic_cost_report(wait=0.04, contention=0.40, evidence=CostEvidence(free_cores=1.2))
    assert base.verdict.cost_split is not None
    split = dataclasses.replace(base.verdict.cost_split, contention_kind="gil")
    stages = [
        StageStats(0, "source", name="from_generator", function="rows", uses_py_function=True)
    ]
    report = dataclasses.replace(
        base,
        verdict=dataclasses.replace(base.verdict, cost_split=split),
        pipeline=dataclasses.replace(base.pipeline, stages=stages),
    )
    contention = next(s for s in worded_advice(report) if s.id == "PD012-input-contention")
    # THEN the fix names the Python stage and the lock; a thread cap is not the cure
    assert "interpreter lock" in contention.title
    assert "source(rows)" in contention.evidence and "1.2 of 2 cores" in contention.evidence
    assert "private_threadpool_size" not in contention.code
    assert contention.estimate == pytest.approx(1 / (1 - 0.40))


def test_an_epoch_start_that_dominates_gets_one_repeating_iterator() -> None:
    # GIVEN 20% of training time in each epoch's 1.8 s start-up, likely a shuffle buffer
    base = synthetic_cost_report(wait=0.03, contention=0.0)
    assert base.verdict.cost_split is not None
    split = dataclasses.replace(
        base.verdict.cost_split,
        epoch_start=0.20,
        epoch_start_s=1.8,
        epoch_steps=140,
        epoch_start_stage="shuffle(10000)",
        dominant="epoch-start",
    )
    report = dataclasses.replace(
        base,
        verdict=dataclasses.replace(
            base.verdict, cost_split=split, input_cost_fraction=0.23, label="input-bound"
        ),
        train=dataclasses.replace(base.train, style="keras-fit"),
    )
    suggestions = worded_advice(report)
    start = next(s for s in suggestions if s.id == "PD015-epoch-start")
    assert "1.80 s late (shuffle(10000) likely makes it)" in start.evidence
    assert "steps_per_epoch=140" in start.code and "ds.repeat()" in start.code
    assert start.estimate == pytest.approx(1 / (1 - 0.20))
    assert "PD014-no-input-fix" not in _ids(report)
    # an epoch of unknown length cannot be given: no such fix
    unknown = dataclasses.replace(split, epoch_steps=None)
    report = dataclasses.replace(
        report, verdict=dataclasses.replace(report.verdict, cost_split=unknown)
    )
    assert "PD015-epoch-start" not in _ids(report)
