"""The JSON report is the contract: it round-trips, and bad files fail with one clear line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipediag.errors import ReportError
from pipediag.renderers.text import render_text
from pipediag.report.io import dumps, from_dict, load_report, save_report, to_dict
from pipediag.report.model import (
    BALANCED,
    COMPUTE_BOUND,
    INPUT_BOUND,
    SCHEMA_VERSION,
    UNKNOWN,
    Report,
    TrialFacts,
)
from pipediag.testing import synthetic_cost_report, synthetic_report


@pytest.mark.parametrize("with_gpu", [False, True])
def test_round_trip(tmp_path: Path, with_gpu: bool) -> None:
    report = synthetic_report(steps=20, with_gpu=with_gpu)
    path = save_report(report, tmp_path / "out" / "report.json")
    assert load_report(path) == report
    assert load_report(path.parent) == report
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION


def test_a_vectorise_through_vectorized_map_round_trips(tmp_path: Path) -> None:
    import dataclasses

    from pipediag.report.model import FixTrial

    facts = TrialFacts(
        sample_elements=64,
        vectorized_map=True,
        batch_refusal="the function fails on a batch (ValueError: Input must be a scalar)",
        element_unpacked=True,
    )
    report = synthetic_report(steps=5)
    trial = FixTrial("vectorize", 1, "map(decode)", verified=True, speedup=1.7, facts=facts)
    report = dataclasses.replace(
        report, pipeline=dataclasses.replace(report.pipeline, trials=[trial])
    )
    path = save_report(report, tmp_path / "report.json")
    assert load_report(path) == report
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
    assert stage.settings == {"deterministic": "true"}
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
        assert not {"auto_parallel", "not_measured", "graph"} & stage.settings.keys()
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
    assert first.not_measured == "out of time" and first.settings == {}
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
    ("label", "fraction", "summary"),
    [
        (INPUT_BOUND, 0.71, "71% of step time spent waiting for input"),
        (COMPUTE_BOUND, 0.02, "only 2% of step time spent waiting for input"),
        (BALANCED, None, "input pipeline and model both limit training"),
        (UNKNOWN, None, ""),
    ],
)
def test_a_version_2_verdict_without_input_cost_or_summary_gets_its_wait_share_in_words(
    label: str, fraction: float | None, summary: str
) -> None:
    # GIVEN a verdict from before input cost and summaries: a label and a wait share only
    data = to_dict(Report(script="t.py"))
    data["schema_version"] = 2
    data["verdict"] = {"label": label, "input_wait_fraction": fraction, "summary": ""}
    # WHEN read  THEN its summary says the wait share in plain words (nothing when unknown)
    assert from_dict(data).verdict.summary == summary
    # and a current report's empty summary stays empty
    data["schema_version"] = SCHEMA_VERSION
    assert from_dict(data).verdict.summary == ""


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
