"""A long real run: `pipediag run --steps all` over 25,000 short steps (more than the
20,000 records it keeps, so they are merged) keeps its records bounded and every step
counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import run_pipediag
from train_step import TRAIN_STEP


@pytest.mark.tensorflow
def test_steps_all_on_25000_short_steps(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        TRAIN_STEP + "import tensorflow as tf\n"
        "for batch in tf.data.Dataset.range(25_000):\n"
        "    train_step(batch)\n"
        "print('done')\n"
    )
    run = run_pipediag(
        "run",
        "--steps",
        "all",
        "--bench-seconds",
        "0.5",
        "--out",
        str(tmp_path / "out"),
        str(script),
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "done" in run.stdout
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    steps = data["train"]["steps"]
    assert len(steps) <= 20_000
    # every pull but the first two (before a train step was seen between pulls) is a step's
    # end, the end-of-data pull closing the last
    assert sum(s["count"] for s in steps) == 25_000 - 2
    assert data["complete"] and data["stop_reason"] == "script-finished"
    assert data["host"]["process_rss_bytes_max"] > 0
    assert any("merged in pairs" in note for note in data["notes"])
