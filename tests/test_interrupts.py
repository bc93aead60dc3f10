"""Ctrl-C and SIGTERM during the benchmark or training: a partial report, the right exit code."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_runner import ENV

SCRIPT = """
import time
import tensorflow as tf

def slow(x):
    time.sleep(0.01)
    return x

ds = tf.data.Dataset.range(10**9).map(lambda i: tf.py_function(slow, [i], tf.int64)).batch(2)
print("script started", flush=True)
for batch in ds:
    pass
"""


def _start(tmp_path: Path, *options: str) -> subprocess.Popen[str]:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pipediag",
            "run",
            "--steps",
            "all",
            "--out",
            str(tmp_path / "out"),
            *options,
            str(script),
        ],
        cwd=tmp_path,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(process: subprocess.Popen[str], text: str, timeout: float = 120) -> None:
    assert process.stderr is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if text in line:
            return
        if not line and process.poll() is not None:
            break
    pytest.fail(f"never saw {text!r}")


@pytest.mark.tensorflow
@pytest.mark.parametrize(
    ("moment", "options", "sig", "code"),
    [
        ("measuring train steps", [], signal.SIGINT, 130),
        ("benchmarking the input pipeline", ["--bench-seconds", "60"], signal.SIGINT, 130),
        ("measuring train steps", [], signal.SIGTERM, 143),
    ],
)
def test_interrupt_writes_a_partial_report(
    tmp_path: Path, moment: str, options: list[str], sig: int, code: int
) -> None:
    process = _start(tmp_path, *options)
    try:
        _wait_for(process, moment)
        time.sleep(1.5)  # let some steps (or benchmark batches) happen
        process.send_signal(sig)
        out, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == code
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert data["complete"] is False and data["stop_reason"] == "interrupted"
    assert data["exit"]["code"] == code
    assert "incomplete: interrupted" in out
    if moment == "measuring train steps":
        assert data["pipeline"]["measured"] and len(data["train"]["steps"]) > 10
    else:
        assert data["pipeline"]["reason"] == "interrupted before the pipeline benchmark finished"
