"""Multi-worker jobs, worker side, through the real CLI in child processes: each worker's
report directory, a bad TF_CONFIG refused before running, nothing changed without one."""

from __future__ import annotations

import json
import time
from pathlib import Path

from cli_runner import ENV, run_pipediag
from multiworker_jobs import tf_config


def test_two_workers_sharing_one_out_never_clobber_each_other(tmp_path: Path) -> None:
    # GIVEN a script without TensorFlow, run as worker 0 then worker 1 with the same --out
    script = tmp_path / "t.py"
    script.write_text("print('ran')\n")
    out = tmp_path / "out"
    before = time.time()
    for index in (0, 1):
        env = {**ENV, "TF_CONFIG": tf_config(index)}
        result = run_pipediag("run", "--out", str(out), str(script), cwd=tmp_path, env=env)
        assert result.returncode == 0, result.stderr
        assert f"Report: {out / f'worker-{index}'}/summary.txt" in result.stdout
        assert f"pipediag merge {out}" in result.stdout
    # THEN each has its own directory and report, which names its task and its time zero
    assert sorted(p.name for p in out.iterdir()) == ["worker-0", "worker-1"]
    for index in (0, 1):
        data = json.loads((out / f"worker-{index}" / "report.json").read_text())
        assert data["task"] == {"type": "worker", "index": index, "cluster_size": 2}
        assert before <= data["origin_unix_s"] <= time.time()


def test_a_bad_tf_config_is_refused_before_running(tmp_path: Path) -> None:
    script = tmp_path / "t.py"
    script.write_text("print('ran')\n")
    env = {**ENV, "TF_CONFIG": "{oops"}
    result = run_pipediag("run", "--out", str(tmp_path / "o"), str(script), cwd=tmp_path, env=env)
    assert result.returncode == 2
    assert result.stderr.startswith("pipediag: error: TF_CONFIG is not valid JSON")
    assert "ran" not in result.stdout


def test_without_tf_config_nothing_changes(tmp_path: Path) -> None:
    script = tmp_path / "t.py"
    script.write_text("print('ran')\n")
    env = {k: v for k, v in ENV.items() if k != "TF_CONFIG"}
    result = run_pipediag("run", "--out", str(tmp_path / "o"), str(script), cwd=tmp_path, env=env)
    assert result.returncode == 0
    data = json.loads((tmp_path / "o" / "report.json").read_text())
    assert data["task"] is None and "pipediag merge" not in result.stdout
