"""How a run ends, the same under the three front doors: the exit each ending is recorded
as, the one-line refusal of an output path that cannot be written, and the finish that
stops the session and writes its files."""

from __future__ import annotations

from pathlib import Path

import pytest

import pipediag.renderers
from pipediag.errors import UsageError
from pipediag.finish import check_writable, exit_info_of, finish, stop_reason_of
from pipediag.interrupts import EXIT_INTERRUPTED, EXIT_TERMINATED, TerminationRequested
from pipediag.report.model import ExitInfo, Report
from pipediag.report.vocabulary import StopReason
from pipediag.timeline import StepBudgetReached


@pytest.mark.parametrize(
    ("exc", "exit_info", "stop_reason"),
    [
        (None, ExitInfo("ok", 0), "script-finished"),
        (StepBudgetReached(), ExitInfo("step-budget", 0), "step-budget"),
        (SystemExit(), ExitInfo("system-exit", 0), "script-finished"),
        (SystemExit(0), ExitInfo("system-exit", 0), "script-finished"),
        (SystemExit(3), ExitInfo("system-exit", 3, "3"), "system-exit"),
        (SystemExit("bad config"), ExitInfo("system-exit", 1, "bad config"), "system-exit"),
        (
            KeyboardInterrupt(),
            ExitInfo("interrupted", EXIT_INTERRUPTED, "KeyboardInterrupt"),
            "interrupted",
        ),
        (
            TerminationRequested(),
            ExitInfo("interrupted", EXIT_TERMINATED, "SIGTERM"),
            "interrupted",
        ),
        (
            ZeroDivisionError("division by zero"),
            ExitInfo("exception", 1, "ZeroDivisionError: division by zero"),
            "script-error",
        ),
        (GeneratorExit(), ExitInfo("exception", 1, "GeneratorExit: "), "script-error"),
    ],
)
def test_each_ending_is_recorded_as_python_would_exit(
    exc: BaseException | None, exit_info: ExitInfo, stop_reason: StopReason
) -> None:
    # GIVEN how the code ended  WHEN it is mapped  THEN the exit and the stop reason
    assert exit_info_of(exc) == exit_info
    assert stop_reason_of(exit_info_of(exc)) == stop_reason


def test_a_sigterm_is_told_apart_from_ctrl_c_though_it_is_a_keyboard_interrupt() -> None:
    assert isinstance(TerminationRequested(), KeyboardInterrupt)
    assert exit_info_of(TerminationRequested()).code == EXIT_TERMINATED


def test_a_directory_that_does_not_exist_yet_is_writable_under_one_that_does(
    tmp_path: Path,
) -> None:
    check_writable(tmp_path / "a" / "b", "never raised")
    check_writable(tmp_path / "a" / "history.jsonl", "never raised", is_file=True)


def test_an_output_directory_under_a_file_is_refused_in_one_line(tmp_path: Path) -> None:
    # GIVEN a path whose nearest existing part is a file, not a folder
    (tmp_path / "taken").write_text("")
    out = tmp_path / "taken" / "out"
    # WHEN it is checked  THEN the error is the one line the caller gave
    message = f"cannot write reports to {out}: choose a writable --out directory"
    with pytest.raises(UsageError) as raised:
        check_writable(out, message)
    assert str(raised.value) == message and "\n" not in str(raised.value)


def test_a_history_file_that_is_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="^cannot append to "):
        check_writable(tmp_path, f"cannot append to {tmp_path}: ...", is_file=True)


def test_an_unwritable_folder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # os.access is True for root whatever the mode bits, so it stands for the file system
    monkeypatch.setattr("pipediag.finish.os.access", lambda path, mode: False)
    with pytest.raises(UsageError, match="^no$"):
        check_writable(tmp_path / "new", "no")


class _Session:
    def __init__(self) -> None:
        self.stopped: list[tuple[ExitInfo, StopReason]] = []
        self.logged: list[str] = []

    def stop(self, exit_info: ExitInfo, stop_reason: StopReason) -> Report:
        self.stopped.append((exit_info, stop_reason))
        return Report("train.py", exit=exit_info, stop_reason=stop_reason)

    def log(self, message: str) -> None:
        self.logged.append(message)


def test_finish_stops_the_session_once_and_writes_nothing_without_out() -> None:
    session = _Session()
    report, written = finish(session, ExitInfo("ok", 0), "script-finished", None)
    assert session.stopped == [(ExitInfo("ok", 0), "script-finished")]
    assert report.stop_reason == "script-finished" and written == []


def test_finish_writes_the_files_and_logs_each_one_that_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN outputs of which one cannot be written
    def write_outputs(report: Report, out: Path) -> tuple[list[Path], list[str]]:
        return [out / "report.json"], [f"could not write {out / 'report.png'}: disk full"]

    monkeypatch.setattr(pipediag.renderers, "write_outputs", write_outputs)
    session = _Session()
    # WHEN the run finishes
    report, written = finish(session, exit_info_of(KeyboardInterrupt()), "interrupted", tmp_path)
    # THEN the written file is returned, the failure logged, and the report is whole
    assert written == [tmp_path / "report.json"]
    assert session.logged == [f"could not write {tmp_path / 'report.png'}: disk full"]
    assert report.exit.status == "interrupted"


def test_a_second_run_keeps_the_first_report_in_previous(tmp_path: Path) -> None:
    # GIVEN an output folder holding a first run's files, and an older kept report
    (tmp_path / "report.json").write_text('{"first": true}')
    (tmp_path / "summary.txt").write_text("first summary")
    (tmp_path / "previous").mkdir()
    (tmp_path / "previous" / "report.json").write_text('{"older": true}')
    session = _Session()
    # WHEN the next run finishes into the same folder
    report, written = finish(session, ExitInfo("ok", 0), "script-finished", tmp_path)
    # THEN the first run's files moved to previous/, the older ones are gone, and it is said
    assert (tmp_path / "previous" / "report.json").read_text() == '{"first": true}'
    assert (tmp_path / "previous" / "summary.txt").read_text() == "first summary"
    assert tmp_path / "report.json" in written
    assert session.logged == [
        f"the earlier report in {tmp_path} is kept in {tmp_path / 'previous'}"
    ]


def test_a_first_run_keeps_nothing(tmp_path: Path) -> None:
    session = _Session()
    finish(session, ExitInfo("ok", 0), "script-finished", tmp_path)
    assert not (tmp_path / "previous").exists() and session.logged == []
