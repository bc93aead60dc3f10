"""`pipediag merge` through the real CLI, in a child process: the fleet files in the job's
directory, one-line errors with exit code 2, and no TensorFlow imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import ENV, run_pipediag
from multiworker_jobs import worker, write_job

from pipediag.fleet.io import fleet_from_dict
from pipediag.report.io import to_dict
from pipediag.report.model import SCHEMA_VERSION

# -- pipediag merge, end to end -------------------------------------------------------------


def test_merge_writes_the_fleet_files_into_the_job_directory(tmp_path: Path) -> None:
    job = write_job(tmp_path / "out", worker(0), worker(1, wait=0.5, offset_s=0.1))
    result = run_pipediag("merge", str(job), timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("FLEET: 2 workers")
    assert "Straggler: worker-1 (input)" in result.stdout
    for name in ("fleet.json", "fleet.txt", "fleet_trace.json", "fleet.png"):
        assert (job / name).is_file()
    assert (job / "fleet.txt").read_text() in result.stdout
    assert fleet_from_dict(json.loads((job / "fleet.json").read_text())).straggler is not None


def test_merge_imports_no_tensorflow(tmp_path: Path) -> None:
    job = write_job(tmp_path, worker(0), worker(1))
    code = (
        "import sys; from pipediag.cli import main; "
        f"code = main(['merge', {str(job)!r}]); "
        "print('TF' if 'tensorflow' in sys.modules else 'no TF', code)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=120
    )
    assert result.stdout.strip().splitlines()[-1] == "no TF 0", result.stderr


def _newer(root: Path) -> list[str]:
    write_job(root, worker(0))
    data = to_dict(worker(1))
    data["schema_version"] = 99
    (root / "worker-1").mkdir()
    (root / "worker-1" / "report.json").write_text(json.dumps(data))
    return [str(root)]


def _mixed(root: Path) -> list[str]:
    write_job(root, worker(0))
    data = to_dict(worker(1))
    data["schema_version"] = 1  # an older pipediag: read, but not merged with newer ones
    (root / "worker-1").mkdir()
    (root / "worker-1" / "report.json").write_text(json.dumps(data))
    return [str(root)]


def _corrupt(root: Path) -> list[str]:
    write_job(root, worker(0))
    (root / "worker-1").mkdir()
    (root / "worker-1" / "report.json").write_text('{"script": ')
    return [str(root)]


def _empty(root: Path) -> list[str]:
    (root / "nothing-here").mkdir()
    return [str(root / "nothing-here")]


def _two_for_one_task(root: Path) -> list[str]:
    write_job(root / "a", worker(0))
    write_job(root / "b", worker(0))
    return [str(root / "a"), str(root / "b"), "--out", str(root)]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (_empty, "no pipediag reports in "),
        (lambda root: [str(root / "missing")], "missing does not exist"),
        (_newer, f"report schema version 99 is newer than this pipediag reads ({SCHEMA_VERSION})"),
        (_mixed, "the reports have different schema versions"),
        (_corrupt, "is not valid JSON (line 1): corrupt report"),
        (_two_for_one_task, "two reports for worker-0"),
        (lambda root: [str(root), str(root)], "several DIRs given: say where"),
    ],
)
def test_merge_errors_are_one_line_with_exit_code_2(tmp_path: Path, make, message: str) -> None:  # type: ignore[no-untyped-def]
    args = make(tmp_path)
    result = run_pipediag("merge", *args, cwd=tmp_path, timeout=120)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("pipediag: error: ")
    assert not (tmp_path / "fleet.json").exists()
