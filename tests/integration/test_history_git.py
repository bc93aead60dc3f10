"""The git commit a history line records: read by a child `git` in a checkout, none outside,
and appended by `pipediag run --history FILE`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pipediag.cli import main
from pipediag.history import git_commit
from pipediag.report.history import read_history


def test_git_commit_is_read_in_a_checkout_and_none_outside(tmp_path: Path) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    assert git_commit(outside) is None or (tmp_path / ".git").exists()
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").write_text("print('hi')\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "train.py"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "first"], cwd=repo, check=True)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert git_commit(repo) == head


def test_run_appends_a_line_with_the_commit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a script (no training) in a git checkout
    repo = tmp_path / "repo"
    repo.mkdir()
    script = repo / "train.py"
    script.write_text("print('trained')\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "train.py"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "first"], cwd=repo, check=True)
    history = tmp_path / "history.jsonl"
    # WHEN run twice with --history
    for _ in range(2):
        args = ["run", "--quiet", "--no-gpu", "--history", str(history)]
        code = main([*args, "--out", str(tmp_path / "out"), str(script)])
        assert code == 0
    out = capsys.readouterr().out
    # THEN each run appended one line, with the checkout's commit and the report's path
    assert f"History: appended to {history}" in out
    entries = read_history(history)
    assert len(entries) == 2
    assert entries[0].commit == git_commit(repo) and entries[0].commit
    assert entries[0].report == str(tmp_path / "out" / "report.json")
    assert entries[0].verdict == "unknown" and entries[0].rates.training is None
