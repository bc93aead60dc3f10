"""The corpus benchmark's arithmetic and the fresh-clone loop's reading of pytest, on made-up
stamps and output: rates from epoch start and within, labels, false alarms, pytest counts.

Nothing here runs a script or imports TensorFlow; the corpus scripts themselves run only in
the benchmarks (benchmarks/corpus.py, benchmarks/corpus_no_change.py): together they take
minutes, beyond the suite's budget.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks import corpus  # noqa: E402
from benchmarks import fresh_clone_suite as suite  # noqa: E402
from benchmarks.tutorials import _truth  # noqa: E402


def test_rates_drop_the_first_epoch_and_count_from_start_and_within() -> None:
    # GIVEN three epochs: the first slow (tracing), then 4 steps of 0.1 s after a 0.6 s start
    stamps = {
        "epochs": [
            {"start_s": 0.0, "ends_s": [5.0, 5.1]},
            {"start_s": 10.0, "ends_s": [10.6, 10.7, 10.8, 10.9]},
            {"start_s": 20.0, "ends_s": [20.6, 20.7, 20.8, 20.9]},
        ]
    }
    # WHEN turned into rates
    from_start, within = corpus.rates(stamps)
    # THEN from the start the 0.6 s start-up counts; within, only the steps after the first
    assert from_start == pytest.approx(8 / 1.8)
    assert within == pytest.approx(6 / 0.6)


def test_rates_are_none_without_an_epoch_after_the_first() -> None:
    assert corpus.rates({"epochs": [{"start_s": 0.0, "ends_s": [1.0, 2.0]}]}) == (None, None)


def test_an_alternated_epoch_reads_a_whole_pass_and_ends_on_it() -> None:
    # GIVEN 10 batches a pass in blocks of 4
    starting_real = _truth.pattern(10, 4, 0)
    starting_held = _truth.pattern(10, 4, 1)
    # THEN each epoch reads the whole pass and ends on it, starting on either kind, with
    # one held block fewer than real ones and the same length both ways
    assert starting_real == [0] * 4 + [1] * 4 + [0] * 4 + [1] * 4 + [0] * 2
    assert starting_held == [1] * 4 + [0] * 4 + [1] * 4 + [0] * 4 + [0] * 2
    assert starting_real.count(0) == starting_held.count(0) == 10
    # an endless dataset keeps fit's steps per epoch
    assert _truth.pattern(10, 4, 1, endless=True) == [1] * 4 + [0] * 4 + [1] * 2


def _alternated_epoch(start: float, kinds: list[int]) -> dict:
    """An epoch of 20 ms steps of the real batch and 10 ms of the held one. Its boundary
    costs 2 s (on its first step, whichever kind), the real pipeline's start-up 0.5 s (on
    its first step); its end of pass and tear-down 0.1 s for the real pipeline, 0.04 s for
    the held batch's."""
    ends, now, seen = [], start, set()
    for i, kind in enumerate(kinds):
        now += {0: 0.02, 1: 0.01}[kind] + (2.0 if i == 0 else 0.0)
        now += 0.5 if kind == 0 and kind not in seen else 0.0
        seen.add(kind)
        ends.append(now)
    return {"start_s": start, "ends_s": ends, "kinds": kinds, "closing_s": [0.1, 0.04]}


def test_the_alternated_truth_counts_each_kind_s_own_start_and_end_not_the_boundary() -> None:
    # GIVEN three epochs of 16 real batches in blocks of 3, starting on either kind in turn
    stamps = {
        "block": 3,
        "epochs": [_alternated_epoch(10.0 * n, _truth.pattern(16, 3, n % 2)) for n in range(3)],
    }
    # WHEN the costs are read (the first epoch left out)
    from_start, within = corpus.alternated_costs(stamps)
    # THEN within the epoch: 1 - 10 ms / 20 ms
    assert within == pytest.approx(0.5)
    # AND from the start each epoch adds each kind's start-up and end to its 15 steps (its
    # first where it falls inside the epoch: the epoch's first step holds the boundary both
    # kinds pay, and is left out)
    real = (2 * 15 * 0.02 + 2 * (0.52 + 0.1)) / (2 * 15 + 2)
    held = (2 * 14 * 0.01 + 2 * (0.01 + 0.04)) / (2 * 14 + 2)
    assert from_start == pytest.approx(1 - held / real)
    # AND read from an AB process, kind 1 being the tuned pipeline, the same steps are the
    # tuned variant's speedup: 2x within, more from the start (the plain one's start-up)
    from benchmarks import corpus_prescription as rx

    assert rx.alternated_speedups(stamps) == (
        pytest.approx(real / held),
        pytest.approx(2.0),
    )
    assert rx.alternated_speedups({"block": 3, "epochs": []}) == (None, None)


