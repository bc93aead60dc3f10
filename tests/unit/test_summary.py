"""The summary layer: the words and figures every renderer shows, made once.

Against the recorded reports (tests/fixtures/reports/) for what real runs give, and on
hand-built reports for the cases a run rarely gives.
"""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path

import pytest
import report_fixtures as fx
from synthetic_reports import synthetic_cost_report, synthetic_report
from worded import written

from pipediag.renderers.cost_words import cost_bar
from pipediag.renderers.no_verdict_words import NO_STEPS_TEXT, NOT_ENOUGH_MEASURED
from pipediag.renderers.numbers import DASH, percent, rate_text, speedup
from pipediag.renderers.png.header import key_figures
from pipediag.renderers.rate_words import Rate, rates
from pipediag.renderers.run_words import NO_SCRIPT, command_line, input_wait_source_text, run_status
from pipediag.renderers.suggestion_words import (
    NOT_MEASURED,
    NOTE,
    actionable,
    best_fix,
    best_fix_figure,
    gains_text,
    suggestion_line,
    suggestions_of,
)
from pipediag.renderers.verdict_words import (
    NO_VERDICT,
    headline,
    phase_name,
    phase_text,
    verdict_line,
    verdict_title,
)
from pipediag.report.io import load_report, to_dict
from pipediag.report.model import (
    DataPass,
    ExitInfo,
    Gain,
    PipelineBenchmark,
    Report,
    StepRecord,
    TrainSection,
    Verdict,
)
from pipediag.report.names import stage_name
from pipediag.report.stages import StageStats
from pipediag.report.vocabulary import NoVerdictReason, StepLabel

EXPECTED_LABELS = {
    fx.INPUT_BOUND_FIT: "input-bound",
    fx.COMPUTE_BOUND_LOOP: "compute-bound",
    fx.CACHE_PHASES_FIT: "input-bound",
    fx.GPU_INPUT_BOUND_FIT: "input-bound",
    fx.GPU_COMPUTE_BOUND_LOOP: "compute-bound",
}


@pytest.mark.parametrize("name", fx.ALL)
def test_headline_of_a_recorded_run_is_a_claim_then_its_explanation(
    name: str,
) -> None:
    # GIVEN a real run's report  WHEN summarised
    report = fx.load(name)
    head = headline(report)
    # THEN its claim opens with the verdict's title
    assert report.verdict.label == EXPECTED_LABELS[name]
    assert head.claim.startswith(f"{verdict_title(report.verdict.label)}: input costs ")
    # the claim and the explanation are the whole headline, cut once
    if head.explanation:
        cuts = (f"{head.claim}: {head.explanation}", f"{head.claim}; {head.explanation}")
        assert head.text in cuts
    else:
        assert head.text == head.claim
    # under it only what it does not say itself (the cost's parts and the rates have rows of
    # their own): where the model sets the rate, the pipeline's headroom
    headroom = report.verdict.pipeline_headroom
    if report.verdict.label == "compute-bound":
        assert headroom is not None
        assert head.details == [
            f"The pipeline alone delivers {speedup(headroom)} what the train step needs."
        ]
    assert not any("nput cost" in detail or "steps/s" in detail for detail in head.details)


@pytest.mark.parametrize("path", fx.EVERY_PATH, ids=lambda p: p.stem)
def test_headline_worded_from_the_figures_is_the_one_the_run_stored(path: Path) -> None:
    # GIVEN a recorded run, whose report (schema 2) stored the analysis's headline as text
    # WHEN read (the text is dropped) and the headline worded again from the verdict's figures
    # THEN it says exactly what the run said
    assert headline(load_report(path)).text == fx.stored_headline(path)
    assert "headline" not in to_dict(load_report(path))["verdict"]


@pytest.mark.parametrize("name", fx.ALL)
def test_rates_are_p_t_a_from_the_report(name: str) -> None:
    report = fx.load(name)
    p, t, a = rates(report)
    assert (p.letter, t.letter, a.letter) == ("P", "T", "A")
    assert p.value == report.pipeline.batches_per_s
    assert t.value == report.verdict.compute_alone_steps_per_s
    assert a.value == report.verdict.training_steps_per_s
    # the recorded runs ran the step alone: T is measured, and says on how many steps
    assert not t.estimated
    assert report.compute_alone is not None
    assert t.origin == f"measured on a cached batch, {report.compute_alone.steps} steps"
    assert t.number == rate_text(t.value)


