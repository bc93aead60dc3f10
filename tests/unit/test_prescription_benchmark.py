"""The prescription benchmark's pure parts: claims read from a report, truths from variants
trained in turn with the baseline, and the goals judged; nothing runs a case or imports
TensorFlow."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks import _common as common  # noqa: E402
from benchmarks import prescription as bench  # noqa: E402

sys.path.insert(0, str(REPO_ROOT / "benchmarks" / "cases"))
import _alternate as alternate  # noqa: E402

INFO = common.CaseInfo(
    name="shuffled_map_loop",
    path=Path("shuffled_map_loop.py"),
    style="custom-loop",
    intended="input-bound",
    bottleneck="per-element map",
    expected_suggestion="PD004",
    fixes={"PD004": "vectorize", "PD005": "cache"},
    doc="",
)


def _report(top_id: str = "PD016-rewritten-pipeline", top_fix: str | None = None) -> Any:
    return {
        "verdict": {"label": "input-bound"},
        "pipeline": {
            "stages": [
                {"index": 0, "kind": "tensor-slices", "training_speedup_if_free": None},
                {"index": 1, "kind": "map", "training_speedup_if_free": 1.1},
                {
                    "index": 2,
                    "kind": "batch",
                    "training_speedup_if_free": 2.5,
                    "training_cost_jump": True,
                },
            ],
            "prescription": {
                "tried": [
                    {"fix": "vectorize", "stage": "map", "training_speedup": 2.0, "kept": True},
                    {"fix": "cache", "stage": "map", "training_speedup": 1.2, "kept": True},
                    {"fix": "prefetch-end", "training_speedup": 1.0, "kept": False},
                ],
                "training_speedup": 2.3,
            },
        },
        "suggestions": [
            {"id": top_id, "fix": top_fix, "gain": {"basis": "training", "speedup": 2.2}},
            {"id": "PD016-rewritten-pipeline", "gain": {"basis": "training", "speedup": 2.2}},
        ],
        "phases": [
            {"name": "deep_analysis", "start_s": 1.0, "duration_s": 9.0},
            {"name": "training_trial", "start_s": 10.0, "duration_s": 2.0},
            {"name": "training_trial", "start_s": 13.0, "duration_s": 1.5},
        ],
    }


def test_variants_name_their_fixes() -> None:
    assert bench.variant_label(["vectorize", "cache"]) == "cache+vectorize"
    assert bench.variant_label([]) == bench.BASELINE
    assert bench.hand_written(INFO) == ["cache", "tuned", "vectorize"]
    assert bench.variant_for(["vectorize", "prefetch-end"], INFO) is None


def test_claims_take_the_rewritten_pipeline_suggestion_and_the_kept_rewrites() -> None:
    got = bench.claims(_report(), INFO)
    assert got["kept"] == ["vectorize", "cache"]
    assert got["combined_claim"] == 2.2  # the suggestion's, corrected for fit, not 2.3
    assert got["combined_variant"] == "cache+vectorize"
    assert got["top_variant"] == "cache+vectorize"  # the top fix is the rewritten pipeline
    assert got["deep_analysis_s"] == 9.0 and got["training_trial_s"] == 3.5
    assert [s["kind"] for s in got["if_free"]] == ["map", "batch"]
    assert bench.if_free_chain(got["if_free"]) == "map 1.10x -> batch 2.50x*"


def test_a_single_fix_on_top_is_tested_by_its_own_variant() -> None:
    got = bench.claims(_report("PD004-vectorize-map", "vectorize"), INFO)
    assert got["top_variant"] == "vectorize"
    assert bench.claims(_report("PD005-cache-prefix"), INFO)["top_variant"] == "cache"


def test_each_variant_is_set_between_two_baseline_epochs_and_the_order_turns() -> None:
    # GIVEN a host that slows down steadily, epoch after epoch, and two variants that are
    # 2x and 1x the baseline at any moment
    moment = [0]
    order: list[str] = []

    def epoch(label: str, gain: float) -> Any:
        def run() -> float:
            moment[0] += 1
            order.append(label)
            return gain * 100.0 * 0.8 ** moment[0]  # 20% slower each epoch

        return run

    epochs = {"baseline": epoch("baseline", 1.0), "cache": epoch("cache", 2.0)}
    epochs["same"] = epoch("same", 1.0)
    # WHEN they train in turn
    found = alternate.in_turn(epochs, rounds=2)
    # THEN each variant ran between two baseline epochs, in the other order the next round
    assert order == ["baseline", "cache", "baseline", "same", "baseline"] + [
        "baseline",
        "same",
        "baseline",
        "cache",
        "baseline",
    ]
    # and the drift falls on both sides: over the geometric mean of its neighbours, each
    # variant reads its own gain (over either neighbour alone: 1.6x or 2.5x)
    assert found.rounds == 2
    assert found.ratios["cache"] == pytest.approx([2.0, 2.0])
    assert found.ratios["same"] == pytest.approx([1.0, 1.0])
    assert len(found.epoch_rates["baseline"]) == 6


def test_the_alternation_stops_when_its_seconds_are_spent() -> None:
    now = [0.0]

    def tick() -> float:
        now[0] += 1.0
        return 10.0

    found = alternate.in_turn(
        {"baseline": tick, "cache": tick}, rounds=100, max_seconds=5.5, clock=lambda: now[0]
    )
    assert found.rounds == 2  # 3 epochs a round: 3 s, 6 s, then the time is up
    assert found.ratios == {"cache": [1.0, 1.0]}


def test_a_case_is_judged_on_its_claims_and_against_the_best_hand_written() -> None:
    run = {**bench.claims(_report(), INFO), "run_s": 30.0}
    truth = {"vectorize": 2.0, "cache": 1.3, "tuned": 2.4, "cache+vectorize": 2.4}
    row = bench.judge_case(INFO, [run, {"error": "exit 1"}], truth)
    assert row["best_hand_written"] == "tuned"
    assert row["combined_source"] == "whole runs"
    assert row["combined_over_best"] == pytest.approx(1.0)
    assert row["as_fast_as_best"] is True
    assert row["failed_runs"] == ["exit 1"]
    scored = row["runs"][0]
    assert scored["combined_error"] == pytest.approx(2.2 / 2.4 - 1)
    summary = bench.summarise([row])
    assert summary["claims_judged"] == 2
    assert summary["median_abs_claim_error"] == pytest.approx(1 - 2.2 / 2.4)
    assert summary["claim_error_met"] is True
    assert summary["combined_as_fast_as_best"] == 1


def test_a_combination_the_case_cannot_apply_is_judged_on_its_claim() -> None:
    report = _report()
    report["pipeline"]["prescription"]["tried"][2]["kept"] = True
    run = bench.claims(report, INFO)
    assert run["combined_variant"] is None
    row = bench.judge_case(INFO, [run], {"vectorize": 3.0, "tuned": 2.0})
    assert row["combined_source"] == "claim"
    assert row["as_fast_as_best"] is False  # 2.2 claimed against 3.0 measured by hand
    assert bench.summarise([row])["claims_judged"] == 0