def test_one_epoch_s_tear_down_stall_does_not_move_the_truth_from_the_start() -> None:
    # GIVEN four epochs, the last three counted: the held batch's iterator waits 2.5 s as it
    # is let go in one of them (a tear-down stall, at random), 0.04 s in the others
    epochs = [_alternated_epoch(10.0 * n, _truth.pattern(16, 3, n % 2)) for n in range(4)]
    stamps = {"block": 3, "epochs": epochs}
    stalled = {"block": 3, "epochs": [*epochs[:3], {**epochs[3], "closing_s": [0.1, 2.54]}]}
    # THEN the truth from the start reads each kind's typical end, not the stall
    assert corpus.alternated_costs(stalled) == corpus.alternated_costs(stamps)
    # AND where every epoch waits (a slow stage's work in flight), it counts
    slow = {"block": 3, "epochs": [{**e, "closing_s": [0.1, 2.54]} for e in epochs]}
    assert corpus.alternated_costs(slow)[0] < corpus.alternated_costs(stamps)[0]  # type: ignore[operator]


def test_the_alternated_truth_refuses_steps_whose_kind_is_not_known() -> None:
    epochs = [_alternated_epoch(10.0 * n, _truth.pattern(16, 3, n % 2)) for n in range(3)]
    assert corpus.alternated_costs({"block": 3, "epochs": epochs}) != (None, None)
    # a call of 4 steps, their time spread evenly, that ran both kinds
    called = [{**e, "calls": [4] * 8} for e in epochs]
    assert corpus.alternated_costs({"block": 3, "epochs": called}) == (None, None)
    # TensorFlow pulled one element more than the steps stamped (a peek before training)
    steps = sum(len(e["ends_s"]) for e in epochs)
    pulled = {"block": 3, "epochs": epochs, "pulls": steps + 1}
    assert corpus.alternated_costs(pulled) == (None, None)


def test_each_truth_falls_back_to_the_whole_runs_apart() -> None:
    case = {
        "alternated_start": {"median": None},
        "alternated_within": {"median": 0.02},
        "truth_start": {"median": 0.3},
        "truth_within": {"median": 0.25},
    }
    assert corpus.truths(case) == (0.3, 0.02)


def test_the_alternated_truth_is_the_truth_of_record_and_judges_pipediag_again() -> None:
    # GIVEN a case whose whole runs read 21% (pipediag's compute-bound a false alarm there)
    case = {
        "script": "quickstart",
        "truth_start": {"median": 0.21, "min": -0.2, "max": 0.27},
        "truth_within": {"median": 0.21, "min": -0.2, "max": 0.27},
        "diagnoses": [{"label": "compute-bound", "cost": 0.0}],
    }
    corpus.rejudge(case)
    assert case["diagnoses"][0]["false_alarm"] is True
    # WHEN its truth measured in alternation reads 1% and 2%
    measured = {
        "script": "quickstart",
        "alternated_start": {"median": 0.01, "min": -0.01, "max": 0.03},
        "alternated_within": {"median": 0.02, "min": 0.0, "max": 0.03},
        "measured_at": "2026-12-05T06:00:00+00:00",
    }
    cases = [case]
    corpus.add_alternated(cases, [measured])
    # THEN pipediag's run is judged on it, and the whole runs' truth stays beside
    assert corpus.truths(case) == (0.01, 0.02)
    assert (
        case["diagnoses"][0] | {"right": True, "false_alarm": False, "error": 0.01}
        == (case["diagnoses"][0])
    )
    assert case["truth_start"]["median"] == 0.21
    assert case["labels"] == ["compute-bound"]
    # AND pipediag's runs measured beside a new truth take the earlier ones' place
    again = {**measured, "diagnoses": [{"label": "balanced", "cost": 0.08}]}
    corpus.add_alternated(cases, [again])
    assert case["diagnoses"] == [
        {"label": "balanced", "cost": 0.08, "right": False, "false_alarm": True, "error": 0.07}
    ]
    corpus.add_alternated(cases, [measured | {"diagnoses": []}])
    assert case["diagnoses"][0]["label"] == "balanced"
    case["diagnoses"] = [{"label": "compute-bound", "cost": 0.0, "right": True}]
    corpus.rejudge(case)
    row = corpus.table(
        [{**case, "split": "tune", "style": "loop", "rates_start": {"A": 1, "T": 1, "P": 1}}]
    )
    assert "| 1% (-1% to 3%); 2% (0% to 3%) | 21% (-20% to 27%); 21% (-20% to 27%) |" in row


