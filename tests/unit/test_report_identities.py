"""The figures of the README's kept real run agree with each other
(tests/report_identities.py; every report a test writes is checked in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

from report_identities import identity_problems

from pipediag.report.io import load_report

KEPT = Path(__file__).resolve().parent.parent.parent / "docs" / "examples" / "input_bound_fit.json"


def test_the_kept_quickstart_run_agrees_with_itself() -> None:
    report = load_report(KEPT)
    assert report.compute_alone is not None and report.compute_alone.blocks
    assert identity_problems(report) == []
