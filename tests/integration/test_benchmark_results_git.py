"""Benchmark results as written: one writer, one shape, a stamp with the git commit (read by a
child `git`), summaries instead of raw arrays.

Every benchmark script's writer path runs here with its measuring functions replaced by
made-up figures, so nothing trains and TensorFlow is not imported.
"""

from __future__ import annotations

import gzip
import importlib.metadata
import json
import platform
import re
import sys
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from benchmark_files import check_shape

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


from benchmarks import _common as common  # noqa: E402
from benchmarks import (  # noqa: E402
    accuracy,
    fix_efficacy,
    input_cost_truth,
    input_wait_accuracy,
    overhead,
    overhead_blocks,
    time_to_verdict,
)
from pipediag.config import DEFAULT_HOST_INTERVAL_S  # noqa: E402


def _written(path: Path, name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text())
    check_shape(document, name)
    return document


def _raw(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as raw_file:
        document: dict[str, Any] = json.load(raw_file)
    return document


# --- the writer and the stamp ---------------------------------------------------------------
def test_the_writer_stamps_code_versions_and_machine(tmp_path: Path) -> None:
    # GIVEN a benchmark's settings, summary and cases
    path = tmp_path / "demo.json"
    # WHEN written through the shared writer
    common.write_results(
        path,
        "demo",
        settings={"steps": 3},
        summary={"ratio": 0.99},
        cases=[{"case": "a", "rate": common.spread_summary([1.0, 2.0, 3.0])}],
        quick=True,
    )
    # THEN the document has the one shape, and the stamp says what ran where
    document = _written(path, "demo")
    assert document["quick"] is True
    assert document["summary"] == {"ratio": 0.99}
    stamp = document["stamp"]
    assert stamp["commit"] is None or re.fullmatch(r"[0-9a-f]{40}", stamp["commit"])
    assert stamp["dirty"] in (True, False, None)
    assert stamp["tensorflow"] == _installed("tensorflow")
    assert stamp["keras"] == _installed("keras")
    assert stamp["python"] == platform.python_version()
    assert stamp["machine"]["cpu_count"] >= 1
    assert datetime.fromisoformat(stamp["time"]).utcoffset() is not None  # UTC, stated


def _installed(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def test_the_commit_is_head_in_a_git_checkout() -> None:
    commit, dirty = common.git_state()
    if commit is None:
        pytest.skip("not a git checkout (or no git)")
    assert re.fullmatch(r"[0-9a-f]{40}", commit)
    assert isinstance(dirty, bool)


def test_raw_figures_go_only_where_asked(tmp_path: Path) -> None:
    # GIVEN rows with a raw array each
    rows = [{"case": "a", "waits_ms": [1.0] * 50, "median_ms": 1.0}]
    kept, raw = common.split_raw(rows, ["waits_ms"], ["case"])
    # THEN the rows keep their summary, the raw part keeps the arrays and the row's id
    assert kept == [{"case": "a", "median_ms": 1.0}]
    assert raw == [{"case": "a", "waits_ms": [1.0] * 50}]
    # WHEN written with --raw's path
    common.write_results(
        tmp_path / "r.json",
        "demo",
        settings={},
        summary={},
        cases=kept,
        quick=False,
        raw=raw,
        raw_to=tmp_path / "raw.json.gz",
    )
    # THEN the arrays are in the gzipped file, with the same stamp, and not in the results
    raw_document = _raw(tmp_path / "raw.json.gz")
    assert raw_document["raw"] == raw
    assert raw_document["stamp"] == _written(tmp_path / "r.json", "demo")["stamp"]


def test_accuracy_writes_its_cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def run_case(case: str, **_: Any) -> dict[str, Any]:
        return {
            "case": case,
            "style": "keras-fit",
            "truth": common.INPUT_BOUND,
            "truth_by_cost": common.INPUT_BOUND,
            "truth_cost": 0.5,
            "truth_cost_pairs": [0.4, 0.5, 0.6],
            "verdict": common.INPUT_BOUND,
            "input_cost_fraction": 0.45,
            "input_wait_fraction": 0.3,
        }

    monkeypatch.setattr(accuracy, "run_case", run_case)
    out = tmp_path / "accuracy.json"
    args = ["--cases", "balanced_fit,fetch_loop", "--spread-runs", "0", "--json", str(out)]
    assert accuracy.main(args) == 0
    document = _written(out, "accuracy")
    assert [c["case"] for c in document["cases"]] == ["balanced_fit", "fetch_loop"]
    assert document["summary"]["cost_verdicts_right"] == 2
    assert document["summary"]["cost_median_abs_error"] == pytest.approx(0.05)


def test_fix_efficacy_keeps_run_rates_only_in_raw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    diagnosis = {"case": "seq_random_map_fit", "truth": common.INPUT_BOUND, "suggestions": ["x"]}
    monkeypatch.setattr(fix_efficacy, "load_diagnoses", lambda *_, **__: [diagnosis])
    rates = {"baseline": [10.0, 11.0, 12.0], "tuned": [20.0, 21.0, 22.0], "fixed": [15.0] * 3}

    def evaluate(d: dict[str, Any], **_: Any) -> dict[str, Any]:
        return {
            "case": d["case"],
            "top_suggestion": "PD001-sequential-map",
            "fix_applied": "parallel-map",
            "rates_steps_per_s": rates,
            "rate_spread_steps_per_s": {k: common.spread_summary(v) for k, v in rates.items()},
            "median_steps_per_s": {"baseline": 11.0, "tuned": 21.0, "fixed": 15.0},
            "tuned_speedup": 21 / 11,
            "fixed_speedup": 15 / 11,
            "fixed_fraction_of_tuned": 15 / 21,
            "predicted_speedup": 1.3,
            "predicted_kind": "end-to-end",
            "prediction_error": 1.3 / (15 / 11) - 1,
        }

    monkeypatch.setattr(fix_efficacy, "evaluate", evaluate)
    out, raw = tmp_path / "fix.json", tmp_path / "fix-raw.json.gz"
    assert fix_efficacy.main(["--json", str(out), "--raw", str(raw)]) == 0
    case = _written(out, "fix_efficacy")["cases"][0]
    assert "rates_steps_per_s" not in case
    assert case["rate_spread_steps_per_s"]["baseline"]["max"] == 12.0
    assert _raw(raw)["raw"] == [{"case": "seq_random_map_fit", "rates_steps_per_s": rates}]


def test_input_wait_accuracy_keeps_step_waits_only_in_raw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def diagnose_one(style: str, delay_ms: float, steps: int) -> dict[str, Any]:
        waits_s = [delay_ms / 1000 + 0.0005] * steps
        return {
            "style": style,
            "delay_ms": delay_ms,
            "source": "batch-stamps",
            "complete": True,
            "waits_ms": [w * 1000 for w in waits_s],
            "wait_ms": common.spread_summary([w * 1000 for w in waits_s]),
            **input_wait_accuracy.error_stats(waits_s, delay_ms / 1000),
        }

    monkeypatch.setattr(input_wait_accuracy, "diagnose_one", diagnose_one)
    out, raw = tmp_path / "wait.json", tmp_path / "wait-raw.json.gz"
    assert input_wait_accuracy.main(["--quick", "--json", str(out), "--raw", str(raw)]) == 0
    document = _written(out, "input_wait_accuracy")
    assert document["summary"]["fit"]["median_abs_error_ms"] == pytest.approx(0.5)
    assert all("waits_ms" not in case for case in document["cases"])
    assert len(_raw(raw)["raw"][0]["waits_ms"]) == input_wait_accuracy.QUICK_MEASURED_STEPS


def test_input_cost_truth_writes_spreads_and_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run_case(case: str, **_: Any) -> dict[str, Any]:
        return {"case": case, "training_steps_per_s": 30.0, "compute_alone_steps_per_s": 50.0}

    monkeypatch.setattr(input_cost_truth, "run_case", run_case)
    out = tmp_path / "truth.json"
    argv = ["--cases", "fetch_loop", "--runs", "2", "--json", str(out)]
    assert input_cost_truth.main(argv) == 0
    document = _written(out, "input_cost_truth")
    assert document["summary"]["fetch_loop"]["training_steps_per_s"]["n"] == 2
    assert len(document["cases"]) == 2


def test_overhead_writes_blocks_and_whole_runs_as_cases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    block = {
        "case": "benchmarks/cases/py_function_decode_loop.py",
        "style": "loop",
        "pairs": 6,
        "off_step_ms": 1.6,
        "delta_main_cpu_us": 9.0,
        "delta_process_cpu_us": 20.0,
        "throughput_ratio": common.ratio_summary([0.99] * 6),
        "noise_floor_ratio": common.ratio_summary([1.0] * 5),
        "arms": [],
    }
    monkeypatch.setattr(overhead, "run_blocks", lambda style, pairs: {**block, "style": style})
    rates = iter([100.0, 98.0] * 20)
    monkeypatch.setattr(overhead, "one_run", lambda *_, **__: next(rates))
    out, raw = tmp_path / "overhead.json", tmp_path / "overhead-raw.json.gz"
    assert overhead.main(["--quick", "--json", str(out), "--raw", str(raw)]) == 0
    document = _written(out, "overhead")
    kinds = [(c["kind"], c.get("style") or c.get("phase")) for c in document["cases"]]
    assert kinds[:2] == [("blocks", "loop"), ("blocks", "fit")]
    assert [kind for kind, _ in kinds[2:]] == ["whole-runs", "whole-runs"]
    assert document["summary"]["goals"]["loop"]["goal"] == "met"  # at most 1% at 95%
    assert document["summary"]["goals"]["loop"]["monitoring_cost_at_most"] == pytest.approx(0.01)
    whole = document["cases"][2]
    assert "ratios" not in whole and whole["with"]["median"] == 98.0
    assert [sorted(r) for r in _raw(raw)["raw"]] == [
        ["phase", "ratios", "with_steps_per_s", "without_steps_per_s"]
    ] * 2


def test_overhead_blocks_writes_arm_spreads_and_raw_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[frozenset[str]] = []

    class Trainer:
        """Blocks of made-up costs: an "on" block is 2% slower."""

        def __init__(self, case: Any, model: Any, fixes: frozenset[str], eager: bool) -> None:
            self.blocks = 0
            built.append(fixes)
            assert not eager  # a compiled step unless --eager

        def warm_up(self) -> None:
            pass

        def block(self, settle: int, steps: int) -> dict[str, float]:
            self.blocks += 1
            wall = 0.002 * (1.02 if self.blocks % 4 in (2, 3) else 1.0)
            return {"wall_s": wall, "main_cpu_s": 0.001, "process_cpu_s": 0.003}

        def close(self) -> None:
            pass

    class Session:
        """Stands in for a diagnostic session: starts, stops, and has recorded a step."""

        timeline = [object()]

        def __init__(self, *_: Any, **__: Any) -> None:
            pass

        def start(self) -> None:
            pass

        def stop(self, *_: Any) -> None:
            pass

    keras = SimpleNamespace(utils=SimpleNamespace(set_random_seed=lambda seed: None))
    monkeypatch.setitem(sys.modules, "keras", keras)
    monkeypatch.setattr("pipediag.session.DiagnosticSession", Session)
    monkeypatch.setattr(overhead_blocks, "LoopTrainer", Trainer)
    monkeypatch.setattr(
        overhead_blocks, "load_case", lambda name: SimpleNamespace(make_model=lambda: None)
    )
    out, raw = tmp_path / "blocks.json", tmp_path / "blocks-raw.json.gz"
    argv = ["--pairs", "8", "--json", str(out), "--raw", str(raw), "--plain"]
    assert overhead_blocks.main(argv) == 0
    document = _written(out, "overhead_blocks")
    assert document["settings"]["pairs"] == 8 and document["settings"]["style"] == "loop"
    # the case as written, not its tuned variant, and the host sampled at its default rate
    assert built == [frozenset()] and document["settings"]["variant"] == "plain"
    assert document["settings"]["host_interval_s"] == pytest.approx(DEFAULT_HOST_INTERVAL_S)
    assert document["summary"]["throughput_ratio"]["median"] == pytest.approx(1 / 1.02)
    arms = {arm["arm"]: arm for arm in document["cases"]}
    assert arms["on"]["wall_ms"]["median"] == pytest.approx(2.04)
    assert arms["off"]["blocks"] == 8
    assert len(_raw(raw)["raw"]["blocks"]) == 16


def test_time_to_verdict_writes_goals_and_cases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time_to_verdict, "plain_run", lambda case: {"wall_s": 10.0})

    def pipediag_run(case: Any) -> dict[str, Any]:
        return {
            "wall_s": 12.0 if "input" in case.name else 14.0,
            "first_verdict_s": 6.0,
            "to_verdict_s": 3.0,
            "phases_s": dict.fromkeys(time_to_verdict.PHASES, 1.0),
            "startup_other_s": 6.0,
            "idle_s": 0.0,
            "verdict": common.INPUT_BOUND,
        }

    monkeypatch.setattr(time_to_verdict, "pipediag_run", pipediag_run)
    out = tmp_path / "ttv.json"
    assert time_to_verdict.main(["--runs", "1", "--json", str(out)]) == 0
    summary = _written(out, "time_to_verdict")["summary"]
    assert summary["cases"] == 4
    assert summary["ratio_goal_met"] == 1  # 1.2x for the input-bound example, 1.4x elsewhere
    assert summary["to_verdict_goal_met"] == 4
    assert summary["worst_ratio"] == pytest.approx(1.4)
