"""The overhead benchmark's arithmetic: pairs of blocks, the noise floor and the goal verdict.

Nothing here trains: the block costs are made up, with an effect of known size.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks import overhead, overhead_blocks  # noqa: E402
from benchmarks._common import abba_order  # noqa: E402


def _blocks(pairs: int, on_extra_s: float) -> list[tuple[bool, dict[str, float]]]:
    """ABBA blocks on a machine that drifts slowly; monitoring adds `on_extra_s` per step
    of wall time and of main-thread CPU."""
    blocks = []
    for pair in range(pairs):
        for monitored in abba_order(pair):
            drift = 1.0 + 0.1 * (len(blocks) % 7) / 7  # slow, arm-independent
            extra = on_extra_s if monitored else 0.0
            blocks.append(
                (
                    monitored,
                    {
                        "wall_s": 0.002 * drift + extra,
                        "main_cpu_s": 0.0008 + extra,
                        "process_cpu_s": 0.003 + extra,
                    },
                )
            )
    return blocks


def test_summary_finds_a_known_per_step_cost() -> None:
    # GIVEN monitoring that adds 40 us to each 2 ms step
    summary = overhead_blocks.summarize(_blocks(40, on_extra_s=40e-6))
    # THEN the extra CPU per step is found exactly, and throughput falls by about 2%
    assert summary["pairs"] == 40
    assert summary["delta_main_cpu_us"] == pytest.approx(40.0)
    assert summary["delta_process_cpu_us"] == pytest.approx(40.0)
    assert summary["throughput_ratio"]["median"] == pytest.approx(0.98, abs=0.005)
    # AND blocks of one arm side by side differ only by the drift: the noise floor sits at 1
    assert summary["noise_floor_ratio"]["median"] == pytest.approx(1.0, abs=0.02)


def test_goal_verdict_reads_the_interval() -> None:
    # A cost whose whole 95% interval is under 2% meets the goal
    assert overhead.goal_verdict({"median": 0.995, "ci95": [0.985, 1.004]})[0] == "met"
    # A small median whose interval reaches past 2% is not resolved, not "met"
    verdict, worst = overhead.goal_verdict({"median": 0.99, "ci95": [0.96, 1.01]})
    assert verdict.startswith("not resolved")
    assert worst == pytest.approx(0.04)
    # A median cost of 5% fails outright
    assert overhead.goal_verdict({"median": 0.95, "ci95": [0.93, 0.97]})[0] == "NOT met"
    assert overhead.goal_verdict({"median": 1.0, "ci95": None})[0].startswith("not resolved")