def test_pipediag_s_runs_beside_whole_runs_replace_the_earlier_and_keep_the_truth() -> None:
    # GIVEN a case with a truth in alternation of 30% and an earlier run of pipediag
    case = {
        "script": "time_series",
        "alternated_start": {"median": 0.3, "min": 0.28, "max": 0.31},
        "alternated_within": {"median": 0.25, "min": 0.24, "max": 0.27},
        "truth_start": {"median": 0.35, "min": 0.3, "max": 0.4},
        "truth_within": {"median": 0.3, "min": 0.25, "max": 0.33},
        "diagnoses": [{"label": "balanced", "cost": 0.1}],
    }
    # WHEN its runs beside the plain run and FastFlow's T come back (their own truth empty)
    beside = {
        "script": "time_series",
        "alternated_start": {"median": None},
        "truth_start": {"median": 0.5},
        "measured_at": "2026-12-05T17:00:00+00:00",
        "measured_commit": "58e4060",
        "diagnoses": [
            {"label": "input-bound", "cost": 0.32, "wall_ratio": 1.9, "a_ratio": 0.98},
            {"label": "input-bound", "cost": 0.28, "wall_ratio": 2.1, "a_ratio": 1.0},
        ],
    }
    cases = [case]
    corpus.add_diagnoses(cases, [beside, {**beside, "script": "not_in_the_file"}])
    # THEN they take the earlier run's place, judged on the truth of record, which stays
    assert cases == [case]
    assert corpus.truths(case) == (0.3, 0.25)
    assert case["truth_start"]["median"] == 0.35
    assert [d["right"] for d in case["diagnoses"]] == [True, True]
    assert [round(d["error"], 2) for d in case["diagnoses"]] == [0.02, 0.02]
    assert (case["diagnosed_at"], case["diagnosed_commit"]) == (
        "2026-12-05T17:00:00+00:00",
        "58e4060",
    )
    # AND the table gives the wall time under pipediag and the observed rate beside them
    row = corpus.table(
        [{**case, "split": "tune", "style": "fit", "rates_start": {"A": 1, "T": 1, "P": 1}}]
    )
    assert "| 2.00x | 0.99 | - |" in row
    # AND a run that brought no diagnosis leaves the case's as they were
    corpus.add_diagnoses(cases, [{**beside, "diagnoses": []}])
    assert len(case["diagnoses"]) == 2


@pytest.mark.parametrize(
    ("cost", "label"),
    [
        (0.25, "input-bound"),
        (0.20, "input-bound"),
        (0.1, "balanced"),
        (0.049, "compute-bound"),
        (-0.2, "compute-bound"),
        (None, "unknown"),
    ],
)
def test_labels_use_pipediag_s_bands(cost: float | None, label: str) -> None:
    assert corpus.label_of(cost) == label


@pytest.mark.parametrize(
    ("label", "start", "within", "right", "alarm"),
    [
        ("input-bound", 0.01, -0.04, False, True),  # both truths under 5%: an alarm
        ("balanced", 0.03, 0.02, False, True),
        ("compute-bound", 0.01, 0.25, True, True),  # either truth at 20% or more alarms
        ("balanced", 0.08, 0.22, True, False),  # one truth's label is enough
        ("input-bound", 0.08, 0.22, True, False),
        ("compute-bound", 0.07, 0.04, True, False),
        ("input-bound", 0.12, 0.15, False, False),  # wrong, but no alarm
    ],
)
def test_a_label_is_right_on_either_truth_and_an_alarm_only_across_the_bands(
    label: str, start: float, within: float, right: bool, alarm: bool
) -> None:
    assert corpus.judge(label, start, within) == {"right": right, "false_alarm": alarm}


def test_every_corpus_script_names_its_source_split_and_style() -> None:
    entries = corpus.scripts()
    for entry in entries:
        assert entry.source, f"{entry.path.name} has no 'Source:' line in its header"
        assert entry.split in ("tune", "held-out"), entry
        assert entry.style in ("keras-fit", "custom-loop", "jax-loop"), entry
        header = entry.path.read_text().split('"""')[1]
        assert "License:" in header and "Changes:" in header, entry.path.name


def test_pytest_s_closing_line_and_failures_are_read() -> None:
    output = "\n".join(
        [
            "FAILED tests/integration/test_a.py::test_x[case] - assert 1 == 2",
            "ERROR tests/unit/test_b.py::test_y",
            "==== 1197 passed, 1 failed, 3 skipped, 1 error in 661.20s (0:11:01) ====",
        ]
    )
    counts, failed = suite.pytest_counts(output)
    assert counts == {"passed": 1197, "failed": 1, "skipped": 3, "error": 1}
    assert failed == ["tests/integration/test_a.py::test_x[case]", "tests/unit/test_b.py::test_y"]


