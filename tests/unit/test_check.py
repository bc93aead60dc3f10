"""`pipediag check`: one line per threshold, exit 1 when one broke, 2 on bad input."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from report_fixtures import AFTER, BEFORE, RUN1, RUN2
from test_compare import scaled

from pipediag.analysis.gate import Thresholds, check_report
from pipediag.cli import main
from pipediag.cli.argtypes import share
from pipediag.renderers.check_words import check_line
from pipediag.report.io import load_report, save_report
from pipediag.report.model import Report


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["check", *args])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err


def test_every_threshold_held(capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN the fixed run (72% input cost, 33% wait, 175.5 steps/s) and generous limits
    code, lines, _ = _check(
        capsys,
        str(AFTER),
        "--max-input-cost",
        "80%",
        "--max-input-wait",
        "0.5",
        "--min-steps-per-s",
        "150",
        "--baseline",
        str(BEFORE),
        "--max-slowdown",
        "5%",
    )
    # THEN one "ok" line per threshold and exit 0
    assert code == 0
    assert lines == [
        "ok   input cost 72% <= 80% allowed (--max-input-cost)",
        "ok   input wait 33% <= 50% allowed (--max-input-wait)",
        "ok   training 175.5 steps/s >= 150 required (--min-steps-per-s)",
        "ok   training 1.78x faster than the baseline (98.8 -> 175.5 steps/s, 95% interval "
        "1.52-2.08x)",
    ]


def test_each_broken_threshold_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN the run before the fix, checked against the run after it
    code, lines, _ = _check(
        capsys,
        str(BEFORE),
        "--max-input-cost",
        "0.2",
        "--max-input-wait",
        "75%",
        "--min-steps-per-s",
        "120",
        "--baseline",
        str(AFTER),
        "--max-slowdown",
        "5%",
    )
    assert code == 1
    assert lines[0] == "FAIL input cost 74% > 20% allowed (--max-input-cost)"
    assert lines[1] == "ok   input wait 72% <= 75% allowed (--max-input-wait)"
    assert lines[2] == "FAIL training 98.8 steps/s < 120 required (--min-steps-per-s)"
    assert lines[3].startswith("FAIL training 44% slower than the baseline (175.5 -> 98.8")
    assert lines[3].endswith("over the 5% allowed (--max-slowdown), beyond the runs' noise")


def test_a_slowdown_within_noise_does_not_fail() -> None:
    # GIVEN a copy of a run 7% slower: over a 5% allowance, but inside the runs' noise
    slower = scaled(load_report(RUN1), 1.075)
    results = check_report(slower, Thresholds(max_slowdown=0.05), load_report(RUN1))
    (result,) = results
    line = check_line(result)
    assert result.passed
    assert line.startswith("ok   training 7% slower than the baseline")
    assert line.endswith("over the 5% allowed but within the runs' noise")


def test_a_large_slowdown_fails() -> None:
    slower = scaled(load_report(RUN1), 1.5)
    (result,) = check_report(slower, Thresholds(max_slowdown=0.05), load_report(RUN1))
    assert not result.passed and check_line(result).startswith("FAIL training 33% slower")


def test_a_small_slowdown_within_the_allowance_passes() -> None:
    (result,) = check_report(load_report(RUN1), Thresholds(max_slowdown=0.05), load_report(RUN2))
    line = check_line(result)
    assert result.passed
    assert line.startswith("ok   training 3.1% slower than the baseline")
    assert line.endswith("within the 5% allowed")


def test_a_figure_the_report_lacks_fails_with_a_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a report with no measured steps (the script never trained)
    empty = save_report(Report(script="t.py"), tmp_path / "report.json")
    code, lines, err = _check(
        capsys,
        str(empty),
        "--max-input-cost",
        "20%",
        "--max-input-wait",
        "20%",
        "--min-steps-per-s",
        "10",
        "--baseline",
        str(RUN1),
        "--max-slowdown",
        "5%",
    )
    # THEN every threshold fails, each saying what is missing; no traceback
    assert code == 1 and err == ""
    assert lines == [
        "FAIL input cost: the report has no input cost (no compute-alone rate, or no measured "
        "steps); --max-input-cost cannot be checked",
        "FAIL input wait: the report has no input wait (the steps' waits were not measured); "
        "--max-input-wait cannot be checked",
        "FAIL training rate: the report has no measured steps; --min-steps-per-s cannot be checked",
        "FAIL training rate: the report has no measured steps; --max-slowdown cannot be checked",
    ]


def test_close_figures_are_never_shown_equal() -> None:
    report = load_report(RUN1)
    cost = report.verdict.input_cost_fraction
    assert cost is not None
    (result,) = check_report(report, Thresholds(max_input_cost=round(cost, 3) - 0.001))
    assert not result.passed
    words = check_line(result).split()
    assert words[3] != words[5]  # the value shown, the limit


@pytest.mark.parametrize(("text", "value"), [("0.2", 0.2), ("20%", 0.2), ("5%", 0.05), ("1", 1.0)])
def test_shares_are_fractions_or_percentages(text: str, value: float) -> None:
    assert share(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["20", "-0.1", "abc", "120%"])
def test_bad_shares_are_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        share(text)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([str(RUN1)], "nothing to check: give --max-input-cost"),
        ([str(RUN1), "--max-slowdown", "5%"], "--baseline and --max-slowdown go together"),
        ([str(RUN1), "--baseline", str(RUN2)], "--baseline and --max-slowdown go together"),
        (["missing.json", "--max-input-cost", "0.2"], "no report at missing.json"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, lines, err = _check(capsys, *args)
    assert code == 2 and lines == []
    assert err.startswith("pipediag: error: ") and message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "args",
    [["--max-input-cost", "20"], ["--min-steps-per-s", "0"], ["--max-slowdown", "fast"]],
)
def test_bad_option_values_exit_2(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["check", str(RUN1), *args])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("pipediag check: error: argument") and err.count("\n") == 1


def test_a_newer_baseline_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    newer = tmp_path / "newer.json"
    newer.write_text(RUN2.read_text().replace('"schema_version": 1', '"schema_version": 99', 1))
    code, _, err = _check(capsys, str(RUN1), "--baseline", str(newer), "--max-slowdown", "5%")
    assert code == 2 and "is newer than this pipediag reads" in err


def test_the_run_noise_option_tightens_the_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a run 12% slower than its baseline: within a busy host's noise...
    slower = save_report(scaled(load_report(RUN1), 1.12), tmp_path / "slower.json")
    args = [str(slower), "--baseline", str(RUN1), "--max-slowdown", "5%"]
    code, lines, _ = _check(capsys, *args)
    assert code == 0 and lines[0].endswith("within the runs' noise")
    # ...but not on a machine whose runs do not drift: the steps' own spread decides
    code, lines, _ = _check(capsys, *args, "--run-noise", "0")
    assert code == 1 and lines[0].startswith("FAIL training 11% slower")
