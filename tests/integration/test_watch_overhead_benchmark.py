"""The watch-mode overhead benchmark's arithmetic, on made-up blocks of known cost."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks import watch_overhead  # noqa: E402


def test_the_goal_reads_the_interval_in_the_direction_that_costs() -> None:
    # throughput: lower is worse; CPU per step: higher is worse
    assert (
        watch_overhead.goal({"median": 0.997, "ci95": [0.992, 1.003]}, higher_is_worse=False)
        == "met"
    )
    assert (
        watch_overhead.goal({"median": 1.004, "ci95": [0.998, 1.008]}, higher_is_worse=True)
        == "met"
    )
    assert watch_overhead.goal(
        {"median": 1.004, "ci95": [0.998, 1.02]}, higher_is_worse=True
    ).startswith("not resolved")
    assert watch_overhead.goal({"median": 0.97, "ci95": [0.96, 0.98]}, higher_is_worse=False) == (
        "NOT met"
    )
    assert watch_overhead.goal({"median": 1.0, "ci95": None}, higher_is_worse=True).startswith(
        "not resolved"
    )


def test_main_writes_both_ratios_for_a_known_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class Trainer:
        """Watched blocks (2nd and 3rd of each 4, ABBA) are 2% slower and use 0.5% more CPU."""

        def __init__(self, case: Any, model: Any) -> None:
            self.blocks = 0

        def warm_up(self) -> None:
            pass

        def block(self, settle: int, steps: int) -> dict[str, float]:
            self.blocks += 1
            watched = self.blocks % 4 in (2, 3)
            return {
                "wall_s": 0.002 * (1.02 if watched else 1.0),
                "main_cpu_s": 0.001,
                "process_cpu_s": 0.003 * (1.005 if watched else 1.0),
            }

        def close(self) -> None:
            pass

    class Session:
        def start(self) -> None:
            pass

        def stop(self, *_: Any) -> Any:
            return SimpleNamespace(watch=SimpleNamespace(windows=[1, 2]))

    keras = SimpleNamespace(utils=SimpleNamespace(set_random_seed=lambda seed: None))
    monkeypatch.setitem(sys.modules, "keras", keras)
    monkeypatch.setattr(watch_overhead, "LoopTrainer", Trainer)
    monkeypatch.setattr(watch_overhead, "watch_session", lambda *_: Session())
    monkeypatch.setattr(
        watch_overhead, "load_case", lambda name: SimpleNamespace(make_model=lambda: None)
    )
    out = tmp_path / "watch.json"
    assert watch_overhead.main(["--style", "loop", "--pairs", "10", "--json", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["benchmark"] == "watch_overhead"
    (case,) = document["cases"]
    assert case["throughput_ratio"]["median"] == pytest.approx(1 / 1.02)
    assert case["process_cpu_ratio"]["median"] == pytest.approx(1.005)
    assert case["windows_per_block"] == 2
    goals = document["summary"]["goals"]["loop"]
    assert goals["throughput"] == "NOT met"
    assert goals["cpu_per_step"] == "met"
    assert "CPU per step watch/off" in capsys.readouterr().out
