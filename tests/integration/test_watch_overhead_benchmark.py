"""The watch-mode overhead benchmark's arithmetic, on made-up blocks of known cost."""

from __future__ import annotations

import contextlib
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


def test_the_goal_reads_the_upper_end_of_the_summed_costs_interval() -> None:
    assert watch_overhead.goal({"mean": 0.004, "ci95": [0.003, 0.005]}) == "met"
    assert watch_overhead.goal({"mean": 0.008, "ci95": [0.005, 0.012]}).startswith("not resolved")
    assert watch_overhead.goal({"mean": 0.02, "ci95": [0.015, 0.025]}) == "NOT met"
    assert watch_overhead.goal({"mean": 0.0, "ci95": None}).startswith("not resolved")


def test_the_cross_check_asks_whether_whole_blocks_hold_the_summed_cost() -> None:
    share = {"mean": 0.005, "ci95": [0.004, 0.006]}
    # CPU per step: watch/off should be 1.005; throughput: 1/1.005 = 0.995
    cross_check = watch_overhead.cross_check
    assert cross_check({"median": 1.0, "ci95": [0.99, 1.02]}, share, higher_is_worse=True) == (
        "agrees"
    )
    assert cross_check({"median": 0.97, "ci95": [0.96, 0.98]}, share, higher_is_worse=True) == (
        "DISAGREES"
    )
    assert cross_check({"median": 0.99, "ci95": [0.98, 0.999]}, share, higher_is_worse=False) == (
        "agrees"
    )
    assert cross_check({"median": 1.01, "ci95": [1.001, 1.02]}, share, higher_is_worse=False) == (
        "DISAGREES"
    )
    assert cross_check({"median": 1.0, "ci95": None}, share, higher_is_worse=True) == "-"


def test_main_sums_the_pieces_of_a_known_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    state = {"watching": False, "threads_ns": 0}

    class Trainer:
        """A pull takes 100 us in the fetch and 2 us around it, 7 us more when watched;
        pipediag's threads spend 3 us a step; watched blocks are 2% slower as a whole."""

        def __init__(self, case: Any, model: Any, clock: Any) -> None:
            self.clock = clock

        def warm_up(self) -> None:
            pass

        def run_steps(self, steps: int) -> None:
            pass

        def block(self, settle: int, steps: int) -> dict[str, float]:
            watched = state["watching"]
            pulls = settle + steps
            self.clock.outer_s += pulls * (102e-6 + (7e-6 if watched else 0.0))
            self.clock.inner_s += pulls * 100e-6
            if watched:
                state["threads_ns"] += pulls * 3_000
            return {
                "wall_s": 0.002 * (1.02 if watched else 1.0),
                "main_cpu_s": 0.001,
                "process_cpu_s": 0.003 * (1.005 if watched else 1.0),
            }

        def close(self) -> None:
            pass

    class Session:
        watcher = SimpleNamespace(section=lambda: SimpleNamespace(windows=[1]))

        def start(self) -> None:
            state["watching"] = True

        def stop(self, *_: Any) -> Any:
            state["watching"] = False
            return SimpleNamespace(watch=SimpleNamespace(windows=[1, 2]))

    keras = SimpleNamespace(utils=SimpleNamespace(set_random_seed=lambda seed: None))
    monkeypatch.setitem(sys.modules, "keras", keras)
    monkeypatch.setattr(watch_overhead, "TimedLoopTrainer", Trainer)
    monkeypatch.setattr(watch_overhead, "watch_session", lambda *_: Session())
    monkeypatch.setattr(watch_overhead, "timed_hooks", lambda clock: contextlib.nullcontext())
    monkeypatch.setattr(watch_overhead, "timer_cost_s", lambda: 0.0)
    monkeypatch.setattr(watch_overhead, "thread_cpu_ns", lambda: {1: state["threads_ns"]})
    monkeypatch.setattr(
        watch_overhead, "load_case", lambda name: SimpleNamespace(make_model=lambda: None)
    )
    out = tmp_path / "watch.json"
    assert watch_overhead.main(["--style", "loop", "--pairs", "10", "--json", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["benchmark"] == "watch_overhead"
    (case,) = document["cases"]
    parts = case["components"]
    assert parts["hook_us"]["mean"] == pytest.approx(7.0)
    assert parts["pipediag_threads_us"]["mean"] == pytest.approx(3.0)
    assert parts["stamp_stages_us"] is None  # a custom loop has no batch stamps
    assert parts["total_us"]["mean"] == pytest.approx(10.0)
    assert parts["of_process_cpu"]["mean"] == pytest.approx(10.0 / 3000.0)
    assert parts["of_step_time"]["mean"] == pytest.approx(10.0 / 2000.0)
    assert case["throughput_ratio"]["median"] == pytest.approx(1 / 1.02)
    assert case["process_cpu_ratio"]["median"] == pytest.approx(1.005)
    assert case["windows_per_block"] == 2
    goals = document["summary"]["goals"]["loop"]
    assert goals["cpu_per_step"] == "met"
    assert goals["throughput"] == "met"
    # The whole blocks say 2% slower: more than the pieces add up to, and said so.
    assert goals["whole_blocks_throughput"] == "DISAGREES"
    assert "What watch mode adds per step" in capsys.readouterr().out
