"""Fast checks of the benchmarks: the case suite's metadata and the shared pure helpers.

Nothing here runs a benchmark. Importing a case imports TensorFlow (a few seconds, once);
the one test that trains is marked slow and runs only with PIPEDIAG_SLOW=1, so the default
suite stays quick without any pytest options.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks import _common as common  # noqa: E402

SLOW = pytest.mark.skipif(
    os.environ.get("PIPEDIAG_SLOW") != "1", reason="slow: set PIPEDIAG_SLOW=1 to run"
)
KNOWN_STYLES = {"keras-fit", "custom-loop"}
KNOWN_VERDICTS = {common.INPUT_BOUND, common.BALANCED, common.COMPUTE_BOUND}
# The issue asks for at least 10 cases, with both training styles represented.
MIN_CASES = 10


# --- truth bands ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("p", "c", "expected"),
    [
        (50.0, 100.0, common.INPUT_BOUND),  # P/C = 0.5
        (79.0, 100.0, common.INPUT_BOUND),  # just under 0.8
        (80.0, 100.0, common.BALANCED),  # the edge belongs to balanced
        (100.0, 100.0, common.BALANCED),
        (125.0, 100.0, common.BALANCED),
        (126.0, 100.0, common.COMPUTE_BOUND),
        (2000.0, 20.0, common.COMPUTE_BOUND),
        (None, 100.0, common.UNKNOWN),
        (50.0, None, common.UNKNOWN),
        (0.0, 100.0, common.UNKNOWN),
    ],
)
def test_classify_truth(p: float | None, c: float | None, expected: str) -> None:
    assert common.classify_truth(p, c) == expected


def test_truth_ratio_rejects_zero_compute() -> None:
    with pytest.raises(ValueError):
        common.truth_ratio(10.0, 0.0)


def test_near_boundary() -> None:
    assert common.near_boundary(0.75)  # within 10% of 0.8
    assert common.near_boundary(1.3)  # within 10% of 1.25
    assert not common.near_boundary(0.5)
    assert not common.near_boundary(1.0)
    assert not common.near_boundary(3.0)


def test_window_ratio_of_one_steady_segment_is_p_over_c() -> None:
    # 50 batches in 1 s: P = 50/s; C = 100/s
    assert common.window_truth_ratio([(50, 1.0)], 100.0) == pytest.approx(0.5)
    # a pipeline faster than the step: plain P/C above 1
    assert common.window_truth_ratio([(300, 1.0)], 100.0) == pytest.approx(3.0)


def test_window_ratio_weights_epochs_by_time() -> None:
    # GIVEN epoch 1: 20 batches at 50 ms (P=20/s), epoch 2: 40 batches at 1 ms; C = 100/s
    segments = [(20, 1.0), (40, 0.04)]
    # WHEN the overlap rule is applied per epoch
    ratio = common.window_truth_ratio(segments, 100.0)
    # THEN waits: 20 x 40 ms = 0.8 s of 20 x 50 ms + 40 x 10 ms = 1.4 s -> share 0.571
    assert ratio == pytest.approx(1 - 0.8 / 1.4)
    assert common.classify_ratio(ratio) == common.INPUT_BOUND


def test_window_ratio_without_waits_is_the_slowest_segment() -> None:
    assert common.window_truth_ratio([(200, 1.0), (400, 1.0)], 100.0) == pytest.approx(2.0)
    assert common.window_truth_ratio([(0, 0.0)], 100.0) is None


# --- statistics -----------------------------------------------------------------------------
def test_quantile_matches_linear_interpolation() -> None:
    values = [4.0, 1.0, 3.0, 2.0]  # unsorted on purpose
    assert common.quantile(values, 0.0) == 1.0
    assert common.quantile(values, 1.0) == 4.0
    assert common.median(values) == pytest.approx(2.5)
    assert common.quantile(values, 0.9) == pytest.approx(3.7)
    assert common.median([7.0]) == 7.0


def test_iqr() -> None:
    values = [float(v) for v in range(1, 10)]  # 1..9
    assert common.iqr(values) == (pytest.approx(3.0), pytest.approx(7.0))
    summary = common.spread_summary(values)
    assert summary == {"n": 9, "median": 5.0, "q1": 3.0, "q3": 7.0}
    assert common.spread_summary([])["median"] is None


def test_quantile_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        common.quantile([], 0.5)
    with pytest.raises(ValueError):
        common.quantile([1.0], 1.5)


def test_median_ci_uses_the_binomial_order_statistics() -> None:
    # GIVEN 1..n; THEN the ranks of the 95% interval are those of the standard table
    assert common.median_ci([float(v) for v in range(1, 11)]) == (2.0, 9.0)  # n=10: 2nd, 9th
    assert common.median_ci([float(v) for v in range(1, 7)]) == (1.0, 6.0)  # n=6: the extremes
    assert common.median_ci([5.0, 1.0, 3.0, 2.0, 4.0]) is None  # n=5: no 95% interval exists
    # AND the interval narrows as the sample grows (n=150: ranks 63 and 88)
    assert common.median_ci([float(v) for v in range(1, 151)]) == (63.0, 88.0)


def test_same_arm_ratios_pair_neighbours_of_one_arm() -> None:
    # GIVEN runs in ABBA order: A B | B A | A B
    arms = [arm for pair in range(3) for arm in common.abba_order(pair)]
    assert arms == [False, True, True, False, False, True]
    runs = list(zip(arms, [10.0, 20.0, 25.0, 8.0, 16.0, 30.0], strict=True))
    # THEN only the side-by-side runs of one arm are compared: B/B then A/A
    assert common.same_arm_ratios(runs) == [20.0 / 25.0, 8.0 / 16.0]


def test_ratio_summary_adds_the_interval() -> None:
    summary = common.ratio_summary([0.9, 1.0, 1.1, 0.95, 1.05, 1.0])
    assert summary["median"] == pytest.approx(1.0)
    assert summary["ci95"] == [0.9, 1.1]
    assert common.ratio_summary([1.0])["ci95"] is None


def test_a_child_past_its_time_limit_is_killed_and_counted_as_failed() -> None:
    proc, wall_s = common.run_child(
        [sys.executable, "-c", "import time; time.sleep(30)"], timeout_s=0.5
    )
    assert proc.returncode == common.TIMED_OUT
    assert "timed out after 0.5 s" in proc.stderr
    assert wall_s < 10


def test_relative_error() -> None:
    assert common.relative_error(1.2, 1.0) == pytest.approx(0.2)
    assert common.relative_error(1.5, 2.0) == pytest.approx(-0.25)
    with pytest.raises(ValueError):
        common.relative_error(1.0, 0.0)


# --- confusion table ------------------------------------------------------------------------
def test_confusion_counts_and_accuracy() -> None:
    pairs = [
        (common.INPUT_BOUND, common.INPUT_BOUND),
        (common.INPUT_BOUND, common.INPUT_BOUND),
        (common.INPUT_BOUND, common.BALANCED),
        (common.COMPUTE_BOUND, common.COMPUTE_BOUND),
        (common.BALANCED, common.INPUT_BOUND),
        (common.UNKNOWN, common.INPUT_BOUND),  # a failed case: not counted in accuracy
    ]
    matrix = common.confusion(pairs)
    assert matrix[common.INPUT_BOUND][common.INPUT_BOUND] == 2
    assert matrix[common.INPUT_BOUND][common.BALANCED] == 1
    assert matrix[common.BALANCED][common.INPUT_BOUND] == 1
    assert matrix[common.COMPUTE_BOUND][common.INPUT_BOUND] == 0
    assert common.accuracy_of(matrix) == (3, 5)


def test_format_confusion_drops_empty_rows_and_columns() -> None:
    matrix = common.confusion([(common.INPUT_BOUND, common.INPUT_BOUND)])
    text = common.format_confusion(matrix)
    lines = text.splitlines()
    assert lines[0].split() == ["truth", "\\", "pipediag", "input-bound"]
    assert lines[2].split() == ["input-bound", "1"]
    assert "compute-bound" not in text


def test_format_table_aligns_columns() -> None:
    text = common.format_table(["a", "long header"], [["xyz", 1.23456], [None, 12345.6]])
    lines = text.splitlines()
    assert lines[0].index("long header") == lines[2].index("1.23")
    assert lines[3].startswith("-")  # None is shown as "-"
    assert "12346" in lines[3]


# --- suggestions ----------------------------------------------------------------------------
def test_suggestion_matching_by_rule_prefix() -> None:
    assert common.rule_prefix("PD001-sequential-map") == "PD001"
    assert common.suggestion_matches("PD001-sequential-map", "PD001") is True
    assert common.suggestion_matches("pd001-sequential-map", "PD001-x") is True
    assert common.suggestion_matches("PD003-no-prefetch", "PD001") is False
    assert common.suggestion_matches(None, "PD001") is None
    assert common.suggestion_matches("PD001-sequential-map", None) is None


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
