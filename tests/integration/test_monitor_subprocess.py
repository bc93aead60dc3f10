"""The framework-neutral API in a fresh interpreter (importing it and a whole run leave
TensorFlow out), and the device check's result file, stamped with the git commit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from benchmark_files import load_device_check
from synthetic_reports import synthetic_report

from pipediag.analysis.enrich import enrich_report

"""A slow loader's or a slow step's time: 200x the fast side, a margin no scheduler erases."""


# -- import isolation -------------------------------------------------------------------------


def test_import_and_a_whole_run_leave_tensorflow_out() -> None:
    code = (
        "import sys, pipediag, pipediag.monitor\n"
        "from pipediag.monitor import monitor\n"
        "assert 'tensorflow' not in sys.modules, 'import'\n"
        "with monitor(out=None, log=None) as mon:\n"
        "    for _ in mon.iterate(range(3)):\n"
        "        pass\n"
        "heavy = [m for m in ('tensorflow', 'keras', 'torch', 'jax') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "print(mon.report.train.measured_steps)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"  # 3 steps, all in the default 5-step warm-up


# -- the device check's CPU-side parts (the GPU run needs CUDA: none on CI) -------------------


def test_device_check_compares_pipediag_with_event_timing(tmp_path: Path) -> None:
    # GIVEN a report of 30 ms steps (20 ms waiting, 10 ms computing) on a GPU 33% busy, and
    # CUDA-event timings that say the same
    dc = load_device_check()
    report = enrich_report(synthetic_report(300, with_gpu=True))
    timings = [
        dc.StepTiming(kernel_s=0.01, copy_s=0.0, synced_at_s=s.start_s + s.duration_s)
        for s in report.train.steps
    ]
    # WHEN compared
    result = dc.compare("slow-loader", report, timings)
    # THEN both views agree, per run and per window, and the idle cause is the expected one
    assert result.pipediag_busy == pytest.approx(1 / 3)
    assert result.event_busy == pytest.approx(1 / 3)
    assert result.event_busy_in_windows == pytest.approx(1 / 3, abs=0.02)
    assert result.window_mean_abs_error == pytest.approx(0.0, abs=0.02)
    assert result.dominant_idle_cause == "input-wait" and result.agrees
    # AND a table and JSON come out
    table = dc.format_table([result, dc.compare("fast-loader", report, timings)])
    assert "slow-loader" in table and "yes" in table and "NO" in table
    args = dc.parse_args(["--out", str(tmp_path)])
    path = dc.write_results(tmp_path, dc.results_payload(args, "NVIDIA H200", [result]))
    payload = json.loads(path.read_text())
    assert payload["benchmark"] == "device_check" and "commit" in payload["stamp"]
    assert payload["cases"][0]["agrees"] is True
    assert payload["summary"]["device"] == "NVIDIA H200"
