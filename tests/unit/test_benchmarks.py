"""Fast checks of the benchmarks' shared pure helpers: ground truth, statistics, tables.

Nothing here runs a benchmark or imports TensorFlow; the case suite (importing a case imports
TensorFlow) and the child-process helper: tests/integration/test_benchmarks_tf.py.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks import _common as common  # noqa: E402
from benchmarks import _input_cost as cost  # noqa: E402
from benchmarks import accuracy  # noqa: E402


# --- truth bands ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("p", "c", "expected"),
    [
        (50.0, 100.0, common.INPUT_BOUND),  # P/C = 0.5
        (79.0, 100.0, common.INPUT_BOUND),  # just under 0.8
        (80.0, 100.0, common.BALANCED),  # the edge belongs to balanced
        (100.0, 100.0, common.BALANCED),
        (125.0, 100.0, common.BALANCED),
        (126.0, 100.0, common.COMPUTE_BOUND),
        (2000.0, 20.0, common.COMPUTE_BOUND),
        (None, 100.0, common.UNKNOWN),
        (50.0, None, common.UNKNOWN),
        (0.0, 100.0, common.UNKNOWN),
    ],
)
def test_classify_truth(p: float | None, c: float | None, expected: str) -> None:
    assert common.classify_truth(p, c) == expected


def test_truth_ratio_rejects_zero_compute() -> None:
    with pytest.raises(ValueError):
        common.truth_ratio(10.0, 0.0)


def test_near_boundary() -> None:
    assert common.near_boundary(0.75)  # within 10% of 0.8
    assert common.near_boundary(1.3)  # within 10% of 1.25
    assert not common.near_boundary(0.5)
    assert not common.near_boundary(1.0)
    assert not common.near_boundary(3.0)


def test_window_ratio_of_one_steady_segment_is_p_over_c() -> None:
    # 50 batches in 1 s: P = 50/s; C = 100/s
    assert common.window_truth_ratio([(50, 1.0)], 100.0) == pytest.approx(0.5)
    # a pipeline faster than the step: plain P/C above 1
    assert common.window_truth_ratio([(300, 1.0)], 100.0) == pytest.approx(3.0)


def test_window_ratio_weights_epochs_by_time() -> None:
    # GIVEN epoch 1: 20 batches at 50 ms (P=20/s), epoch 2: 40 batches at 1 ms; C = 100/s
    segments = [(20, 1.0), (40, 0.04)]
    # WHEN the overlap rule is applied per epoch
    ratio = common.window_truth_ratio(segments, 100.0)
    # THEN waits: 20 x 40 ms = 0.8 s of 20 x 50 ms + 40 x 10 ms = 1.4 s -> share 0.571
    assert ratio == pytest.approx(1 - 0.8 / 1.4)
    assert common.classify_ratio(ratio) == common.INPUT_BOUND


def test_window_ratio_without_waits_is_the_slowest_segment() -> None:
    assert common.window_truth_ratio([(200, 1.0), (400, 1.0)], 100.0) == pytest.approx(2.0)
    assert common.window_truth_ratio([(0, 0.0)], 100.0) is None


# --- input cost truth (1 - A/T) ---------------------------------------------------------------
def test_input_cost_is_one_minus_training_over_compute_alone() -> None:
    assert cost.input_cost(60.0, 100.0) == pytest.approx(0.4)
    # noise can make training a little faster than the step alone: the sign is kept
    assert cost.input_cost(103.0, 100.0) == pytest.approx(-0.03)
    assert cost.input_cost(None, 100.0) is None
    assert cost.input_cost(60.0, None) is None
    assert cost.input_cost(60.0, 0.0) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.45, common.INPUT_BOUND),
        (0.20, common.INPUT_BOUND),  # XProf's 20% edge belongs to input-bound
        (0.199, common.BALANCED),
        (0.05, common.BALANCED),
        (0.049, common.COMPUTE_BOUND),
        (-0.03, common.COMPUTE_BOUND),
        (None, common.UNKNOWN),
    ],
)
def test_classify_cost_uses_xprof_bands(value: float | None, expected: str) -> None:
    assert cost.classify_cost(value) == expected


def test_step_intervals_leave_epoch_boundaries_out() -> None:
    # GIVEN 3 steps in epoch 1 (ends 0.1, 0.2, 0.3), then epoch 2 marked at 1.0 (0.7 s of
    # tear-down after step 3), its steps ending at 1.3 and 1.4
    ends = [0.1, 0.2, 0.3, 1.3, 1.4]
    marks = [(0, 0.0), (3, 1.0)]
    # WHEN the window after step 0 is cut into steps
    intervals = cost.step_intervals(ends, marks, skip=0, count=4)
    # THEN epoch 2's first step keeps its own 0.3 s; the 0.7 s boundary is apart
    assert [i[0] for i in intervals] == [1, 1, 2, 2]
    assert [round(i[1], 6) for i in intervals] == [0.1, 0.1, 0.3, 0.1]
    assert [round(i[2], 6) for i in intervals] == [0.0, 0.0, 0.7, 0.0]
    assert cost.window_rate(intervals) == pytest.approx(4 / 0.6)
    by_epoch = cost.epoch_rates(intervals)
    assert [(e["epoch"], e["steps"]) for e in by_epoch] == [(1, 2), (2, 2)]
    assert by_epoch[0]["steps_per_s"] == pytest.approx(10.0)
    assert by_epoch[1]["steps_per_s"] == pytest.approx(5.0)


def test_step_intervals_skip_the_warmup_and_stop_at_the_window() -> None:
    ends = [0.5, 1.0, 1.1, 1.2, 1.3, 1.4]
    intervals = cost.step_intervals(ends, [(0, 0.0)], skip=2, count=2)
    assert len(intervals) == 2
    assert cost.window_rate(intervals) == pytest.approx(10.0)
    assert cost.window_rate([]) is None


def test_window_is_lengthened_only_for_very_fast_steps() -> None:
    # 60 steps at 100 steps/s last 0.6 s: the diagnosis's window is kept
    assert cost.window_steps(60, 100.0, 0.5) == 60
    # 60 steps at 2,000 steps/s last 30 ms: lengthened to 0.5 s at that rate
    assert cost.window_steps(60, 2000.0, 0.5) == 1000
    assert cost.window_steps(60, None, 0.5) == 60


def test_fetch_part_splits_the_cost_by_the_pull_alone() -> None:
    # GIVEN a step of 0.4 ms alone, 0.6 ms with a ready pull, 0.8 ms in training
    parts = cost.fetch_part(1 / 0.8e-3, 1 / 0.4e-3, 1 / 0.6e-3)
    assert parts is not None
    fetch, rest = parts
    # THEN of the 0.4 ms lost per 0.8 ms step, the pull is 0.2 (25%), the rest 0.2 (25%)
    assert fetch == pytest.approx(0.25)
    assert rest == pytest.approx(0.25)
    assert fetch + rest == pytest.approx(cost.input_cost(1 / 0.8e-3, 1 / 0.4e-3))
    assert cost.fetch_part(1000.0, 2000.0, None) is None


def test_wait_share_from_get_next_events() -> None:
    # pulls start at 0, 10, 20 ns and wait 2, 2, 5: two whole cycles, 4 ns of 20 waited
    assert cost.wait_share([(20, 5), (0, 2), (10, 2)]) == pytest.approx(0.2)
    # overlapping pulls (replicas pulling together) count once: 0..7 of 10
    assert cost.wait_share([(0, 5), (2, 5), (10, 1)]) == pytest.approx(0.7)
    assert cost.wait_share([(0, 5)]) is None
    assert cost.wait_share([]) is None


def test_median_abs_error_skips_unknowns() -> None:
    pairs = [(0.3, 0.4), (None, 0.2), (0.1, None), (0.5, 0.2), (0.0, 0.05)]
    assert cost.median_abs_error(pairs) == pytest.approx(0.1)
    assert cost.median_abs_error([(None, 0.1)]) is None


def test_combine_averages_side_by_side_runs() -> None:
    # GIVEN T A, A T: the training runs at 50 and 60 steps/s, the step alone at 100 twice
    trainings = [
        {"steps_per_s": 50.0, "epochs": [{"epoch": 1, "steps": 10, "steps_per_s": 40.0}]},
        {"steps_per_s": 60.0, "epochs": [{"epoch": 1, "steps": 12, "steps_per_s": 60.0}]},
    ]
    computes = [{"steps_per_s": 100.0}, {"steps_per_s": 100.0}]
    truth = cost.combine(trainings, computes)
    # THEN the cost is mean A over mean T, and each pair gives its own
    assert truth["training_steps_per_s"] == pytest.approx(55.0)
    assert truth["compute_alone_steps_per_s"] == pytest.approx(100.0)
    assert truth["cost"] == pytest.approx(0.45)
    assert truth["pair_costs"] == [pytest.approx(0.5), pytest.approx(0.4)]
    assert truth["label"] == common.INPUT_BOUND
    assert truth["epochs"] == [
        {"epoch": 1, "steps": 12, "steps_per_s": 50.0, "cost": pytest.approx(0.5)}
    ]


def test_combine_without_rates_is_unknown() -> None:
    truth = cost.combine([{"steps_per_s": None}], [{"steps_per_s": 100.0}])
    assert truth["cost"] is None and truth["label"] == common.UNKNOWN
    assert truth["pair_costs"] == []


def test_phase_cost_weights_epochs_by_time() -> None:
    epochs = [
        {"epoch": 1, "steps": 10, "steps_per_s": 10.0},  # 1 s
        {"epoch": 2, "steps": 20, "steps_per_s": 40.0},  # 0.5 s
        {"epoch": 3, "steps": 20, "steps_per_s": 40.0},  # 0.5 s
    ]
    assert cost.phase_cost(epochs, 2, 3, 50.0) == pytest.approx(0.2)
    assert cost.phase_cost(epochs, 1, 3, 50.0) == pytest.approx(1 - 25.0 / 50.0)
    assert cost.phase_cost(epochs, 4, 5, 50.0) is None


def test_step_timer_marks_epochs() -> None:
    helpers = common.load_case("_case")
    timer = helpers.StepTimer()
    timer.mark_epoch()
    timer.tick()
    timer.tick()
    timer.mark_epoch()
    assert [steps for steps, _ in timer.epoch_marks] == [0, 2]
    assert timer.epoch_marks[1][1] >= timer.ends_s[-1]


def test_the_steady_rate_leaves_each_epoch_boundary_out() -> None:
    helpers = common.load_case("_case")
    # 10-ms steps; the second epoch's mark comes 0.5 s after the 4th step's end
    ends = [0.01, 0.02, 0.03, 0.04, 0.55, 0.56, 0.57]
    marks = [(0, 0.0), (4, 0.54)]
    steady, boundary = helpers.steady_rate_after(ends, marks, 0)
    assert boundary == pytest.approx(0.50)
    assert steady == pytest.approx(6 / 0.06)
    assert helpers.rate_after(ends, 0) == pytest.approx(6 / 0.56)


def test_the_rate_after_the_first_epoch_keeps_later_boundaries_and_leaves_the_first_out() -> None:
    helpers = common.load_case("_case")
    # 10-ms steps; a 1-s stall before the second epoch (a filled cache's first iterator torn
    # down), 0.1 s before the third
    ends = [0.01, 0.02, 1.03, 1.04, 1.15, 1.16]
    marks = [(0, 0.0), (2, 1.02), (4, 1.14)]
    # from the second mark: 4 steps in 0.14 s, the third epoch's boundary in
    assert helpers.rate_after_first_epoch(ends, marks) == pytest.approx(4 / 0.14)
    assert helpers.rate_after_first_epoch(ends, marks[:1]) is None


# --- accuracy.py's input-cost summary -------------------------------------------------------
def _result(case: str, **fields: object) -> dict[str, object]:
    row: dict[str, object] = {
        "case": case,
        "style": "keras-fit",
        "truth": common.COMPUTE_BOUND,
        "verdict": common.INPUT_BOUND,
        "truth_by_cost": common.INPUT_BOUND,
    }
    row.update(fields)
    return row


def test_accuracy_scores_cost_and_wait_against_the_true_cost(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a contention case (little wait, large cost) and a compute-bound one whose true
    # cost came out a little negative (noise, scored as zero)
    results = [
        _result(
            "contention",
            truth_cost=0.40,
            input_cost_fraction=0.35,
            input_wait_fraction=0.02,
            cost_split={"wait": 0.02, "contention": 0.33, "fetch": 0.0, "dominant": "contention"},
        ),
        _result(
            "heavy",
            truth_cost=-0.02,
            truth_by_cost=common.COMPUTE_BOUND,
            verdict=common.COMPUTE_BOUND,
            input_cost_fraction=0.03,
            input_wait_fraction=0.01,
        ),
    ]
    summary = accuracy.summarise_cost(results)
    # THEN the errors are |0.35 - 0.40| and |0.03 - 0| (median of two: their mean), and
    # the wait share is far off where the cost is contention
    assert summary["cost_median_abs_error"] == pytest.approx((0.05 + 0.03) / 2)
    assert summary["wait_median_abs_error_against_cost"] == pytest.approx((0.38 + 0.01) / 2)
    assert (summary["cost_verdicts_right"], summary["cost_verdicts_total"]) == (2, 2)
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("contention "))
    assert row.split()[-3] == "contention"  # the dominant part of the cost is shown


def test_accuracy_summary_handles_missing_pipediag_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN pipediag's new fields not filled yet (None), a failed case, and no phases
    results = [
        _result("a", truth_cost=0.3, input_cost_fraction=None, input_wait_fraction=0.25),
        {"case": "b", "error": "exit 1", "truth": common.UNKNOWN, "verdict": common.UNKNOWN},
    ]
    summary = accuracy.summarise(results)
    assert summary["cost_median_abs_error"] is None
    assert summary["cost_scored_cases"] == 0
    assert summary["wait_median_abs_error_against_cost"] == pytest.approx(0.05)
    assert summary["phases"] == []
    assert "b failed: exit 1" in capsys.readouterr().out


def test_accuracy_compares_phases_with_the_same_epochs() -> None:
    # GIVEN pipediag's phases, epochs numbered from 0, and the truth's, numbered from 1
    epochs = [
        {"epoch": 1, "steps": 15, "steps_per_s": 10.0},
        {"epoch": 2, "steps": 20, "steps_per_s": 49.0},
        {"epoch": 3, "steps": 20, "steps_per_s": 51.0},
    ]
    phases = [
        {"name": "epoch 1", "first_epoch": 0, "last_epoch": 0, "steps": 15,
         "input_cost_fraction": 0.75, "label": common.INPUT_BOUND},
        {"name": "epochs 2-3", "first_epoch": 1, "last_epoch": 2, "steps": 40,
         "input_cost_fraction": 0.0, "label": common.COMPUTE_BOUND},
    ]  # fmt: skip
    rows = accuracy.phase_comparison(
        [
            _result(
                "phases",
                truth_cost_epochs=epochs,
                truth_compute_alone_steps_per_s=50.0,
                phases=phases,
            )
        ]
    )
    assert [row[1] for row in rows] == ["epoch 1", "epochs 2-3"]
    assert rows[0][4] == "80%" and rows[0][6] == common.INPUT_BOUND
    assert rows[1][6] == common.COMPUTE_BOUND


# --- accuracy.py's rounds in alternation and run-to-run spread ------------------------------
def _truth_round(index: int, cost_value: float, **fields: object) -> dict[str, object]:
    row: dict[str, object] = {
        "round": index,
        "case": "c",
        "style": "keras-fit",
        "ratio": 0.5,
        "pipeline_batches_per_s": 10.0,
        "compute_steps_per_s": 20.0,
        "training_steps_per_s": 10.0,
        "compute_alone_steps_per_s": 20.0,
        "cost": cost_value,
        "pair_costs": [cost_value - 0.05, cost_value + 0.05],
        "epochs": [],
    }
    row.update(fields)
    return row


def _run(index: int, cost_value: float | None, **fields: object) -> dict[str, object]:
    row: dict[str, object] = {
        "round": index,
        "case": "c",
        "verdict": common.INPUT_BOUND,
        "input_cost_fraction": cost_value,
        "input_cost_interval": None,
        "top_suggestion": f"PD00{index}",
    }
    row.update(fields)
    return row


def test_a_case_row_takes_the_truths_median_and_the_median_run() -> None:
    # GIVEN three rounds, one of whose truths drifted high, and three diagnoses
    truths = [_truth_round(1, 0.40), _truth_round(2, 0.70), _truth_round(3, 0.42)]
    runs = [_run(1, 0.45), _run(2, 0.38), _run(3, 0.50)]
    row = accuracy.combine_rounds("c", truths, runs)
    # THEN the true cost is the rounds' median, and the headline is the median run's
    assert row["truth_cost"] == pytest.approx(0.42)
    assert row["truth_by_cost"] == common.INPUT_BOUND
    assert row["truth_pair_cost_spread"]["n"] == 6
    assert row["input_cost_fraction"] == 0.45 and row["top_suggestion"] == "PD001"
    assert row["median_round"] == 1 and row["pipediag_costs"] == [0.45, 0.38, 0.50]
    assert "error" not in row and "round_errors" not in row


def test_a_case_row_with_an_even_count_takes_the_lower_middle_run() -> None:
    row = accuracy.combine_rounds(
        "c", [_truth_round(1, 0.1), _truth_round(2, 0.2)], [_run(1, 0.30), _run(2, 0.10)]
    )
    assert row["input_cost_fraction"] == 0.10
    assert row["truth_cost"] == pytest.approx(0.15)


def test_a_case_row_keeps_failed_rounds_apart() -> None:
    # GIVEN a failed truth in round 2 and a failed diagnosis in round 1
    truths = [_truth_round(1, 0.3), {"round": 2, "error": "exit 1: boom"}]
    runs = [{"round": 1, "error": "exit 1: bang"}, _run(2, 0.25)]
    row = accuracy.combine_rounds("c", truths, runs)
    # THEN the row stands on what finished, and says what did not
    assert row["truth_cost"] == pytest.approx(0.3) and row["input_cost_fraction"] == 0.25
    assert row["round_errors"] == ["round 2 truth: exit 1: boom", "round 1 pipediag: exit 1: bang"]
    assert [r["verdict"] for r in accuracy.judged_runs(row)] == [common.INPUT_BOUND]
    # AND a case with no diagnosis at all is a failed case, whose verdict is unknown
    failed = accuracy.combine_rounds("c", truths, [{"round": 1, "error": "exit 1: bang"}])
    assert failed["verdict"] == common.UNKNOWN and "bang" in failed["error"]


def test_every_diagnosis_counts_in_the_confusion_table(capsys: pytest.CaptureFixture[str]) -> None:
    truths = [_truth_round(i, 0.4) for i in (1, 2, 3)]
    runs = [
        _run(1, 0.45),
        _run(2, 0.15, verdict=common.BALANCED),
        _run(3, 0.41, input_cost_interval=[0.38, 0.44]),
    ]
    summary = accuracy.summarise([accuracy.combine_rounds("c", truths, runs)])
    assert (summary["cost_verdicts_right"], summary["cost_verdicts_total"]) == (2, 3)
    assert summary["cost_median_abs_error"] == pytest.approx(0.01)  # the median run, 41%
    assert summary["cost_median_abs_error_runs"] == pytest.approx(0.05)  # 5, 25, 1 points
    assert summary["cost_error_goal_met"] is True
    out = capsys.readouterr().out
    assert "goal <= 5%: PASS" in out
    row = next(line for line in out.splitlines() if line.startswith("c ") and "[38%,44%]" in line)
    assert "1.0%" in row.split()  # |41% - 40%|, beside the median run's interval


def test_the_alternations_wall_time_is_summarised_over_every_run() -> None:
    runs = [
        _run(1, 0.4, compute_alone_duration_s=2.0, alternation_blocks=7, diagnose_wall_s=20.0),
        _run(2, 0.4, compute_alone_duration_s=4.0, alternation_blocks=9, diagnose_wall_s=20.0),
    ]
    row = accuracy.combine_rounds("c", [_truth_round(1, 0.4), _truth_round(2, 0.4)], runs)
    summary = accuracy.summarise_alternation([row])
    assert summary["alternation_duration_s"]["median"] == pytest.approx(3.0)
    assert summary["alternation_blocks"]["median"] == pytest.approx(8.0)
    assert summary["alternation_share_of_wall"]["median"] == pytest.approx(0.15)


@pytest.mark.parametrize(
    ("interval", "expected"),
    [
        ((0.01, 0.04), {0}),
        ((0.03, 0.06), {0, 1}),
        ((0.05, 0.05), {1}),  # the lower edge belongs to the band above
        ((0.02, 0.30), {0, 1, 2}),
        ((0.25, 0.20), {2}),  # either order
    ],
)
def test_an_interval_touches_the_bands_it_reaches(
    interval: tuple[float, float], expected: set[int]
) -> None:
    assert cost.bands_touched(*interval) == expected


def test_runs_agree_when_their_intervals_reach_a_common_band() -> None:
    # GIVEN one run across the 20% edge, one above it and one inside the balanced band
    assert cost.agreeing_runs([(0.15, 0.25), (0.22, 0.28), (0.08, 0.12)]) == [True, False, False]
    # AND points (no intervals): they agree only when in the same band
    assert cost.agreeing_runs([(0.3, 0.3), (0.5, 0.5)]) == [True, True]
    assert cost.agreeing_runs([(0.3, 0.3), (0.1, 0.1)]) == [False, False]


def test_spread_is_set_against_the_mean_interval_width() -> None:
    runs = [
        {"run": 1, "verdict": common.INPUT_BOUND, "input_cost_fraction": 0.30,
         "input_cost_interval": [0.25, 0.35]},
        {"run": 2, "verdict": common.INPUT_BOUND, "input_cost_fraction": 0.36,
         "input_cost_interval": [0.30, 0.42]},
        {"run": 3, "error": "exit 1"},
    ]  # fmt: skip
    spread = accuracy.spread_of("c", runs)
    assert spread["cost_spread"] == pytest.approx(0.06)
    assert spread["mean_interval_width"] == pytest.approx(0.11)
    assert spread["spread_within_interval"] is True
    assert spread["labels_same"] is True and spread["labels_agree"] is True
    assert (spread["runs_agreeing"], spread["runs_judged"]) == (2, 2)


def test_spread_without_intervals_is_not_judged() -> None:
    # GIVEN a pipediag from before the alternation: costs, no intervals
    runs = [
        {"run": 1, "verdict": common.INPUT_BOUND, "input_cost_fraction": 0.22},
        {"run": 2, "verdict": common.BALANCED, "input_cost_fraction": 0.18},
    ]
    spread = accuracy.spread_of("c", runs)
    assert spread["cost_spread"] == pytest.approx(0.04)
    assert spread["mean_interval_width"] is None and spread["spread_within_interval"] is None
    assert spread["labels_same"] is False and spread["labels_agree"] is False


def test_the_diagnosis_gets_epochs_for_its_alternation() -> None:
    assert accuracy.epoch_length_of([64, 1]) == 64
    assert accuracy.epoch_length_of([66]) is None  # the window ended inside epoch 1
    assert accuracy.epochs_for(None, 100) == 2
    assert (
        accuracy.epochs_for(64, 65 + accuracy.ALTERNATION_ALLOWANCE_STEPS)
        == math.ceil((67 + accuracy.ALTERNATION_ALLOWANCE_STEPS) / 64) + 1
    )


# --- statistics -----------------------------------------------------------------------------
def test_quantile_matches_linear_interpolation() -> None:
    values = [4.0, 1.0, 3.0, 2.0]  # unsorted on purpose
    assert common.quantile(values, 0.0) == 1.0
    assert common.quantile(values, 1.0) == 4.0
    assert common.median(values) == pytest.approx(2.5)
    assert common.quantile(values, 0.9) == pytest.approx(3.7)
    assert common.median([7.0]) == 7.0


def test_iqr() -> None:
    values = [float(v) for v in range(1, 10)]  # 1..9
    assert common.iqr(values) == (pytest.approx(3.0), pytest.approx(7.0))
    summary = common.spread_summary(values)
    assert summary == {"n": 9, "median": 5.0, "q1": 3.0, "q3": 7.0, "min": 1.0, "max": 9.0}
    assert common.spread_summary([])["median"] is None


def test_quantile_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        common.quantile([], 0.5)
    with pytest.raises(ValueError):
        common.quantile([1.0], 1.5)


def test_median_ci_uses_the_binomial_order_statistics() -> None:
    # GIVEN 1..n; THEN the ranks of the 95% interval are those of the standard table
    assert common.median_ci([float(v) for v in range(1, 11)]) == (2.0, 9.0)  # n=10: 2nd, 9th
    assert common.median_ci([float(v) for v in range(1, 7)]) == (1.0, 6.0)  # n=6: the extremes
    assert common.median_ci([5.0, 1.0, 3.0, 2.0, 4.0]) is None  # n=5: no 95% interval exists
    # AND the interval narrows as the sample grows (n=150: ranks 63 and 88)
    assert common.median_ci([float(v) for v in range(1, 151)]) == (63.0, 88.0)


def test_same_arm_ratios_pair_neighbours_of_one_arm() -> None:
    # GIVEN runs in ABBA order: A B | B A | A B
    arms = [arm for pair in range(3) for arm in common.abba_order(pair)]
    assert arms == [False, True, True, False, False, True]
    runs = list(zip(arms, [10.0, 20.0, 25.0, 8.0, 16.0, 30.0], strict=True))
    # THEN only the side-by-side runs of one arm are compared: B/B then A/A
    assert common.same_arm_ratios(runs) == [20.0 / 25.0, 8.0 / 16.0]


def test_ratio_summary_adds_the_interval() -> None:
    summary = common.ratio_summary([0.9, 1.0, 1.1, 0.95, 1.05, 1.0])
    assert summary["median"] == pytest.approx(1.0)
    assert summary["ci95"] == [0.9, 1.1]
    assert common.ratio_summary([1.0])["ci95"] is None


def test_relative_error() -> None:
    assert common.relative_error(1.2, 1.0) == pytest.approx(0.2)
    assert common.relative_error(1.5, 2.0) == pytest.approx(-0.25)
    with pytest.raises(ValueError):
        common.relative_error(1.0, 0.0)


# --- confusion table ------------------------------------------------------------------------
def test_confusion_counts_and_accuracy() -> None:
    pairs = [
        (common.INPUT_BOUND, common.INPUT_BOUND),
        (common.INPUT_BOUND, common.INPUT_BOUND),
        (common.INPUT_BOUND, common.BALANCED),
        (common.COMPUTE_BOUND, common.COMPUTE_BOUND),
        (common.BALANCED, common.INPUT_BOUND),
        (common.UNKNOWN, common.INPUT_BOUND),  # a failed case: not counted in accuracy
    ]
    matrix = common.confusion(pairs)
    assert matrix[common.INPUT_BOUND][common.INPUT_BOUND] == 2
    assert matrix[common.INPUT_BOUND][common.BALANCED] == 1
    assert matrix[common.BALANCED][common.INPUT_BOUND] == 1
    assert matrix[common.COMPUTE_BOUND][common.INPUT_BOUND] == 0
    assert common.accuracy_of(matrix) == (3, 5)


def test_format_confusion_drops_empty_rows_and_columns() -> None:
    matrix = common.confusion([(common.INPUT_BOUND, common.INPUT_BOUND)])
    text = common.format_confusion(matrix)
    lines = text.splitlines()
    assert lines[0].split() == ["truth", "\\", "pipediag", "input-bound"]
    assert lines[2].split() == ["input-bound", "1"]
    assert "compute-bound" not in text


def test_format_table_aligns_columns() -> None:
    text = common.format_table(["a", "long header"], [["xyz", 1.23456], [None, 12345.6]])
    lines = text.splitlines()
    assert lines[0].index("long header") == lines[2].index("1.23")
    assert lines[3].startswith("-")  # None is shown as "-"
    assert "12346" in lines[3]


# --- suggestions ----------------------------------------------------------------------------
def test_suggestion_matching_by_rule_prefix() -> None:
    assert common.rule_prefix("PD001-sequential-map") == "PD001"
    assert common.suggestion_matches("PD001-sequential-map", "PD001") is True
    assert common.suggestion_matches("pd001-sequential-map", "PD001-x") is True
    assert common.suggestion_matches("PD003-no-prefetch", "PD001") is False
    assert common.suggestion_matches(None, "PD001") is None
    assert common.suggestion_matches("PD001-sequential-map", None) is None


def test_watch_pieces_add_up_with_their_intervals_combined() -> None:
    from benchmarks.watch_components import mean_ci95, share_of, threads_spent_ns, widened

    pairs = mean_ci95([10.0, 12.0, 14.0, 12.0])
    assert pairs["mean"] == pytest.approx(12.0)
    low, high = pairs["ci95"]
    assert high - 12.0 == pytest.approx(12.0 - low)
    assert high - 12.0 == pytest.approx(1.96 * math.sqrt(8 / 3) / 2)
    stamps = {"n": 150, "mean": 5.0, "ci95": [2.0, 8.0]}
    total = widened(pairs, stamps)
    assert total["mean"] == pytest.approx(17.0)
    assert total["ci95"][1] - 17.0 == pytest.approx(math.hypot(high - 12.0, 3.0))
    assert widened(pairs, None) is pairs
    share = share_of(total, 1700.0)
    assert share["mean"] == pytest.approx(0.01)
    assert share["ci95"][0] == pytest.approx(total["ci95"][0] / 1700.0)
    # A thread that started between two readings counts whole; one that ended is gone.
    assert threads_spent_ns({1: 100, 2: 50}, {1: 400, 3: 70}) == 300 + 70


def test_a_named_threads_cpu_time_is_read_from_the_kernel() -> None:
    import threading
    import time

    from benchmarks.watch_components import thread_cpu_ns

    if not Path("/proc/self/task").exists():
        pytest.skip("no /proc here")
    stop = threading.Event()

    def spin() -> None:
        end = time.process_time() + 0.05
        while time.process_time() < end:
            pass
        stop.wait(30)

    thread = threading.Thread(target=spin, name="pipediag-test-spin", daemon=True)
    thread.start()
    try:
        time.sleep(0.01)
        deadline = time.monotonic() + 30
        reading = thread_cpu_ns() or {}
        while reading.get(thread.native_id, 0) < 20_000_000 and time.monotonic() < deadline:
            time.sleep(0.01)
            reading = thread_cpu_ns() or {}
        # It spun for 50 ms of CPU: at least 20 ms of it is seen, and only pipediag's names.
        assert reading.get(thread.native_id, 0) >= 20_000_000
        assert threading.main_thread().native_id not in reading
    finally:
        stop.set()
        thread.join()