def test_rate_numbers_keep_a_decimal_only_below_100() -> None:
    assert rate_text(9.46) == "9.5"
    assert rate_text(99.94) == "99.9"
    assert rate_text(714.2) == "714"
    assert rate_text(2645.7) == "2,646"
    assert rate_text(None) == DASH
    estimated = Rate("T", "compute alone", "steps/s", 44.6, estimated=True)
    assert estimated.number == "~44.6"
    unmeasured = Rate("T", "compute alone", "steps/s", None, estimated=True)
    assert unmeasured.number == DASH


@pytest.mark.parametrize("name", fx.ALL)
def test_cost_bar_adds_up_to_the_whole_step(name: str) -> None:
    # GIVEN a real run: input cost split into wait, contention and fetch
    report = fx.load(name)
    bar = cost_bar(report)
    cost = report.verdict.input_cost_fraction
    assert cost is not None
    # THEN compute and the three parts, in that order, add up to the step
    assert [p.part for p in bar.parts] == ["compute", "wait", "contention", "fetch"]
    assert sum(p.share for p in bar.parts) == pytest.approx(1.0)
    assert bar.parts[0].share == pytest.approx(1.0 - cost)
    assert bar.title == f"Input cost: {percent(cost)} of training time"
    free = 1.0 / (1.0 - cost)
    assert bar.caption == f"{free:.1f}x faster if input were free"


def test_phases_of_the_cache_run_name_each_epoch_and_its_verdict() -> None:
    # GIVEN a run whose first epoch fills a cache: input-bound, then reading it is not
    report = fx.load(fx.CACHE_PHASES_FIT)
    first, *later = report.verdict.phases
    assert phase_name(first) == "epoch 1" and first.label == "input-bound"
    assert later and all(p.label in ("balanced", "compute-bound") for p in later)
    # THEN each phase reads "<name>: <label>, input costs N%"
    assert phase_text(first) == (
        f"epoch 1: input-bound, input costs {percent(first.input_cost_fraction or 0)}"
    )


@pytest.mark.parametrize("name", fx.ALL)
def test_advisor_and_renderers_name_a_stage_the_same_way(name: str) -> None:
    # GIVEN the suggestions the advisor wrote in a real run
    report = fx.load(name)
    stages = {s.index: s for s in report.pipeline.stages}
    for s in report.suggestions:
        if s.stage_index is None or s.stage_index not in stages:
            continue
        # THEN the stage it names is the stage as the renderers name it
        assert s.stage == stage_name(stages[s.stage_index])


def test_stage_names_add_the_dataset_op_where_the_kind_says_less() -> None:
    assert stage_name(StageStats(0, "map", "MapDataset", function="decode")) == "map(decode)"
    assert stage_name(StageStats(1, "cache", "CacheDatasetV2")) == "cache"
    assert stage_name(StageStats(2, "source", "TFRecordDatasetV2")) == "source: TFRecord"
    assert stage_name(StageStats(3, "interleave", "ParallelInterleaveDatasetV4")) == (
        "interleave: ParallelInterleave"
    )


@pytest.mark.parametrize("name", fx.ALL)
def test_key_figures_are_the_cost_the_three_rates_the_best_fix_and_the_steps(name: str) -> None:
    report = fx.load(name)
    figures = key_figures(report)
    labels = [label for label, _ in figures]
    assert labels[0] == "Input cost (of training time)"
    assert labels[1:4] == [
        "P pipeline alone (batches/s)",
        "T compute alone (steps/s)",
        "A training (steps/s)",
    ]
    assert labels[4].startswith("Best fix (")
    assert labels[5] == f"Steps measured (+{report.train.warmup_steps} warm-up)"
    assert [value for _, value in figures[1:4]] == [r.number for r in rates(report)]


def test_a_fix_shows_one_gain_and_never_an_estimate() -> None:
    fix = written(
        "PD004",
        "map(f): vectorise, map after batch",
        stage="map(f)",
        gain=Gain("pipeline-alone", 1.62),
        estimate=1.42,
    )
    # measured on the pipeline alone, labelled so; the estimates only order the fixes
    assert gains_text(fix) == "on the pipeline alone 1.62x"
    # the stage is in the title already: not said twice
    assert suggestion_line(fix, synthetic_report()) == (
        "[PD004] map(f): vectorise, map after batch  (on the pipeline alone 1.62x)"
    )
    tried = dataclasses.replace(fix, gain=Gain("training", 1.3, [1.21, 1.4]))
    assert gains_text(tried) == "on your training 1.30x (1.21-1.40x)"
    # an interval whose ends were both taken at the step alone's rate is none
    capped = dataclasses.replace(fix, gain=Gain("training", 5.67, [5.67, 5.67]))
    assert gains_text(capped) == "on your training 5.67x"
    held = written("PD007", "port to TF ops", gain=Gain("held", 2.1), estimate=3.0)
    assert gains_text(held) == "at most 2.10x on your training"
    estimated = dataclasses.replace(fix, gain=Gain())
    assert gains_text(estimated) == NOT_MEASURED
    assert gains_text(dataclasses.replace(estimated, kind=NOTE)) == ""


