"""The advisor and the words over the rewrites tried on training: the rewritten pipeline as
one fix, a measured rewrite no rule speaks for, a stage whose cost to training bounds every
change to it, and the best fix that always carries a number (docs/design.md, "The pipeline
pipediag would write")."""

from __future__ import annotations

import dataclasses
from typing import get_args

import pytest
from synthetic_reports import synthetic_report
from worded import worded, worded_advice

from pipediag.analysis.advisor import advise
from pipediag.analysis.run_terms import with_prescription_in_run_terms
from pipediag.renderers.prescription_words import (
    SEMANTICS_WORDS,
    changes_besides_speed,
    rewrites_lines,
)
from pipediag.renderers.suggestion_words import best_fix_figure, suggestion_line
from pipediag.renderers.text import render_text
from pipediag.report import io
from pipediag.report.model import Gain, Report
from pipediag.report.prescription import (
    CodeLine,
    GainOnTraining,
    PrescribedChange,
    Prescription,
)
from pipediag.report.reasons import Reason
from pipediag.report.stages import StageStats
from pipediag.report.trials import FixTrial, TrialFacts
from pipediag.report.vocabulary import SemanticsChange


def _stages(if_free: dict[int, float] | None = None, python: bool = False) -> list[StageStats]:
    if_free = if_free or {}
    kinds = [("source", "TensorSlice"), ("map", "map"), ("batch", "batch(32)")]
    return [
        StageStats(
            index=i,
            kind=kind,
            name=name,
            function="decode" if kind == "map" else None,
            uses_py_function=python and kind == "map",
            own_s_per_batch=0.02 if kind == "map" else 0.0001,
            batches_per_s=40.0,
            inputs=[i - 1] if i else [],
            training_speedup_if_free=if_free.get(i),
        )
        for i, (kind, name) in enumerate(kinds)
    ]


def _report(
    stages: list[StageStats],
    trials: list[FixTrial] | None = None,
    prescription: Prescription | None = None,
) -> Report:
    report = synthetic_report(steps=60, wait_s=0.02, compute_s=0.005)
    pipeline = dataclasses.replace(
        report.pipeline,
        measured=True,
        batches_per_s=40.0,
        stages=stages,
        trials=trials or [],
        prescription=prescription,
    )
    # a custom loop: the trial's ratio is the gain, with nothing fit adds around it
    train = dataclasses.replace(report.train, style="custom-loop")
    return dataclasses.replace(report, pipeline=pipeline, train=train)


def _vectorize_kept() -> PrescribedChange:
    """The vectorise rewrite, kept at 1.8x (1.6-2.0x) on training."""
    return PrescribedChange(
        "vectorize",
        1,
        "map(decode)",
        training_speedup=1.8,
        training_speedup_low=1.6,
        training_speedup_high=2.0,
        kept=True,
    )


def _two_kept() -> Prescription:
    return Prescription(
        tried=[
            _vectorize_kept(),
            PrescribedChange(
                "prefetch-end",
                2,
                "batch(32)",
                training_speedup=1.01,
                training_speedup_low=0.98,
                training_speedup_high=1.04,
                reason=Reason("under-worth-it", limit=1.05),
                after=["vectorize"],
            ),
            PrescribedChange(
                "cache",
                0,
                "source",
                training_speedup=1.4,
                training_speedup_low=1.3,
                training_speedup_high=1.5,
                kept=True,
                after=["vectorize"],
            ),
        ],
        training_speedup=2.5,
        training_speedup_low=2.3,
        training_speedup_high=2.7,
        baseline_steps_per_s=40.0,
        variant_steps_per_s=100.0,
        code=[
            CodeLine("ds = tf.data.Dataset.from_tensor_slices(x)", "train.py:10"),
            CodeLine("ds = ds.cache()", change="cache", semantics=["cache"]),
            CodeLine("ds = ds.batch(32)", "train.py:12"),
            CodeLine("ds = ds.map(decode)", "train.py:11", change="vectorize"),
        ],
    )


