"""The JSON report is the contract: it round-trips, and bad files fail with one clear line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from synthetic_reports import synthetic_cost_report, synthetic_report
from worded import worded, worded_advice

from pipediag.analysis.advisor import advise
from pipediag.analysis.enrich import enrich_report
from pipediag.analysis.pipeline_code import rewritten_chain
from pipediag.errors import ReportError
from pipediag.renderers.no_verdict_words import NOT_ENOUGH_MEASURED
from pipediag.renderers.text import render_text
from pipediag.renderers.verdict_words import NO_VERDICT, headline, verdict_title
from pipediag.report.io import dumps, from_dict, load_report, save_report, to_dict
from pipediag.report.model import (
    SCHEMA_VERSION,
    DataPass,
    Gain,
    PhaseVerdict,
    PipelineOptions,
    Report,
    StepRecord,
    TrainSection,
)
from pipediag.report.prescription import GainOnTraining
from pipediag.report.reasons import Reason
from pipediag.report.stages import AUTOTUNE, UNBOUNDED, StageSettings
from pipediag.report.trials import TrialFacts
from pipediag.report.vocabulary import StepLabel


@pytest.mark.parametrize("with_gpu", [False, True])
def test_round_trip(tmp_path: Path, with_gpu: bool) -> None:
    report = synthetic_report(steps=20, with_gpu=with_gpu)
    path = save_report(report, tmp_path / "out" / "report.json")
    assert load_report(path) == report
    assert load_report(path.parent) == report
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION


def test_a_vectorise_through_vectorized_map_round_trips(tmp_path: Path) -> None:
    import dataclasses

    from pipediag.report.trials import FixTrial

    facts = TrialFacts(
        sample_elements=64,
        vectorized_map=True,
        batch_refusal=Reason("fails-on-batch", detail="ValueError: Input must be a scalar"),
        element_unpacked=True,
    )
    report = synthetic_report(steps=5)
    trial = FixTrial("vectorize", 1, "map(decode)", verified=True, speedup=1.7, facts=facts)
    unsafe = FixTrial(
        "vectorize",
        2,
        "map(parse)",
        reason=Reason("unsafe-keep-map", because=Reason("not-elementwise", "values differ", 64)),
        unsafe=True,
    )
    report = dataclasses.replace(
        report, pipeline=dataclasses.replace(report.pipeline, trials=[trial, unsafe])
    )
    path = save_report(report, tmp_path / "report.json")
    assert load_report(path) == report
    # a version-6 report's words are kept as written
    old = to_dict(report)
    old["pipeline"]["trials"][0]["facts"]["batch_refusal"] = "the function fails on a batch"
    old["pipeline"]["trials"][1]["reason"] = "unsafe: it is not elementwise"
    trials = from_dict(old).pipeline.trials
    assert trials[0].facts.batch_refusal == Reason("as-written", "the function fails on a batch")
    assert trials[1].reason == Reason("as-written", "unsafe: it is not elementwise")
    # and a report from before these fields reads them as the plain form
    data = to_dict(report)
    for key in ("vectorized_map", "batch_refusal", "element_unpacked"):
        del data["pipeline"]["trials"][0]["facts"][key]
    assert from_dict(data).pipeline.trials[0].facts == TrialFacts(sample_elements=64)


def test_missing_optional_fields_get_defaults_and_unknown_ones_are_ignored() -> None:
    data = {"script": "t.py", "schema_version": SCHEMA_VERSION, "added_later": 1}
    data["train"] = {
        "steps": [
            {"index": 0, "start_s": 0, "duration_s": 1, "input_wait_s": None, "label": "warmup"}
        ]
    }
    report = from_dict(data)
    assert report.train.steps[0].duration_s == 1.0
    assert report.verdict.label == "unknown"


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    data = to_dict(Report(script="t.py"))
    data["schema_version"] = SCHEMA_VERSION + 1
    (tmp_path / "report.json").write_text(json.dumps(data))
    with pytest.raises(ReportError, match="newer than this pipediag reads"):
        load_report(tmp_path / "report.json")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "not a pipediag report"),
        ('{"script": "t.py"}', "schema_version"),
    ],
)
def test_corrupt_reports_are_refused(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "report.json").write_text(text)
    with pytest.raises(ReportError, match=message):
        load_report(tmp_path)


def test_missing_report_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="pipediag run"):
        load_report(tmp_path / "nothing.json")


def test_save_leaves_no_temporary_files(tmp_path: Path) -> None:
    save_report(synthetic_report(steps=3), tmp_path / "report.json")
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_text_summary_leads_with_the_verdict() -> None:
    text = render_text(synthetic_report(steps=10, wait_s=0.03, compute_s=0.01))
    first = text.splitlines()[0]
    assert first.startswith("INPUT-BOUND: 75% of step time")
    assert "no GPU found: NVML found no GPU" in text
    assert "Pipeline alone  33.3 batches/s" in text
    assert ", 0.4 cores busy" in text  # 0.4 x 30 ms of CPU per batch, 33.3 batches/s


def test_text_summary_of_an_empty_report() -> None:
    text = render_text(Report(script="t.py"))
    assert text.startswith("NO VERDICT")
    assert "not measured" in text


def test_a_version_1_report_reads_with_its_findings_as_typed_fields() -> None:
    # GIVEN a version-1 report: pipediag's findings as "true" strings in settings and details
    data = to_dict(synthetic_report())
    data["schema_version"] = 1
    data["pipeline"]["stages"] = [
        {
            "index": 0,
            "kind": "map",
            "settings": {
                "tf_internal": "true",
                "random": "true",
                "py_function": "true",
                "stateful": "true",
                "stateful_ops": "PyFunc,RandomUniform",
                "deterministic": "true",
            },
        }
    ]
    data["pipeline"]["trials"] = [
        {"fix": "vectorize", "details": {"unsafe": "true", "sample_elements": "64"}},
        {"fix": "cache", "details": {"fits": "false"}},
    ]
    # WHEN read
    report = from_dict(data)
    # THEN the findings are typed fields, the op's own settings stay, and it saves as current
    (stage,) = report.pipeline.stages
    assert stage.tf_internal and stage.random
    assert stage.stateful_ops == ["PyFunc", "RandomUniform"]
    assert stage.settings == StageSettings(deterministic=True)
    vectorize, cache = report.pipeline.trials
    assert vectorize.unsafe and vectorize.facts == TrialFacts(sample_elements=64)
    assert cache.fits_in_memory is False and not cache.unsafe
    assert report.schema_version == SCHEMA_VERSION
    assert from_dict(to_dict(report)) == report


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RECORDED = sorted([*FIXTURES.glob("reports/*.json"), *FIXTURES.glob("compare/*.json")])


def test_every_fixture_is_recorded_in_an_older_schema() -> None:
    # The converter is what reads them: were one saved as current, it would test nothing.
    assert RECORDED
    for path in RECORDED:
        assert json.loads(path.read_text())["schema_version"] < SCHEMA_VERSION, path.name


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_recorded_fixture_converts_to_the_current_schema_and_round_trips(
    path: Path,
) -> None:
    # GIVEN a report recorded by an older pipediag
    data = json.loads(path.read_text())
    # WHEN read
    report = from_dict(data)
    # THEN it is the current schema, its stages and trials keep no finding as a string,
    # and saved and read back it is the same report
    assert report.schema_version == SCHEMA_VERSION
    stages = [*report.pipeline.stages, *(report.scale_out.stages if report.scale_out else [])]
    for stage in stages:
        settings = dataclasses.asdict(stage.settings).items()
        assert all(v is None or isinstance(v, int) for k, v in settings if k != "filename")
    options = report.pipeline.options
    assert options is None or all(not isinstance(v, str) for v in vars(options).values())
    old_trials = data.get("pipeline", {}).get("trials", [])
    for old, trial in zip(old_trials, report.pipeline.trials, strict=True):
        details = old.get("details", {})
        assert trial.facts.stopped == details.get("stopped", "")
        if "speedup_low" in details:
            assert trial.facts.speedup_low == float(details["speedup_low"])
    assert from_dict(json.loads(dumps(report))) == report
    assert json.loads(dumps(report))["schema_version"] == SCHEMA_VERSION


def test_a_version_2_report_reads_its_stage_and_trial_strings_as_typed_fields() -> None:
    # GIVEN a version-2 report: pipediag's decisions and a trial's numbers as strings
    data = to_dict(synthetic_report())
    data["schema_version"] = 2
    data["pipeline"]["stages"] = [
        {
            "index": 0,
            "kind": "map",
            "settings": {"auto_parallel": "no: autotune off", "not_measured": "out of time"},
        },
        {
            "index": 1,
            "kind": "map",
            "settings": {"auto_parallel": "yes", "graph": "unavailable: E"},
        },
    ]
    data["pipeline"]["trials"] = [
        {
            "fix": "cache",
            "details": {
                "stopped": "clear gain",
                "speedup_low": "1.23",
                "cache_bytes": "4000",
                "elements": "infinite",
                "fill_s": "0.5",
            },
        }
    ]
    # WHEN read
    report = from_dict(data)
    # THEN each is a typed field with its value, and the settings keep only tf.data's own
    first, second = report.pipeline.stages
    assert (first.auto_parallel, first.auto_parallel_blocker) == (False, "autotune off")
    assert first.not_measured == Reason("as-written", detail="out of time")
    assert first.settings == StageSettings()
    assert (second.auto_parallel, second.auto_parallel_blocker) == (True, None)
    assert second.graph_error == "E"
    (trial,) = report.pipeline.trials
    assert trial.facts == TrialFacts(
        stopped="clear gain", speedup_low=1.23, cache_bytes=4000, elements=None, fill_s=0.5
    )


def test_a_version_2_verdict_loses_its_headline_text_and_keeps_its_figures() -> None:
    # GIVEN a version-2 verdict with input cost and the headline it stored as text
    data = to_dict(synthetic_cost_report())
    data["schema_version"] = 2
    data["verdict"]["headline"] = "INPUT-BOUND: input costs 44% of training time, mostly waiting"
    # WHEN read
    report = from_dict(data)
    # THEN the text is gone (the summary layer words it) and every figure is as it was
    assert "headline" not in to_dict(report)["verdict"]
    assert report.verdict == synthetic_cost_report().verdict


@pytest.mark.parametrize(
    ("label", "fraction", "words"),
    [
        ("input-bound", 0.71, "71% of step time spent waiting for input"),
        ("compute-bound", 0.02, "only 2% of step time spent waiting for input"),
        ("balanced", None, "input pipeline and model both limit training"),
        ("unknown", None, NOT_ENOUGH_MEASURED),
    ],
)
def test_a_version_2_verdict_without_input_cost_is_worded_from_its_wait_share(
    label: str, fraction: float | None, words: str
) -> None:
    # GIVEN a verdict from before input cost and summaries: a label and a wait share only
    data = to_dict(Report(script="t.py"))
    data["schema_version"] = 2
    data["verdict"] = {"label": label, "input_wait_fraction": fraction, "summary": ""}
    # WHEN read  THEN no prose is kept, and the headline says the wait share in plain words
    # after the title (nothing measured when unknown)
    report = from_dict(data)
    assert "summary" not in to_dict(report)["verdict"]
    assert report.verdict.no_verdict_because == ""
    assert headline(report).text == f"{verdict_title(label)}: {words}"


def test_a_version_4_verdict_loses_its_summary_and_keeps_the_pairs_it_named() -> None:
    # GIVEN a version-4 verdict whose summary named the alternation's pairs in words
    current = synthetic_cost_report()
    data = to_dict(current)
    data["schema_version"] = 4
    del data["verdict"]["alternation_pairs"], data["verdict"]["no_verdict_because"]
    data["verdict"]["summary"] = (
        "Input costs 44% of training time (90% interval 40-48%; waiting 4%, contention 40%, "
        "per-pull overhead 0%): training ran 25.0 steps/s against 44.6 for the train step "
        "alone (in alternation, 6 pairs); the pipeline alone delivers 33.3 batches/s."
    )
    # WHEN read
    report = from_dict(data)
    # THEN the prose is gone, the pairs are a field, and every other figure is as it was
    assert "summary" not in to_dict(report)["verdict"]
    assert report.verdict.alternation_pairs == 6
    assert report.verdict == dataclasses.replace(current.verdict, alternation_pairs=6)


def _train(*labels: StepLabel, skipped: bool = False) -> dict[str, object]:
    """A version-4 train section of steps with these labels (warm-up steps first)."""
    steps = [StepRecord(i, 0.1 * i, 0.1, None, label) for i, label in enumerate(labels)]
    passes = [DataPass(10, "no-train-step", passes=2)] if skipped else []
    train = TrainSection(
        steps=steps,
        measured_steps=sum(label != "warmup" for label in labels),
        warmup_steps=sum(label == "warmup" for label in labels),
        skipped_passes=passes,
    )
    return to_dict(Report(script="t.py", train=train))["train"]


@pytest.mark.parametrize(
    ("train", "reason"),
    [
        (_train(skipped=True), "no-training"),
        (_train(), "no-steps"),
        (_train("warmup", "warmup"), "warmup-only"),
        (_train("warmup", "unknown", "unknown"), "wait-not-measured"),
        # steps a verdict could have read: the old report's reason is not one of these
        (_train("warmup", "input-bound", "compute-bound"), "unknown"),
    ],
)
def test_a_version_4_report_without_a_verdict_gets_the_code_its_train_section_tells(
    train: dict[str, object], reason: str
) -> None:
    # GIVEN a version-4 report with no verdict, and the sentence that said why
    data = to_dict(Report(script="t.py"))
    data["schema_version"] = 4
    data["train"] = train
    data["verdict"] = {"label": "unknown", "summary": "No training steps were seen: ..."}
    # WHEN read  THEN the sentence is gone and the code says why
    report = from_dict(data)
    assert "summary" not in to_dict(report)["verdict"]
    assert report.verdict.no_verdict_because == reason


def test_a_version_4_report_with_a_malformed_train_section_fails_as_malformed() -> None:
    data = to_dict(Report(script="t.py"))
    data["schema_version"] = 4
    data["train"] = {"steps": [7]}
    data["verdict"] = {"label": "unknown", "summary": "No training steps were seen: ..."}
    with pytest.raises(ReportError, match="malformed pipediag report"):
        from_dict(data)


def test_a_version_4_report_never_judged_gets_no_reason() -> None:
    # a report's default verdict, with no summary: nothing said, nothing made up
    data = to_dict(Report(script="t.py"))
    data["schema_version"] = 4
    data["verdict"] = {"label": "unknown", "summary": ""}
    report = from_dict(data)
    assert report.verdict.no_verdict_because == ""
    assert headline(report).text == f"{NO_VERDICT}: {NOT_ENOUGH_MEASURED}"


def test_a_version_3_report_with_an_unexplained_part_reads_with_its_cost_as_measured() -> None:
    # GIVEN a version-3 report whose cost a model of cores capped, with the rest of the gap
    # recorded as `unexplained`
    data = to_dict(synthetic_cost_report())
    data["schema_version"] = 3
    data["verdict"]["cost_split"]["unexplained"] = 0.25
    del data["verdict"]["input_cost_interval"]
    for key in ("contention_kind", "epoch_start", "epoch_start_s", "epoch_steps"):
        del data["verdict"]["cost_split"][key]
    # WHEN read
    report = from_dict(data)
    # THEN it is a version-4 report: the part has no field, the cost stands as it was, and
    # nothing claims an interval or an epoch-start part it never measured
    assert report.schema_version == SCHEMA_VERSION
    split = report.verdict.cost_split
    assert split is not None and not hasattr(split, "unexplained")
    assert "unexplained" not in to_dict(report)["verdict"]["cost_split"]
    assert report.verdict.input_cost_fraction == synthetic_cost_report().verdict.input_cost_fraction
    assert report.verdict.input_cost_interval is None
    assert (split.epoch_start, split.epoch_start_s, split.contention_kind) == (0.0, None, "")


@pytest.mark.parametrize(
    ("old", "gain", "estimate"),
    [
        # measured on training: that gain and its interval, whatever else was kept
        (
            {"training_speedup": 1.3, "training_interval": [1.2, 1.4], "verified_speedup": 1.6},
            {"basis": "training", "speedup": 1.3, "interval": [1.2, 1.4]},
            1.6,
        ),
        # a stage held on training: its bound
        ({"bound_speedup": 2.1, "predicted_speedup": 2.1}, {"basis": "held", "speedup": 2.1}, 2.1),
        # the pipeline alone; the prediction from it orders the fix
        (
            {"verified_speedup": 1.6, "predicted_speedup": 1.2, "estimated_speedup": 1.9},
            {"basis": "pipeline-alone", "speedup": 1.6},
            1.2,
        ),
        # an estimate alone is no gain
        ({"estimated_speedup": 1.9}, {"basis": "not-measured"}, 1.9),
    ],
)
def test_a_version_5_suggestion_keeps_one_gain_and_one_estimate(
    old: dict[str, object], gain: dict[str, object], estimate: float
) -> None:
    data = to_dict(synthetic_report())
    data["schema_version"] = 5
    data["suggestions"] = [{"id": "PD001-sequential-map", "title": "parallelise", **old}]

    (suggestion,) = from_dict(data).suggestions

    expected = Gain(
        gain["basis"],  # type: ignore[arg-type]
        gain.get("speedup"),  # type: ignore[arg-type]
        gain.get("interval"),  # type: ignore[arg-type]
    )
    assert suggestion.gain == expected
    assert suggestion.estimate == estimate


def test_a_report_with_the_host_and_gpu_findings_in_words_reads_their_facts() -> None:
    # GIVEN a report written when the host's contention and the GPU's idle time were stored
    # as sentences (up to this schema): the contention's finding was written only where it
    # bore on the verdict, and named the samples it was read over
    report = enrich_report(synthetic_report(300, with_gpu=True))
    data = to_dict(report)
    contention = dict(data["host_contention"], contended=True, other_cpu_pct_mean=40.0)
    for key in ("scope", "bears_on_verdict"):
        contention.pop(key)
    contention["finding"] = "Other processes took 40% of the host's CPU during the whole run."
    data["host_contention"] = contention
    data["gpu_analysis"] = dict(data["gpu_analysis"], finding="The GPU was busy.", advice=["x"])
    data["verdict"] = dict(data["verdict"], gpu_finding="The GPU was busy.")
    # WHEN read
    read = from_dict(data)
    # THEN the words are gone, the facts they held are fields, and the rest is as written
    assert read.host_contention is not None
    assert read.host_contention.bears_on_verdict
    assert read.host_contention.scope == "whole-run"
    assert read.gpu_analysis == report.gpu_analysis
    assert read.verdict == report.verdict
    assert "during the whole run: the input pipeline competes" in render_text(read)
    # AND an empty finding (the verdict made it not worth saying) bears on nothing
    contention["finding"] = ""
    quiet = from_dict(dict(data, host_contention=contention)).host_contention
    assert quiet is not None and not quiet.bears_on_verdict and quiet.scope == ""


def _version_7(options: dict[str, str], *stages: dict[str, Any]) -> dict[str, Any]:
    """A version-7 report: the pipeline's options and its stages' settings as strings, each
    stage reading the one before."""
    data = to_dict(synthetic_report())
    data["schema_version"] = 7
    chain = [dict(s, index=i, inputs=[i - 1] if i else []) for i, s in enumerate(stages)]
    data["pipeline"] = dict(data["pipeline"], options=options, stages=chain)
    return data


@pytest.mark.parametrize(
    ("name", "text", "value"),
    [
        ("autotune", "false", False),
        ("inject_prefetch", "true", True),
        ("map_fusion", "true", True),
        ("private_threadpool_size", "default (2 cores)", None),
        ("private_threadpool_size", "8", 8),
        ("max_intra_op_parallelism", "default", None),
        ("max_intra_op_parallelism", "1", 1),
        ("cpu_count", "2", 2),
    ],
)
def test_a_version_7_option_reads_as_its_typed_value(name: str, text: str, value: object) -> None:
    # GIVEN a version-7 report whose options were strings
    data = _version_7({name: text})
    # WHEN read
    options = from_dict(data).pipeline.options
    # THEN the option is typed, and those it did not name are TF's defaults
    assert options == dataclasses.replace(PipelineOptions(), **{name: value})


def test_version_7_options_never_read_stay_unread() -> None:
    assert from_dict(_version_7({})).pipeline.options is None


@pytest.mark.parametrize(
    ("name", "text", "value"),
    [
        ("num_parallel_calls", "AUTOTUNE", AUTOTUNE),
        ("num_parallel_calls", "3", 3),
        ("cycle_length", "AUTOTUNE", AUTOTUNE),
        ("block_length", "2", 2),
        ("buffer_size", "AUTOTUNE", AUTOTUNE),
        ("buffer_size", "1024", 1024),
        ("count", "unbounded", UNBOUNDED),
        ("count", "7", 7),
        ("start", "0", 0),
        ("batch_size", "32", 32),
        ("drop_remainder", "true", True),
        ("reshuffle_each_iteration", "false", False),
        ("deterministic", "false", False),
        ("deterministic", "default", None),
        ("seed2", "2147483647", 2**31 - 1),
        ("filename", "memory", ""),
        ("filename", "/tmp/cache", "/tmp/cache"),
    ],
)
def test_a_version_7_stage_setting_reads_as_its_typed_value(
    name: str, text: str, value: object
) -> None:
    # GIVEN a version-7 stage whose settings were strings
    data = _version_7({}, {"kind": "map", "settings": {name: text}})
    # WHEN read
    (stage,) = from_dict(data).pipeline.stages
    # THEN the setting is typed, and it saves and reads back as the same
    assert stage.settings == dataclasses.replace(StageSettings(), **{name: value})
    assert from_dict(json.loads(dumps(from_dict(data)))).pipeline.stages == [stage]


def test_version_7_scale_out_stages_read_their_settings_typed() -> None:
    data = _version_7({})
    stage = {
        "index": 0,
        "kind": "batch",
        "settings": {"batch_size": "8", "drop_remainder": "false"},
    }
    data["scale_out"] = {"checked": True, "stages": [stage]}

    scale_out = from_dict(data).scale_out

    assert scale_out is not None
    assert scale_out.stages[0].settings == StageSettings(batch_size=8, drop_remainder=False)


def test_a_version_7_pipeline_is_written_as_code_in_the_same_words() -> None:
    # GIVEN a version-7 pipeline whose settings were strings
    data = _version_7(
        {},
        {"kind": "source", "name": "RangeDataset", "settings": {"start": "0", "stop": "100"}},
        {
            "kind": "shuffle",
            "settings": {
                "buffer_size": "100",
                "seed": "7",
                "seed2": "3",
                "reshuffle_each_iteration": "false",
            },
        },
        {"kind": "parallel-map", "function": "f", "settings": {"num_parallel_calls": "AUTOTUNE"}},
        {"kind": "map", "function": "g", "settings": {"num_parallel_calls": "2"}},
        {"kind": "cache", "settings": {"filename": "memory"}},
        {"kind": "cache", "settings": {"filename": "/tmp/c"}},
        {"kind": "repeat", "settings": {"count": "unbounded"}},
        {"kind": "batch", "settings": {"batch_size": "32", "drop_remainder": "true"}},
        {"kind": "prefetch", "settings": {"buffer_size": "AUTOTUNE"}},
    )
    # WHEN read and written as code
    lines = rewritten_chain(from_dict(data).pipeline.stages, [])
    # THEN each line reads as it did when the settings were strings
    assert [line.text for line in lines] == [
        "ds = tf.data.Dataset.range(0, 100)",
        "ds = ds.shuffle(100, seed=3, reshuffle_each_iteration=False)",
        "ds = ds.map(f, num_parallel_calls=tf.data.AUTOTUNE)",
        "ds = ds.map(g, num_parallel_calls=2)",
        "ds = ds.cache()",
        "ds = ds.cache('/tmp/c')",
        "ds = ds.repeat()",
        "ds = ds.batch(32, drop_remainder=True)",
        "ds = ds.prefetch(tf.data.AUTOTUNE)",
    ]


def test_a_recorded_reports_settings_and_options_read_in_the_same_words() -> None:
    # GIVEN a recorded report whose sequential map is an AUTOTUNE interleave, and the same
    # without its final prefetch and with tf.data's injected prefetch turned off
    data = json.loads((FIXTURES / "reports" / "input_bound_fit.json").read_text())
    stages = data["pipeline"]["stages"]
    stages[2] = dict(
        stages[2],
        kind="parallel-interleave",
        name="ParallelInterleaveDatasetV4",
        settings={"cycle_length": "AUTOTUNE", "num_parallel_calls": "AUTOTUNE"},
    )
    no_prefetch = json.loads((FIXTURES / "reports" / "input_bound_fit.json").read_text())
    no_prefetch["pipeline"]["stages"].pop()
    no_prefetch["pipeline"]["options"]["inject_prefetch"] = "false"
    # WHEN advised
    interleave = next(
        s for s in worded_advice(from_dict(data)) if s.id == "PD002-sequential-interleave"
    )
    prefetch = next(s for s in worded_advice(from_dict(no_prefetch)) if s.id == "PD003-no-prefetch")
    # THEN the evidence words the settings and options as they were written
    assert "(cycle_length=AUTOTUNE, num_parallel_calls=AUTOTUNE);" in interleave.evidence
    assert "(inject_prefetch=false, autotune=true)" in prefetch.evidence


def test_a_schema_8_note_that_the_step_alone_blocks_were_slowed_is_left_to_the_renderers() -> None:
    # GIVEN a report written while the analysis worded this as a note; the renderers now say it
    # in the input cost's row, from the blocks and the holds
    data = to_dict(synthetic_report())
    worded = (
        "the train step on the whole pipeline held in memory ran 639.7 steps/s, faster than any "
        "step-alone block (399.7): the pipeline's own work slowed those blocks, so the input "
        "cost read from them is a lower bound"
    )
    data["notes"] = ["a note of the session's own", worded]
    data["schema_version"] = 8
    # WHEN it is read, THEN only that note goes: the words would otherwise be said twice
    assert from_dict(data).notes == [Reason("as-written", detail="a note of the session's own")]


def test_a_schema_8_reports_notes_load_as_written_and_read_as_before() -> None:
    # GIVEN a report of schema 8, whose notes were words
    data = to_dict(synthetic_report())
    data["schema_version"] = 8
    data["notes"] = [
        "step budget reached (5 warm-up + 100 measured steps): the rest of the run was not "
        "recorded",
        "the script trains both with keras-fit and custom-loop",
    ]
    # WHEN it is read
    report = from_dict(data)
    # THEN each note is kept as written, and the text says it as it did
    assert report.notes == [Reason("as-written", detail=n) for n in data["notes"]]
    text = render_text(report)
    assert all(f"note: {n}" in text for n in data["notes"])
    # ... and written again, it reads back the same
    assert from_dict(to_dict(report)) == report


def test_a_schema_9_reports_suggestion_words_load_as_written_and_read_as_before() -> None:
    # GIVEN a report of schema 9, whose suggestions stored their words
    report = synthetic_cost_report()
    report = dataclasses.replace(report, suggestions=advise(report))
    data = to_dict(report)
    data["schema_version"] = 9
    said = worded(report.suggestions, report)
    assert said
    for stored, words in zip(data["suggestions"], said, strict=True):
        del stored["outcome"], stored["as_written"]
        stored.update(title=words.title + " (as it was)", evidence=words.evidence)
    # WHEN it is read
    loaded = from_dict(data)
    # THEN each suggestion keeps its words as written, and the text shows them
    assert [s.as_written.title for s in loaded.suggestions if s.as_written] == [
        w.title + " (as it was)" for w in said
    ]
    assert all(f"{w.title} (as it was)" in render_text(loaded) for w in said)
    # ... and written again, it reads back the same
    assert from_dict(to_dict(loaded)) == loaded


def test_a_schema_9_phases_name_is_dropped_and_the_text_words_its_epochs() -> None:
    # GIVEN a schema-9 report whose phases stored their names beside their epochs
    report = synthetic_cost_report()
    phases = [PhaseVerdict(0, 0, 12, 8.4, 0.58, 0.66, "input-bound")]
    report = dataclasses.replace(report, verdict=dataclasses.replace(report.verdict, phases=phases))
    data = to_dict(report)
    data["schema_version"] = 9
    data["verdict"]["phases"][0]["name"] = "epoch 1"
    # WHEN it is read, THEN the phase is its facts, worded from its epochs as before
    loaded = from_dict(data)
    assert loaded.verdict.phases == phases
    assert "epoch 1: input-bound, input costs 66%" in render_text(loaded)


def test_a_schema_9_trials_figures_on_training_read_as_one_record() -> None:
    # GIVEN a schema-9 report: a trial's figures on training flat on it and on its facts,
    # and a trial not measured there (the search had kept a rewrite before it)
    data = to_dict(synthetic_report())
    data["schema_version"] = 9
    data["pipeline"]["trials"] = [
        {
            "fix": "cache",
            "training_baseline_steps_per_s": 20.0,
            "training_variant_steps_per_s": 30.0,
            "training_speedup": 1.5,
            "training_rounds": 6,
            "training_baseline_start_s": 0.4,
            "training_variant_start_s": 0.1,
            "facts": {
                "stopped": "clear gain",
                "training_stopped": "budget",
                "training_speedup_low": 1.4,
                "training_speedup_high": 1.6,
                "above_step_alone": True,
                "training_after": ["vectorize"],
            },
        },
        {"fix": "vectorize", "training_rounds": 0, "facts": {"training_after": ["cache"]}},
    ]
    # WHEN read
    tried, untried = from_dict(data).pipeline.trials
    # THEN the first's figures are its one record, and its facts keep their own
    assert tried.training == GainOnTraining(
        training_speedup=1.5,
        training_speedup_low=1.4,
        training_speedup_high=1.6,
        baseline_steps_per_s=20.0,
        variant_steps_per_s=30.0,
        baseline_start_s=0.4,
        variant_start_s=0.1,
        at_step_alone=True,
        rounds=6,
        stopped="budget",
        after=["vectorize"],
    )
    assert tried.facts == TrialFacts(stopped="clear gain")
    # the second has none
    assert untried.training is None and untried.facts == TrialFacts()


def test_a_suggestion_stores_its_facts_and_no_words() -> None:
    report = synthetic_cost_report()
    data = to_dict(dataclasses.replace(report, suggestions=advise(report)))
    assert data["suggestions"]
    for stored in data["suggestions"]:
        assert "title" not in stored and "evidence" not in stored
        assert stored["as_written"] is None


def test_the_observer_checks_own_blocks_round_trip_apart_from_the_rounds(tmp_path: Path) -> None:
    import dataclasses

    from pipediag.report.model import ComputeAlone, RateBlock

    rounds = [RateBlock("training", 1.0, 10, 0.2), RateBlock("step-alone", 1.2, 10, 0.1)]
    check = [RateBlock("quiet-training", 2.0, 10, 0.19), RateBlock("training", 2.2, 10, 0.2)]
    alone = ComputeAlone(measured=True, steps=10, blocks=rounds, observer_blocks=check)
    report = dataclasses.replace(synthetic_report(steps=5), compute_alone=alone)
    loaded = load_report(save_report(report, tmp_path / "report.json"))
    assert loaded.compute_alone is not None
    assert loaded.compute_alone.blocks == rounds
    assert loaded.compute_alone.observer_blocks == check
