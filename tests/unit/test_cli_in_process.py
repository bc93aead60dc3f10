"""`pipediag run` in-process, with the script runner replaced: option parsing, the script's
arguments, exit codes, one-line errors, `--out`, `--history` and what is printed.

The stand-in (`FakeScript`) replaces `run_script` where `pipediag.api` calls it, and gives
the real `DiagnosticSession` a fake clock: it marks custom-loop steps on the session's
timeline as the hooks would, and ends as a script would (an exit code, an exception, an
interrupt, the step budget). Everything else is the real CLI; the real thing, script and
TensorFlow included, runs in a child process in tests/integration/test_cli.py.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from fake_nvml import FakeNvml
from multiworker_jobs import tf_config
from synthetic_reports import FakeClock

import pipediag.api as api
import pipediag.history
from pipediag import renderers
from pipediag.cli import main
from pipediag.config import DEFAULT_MEASURED_SECONDS, DEFAULT_MEASURED_STEPS, RunConfig
from pipediag.renderers import REPORT_JSON, REPORT_PNG, REPORT_TEXT, TRACE_JSON
from pipediag.renderers.text import render_text
from pipediag.report.history import read_history
from pipediag.report.io import load_report
from pipediag.report.model import ExitInfo
from pipediag.runner import RunOutcome
from pipediag.session import DiagnosticSession

FINISHED = RunOutcome(ExitInfo("ok", 0), "script-finished")
AT_THE_BUDGET = RunOutcome(ExitInfo("step-budget", 0), "step-budget")
SCRIPT_TEXT = "raise SystemExit('never run: the runner is replaced')\n"


@dataclass
class FakeScript:
    """The training script as `pipediag.api` sees it: `run_script(path, args, as_typed=...)`.

    It prints a line, marks `steps` custom-loop steps (`wait_s` waiting for input, then
    `compute_s` computing, on the session's fake clock) and returns `outcome`; at the step
    budget it ends as the hooks end a script (`run_script` turns their StepBudgetReached into
    `AT_THE_BUDGET`).
    """

    clock: FakeClock = field(default_factory=FakeClock)
    outcome: RunOutcome = FINISHED
    steps: int = 0
    wait_s: float = 0.02
    compute_s: float = 0.01
    calls: list[tuple[Path, list[str], str | None]] = field(default_factory=list)
    session: DiagnosticSession | None = None

    def new_session(self, *args: object, **kwargs: object) -> DiagnosticSession:
        self.session = DiagnosticSession(*args, clock=self.clock, **kwargs)  # type: ignore[arg-type]
        return self.session

    def __call__(self, script: Path, args: list[str], *, as_typed: str | None = None) -> RunOutcome:
        self.calls.append((script, list(args), as_typed))
        print(f"the script ran with {args}")
        session = self.session
        assert session is not None, "run_script before the session was made"
        if self.steps:
            session.mark_style("custom-loop")
        for _ in range(self.steps):
            start = self.clock.now()
            self.clock.sleep(self.wait_s + self.compute_s)
            if session.timeline.add(start, self.clock.now(), self.wait_s):
                return AT_THE_BUDGET
        return self.outcome


def _png_placeholder(report: object, path: Path) -> Path:
    """The page itself is tested in test_png.py; here only where it goes (and it is fast)."""
    path.write_bytes(b"\x89PNG placeholder")
    return path


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeScript:
    """A fake script in place of the runner; the test runs in tmp_path, with no GPU found."""
    fake = FakeScript()
    monkeypatch.setattr(api, "run_script", fake)
    monkeypatch.setattr(api, "DiagnosticSession", fake.new_session)
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(library_missing=True))
    monkeypatch.setitem(renderers.WRITERS, REPORT_PNG, _png_placeholder)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SCRIPT_TEXT)
    return fake


def _pipediag(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `pipediag ARGV`, as the console script ends."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage errors leave through parser.exit()
        assert isinstance(exc.code, int)
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


# -- options ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "config"),
    [
        # the default count is also bounded by time; a count given is measured exactly
        ([], RunConfig(DEFAULT_MEASURED_STEPS, measured_seconds=DEFAULT_MEASURED_SECONDS)),
        (
            [
                "--steps", "40", "--warmup", "3", "--bench-seconds", "1.5", "--bench-batches",
                "7", "--no-bench", "--no-gpu", "--no-stages", "--no-verify", "--verify-seconds",
                "2", "--deep", "--deep-seconds", "4", "--train-function", "train_steps",
            ],
            RunConfig(
                measured_steps=40, measured_seconds=None, warmup_steps=3, bench=False,
                bench_seconds=1.5, bench_batches=7, sample_gpu=False, stages=False,
                verify=False, verify_seconds=2.0, deep=True, deep_seconds=4.0,
                train_function="train_steps",
            ),
        ),
        (["--steps", "all", "--warmup", "0"], RunConfig(None, 0, measured_seconds=None)),
    ],
    ids=["defaults", "every-option", "steps-all"],
)  # fmt: skip
def test_options_become_the_run_config(
    script: FakeScript, capsys: pytest.CaptureFixture[str], options: list[str], config: RunConfig
) -> None:
    code, _, _ = _pipediag(["run", "--quiet", *options, "train.py"], capsys)

    assert code == 0
    assert script.session is not None and script.session.config == config


@pytest.mark.parametrize(
    ("argv", "args"),
    [
        (["run", "--quiet", "train.py", "a", "--b"], ["a", "--b"]),
        # the script's own flags, even pipediag's names, are the script's
        (["run", "--quiet", "train.py", "--steps", "3", "--no-gpu"], ["--steps", "3", "--no-gpu"]),
        (["run", "--quiet", "--", "train.py", "--quiet"], ["--quiet"]),
    ],
    ids=["plain", "pipediags-flag-names", "double-dash"],
)  # fmt: skip
def test_everything_after_the_script_goes_to_the_script(
    script: FakeScript, capsys: pytest.CaptureFixture[str], argv: list[str], args: list[str]
) -> None:
    code, out, _ = _pipediag(argv, capsys)

    assert code == 0
    ((path, given, as_typed),) = script.calls
    assert path == Path("train.py").resolve() and as_typed == "train.py" and given == args
    assert f"the script ran with {args}" in out
    assert script.session is not None
    assert script.session.config.measured_steps == DEFAULT_MEASURED_STEPS
    assert script.session.config.sample_gpu
    assert load_report(Path("pipediag-out") / REPORT_JSON).args == args


# -- exit codes and what is printed -----------------------------------------------------------


@pytest.mark.parametrize(
    ("outcome", "code", "said"),
    [
        (FINISHED, 0, "complete: the script finished"),
        (RunOutcome(ExitInfo("system-exit", 4, "4"), "system-exit"), 4, "incomplete"),
        (
            RunOutcome(ExitInfo("exception", 1, "RuntimeError: out of data"), "script-error"),
            1,
            "incomplete: the script failed (RuntimeError: out of data)",
        ),
        (
            RunOutcome(ExitInfo("interrupted", 130, "KeyboardInterrupt"), "interrupted"),
            130,
            "incomplete: interrupted",
        ),
    ],
    ids=["finished", "sys-exit-4", "exception", "ctrl-c"],
)
def test_the_exit_code_is_the_scripts_and_the_report_says_how_it_ended(
    script: FakeScript,
    capsys: pytest.CaptureFixture[str],
    outcome: RunOutcome,
    code: int,
    said: str,
) -> None:
    # GIVEN a script that trains nothing and ends this way
    script.outcome = outcome
    # WHEN run
    exit_code, out, _ = _pipediag(["run", "--quiet", "train.py"], capsys)
    # THEN pipediag exits as the script did, and the report and summary say how it ended
    assert exit_code == code
    assert "NO VERDICT: No training steps were seen" in out
    assert said in out
    report = load_report(Path("pipediag-out") / REPORT_JSON)
    assert report.exit == outcome.exit and report.stop_reason == outcome.stop_reason
    assert report.complete is (outcome.stop_reason == "script-finished")


def test_a_run_to_its_step_budget_prints_the_verdict_and_the_next_commands(
    script: FakeScript, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a loop whose steps wait 20 ms for input and compute 10 ms
    script.steps = 1000
    # WHEN measured for 2 warm-up + 20 steps
    code, out, err = _pipediag(
        ["run", "--steps", "20", "--warmup", "2", "--out", "o", "train.py"], capsys
    )
    # THEN pipediag ended the script at the budget (exit 0), with the verdict said as it came
    assert code == 0
    assert script.session is not None and len(script.session.timeline) == 22
    assert "pipediag: verdict: INPUT-BOUND" in err
    report = load_report(Path("o") / REPORT_JSON)
    assert report.stop_reason == "step-budget" and report.complete
    assert report.verdict.label == "input-bound"
    assert report.verdict.input_wait_fraction == pytest.approx(2 / 3)
    assert report.train.measured_steps == 20 and report.train.style == "custom-loop"
    # AND printed the short answer (every figure went to summary.txt) and where it went
    summary = render_text(report)
    assert (Path("o") / REPORT_TEXT).read_text() == summary
    assert out.startswith("the script ran with []\n\n── pipediag")
    assert out.splitlines()[3].startswith("INPUT-BOUND: input costs 67%")
    assert out.endswith("Report: o/summary.txt has every figure; also report.json, report.png\n")
    assert "pipediag merge" not in out
    # AND -v prints every figure before the answer
    code, verbose, _ = _pipediag(["run", "-v", "--out", "o", "train.py"], capsys)
    assert code == 0 and verbose.startswith("the script ran with []\n\nINPUT-BOUND")
    assert "\n── pipediag" in verbose and "Rates " in verbose


def test_quiet_leaves_stderr_to_the_script(
    script: FakeScript, capsys: pytest.CaptureFixture[str]
) -> None:
    script.steps = 30
    _, _, err = _pipediag(["run", "--steps", "20", "train.py"], capsys)
    assert "pipediag: verdict: INPUT-BOUND" in err

    _, _, err = _pipediag(["run", "--quiet", "--steps", "20", "train.py"], capsys)
    assert err == ""


# -- bad input: one line, exit code 2, nothing run --------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "missing.py"], "pipediag: error: script not found: missing.py"),
        (["run", "--steps", "0", "train.py"], "argument --steps: must be at least 1, got 0"),
        (["run", "--steps", "-3", "train.py"], "must be at least 1"),
        (["run", "--steps", "many", "train.py"], "expected a whole number, got 'many' (or 'all')"),
        (["run", "--bench-seconds", "soon", "train.py"], "expected a number of seconds"),
        (["run", "--warmup", "-1", "train.py"], "argument --warmup: must be at least 0"),
        (["run", "--frobnicate", "train.py"], "unrecognized arguments: --frobnicate"),
        (["run", "--b", "1", "train.py"], "unrecognized arguments"),  # no abbreviations
        (["run"], "the following arguments are required: script"),
        ([], "the following arguments are required: COMMAND"),
        (["report", "nothing.json"], "no report at nothing.json"),
    ],
)
def test_bad_input_is_one_line_with_exit_2_and_runs_nothing(
    script: FakeScript, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = _pipediag(argv, capsys)

    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and out == ""
    assert script.calls == [] and script.session is None


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p, "is a directory: give the training script"),
        (lambda p: _write(p / "bad.py", "x = (\n"), "bad.py:1: syntax error in the script"),
        (lambda p: _write(p / "data.bin", "\0\1"), "is not a Python script (binary file)"),
    ],
    ids=["directory", "syntax-error", "binary"],
)
def test_a_script_that_cannot_run_is_refused_in_one_line(
    script: FakeScript,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    make: object,
    message: str,
) -> None:
    target = make(tmp_path)  # type: ignore[operator]
    code, _, err = _pipediag(["run", str(target)], capsys)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert script.calls == []


def test_an_unwritable_out_is_refused_before_running(
    script: FakeScript, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("")
    code, _, err = _pipediag(["run", "--out", "file/sub", "train.py"], capsys)
    assert code == 2
    assert (
        err
        == "pipediag: error: cannot write reports to file/sub: choose a writable --out directory\n"
    )
    assert script.calls == [] and not Path("pipediag-out").exists()


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# -- where the files go -----------------------------------------------------------------------


def test_the_files_go_to_out_or_to_pipediag_out(
    script: FakeScript, capsys: pytest.CaptureFixture[str]
) -> None:
    files = sorted([REPORT_JSON, REPORT_TEXT, REPORT_PNG, TRACE_JSON])

    _pipediag(["run", "--quiet", "train.py"], capsys)
    _pipediag(["run", "--quiet", "--out", "runs/new", "train.py"], capsys)

    assert sorted(p.name for p in Path("pipediag-out").iterdir()) == files
    assert sorted(p.name for p in Path("runs/new").iterdir()) == files
    trace = json.loads((Path("runs/new") / TRACE_JSON).read_text())
    assert "traceEvents" in trace


def test_a_worker_of_a_multi_worker_job_writes_into_its_own_directory(
    script: FakeScript, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TF_CONFIG", tf_config(1))

    code, out, _ = _pipediag(["run", "--quiet", "--out", "job", "train.py"], capsys)

    assert code == 0
    report = load_report(Path("job") / "worker-1" / REPORT_JSON)
    assert report.task is not None and report.task.name == "worker-1"
    assert f"Report: {Path('job/worker-1')}/summary.txt has every figure" in out
    assert "Once every worker is done: pipediag merge job\n" in out


def test_a_bad_tf_config_is_refused_before_running(
    script: FakeScript, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TF_CONFIG", "{not json")
    code, _, err = _pipediag(["run", "train.py"], capsys)
    assert code == 2 and err.startswith("pipediag: error: TF_CONFIG is not valid JSON")
    assert script.calls == []


# -- --history ----------------------------------------------------------------------------------


def test_history_appends_the_runs_line(
    script: FakeScript, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # (reading the git commit is a child process: tested in integration/test_history_git.py)
    monkeypatch.setattr(pipediag.history, "git_commit", lambda folder: "abc123")
    script.steps = 30

    code, out, _ = _pipediag(
        ["run", "--quiet", "--steps", "20", "--history", "h.jsonl", "train.py"], capsys
    )

    assert code == 0
    assert out.endswith("History: appended to h.jsonl (see: pipediag history h.jsonl)\n")
    (entry,) = read_history(Path("h.jsonl"))
    assert entry.commit == "abc123" and entry.verdict == "input-bound"
    assert entry.report == str(Path("pipediag-out") / REPORT_JSON)


@pytest.mark.parametrize(
    ("outcome", "code"),
    [(FINISHED, 1), (RunOutcome(ExitInfo("system-exit", 4, "4"), "system-exit"), 4)],
    ids=["passed", "sys-exit-4"],
)
def test_a_history_line_that_cannot_be_appended_fails_a_run_that_passed(
    script: FakeScript,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    outcome: RunOutcome,
    code: int,
) -> None:
    def disk_full(*args: object, **kwargs: object) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pipediag.history, "record_run", disk_full)
    script.outcome = outcome

    exit_code, out, err = _pipediag(["run", "--quiet", "--history", "h.jsonl", "train.py"], capsys)

    assert exit_code == code
    assert err == (
        "pipediag: error: could not append to h.jsonl: [Errno 28] No space left on device\n"
    )
    assert "History:" not in out
    assert (Path("pipediag-out") / REPORT_JSON).is_file()


def test_report_re_renders_a_run_without_running_it_again(
    script: FakeScript, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a run's report WHEN it is re-rendered elsewhere
    _pipediag(["run", "--quiet", "train.py"], capsys)
    code, out, _ = _pipediag(["report", "pipediag-out", "--out", "again"], capsys)
    # THEN the script ran once, for the run only, and every file was written again
    assert code == 0 and len(script.calls) == 1
    assert out.startswith("── pipediag") and out.splitlines()[1].startswith("NO VERDICT")
    assert sorted(p.name for p in Path("again").iterdir()) == sorted(
        [REPORT_JSON, REPORT_TEXT, REPORT_PNG, TRACE_JSON]
    )
