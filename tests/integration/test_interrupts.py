"""Ctrl-C and SIGTERM during the benchmark or training: a partial report, the right exit code."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_runner import ENV, default_signals, run_pipediag
from train_step import TRAIN_STEP

# Batches the script takes before it says so (the measured case signals only then): more
# than the warm-up (5) and the 10 steps the report must hold, however slow the machine.
BATCHES_BEFORE_SIGNAL = 25

SCRIPT = (
    TRAIN_STEP
    + f"""
import time
import tensorflow as tf

def slow(x):
    time.sleep(0.01)
    return x

ds = tf.data.Dataset.range(10**9).map(lambda i: tf.py_function(slow, [i], tf.int64)).batch(2)
print("script started", flush=True)
for taken, batch in enumerate(ds, start=1):
    train_step(batch)
    if taken == {BATCHES_BEFORE_SIGNAL}:
        print("{BATCHES_BEFORE_SIGNAL} batches taken", flush=True)
"""
)


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
        preexec_fn=default_signals,
    )


def _wait_for(
    process: subprocess.Popen[str], text: str, timeout: float = 120, *, stdout: bool = False
) -> None:
    """Read the process's stderr (or stdout) until a line holds `text`."""
    stream = process.stdout if stdout else process.stderr
    assert stream is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stream.readline()
        if text in line:
            return
        if not line and process.poll() is not None:
            break
    pytest.fail(f"never saw {text!r}")


@pytest.mark.tensorflow
@pytest.mark.parametrize(
    ("moment", "options", "sig", "code"),
    [
        ("measuring train steps", ["--bench-seconds", "1"], signal.SIGINT, 130),
        ("benchmarking the input pipeline", ["--bench-seconds", "60"], signal.SIGTERM, 143),
    ],
)
def test_interrupt_writes_a_partial_report(
    tmp_path: Path, moment: str, options: list[str], sig: int, code: int
) -> None:
    process = _start(tmp_path, *options)
    try:
        _wait_for(process, moment)
        # A signal sent the moment the 25th batch is taken can leave the main thread blocked
        # in IteratorGetNext for good (seen on this and the previous release, 3 runs in 5):
        # a known bug, not this test's subject. 1.5 s in, the run is reliably interruptible.
        time.sleep(1.5)
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
        assert data["pipeline"]["reason"]["code"] == "bench-interrupted"


FINALIZER_SCRIPT = """
import signal

class Finalizer:
    def __del__(self):
        signal.raise_signal(signal.{name})
        sum(range(1000))  # the interrupt is raised here, inside the finalizer

import time
Finalizer()
deadline = time.monotonic() + 20  # a training loop that goes on
while time.monotonic() < deadline:
    time.sleep(0.001)
print("ran to the end", flush=True)
"""


@pytest.mark.parametrize(("name", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_an_interrupt_a_finalizer_swallows_still_stops_the_run(
    tmp_path: Path, name: str, code: int
) -> None:
    """Python drops a KeyboardInterrupt raised in `__del__`; pipediag raises it again."""
    script = tmp_path / "train.py"
    script.write_text(FINALIZER_SCRIPT.replace("{name}", name))
    result = run_pipediag("run", "--out", str(tmp_path / "out"), str(script), cwd=tmp_path)
    assert result.returncode == code, result.stderr
    assert "ran to the end" not in result.stdout
    assert "Exception ignored" not in result.stderr
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert data["stop_reason"] == "interrupted" and data["exit"]["code"] == code


def test_a_script_that_catches_its_interrupt_keeps_it(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import signal\n"
        "try:\n"
        "    signal.raise_signal(signal.SIGINT)\n"
        "    sum(range(1000))\n"
        "except KeyboardInterrupt:\n"
        "    print('caught it, saving', flush=True)\n"
    )
    result = run_pipediag("run", "--out", str(tmp_path / "out"), str(script), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "caught it, saving" in result.stdout
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert data["stop_reason"] == "script-finished"