def test_a_suggestion_line_names_a_stage_its_title_does_not_and_warns_first() -> None:
    warning = written("PD009", "cache() before the random map", stage="map(augment)")
    warning = dataclasses.replace(warning, correctness_warning=True, kind="warning")
    assert suggestion_line(warning, synthetic_report()) == (
        "[PD009] may change results: cache() before the random map (stage: map(augment))"
    )


def test_a_shortened_suggestion_line_keeps_its_warning_and_gains() -> None:
    fix = written(
        "PD001",
        "a very long title " * 10,
        gain=Gain("pipeline-alone", 1.5),
        correctness_warning=True,
    )
    line = suggestion_line(fix, synthetic_report(), max_chars=80)
    assert 78 <= len(line) <= 80  # cut at a space, the space goes
    assert line.startswith("[PD001] may change results: a very long title")
    assert line.endswith("\N{HORIZONTAL ELLIPSIS}  (on the pipeline alone 1.50x)")


def test_best_fix_promises_only_a_measured_gain_and_notes_promise_nothing() -> None:
    note = written("PD001", "parallelise", kind="note", gain=Gain("pipeline-alone", 0.7))
    fix = written("PD004", "vectorise", estimate=1.42)
    report = dataclasses.replace(synthetic_cost_report(), suggestions=[note, fix])
    assert best_fix(report) is None
    assert best_fix_figure(report) == ("Best fix (not measured)", "\N{EM DASH}")
    assert actionable(report) == [fix]
    assert suggestions_of(report, NOTE) == [note]
    verified = dataclasses.replace(fix, gain=Gain("pipeline-alone", 1.6))
    report = dataclasses.replace(report, suggestions=[note, verified])
    assert best_fix(report) == (verified, 1.6)
    assert best_fix_figure(report) == ("Best fix (pipeline alone)", "1.60x")


def test_command_line_is_joined_the_way_a_shell_reads_it_back() -> None:
    report = dataclasses.replace(
        synthetic_report(), script="my train.py", args=["--name", "run 1", "--lr=0.1"]
    )
    line = command_line(report)
    assert line == "'my train.py' --name 'run 1' --lr=0.1"
    assert shlex.split(line) == ["my train.py", "--name", "run 1", "--lr=0.1"]
    assert command_line(Report(script="")) == NO_SCRIPT


@pytest.mark.parametrize(
    ("stop_reason", "complete", "exit_info", "status"),
    [
        ("step-budget", True, ExitInfo(), "complete: step budget reached, script stopped"),
        ("script-finished", True, ExitInfo(), "complete: the script finished"),
        (
            "system-exit",
            False,
            ExitInfo("system-exit", 3),
            "incomplete: the script exited with code 3",
        ),
        (
            "script-error",
            False,
            ExitInfo("exception", 1, "ValueError: bad"),
            "incomplete: the script failed (ValueError: bad)",
        ),
        ("interrupted", False, ExitInfo("interrupted", 130), "incomplete: interrupted"),
        ("", False, ExitInfo(), "incomplete: no reason recorded"),
        ("something new", False, ExitInfo(), "incomplete: something new"),
    ],
)
def test_run_status_says_how_the_run_ended(
    stop_reason: str, complete: bool, exit_info: ExitInfo, status: str
) -> None:
    report = Report(script="t.py", complete=complete, stop_reason=stop_reason, exit=exit_info)
    assert run_status(report) == status


@pytest.mark.parametrize("name", fx.ALL)
def test_recorded_runs_say_how_their_input_wait_was_measured(name: str) -> None:
    train = fx.load(name).train
    expected = {
        "keras-fit": "input wait from batch time stamps",
        "custom-loop": "input wait timed at the iterator",
    }
    assert input_wait_source_text(train) == expected[train.style]