def test_two_kept_rewrites_make_one_fix_ranked_by_their_gain_together() -> None:
    report = _report(_stages({2: 3.0}), prescription=_two_kept())
    suggestions = worded_advice(report)
    top = suggestions[0]
    assert top.id.startswith("PD016")
    assert top.gain == Gain("training", 2.5, [2.3, 2.7])
    assert "on your training 2.50x (2.30-2.70x)" in suggestion_line(top.suggestion, report)
    assert "ds = ds.cache()" in top.code and top.code.count("\n") == 3
    # what changes besides the speed is named after the evidence, in the renderer's words
    said = (
        "What changes besides the speed: a cache: the elements are read once and kept in "
        "memory; randomness before it is frozen."
    )
    assert changes_besides_speed(report, top) == said
    advised = dataclasses.replace(report, suggestions=suggestions)
    assert f"{top.evidence} {said}" in " ".join(render_text(advised).split())
    assert "40.0 -> 100.0 steps/s" in top.evidence
    # and the text shows every rewrite tried, kept or not, and the total
    lines = rewrites_lines(report)
    assert lines[0].startswith("vectorise: map after the batch at map(decode): 1.80x")
    assert "not kept (under the worth-it 1.05x)" in lines[1]
    assert "on top of the kept ones" in lines[1]
    assert lines[-1] == (
        "pipeline pipediag would write: the 2 kept rewrites together, training "
        "2.50x (2.30-2.70x) over yours"
    )
    assert "Rewrites" in render_text(report)


# What each change in what the pipeline yields read as, word for word, in schema-8 reports.
ELEMENT_ORDER = "element order: the map now runs before the shuffle"
CACHE = "a cache: the elements are read once and kept in memory; randomness before it is frozen"
SENTENCES: dict[SemanticsChange, str] = {
    "element-order": ELEMENT_ORDER,
    "batched": "the function is applied to whole batches",
    "vectorized-map": "the function runs once per batch through tf.vectorized_map: each "
    "element's result is unchanged (to float rounding)",
    "cache": CACHE,
    "materialised": "the generator is read once and its elements kept in memory: every epoch "
    "yields the first epoch's elements, and randomness in the generator is frozen",
}


def test_each_change_in_what_the_pipeline_yields_reads_as_before() -> None:
    assert set(SENTENCES) == set(get_args(SemanticsChange))
    assert SEMANTICS_WORDS == SENTENCES


def test_a_schema_8_report_s_sentences_load_as_codes_and_render_as_before() -> None:
    # GIVEN a report whose kept rewrites change the data (a hoist-cache: two changes)
    prescription = _two_kept()
    hoisted = CodeLine(
        "ds = ds.cache()", change="hoist-cache", semantics=["element-order", "cache"]
    )
    prescription = dataclasses.replace(prescription, code=[*prescription.code, hoisted])
    trial = FixTrial("cache", 1, "map(decode)", facts=TrialFacts(semantics=["cache"]))
    report = _report(_stages({2: 3.0}), [trial], prescription)
    report = dataclasses.replace(report, suggestions=advise(report))
    # ... stored as schema 8 stored it: sentences, and the PD016 evidence saying them
    data = io.to_dict(report)
    data["schema_version"] = 8
    for stored, said in zip(data["suggestions"], worded(report.suggestions, report), strict=True):
        del stored["outcome"], stored["as_written"]
        stored.update(title=said.title, evidence=said.evidence)
    data["pipeline"]["trials"][0]["facts"]["semantics"] = CACHE
    for line in data["pipeline"]["prescription"]["code"]:
        line["semantics"] = "; ".join(SENTENCES[code] for code in line["semantics"]) or None
    (rewritten,) = [s for s in data["suggestions"] if s["id"].startswith("PD016")]
    rewritten["evidence"] += " " + changes_besides_speed(report, report.suggestions[0])
    assert f"{ELEMENT_ORDER}; {CACHE}" in rewritten["evidence"]
    # WHEN it is read
    loaded = io.from_dict(data)
    # THEN it holds the codes, and its text is the same, the changes said once
    assert dataclasses.replace(loaded, suggestions=[]) == dataclasses.replace(
        report, suggestions=[]
    )
    assert render_text(loaded) == render_text(report)


