"""GPU present vs absent through a whole `diagnose` run, with a fake NVML as `pynvml`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fake_nvml import FakeGpu, FakeNvml, constant

import pipediag
from pipediag.renderers.text import render_text
from pipediag.report.reasons import Reason

CONFIG = pipediag.RunConfig(bench=False)
SCRIPT = "import time\ntime.sleep(0.6)\nprint('trained')\n"


def _run(tmp_path: Path) -> pipediag.Report:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    return pipediag.diagnose(script, config=CONFIG, out=tmp_path / "out", log=None)


def test_gpu_found_is_sampled_and_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN NVML that finds one busy GPU
    fake = FakeNvml([FakeGpu(name="NVIDIA H200", utilization=constant(80.0))])
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    # WHEN a script runs under pipediag
    report = _run(tmp_path)
    # THEN the GPU section holds its samples, on the run's clock
    gpu = report.gpu
    assert gpu.available and gpu.reason is None
    assert [d.name for d in gpu.devices] == ["NVIDIA H200"]
    assert gpu.samples and all(0 <= s.t_s <= report.wall_time_s + 1 for s in gpu.samples)
    assert gpu.gpu_util_pct_mean == pytest.approx(80.0)
    assert report.environment.gpus == ["NVIDIA H200"]
    assert "NVIDIA H200: mean utilization 80%" in render_text(report)
    assert fake.calls["nvmlShutdown"] == 1


def test_no_gpu_says_why_and_uses_host_timing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(library_missing=True))
    report = _run(tmp_path)
    assert not report.gpu.available
    assert report.gpu.reason == Reason("nvml-library-not-found")
    assert report.environment.gpu_reason == report.gpu.reason
    assert "Verdict from host timing alone" in render_text(report)
    assert report.host.available and report.host.samples


def test_nvml_with_no_devices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(gpus=[]))
    report = _run(tmp_path)
    assert not report.gpu.available
    assert report.gpu.reason == Reason("nvml-no-gpu")
