"""`pipediag run --history FILE` and `pipediag history FILE`: lines appended, read back, and
the trend with its regressions marked (the git commit a line records, read by a child `git`:
tests/integration/test_history_git.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_fixtures import AFTER, BEFORE, RUN1, RUN2

from pipediag.analysis.trend import trend
from pipediag.cli import main
from pipediag.errors import ReportError
from pipediag.history import history_entry
from pipediag.renderers.history_png import render_history_png
from pipediag.renderers.history_text import render_history
from pipediag.report.history import (
    HISTORY_VERSION,
    HistoryEntry,
    HistoryRates,
    append_entry,
    entry_line,
    read_history,
)
from pipediag.report.io import load_report
from pipediag.report.vocabulary import VerdictLabel


def _entry(
    rate: float | None,
    *,
    verdict: VerdictLabel = "input-bound",
    script: str = "train.py",
    log_se: float | None = 0.01,
) -> HistoryEntry:
    return HistoryEntry(
        time_utc="2026-01-01T00:00:00Z",
        script=script,
        verdict=verdict,
        rates=HistoryRates(training=rate),
        training_log_se=log_se,
        steps=100,
    )


def test_a_report_becomes_one_line_that_reads_back(tmp_path: Path) -> None:
    # GIVEN the history line of a real report
    report = load_report(AFTER)
    entry = history_entry(report, commit="abc123", report_path="out/report.json")
    # WHEN appended twice and read back
    path = tmp_path / "sub" / "history.jsonl"
    append_entry(path, entry)
    append_entry(path, entry)
    # THEN two lines, each the same entry, with the report's key figures
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and "\n" not in lines[0]
    data = json.loads(lines[0])
    assert data["history_version"] == HISTORY_VERSION
    assert data["commit"] == "abc123" and data["script"] == report.script
    assert data["verdict"] == "input-bound"
    assert data["rates"]["training"] == pytest.approx(175.458, abs=0.01)
    assert data["shares"]["contention"] == pytest.approx(0.396, abs=0.001)
    assert data["training_log_se"] > 0 and data["steps"] == 100
    assert read_history(path) == [entry, entry]


def test_a_missing_commit_is_left_out() -> None:
    line = entry_line(history_entry(load_report(RUN1)))
    assert '"commit"' not in line
    assert history_entry(load_report(RUN1)).commit is None


def test_unknown_fields_are_ignored_and_missing_ones_defaulted(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(
        '{"history_version": 1, "script": "a.py", "future": 3, "rates": {"training": 5, "x": 1}}\n'
        "\n"
    )
    (entry,) = read_history(path)
    assert entry.script == "a.py" and entry.rates.training == 5.0
    assert entry.verdict == "unknown" and entry.commit is None


def test_an_older_history_reads_its_verdicts_as_the_labels_and_renders_the_same(
    tmp_path: Path,
) -> None:
    # GIVEN lines written before the verdict was typed: the label as a plain string, and one
    # hand-edited to a word that is no label
    path = tmp_path / "h.jsonl"
    lines = [
        {"history_version": 1, "script": "a.py", "verdict": verdict, "rates": {"training": 5}}
        for verdict in ("input-bound", "compute-bound", "uncertain", "mixed")
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    # WHEN read
    entries = read_history(path)
    # THEN the labels are the typed values, the other word reads as unknown
    assert [e.verdict for e in entries] == ["input-bound", "compute-bound", "uncertain", "unknown"]
    # AND are shown as written
    text = render_history(trend(entries), "h")
    assert all(f" {verdict} " in text for verdict in ("input-bound", "uncertain", "unknown"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"history_version": 2, "script": "a.py"}\n', "written by a newer pipediag"),
        ("not json\n", "is not JSON"),
        ('{"script": "a.py"}\n', "no integer 'history_version'"),
        ('{"history_version": 1}\n', "is malformed"),
        ('{"history_version": 1, "script": "a", "rates": {"training": "fast"}}\n', "malformed"),
    ],
)
def test_bad_lines_are_refused_with_their_line_number(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text('{"history_version": 1, "script": "ok.py"}\n' + text)
    with pytest.raises(ReportError, match=message) as error:
        read_history(path)
    assert "line 2" in str(error.value)


def test_a_run_slower_than_the_best_earlier_one_beyond_noise_is_a_regression() -> None:
    # GIVEN runs at 100, 103 and 99 steps/s, then one at 80
    result = trend([_entry(100.0), _entry(103.0), _entry(99.0), _entry(80.0)])
    rows = result.rows
    # THEN the small moves are noise, and the last run regressed against run 2, the best
    assert [row.regression for row in rows] == [False, False, False, True]
    assert rows[2].best_earlier == 2 and not rows[2].slower
    assert rows[3].best_earlier == 2 and rows[3].slower
    assert rows[3].change is not None and rows[3].change.change == pytest.approx(80 / 103)


def test_a_worse_verdict_is_a_regression() -> None:
    result = trend(
        [
            _entry(100.0, verdict="compute-bound"),
            _entry(100.0, verdict="balanced"),
            _entry(100.0, verdict="balanced"),
            _entry(100.0, verdict="compute-bound"),
        ]
    )
    assert [row.verdict_worse for row in result.rows] == [False, True, False, False]
    assert result.rows[1].previous_verdict == "compute-bound"


def test_each_script_is_judged_against_its_own_runs() -> None:
    result = trend([_entry(100.0, script="fast.py"), _entry(10.0, script="slow.py")])
    assert result.regressions == [] and result.scripts == ["fast.py", "slow.py"]
    assert result.rows[1].best_earlier is None


def test_runs_without_a_rate_are_listed_not_judged() -> None:
    result = trend([_entry(None, verdict="unknown"), _entry(100.0), _entry(None)])
    assert result.regressions == []
    assert result.rows[2].change is None


def test_the_command_prints_the_trend_and_marks_regressions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the recorded runs: one script twice, then a fix, then the fix undone
    path = tmp_path / "history.jsonl"
    for report in (RUN1, RUN2, BEFORE, AFTER, BEFORE):
        append_entry(path, history_entry(load_report(report), commit="0123456789abcdef"))
    png = tmp_path / "trend.png"
    # WHEN shown
    code = main(["history", str(path), "--png", str(png)])
    out = capsys.readouterr().out
    # THEN one row per run under its script, the undone fix marked as a regression
    assert code == 0
    assert out.startswith(f"History: {path}, 5 runs of 2 scripts")
    assert "examples/input_bound_fit.py" in out and "01234567" in out
    row5 = next(line for line in out.splitlines() if line.strip().startswith("5 "))
    assert "0.56x run 4" in row5 and row5.endswith("REGRESSION")
    row2 = next(line for line in out.splitlines() if line.strip().startswith("2 "))
    assert "(noise)" in row2 and "REGRESSION" not in row2
    assert "Regressions: 1\n  run 5: 44% slower than run 4, beyond noise" in out
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_the_png_of_one_run(tmp_path: Path) -> None:
    path = render_history_png(trend([_entry(None)]), tmp_path / "one.png")
    assert path.stat().st_size > 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no history at"),
        ("", "holds no runs"),
        ('{"history_version": 9, "script": "a.py"}\n', "newer pipediag"),
    ],
)
def test_bad_history_files_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    path = tmp_path / "h.jsonl"
    if content is not None:
        path.write_text(content)
    assert main(["history", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pipediag: error: ") and message in err and err.count("\n") == 1


def test_an_unwritable_history_is_refused_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "train.py"
    script.write_text("print('ran')\n")
    blocker = tmp_path / "file"
    blocker.write_text("")
    code = main(["run", "--quiet", "--history", str(blocker / "h.jsonl"), str(script)])
    captured = capsys.readouterr()
    assert code == 2 and "ran" not in captured.out
    assert "choose a writable --history file" in captured.err


def test_a_folder_is_not_a_history_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "train.py"
    script.write_text("print('ran')\n")
    code = main(["run", "--quiet", "--history", str(tmp_path), str(script)])
    assert code == 2 and "choose a writable --history file" in capsys.readouterr().err