def test_a_sentence_pipediag_never_wrote_is_dropped() -> None:
    report = _report(_stages(), [FixTrial("cache", 1, "map(decode)")])
    data = io.to_dict(report)
    data["schema_version"] = 8
    data["pipeline"]["trials"][0]["facts"]["semantics"] = "edited by hand"
    assert io.from_dict(data).pipeline.trials[0].facts.semantics == []


def test_the_rewritten_pipeline_s_gain_is_the_figure_its_line_shows_epoch_starts_included() -> None:
    # GIVEN the kept rewrites together at 2.5x on the steps, the user's pipeline taking
    # 0.5 s more than the rewritten one to start each pass of 100 steps
    together = dataclasses.replace(_two_kept(), baseline_start_s=0.5, variant_start_s=0.0)
    report = _report(_stages({2: 3.0}), prescription=together)
    report = dataclasses.replace(
        report, pipeline=dataclasses.replace(report.pipeline, pass_batches=100)
    )
    report = with_prescription_in_run_terms(report)
    shown = report.pipeline.prescription
    assert shown is not None and shown.on_training is not None
    # THEN the advice's gain is the prescription's figure in the run's terms, the starts
    # included, not the steps' 2.5x
    (top,) = [s for s in worded_advice(report) if s.id.startswith("PD016")]
    assert top.gain.speedup == pytest.approx(shown.on_training)
    assert top.gain.speedup is not None and top.gain.speedup > 2.6


def test_a_vectorise_through_vectorized_map_says_so_in_the_rewrites() -> None:
    # GIVEN the vectorise trial ran the function through tf.vectorized_map
    trial = FixTrial("vectorize", 1, "map(decode)", facts=TrialFacts(vectorized_map=True))
    report = _report(_stages(), trials=[trial], prescription=_two_kept())

    lines = rewrites_lines(report)

    assert lines[0].startswith(
        "vectorise: map after the batch, with tf.vectorized_map at map(decode): 1.80x"
    )
    assert "vectorized_map" not in lines[2]  # the cache, on the same pipeline


def test_a_single_kept_rewrite_is_left_to_its_own_rule() -> None:
    one = Prescription(
        tried=[_vectorize_kept()],
        training_speedup=1.8,
    )
    suggestions = worded_advice(_report(_stages(), prescription=one))
    assert not any(s.id.startswith("PD016") for s in suggestions)


def test_a_rewrite_measured_on_training_that_no_rule_speaks_for_is_suggested() -> None:
    # GIVEN a fused-map trial (no stage rule words it) that gained 1.3x on training
    trial = FixTrial(
        fix="map-fusion",
        stage_index=1,
        stage="map(decode)",
        verified=True,
        speedup=1.2,
        training=GainOnTraining(
            baseline_steps_per_s=40.0,
            variant_steps_per_s=52.0,
            training_speedup=1.3,
            training_speedup_low=1.2,
            training_speedup_high=1.4,
            rounds=5,
            after=["vectorize"],
        ),
    )
    suggestions = worded_advice(_report(_stages(), trials=[trial]))
    (measured,) = [s for s in suggestions if s.id.startswith("PD017")]
    assert measured.gain.on("training") == 1.3 and measured.fix == "map-fusion"
    assert "(on top of vectorise: map after the batch)" in measured.title
    assert "40.0 -> 52.0 steps/s" in measured.evidence
    # one whose interval reaches 1 is not suggested
    assert trial.training is not None
    unclear = dataclasses.replace(
        trial, training=dataclasses.replace(trial.training, training_speedup_low=0.97)
    )
    assert not any(
        s.id.startswith("PD017") for s in worded_advice(_report(_stages(), trials=[unclear]))
    )


