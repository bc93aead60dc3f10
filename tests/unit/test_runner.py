"""The runner runs a script exactly as `python script.py` would, and reports how it ended."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pipediag.errors import UsageError
from pipediag.runner import check_script, run_script


def _script(tmp_path: Path, body: str, name: str = "train.py") -> Path:
    path = tmp_path / "proj" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(body)
    return path


def test_script_sees_its_argv_name_and_folder(tmp_path: Path) -> None:
    # GIVEN a script that records what Python gave it
    out = tmp_path / "seen.json"
    script = _script(
        tmp_path,
        "import json, sys\n"
        "seen = {'name': __name__, 'argv': sys.argv, 'path0': sys.path[0]}\n"
        f"json.dump(seen, open({str(out)!r}, 'w'))\n",
    )
    (script.parent / "helper_mod.py").write_text("VALUE = 7\n")
    saved_argv = sys.argv[:]
    # WHEN it runs under the runner
    outcome = run_script(check_script(str(script)), ["--epochs", "3"], as_typed=str(script))
    # THEN it ran as __main__ with its own argv and folder, and the runner restored ours
    seen = json.loads(out.read_text())
    assert seen["name"] == "__main__"
    assert seen["argv"][1:] == ["--epochs", "3"]
    assert seen["argv"][0] == str(script)
    assert seen["path0"] == str(script.parent.resolve())
    assert outcome.stop_reason == "script-finished" and outcome.exit.code == 0
    assert sys.argv == saved_argv


def test_script_can_import_modules_beside_it(tmp_path: Path) -> None:
    script = _script(tmp_path, "import helper_beside\nassert helper_beside.VALUE == 7\n")
    (script.parent / "helper_beside.py").write_text("VALUE = 7\n")
    outcome = run_script(check_script(str(script)), [])
    assert outcome.exit.status == "ok"


@pytest.mark.parametrize(
    ("body", "code", "reason"),
    [
        ("import sys\nsys.exit(3)\n", 3, "system-exit"),
        ("import sys\nsys.exit(0)\n", 0, "script-finished"),
        ("raise KeyboardInterrupt\n", 130, "interrupted"),
    ],
)
def test_exit_codes_are_kept(tmp_path: Path, body: str, code: int, reason: str) -> None:
    outcome = run_script(check_script(str(_script(tmp_path, body))), [])
    assert outcome.exit.code == code
    assert outcome.stop_reason == reason


def test_script_exception_prints_its_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script(tmp_path, "def f():\n    raise ValueError('bad shape')\nf()\n")
    outcome = run_script(check_script(str(script)), [])
    err = capsys.readouterr().err
    assert outcome.exit.code == 1 and outcome.stop_reason == "script-error"
    assert "ValueError: bad shape" in err
    assert f'File "{script.resolve()}", line 3' in err
    assert "runpy" not in err and "pipediag" not in err


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "missing.py", "script not found"),
        (lambda p: p, "is a directory"),
        (lambda p: _write(p / "bad.py", "def f(:\n"), "bad.py:1: syntax error"),
        (lambda p: _write(p / "blob.py", "\0\1\2"), "not a Python script"),
    ],
)
def test_bad_scripts_get_one_clear_line(tmp_path: Path, make, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UsageError) as info:
        check_script(str(make(tmp_path)))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_script_stopped_at_the_budget_keeps_its_frames_until_its_answer_is_out(
    tmp_path: Path,
) -> None:
    import weakref

    from pipediag.runner import release_stopped_script

    # GIVEN a script whose loop holds an object (its iterator) when pipediag stops it
    held: list[weakref.ref[object]] = []
    script = _script(
        tmp_path,
        "from pipediag.timeline import StepBudgetReached\n"
        "class Iterator: pass\n"
        "def train(record):\n"
        "    iterator = Iterator()\n"
        "    record(iterator)\n"
        "    raise StepBudgetReached\n"
        f"train(__import__({__name__!r}).HELD.append)\n",
    )
    global HELD
    HELD = []
    outcome = run_script(check_script(str(script)), [], as_typed=str(script))
    held.append(weakref.ref(HELD.pop()))
    # THEN the stop is the budget's, and the loop's object outlives the run, so its deletion
    # (an idle iterator's may wait tens of seconds) comes after the report
    assert outcome.stop_reason == "step-budget"
    assert held[0]() is not None
    # AND it goes once the answer is out
    release_stopped_script()
    assert held[0]() is None


HELD: list[object] = []
