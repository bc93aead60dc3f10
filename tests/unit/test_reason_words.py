"""Reasons are codes with parameters in the report, and words only in the one glossary."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

from pipediag.renderers.reason_words import WORDS, reason_words
from pipediag.renderers.text import render_text
from pipediag.report import io
from pipediag.report.model import SCHEMA_VERSION, ComputeAlone, PipelineBenchmark, Report
from pipediag.report.reasons import Reason, ReasonCode

CODES = typing.get_args(ReasonCode)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_every_code_is_listed_once_and_has_words() -> None:
    assert len(CODES) == len(set(CODES))
    assert set(WORDS) == set(CODES)


@pytest.mark.parametrize("code", CODES)
def test_every_code_words_its_parameters_in_one_line(code: str) -> None:
    reason = Reason(
        code,  # type: ignore[arg-type]
        detail="DETAIL",
        value=0.25,
        limit=0.2,
        because=Reason("no-batch-kept"),
    )
    words = reason_words(reason)
    assert words and "\n" not in words and "{" not in words
    assert "Reason(" not in words


def test_a_reason_behind_a_reason_is_worded_after_it_and_round_trips() -> None:
    because = Reason("no-cached-batch", because=Reason("no-batch-kept"))
    assert reason_words(because) == "no cached batch: no batch of the training dataset was kept"
    report = io.from_dict(io.to_dict(_report_with(ComputeAlone(measured=False, reason=because))))
    assert report.compute_alone is not None and report.compute_alone.reason == because


def test_a_code_this_pipediag_does_not_know_shows_as_stored() -> None:
    unknown = Reason("from-a-newer-pipediag", detail="")  # type: ignore[arg-type]
    assert reason_words(unknown) == "from-a-newer-pipediag"


def test_a_version_6_reports_words_are_kept_as_written_and_render_as_before() -> None:
    # GIVEN a recorded report whose reasons were words
    report = io.load_report(FIXTURES / "compare" / "compute_bound_loop_run1.json")
    words = (
        "input costs 2% of training (under 5%): no pipeline fix can gain more; --deep "
        "measures stages and fixes anyway"
    )
    # THEN each is kept as written, and the summary shows the same words
    assert report.pipeline.deep_skipped_reason == Reason("as-written", detail=words)
    assert f"not measured: {words}" in render_text(report)
    # AND saved again, it is the current schema, its reason a code
    again = io.to_dict(report)
    assert again["schema_version"] == SCHEMA_VERSION
    assert again["pipeline"]["deep_skipped_reason"] == {
        "code": "as-written",
        "detail": words,
        "value": None,
        "limit": None,
        "because": None,
    }


def test_the_same_fact_reads_the_same_in_new_reports() -> None:
    reason = Reason("deep-skipped", value=0.02, limit=0.05)
    assert reason_words(reason) == (
        "input costs 2% of training (under 5%): no pipeline fix can gain more; --deep "
        "measures stages and fixes anyway"
    )


def _report_with(alone: ComputeAlone) -> Report:
    from synthetic_reports import synthetic_report

    pipeline = PipelineBenchmark(measured=False, reason=Reason("no-batch-kept"))
    return dataclasses.replace(synthetic_report(), compute_alone=alone, pipeline=pipeline)


def test_a_reason_whose_cause_is_unknown_says_nothing_in_its_place() -> None:
    assert reason_words(Reason("pipeline-not-read")) == "the pipeline could not be read alone"
    assert reason_words(Reason("pipeline-not-read", because=Reason("no-batch-kept"))) == (
        "the pipeline could not be read alone (no batch of the training dataset was kept)"
    )
    assert reason_words(Reason("service-refused")) == "refused: no batch came back"
