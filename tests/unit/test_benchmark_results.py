"""Benchmark results without writing one: the raw figures kept out of the results folder, the
machine's description, spreads, every script's argument parsing, and the committed result
files' shape. Writing a result stamps it with the git commit (a child process): those tests
are in tests/integration/test_benchmark_results_git.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from benchmark_files import check_shape

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from fake_nvml import FakeGpu, FakeNvml  # noqa: E402

from benchmarks import _common as common  # noqa: E402
from benchmarks import (  # noqa: E402
    accuracy,
    fix_efficacy,
    input_cost_truth,
    input_wait_accuracy,
    observer_effect,
    overhead,
    overhead_blocks,
    prescription,
    step_alone_path,
    time_to_verdict,
)


def test_raw_figures_are_refused_in_the_results_folder(tmp_path: Path) -> None:
    parser = common.base_parser("demo", None)
    common.add_raw_option(parser, "everything")
    assert parser.parse_args(["--raw", str(tmp_path / "x.json.gz")]).raw == tmp_path / "x.json.gz"
    with pytest.raises(SystemExit):
        parser.parse_args(["--raw", str(common.RESULTS_DIR / "x.json.gz")])
    with pytest.raises(ValueError, match="not kept in benchmarks/results"):
        common.write_results(
            tmp_path / "r.json",
            "demo",
            settings={},
            summary={},
            cases=[],
            quick=False,
            raw=[1],
            raw_to=common.RESULTS_DIR / "raw.json.gz",
        )


def test_gpu_name_from_nvml() -> None:
    assert common.gpu_info(FakeNvml([FakeGpu(name="NVIDIA H200")] * 2)) == {
        "gpu": "NVIDIA H200",
        "gpu_count": 2,
    }
    assert common.gpu_info(FakeNvml([])) == {"gpu": None, "gpu_count": 0}
    assert common.gpu_info(FakeNvml(library_missing=True)) == {"gpu": None, "gpu_count": 0}


def test_cpu_model_from_cpuinfo(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Xeon X\n")
    assert common.cpu_model(cpuinfo) == "Xeon X"
    assert common.cpu_model(tmp_path / "missing") is None


def test_spread_summary_keeps_the_extremes() -> None:
    assert common.spread_summary([3.0, 1.0, 2.0]) == {
        "n": 3,
        "median": 2.0,
        "q1": 1.5,
        "q3": 2.5,
        "min": 1.0,
        "max": 3.0,
    }


# --- every script's parser and writer path, measurements made up -----------------------------
@pytest.mark.parametrize(
    "module",
    [
        accuracy,
        fix_efficacy,
        input_cost_truth,
        input_wait_accuracy,
        observer_effect,
        overhead,
        overhead_blocks,
        prescription,
        step_alone_path,
        time_to_verdict,
    ],
)
def test_every_script_parses_its_arguments(module: Any, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        module.main(["--help"])
    assert exit_info.value.code == 0
    assert "--json" in capsys.readouterr().out


# --- what is committed ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "path", sorted(common.RESULTS_DIR.glob("*.json")), ids=lambda path: path.name
)
def test_committed_results_have_the_one_shape(path: Path) -> None:
    document = json.loads(path.read_text())
    check_shape(document, document["benchmark"])
    assert document["stamp"]["commit"] and document["stamp"]["tensorflow"]
