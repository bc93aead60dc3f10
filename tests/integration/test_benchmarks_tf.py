"""The benchmarks' case suite and their child processes.

Nothing here runs a benchmark by default. Importing a case imports TensorFlow (a few seconds,
once); the tests that train are marked slow and run only with PIPEDIAG_SLOW=1, so the default
suite stays quick without any pytest options.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks import _common as common  # noqa: E402
from benchmarks import _input_cost as cost  # noqa: E402

SLOW = pytest.mark.skipif(
    os.environ.get("PIPEDIAG_SLOW") != "1", reason="slow: set PIPEDIAG_SLOW=1 to run"
)
KNOWN_STYLES = {"keras-fit", "custom-loop"}
KNOWN_VERDICTS = {common.INPUT_BOUND, common.BALANCED, common.COMPUTE_BOUND}
# The issue asks for at least 10 cases, with both training styles represented.
MIN_CASES = 10


def test_a_child_past_its_time_limit_is_killed_and_counted_as_failed() -> None:
    proc, wall_s = common.run_child(
        [sys.executable, "-c", "import time; time.sleep(30)"], timeout_s=0.5
    )
    assert proc.returncode == common.TIMED_OUT
    assert "timed out after 0.5 s" in proc.stderr
    assert wall_s < 10


# --- the case suite -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cases() -> list[common.CaseInfo]:
    pytest.importorskip("tensorflow")
    return [common.case_info(common.load_case(name)) for name in common.case_names()]


def test_suite_size_and_coverage(cases: list[common.CaseInfo]) -> None:
    assert len(cases) >= MIN_CASES
    styles = {c.style for c in cases}
    assert styles == KNOWN_STYLES
    assert {c.intended for c in cases} == KNOWN_VERDICTS


def test_every_case_declares_its_metadata(cases: list[common.CaseInfo]) -> None:
    for case in cases:
        assert case.style in KNOWN_STYLES, case.name
        assert case.intended in KNOWN_VERDICTS, case.name
        assert case.bottleneck, case.name
        assert "Intended" in case.doc and "--tuned" in case.doc, case.name
        if case.expected_suggestion is not None:
            assert case.expected_suggestion.startswith("PD"), case.name
        for rule, fix in case.fixes.items():
            assert rule.startswith("PD") and fix, case.name


def test_every_case_has_dataset_and_model_factories() -> None:
    pytest.importorskip("tensorflow")
    for name in common.case_names():
        module = common.load_case(name)
        assert callable(module.make_dataset) and callable(module.make_model), name


def test_fix_for_uses_the_case_table(cases: list[common.CaseInfo]) -> None:
    by_name = {c.name: c for c in cases}
    seq = by_name["seq_random_map_fit"]
    assert common.fix_for(seq, "PD001-sequential-map") == "parallel-map"
    assert common.fix_for(seq, "PD009-autotune-off") is None
    assert common.fix_for(seq, None) is None


@SLOW
@pytest.mark.slow
def test_input_cost_truth_measures_a_case() -> None:
    """The truth's plumbing on a real case: T, A, the traced wait share, in one process."""
    module = common.load_case("no_prefetch_loop")
    truth = cost.measure_input_cost(module, skip=3, count=30, repeats=1, trace_waits=True)
    assert truth["training_steps_per_s"] and truth["compute_alone_steps_per_s"]
    assert truth["cost"] is not None and len(truth["pair_costs"]) == 1
    assert truth["traced_run"]["get_next_events"] >= 10
    assert truth["wait_share"] is not None and 0.0 <= truth["wait_share"] < 1.0


@SLOW
@pytest.mark.slow
@pytest.mark.parametrize("name", ["heavy_model_cached_fit", "no_prefetch_loop"])
def test_case_runs_standalone(name: str, tmp_path: Path) -> None:
    """Each style of case trains as a plain script and writes its own rate."""
    rate = tmp_path / "rate.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(common.CASES_DIR / f"{name}.py"),
            "--epochs",
            "1",
            "--max-steps",
            "15",
            "--rate-file",
            str(rate),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert rate.is_file()