def test_pytest_s_quiet_closing_line_is_read() -> None:
    counts, failed = suite.pytest_counts("968 passed in 57.01s")
    assert counts == {"passed": 968} and failed == []


def test_the_loop_runs_the_readme_s_own_test_line() -> None:
    install, test = suite.readme_test_command()
    assert install == ["pip", "install", "-e", ".[test]"]
    assert test[:3] == ["python", "-m", "pytest"]


def test_the_no_change_check_names_the_first_step_whose_loss_differs() -> None:
    from benchmarks.corpus_no_change import first_difference

    assert first_difference([0.5, 0.4, 0.3], [0.5, 0.4, 0.3]) is None
    assert first_difference([0.5, 0.4, 0.3], [0.5, 0.41, 0.3]) == 1
    # a run that stopped early (or ran on) differs where the shorter one ends
    assert first_difference([0.5, 0.4, 0.3], [0.5, 0.4]) == 2
    assert first_difference([], [0.1]) == 0


def test_the_prescription_reads_the_first_change_and_judges_its_claim() -> None:
    from benchmarks import corpus_prescription as rx

    suggestions = [
        {"id": "PD006-cache-after-random", "kind": "warning"},
        {
            "id": "PD009-prefetch",
            "kind": "fix",
            "fix": "prefetch-end",
            "stage": "map",
            "gain": {"basis": "pipeline-alone", "speedup": 1.3, "interval": None},
            "estimate": 1.2,
        },
        {
            "id": "PD001-sequential-map",
            "kind": "fix",
            "fix": "parallel-map",
            "gain": {"basis": "training", "speedup": 2.0, "interval": [1.8, 2.2]},
        },
    ]
    first = rx.first_change(suggestions)
    # the first that changes the speed, with the gain measured where it was, labelled so
    assert first == {
        "id": "PD009-prefetch",
        "fix": "prefetch-end",
        "stage": "map",
        "claim": 1.3,
        "claim_kind": "pipeline alone",
    }
    # an estimate is no claim
    unmeasured = {"id": "PD012-input-contention", "kind": "fix", "estimate": 1.6}
    assert rx.first_change([unmeasured]) == {
        "id": "PD012-input-contention",
        "fix": None,
        "stage": None,
        "claim": None,
        "claim_kind": "none",
    }
    assert rx.same_change(first, "prefetch-end") and not rx.same_change(first, "cache")
    assert rx.same_change({"id": "PD007-py-function", "fix": None}, "port-to-tf-ops")
    assert not rx.same_change(None, "cache")
    # held within [0.75, 1.33] of the whole-run truth
    assert rx.claim_holds(1.3, 1.2) is True
    assert rx.claim_holds(1.3, 1.8) is False
    assert rx.claim_holds(None, 1.2) is None
    # and only a claim for the hand-tuned change is read against its speedup
    assert rx.judged_change(first, "prefetch-end", 1.2) == {
        **first,
        "same_change": True,
        "claim_holds": True,
    }
    assert rx.judged_change(first, "cache", 1.2)["claim_holds"] is None  # type: ignore[index]
    assert rx.judged_change(None, "cache", 1.2) is None
    # the right call: the tuned change where it is faster, no change where it is not
    assert rx.right_call(True, False, 1.05) == "yes"
    assert rx.right_call(True, False, 0.9) == "no: not faster"
    assert rx.right_call(False, True, 0.85) == "yes: no change"
    assert rx.right_call(False, True, 1.12) == "no"
    assert rx.right_call(False, True, 1.01) == "yes: no change"  # under the worth-it 1.05x
    assert rx.right_call(False, False, 1.12) == "other"


def test_the_corpus_reads_each_script_s_hand_tuned_variant() -> None:
    tuned = {s.name: s.tuned_fix for s in corpus.scripts() if s.tuned_fix}
    assert len(tuned) >= 6
    assert tuned["mixup"] == "prefetch-end"
    assert tuned["from_generator_fit"] == "port-to-tf-ops"


def test_each_pipediag_run_s_report_gets_its_own_folder(tmp_path: Path) -> None:
    # GIVEN a kept folder that already holds two runs' reports of one script
    first = tmp_path / "mixup-default-report"
    first.mkdir()
    (tmp_path / "mixup-default-report-2").mkdir()
    # WHEN the next run's folder is chosen THEN it is the first name not taken
    assert corpus.unused(first) == tmp_path / "mixup-default-report-3"
    assert corpus.unused(tmp_path / "other-report") == tmp_path / "other-report"
