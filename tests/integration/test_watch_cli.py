"""`pipediag run --watch` on bad input: one line, exit code 2, before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import run_pipediag


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text("print('trained')\n")
    return path


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--watch", "--alert-input-share", "1.5"], "expected a share from 0 to 1"),
        (["--watch", "--alert-input-share", "lots"], "expected a share like 0.2 or 20%"),
        (["--watch", "--alert-input-share", "150%"], "expected a share from 0 to 1"),
        (["--watch", "--alert-windows", "0"], "--alert-windows: must be at least 1"),
        (["--watch", "--watch-every", "0"], "a window needs at least 1 step"),
        (["--watch", "--watch-every", "daily"], "expected a number of steps or 'epoch'"),
        (["--alert-input-share", "20%"], "--alert-input-share is a watch-mode option: add --watch"),
        (["--watch-every", "100"], "--watch-every is a watch-mode option: add --watch"),
        (["--watch", "--steps", "50"], "--watch measures the whole run"),
        (["--watch", "--deep"], "--watch runs no stage timing or fix trials"),
        (["--watch", "--watch-logdir", "/proc/self/pipediag"], "choose a writable --watch-logdir"),
    ],
)
def test_bad_watch_options_get_one_line_and_exit_code_2(
    script: Path, options: list[str], says: str
) -> None:
    # WHEN run is given a bad watch setting
    result = run_pipediag("run", *options, str(script), timeout=60)
    # THEN it says what is wrong in one line, exits 2, and the script never ran
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert says in lines[0]
    assert "trained" not in result.stdout


def test_a_script_without_training_is_watched_to_its_end(script: Path, tmp_path: Path) -> None:
    # GIVEN a script that trains nothing (and imports no TensorFlow)
    out = tmp_path / "out"
    # WHEN watched
    result = run_pipediag("run", "--watch", "--out", str(out), str(script), timeout=120)
    # THEN it runs to its end, and the report says no window closed
    assert result.returncode == 0, result.stderr
    assert "trained" in result.stdout
    summary = (out / "summary.txt").read_text()
    assert "Over time       watch mode: no window closed" in summary
    assert "benchmarking the input pipeline alone" not in result.stderr