def test_a_stage_whose_cost_to_training_is_small_gets_no_stage_fix() -> None:
    # GIVEN the sequential map adds most of the time per batch alone, but holding the
    # batch after it in memory gained training only 1.02x
    suggestions = worded_advice(_report(_stages({2: 1.02})))
    assert not any(s.id.startswith("PD001") for s in suggestions)
    # while without that measurement the rule speaks as before
    assert any(s.id.startswith("PD001") for s in worded_advice(_report(_stages())))


def test_porting_python_carries_its_stage_bound_and_the_best_fix_shows_it() -> None:
    report = _report(_stages({1: 4.5, 2: 4.6}, python=True))
    report = dataclasses.replace(report, suggestions=advise(report))
    (port,) = [s for s in worded(report.suggestions, report) if s.id.startswith("PD007")]
    assert port.gain == Gain("held", 4.5)
    assert "the most this change can gain" in port.evidence
    fixes_only = dataclasses.replace(
        report, suggestions=[s for s in report.suggestions if s.id.startswith("PD007")]
    )
    assert best_fix_figure(fixes_only) == ("Best fix (at most)", "\N{LESS-THAN OR EQUAL TO}4.50x")
    # with no stage's hold usable, the input cost bounds it: 75% costs at most 4x
    unheld = _report(_stages(python=True))
    unheld = dataclasses.replace(
        unheld, verdict=dataclasses.replace(unheld.verdict, input_cost_fraction=0.75)
    )
    (port,) = [s for s in worded_advice(unheld) if s.id.startswith("PD007")]
    assert port.gain == Gain("input-free", 4.0)
    assert "With input free, your training would run 4.00x faster" in port.evidence


def test_with_every_rewrite_tried_and_none_kept_the_note_says_so() -> None:
    tried = Prescription(
        tried=[
            PrescribedChange(
                "prefetch-end",
                2,
                "batch(32)",
                training_speedup=1.01,
                training_speedup_low=0.98,
                training_speedup_high=1.04,
                reason="under",
            ),
            PrescribedChange(
                "thread-cap",
                None,
                "options",
                training_speedup=0.97,
                training_speedup_low=0.95,
                training_speedup_high=0.99,
                reason="under",
            ),
        ],
        reason=Reason("no-rewrite-helped"),
    )
    # (the stage's own cost is too small for a stage rule: 0.1 ms a batch everywhere)
    stages = [dataclasses.replace(s, own_s_per_batch=0.0001) for s in _stages()]
    report = _report(stages, prescription=tried)
    report = dataclasses.replace(
        report, verdict=dataclasses.replace(report.verdict, input_cost_fraction=0.5)
    )
    suggestions = worded_advice(report)
    (note,) = [s for s in suggestions if s.id.startswith("PD014")]
    assert "tried on your training" in note.evidence
    assert "prefetch at the end (AUTOTUNE) at batch(32) 1.01x" in note.evidence


def test_a_stage_fix_under_a_kept_cache_is_a_note_without_a_forecast() -> None:
    # GIVEN the sequential map's parallel-map rewrite was not tried: a cache kept before it
    # serves that stage from memory after the first epoch
    reason = Reason("covered-by-cache", detail="map(decode)")
    covered = FixTrial(
        "parallel-map",
        1,
        "map(decode)",
        training_reason=reason,
        facts=TrialFacts(covered_by_cache=True),
    )
    report = _report(_stages(), trials=[covered])
    suggestions = worded_advice(report)
    (rule,) = [s for s in suggestions if s.id.startswith("PD001")]
    # THEN the rule says so, as a note: no pipeline-alone forecast ranks it
    assert rule.kind == "note" and rule.estimate is None
    assert "not needed under the kept cache" in rule.title
    assert rule.not_on_training == reason
    assert (
        "Not tried on training: the kept cache after map(decode) serves it from memory after "
        "the first epoch"
        in " ".join(render_text(dataclasses.replace(report, suggestions=suggestions)).split())
    )
    # while the same rule, not covered, is a fix with its forecast
    (plain,) = [s for s in worded_advice(_report(_stages())) if s.id.startswith("PD001")]
    assert plain.kind == "fix" and plain.estimate is not None