def test_headline_without_input_cost() -> None:
    # an empty report: nothing measured, nothing to summarise
    head = headline(Report(script="t.py"))
    assert head.text == f"{NO_VERDICT}: {NOT_ENOUGH_MEASURED}"
    assert (head.claim, head.explanation, head.details) == (NO_VERDICT, NOT_ENOUGH_MEASURED, [])
    # a labelled verdict without input cost (an older report): the label, then its wait share
    report = synthetic_report(wait_s=0.03, compute_s=0.01)
    head = headline(report)
    assert head.text == "INPUT-BOUND: 75% of step time spent waiting for input"
    assert (head.claim, head.explanation) == (
        "INPUT-BOUND",
        "75% of step time spent waiting for input",
    )
    assert head.details == ["Severity: highly input-bound"]


def _no_verdict(
    reason: NoVerdictReason, train: TrainSection, batches_per_s: float | None = 40.0
) -> Report:
    pipeline = PipelineBenchmark(measured=True, batches_per_s=batches_per_s)
    verdict = Verdict(no_verdict_because=reason)
    return Report(script="t.py", verdict=verdict, train=train, pipeline=pipeline)


def _steps(count: int, label: StepLabel) -> list[StepRecord]:
    return [StepRecord(i, 0.1 * i, 0.1, None, label) for i in range(count)]


@pytest.mark.parametrize(
    ("reason", "train", "batches_per_s", "words"),
    [
        (
            "no-training",
            TrainSection(
                skipped_passes=[
                    DataPass(10, "no-train-step", passes=2),
                    DataPass(5, "keras", by="TextVectorization.adapt"),
                ]
            ),
            40.0,
            "No training was found: the script made 3 pass(es) over its data, none of them "
            "training (no train step between their pulls, or made by Keras), so there is no "
            "verdict.",
        ),
        ("no-steps", TrainSection(), 40.0, NO_STEPS_TEXT),
        (
            "warmup-only",
            TrainSection(steps=_steps(2, "warmup"), warmup_steps=2),
            40.0,
            "Only 2 step(s) ran, all in the warm-up: run more steps or lower --warmup.",
        ),
        (
            "wait-not-measured",
            TrainSection(steps=_steps(20, "unknown"), measured_steps=20, steps_per_s=10.0),
            11.0,
            "The input wait of the measured steps could not be measured. Training ran at 10.0 "
            "steps/s, 91% of the 11.0 batches/s the pipeline delivers alone, which suggests "
            "the input pipeline limits it.",
        ),
        (
            "wait-not-measured",
            TrainSection(steps=_steps(20, "unknown"), measured_steps=20, steps_per_s=10.0),
            40.0,
            "The input wait of the measured steps could not be measured. Training ran at 10.0 "
            "steps/s, 25% of the 40.0 batches/s the pipeline delivers alone.",
        ),
        (
            "wait-not-measured",
            TrainSection(steps=_steps(20, "unknown"), measured_steps=20, steps_per_s=10.0),
            None,
            "The input wait of the measured steps could not be measured.",
        ),
        ("unknown", TrainSection(), 40.0, NOT_ENOUGH_MEASURED),
    ],
)
def test_no_verdict_is_worded_from_its_code_and_the_train_sections_figures(
    reason: NoVerdictReason, train: TrainSection, batches_per_s: float | None, words: str
) -> None:
    # GIVEN a verdict with no label and the code of why  WHEN worded
    report = _no_verdict(reason, train, batches_per_s)
    head = headline(report)
    # THEN the title is the claim, the words for the code its explanation, and nothing more
    assert (head.claim, head.explanation, head.details) == (NO_VERDICT, words, [])
    assert head.text == f"{NO_VERDICT}: {words}"
    # and the one-line verdict says the words alone
    assert verdict_line(report.verdict, batches_per_s, train) == words


def test_a_fix_tried_on_training_shows_that_gain_and_leads_the_key_figures() -> None:
    tried = written(
        "PD001-sequential-map",
        "map(decode): add num_parallel_calls=tf.data.AUTOTUNE",
        gain=Gain("training", 1.3),
        estimate=1.2,
    )
    predicted = written("PD002-x", "another fix", estimate=1.25)
    assert gains_text(tried) == "on your training 1.30x"
    report = dataclasses.replace(synthetic_report(), suggestions=[predicted, tried])
    # the fix counts with its gain measured on training, not its predicted one (1.2x)
    assert best_fix(report) == (tried, 1.3)
    assert best_fix_figure(report) == ("Best fix (on your training)", "1.30x")
