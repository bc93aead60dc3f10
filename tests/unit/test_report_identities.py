"""The figures of every recorded report agree with each other: the README's kept real run
and the renderers' fixtures (tests/report_identities.py; every report a test writes is
checked in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_identities import identity_problems

from pipediag.report.io import load_report

ROOT = Path(__file__).resolve().parent.parent.parent
KEPT = ROOT / "docs" / "examples" / "input_bound_fit.json"
RECORDED = sorted((ROOT / "tests" / "fixtures" / "reports").glob("*.json"))


def test_the_kept_quickstart_run_agrees_with_itself() -> None:
    report = load_report(KEPT)
    assert report.compute_alone is not None and report.compute_alone.blocks
    assert identity_problems(report) == []


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_each_recorded_report_agrees_with_itself(path: Path) -> None:
    assert identity_problems(load_report(path)) == []
