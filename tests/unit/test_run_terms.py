"""The rewrites tried on training, in the run's own terms: under fit the report's row and the
advice show one figure (fit's time added to both sides), the train function's own ratio
named beside it, and a rewrite tried on top of kept ones is a ratio over them
(docs/design.md, "Fixes tried on training")."""

from __future__ import annotations

import dataclasses

import pytest
from synthetic_reports import synthetic_report

from pipediag.analysis.advisor import advise
from pipediag.analysis.run_terms import (
    fit_added_s,
    fit_adds_s,
    gain_in_run_terms,
    in_run_terms,
    with_prescription_in_run_terms,
)
from pipediag.renderers.prescription_words import rewrites_lines
from pipediag.report.model import Report
from pipediag.report.prescription import GainOnTraining, PrescribedChange, Prescription
from pipediag.report.reasons import Reason
from pipediag.report.trials import FixTrial

# fit's steps at 20 steps/s (50 ms); the trials' train function at 25 steps/s (40 ms): fit
# adds 10 ms a step, as measured around its train function
FIT_RATE, BASE, ADDED = 20.0, 25.0, 0.010


def _report(style: str = "keras-fit") -> Report:
    report = synthetic_report(steps=60, wait_s=0.02, compute_s=0.03)
    train = dataclasses.replace(
        report.train, style=style, steps_per_s=FIT_RATE, fit_overhead_s=ADDED
    )
    tried = [
        # parallel map: 25 -> 16.5 steps/s on the train function, 0.66x
        PrescribedChange(
            "parallel-map",
            1,
            "map(decode)",
            training_speedup=0.66,
            training_speedup_low=0.60,
            training_speedup_high=0.72,
            reason=Reason("under-worth-it", limit=1.05),
            baseline_steps_per_s=BASE,
            variant_steps_per_s=BASE * 0.66,
        ),
        PrescribedChange(
            "cache",
            0,
            "source",
            training_speedup=2.0,
            training_speedup_low=1.8,
            training_speedup_high=2.2,
            kept=True,
            baseline_steps_per_s=BASE,
            variant_steps_per_s=BASE * 2.0,
        ),
        # on top of the cache: 50 -> 100 steps/s
        PrescribedChange(
            "prefetch-end",
            2,
            "batch(32)",
            training_speedup=2.0,
            training_speedup_low=1.9,
            training_speedup_high=2.1,
            kept=True,
            after=["cache"],
            baseline_steps_per_s=50.0,
            variant_steps_per_s=100.0,
        ),
    ]
    prescription = Prescription(
        tried=tried,
        training_speedup=4.0,
        training_speedup_low=3.8,
        training_speedup_high=4.2,
        baseline_steps_per_s=BASE,
        variant_steps_per_s=100.0,
    )
    trials = [
        FixTrial(
            fix="parallel-map",
            stage_index=1,
            stage="map(decode)",
            training=GainOnTraining(
                baseline_steps_per_s=BASE,
                variant_steps_per_s=BASE * 0.66,
                training_speedup=0.66,
                training_speedup_low=0.60,
                training_speedup_high=0.72,
            ),
        )
    ]
    pipeline = dataclasses.replace(
        report.pipeline, measured=True, trials=trials, prescription=prescription
    )
    return dataclasses.replace(report, train=train, pipeline=pipeline)


def _read(report: Report, ratio: float, base: float = BASE) -> float | None:
    """A trial's ratio, its rates `base` and `base * ratio`, as the run would see it."""
    trial = GainOnTraining(
        training_speedup=ratio, baseline_steps_per_s=base, variant_steps_per_s=base * ratio
    )
    return gain_in_run_terms(report, trial)[0]


def test_under_fit_each_row_shows_the_gain_with_fit_s_time_and_names_the_raw_ratio() -> None:
    # GIVEN a fit run whose trials timed the train function alone
    report = with_prescription_in_run_terms(_report())
    prescription = report.pipeline.prescription
    assert prescription is not None
    parallel, cache, prefetch = prescription.tried
    # THEN over the user's pipeline: fit's 50-ms step against the fixed step plus 10 ms
    assert parallel.on_training == pytest.approx(0.050 / (1 / 16.5 + ADDED))
    assert cache.on_training == pytest.approx(0.050 / (1 / 50.0 + ADDED))
    # on top of the cache, both sides get fit's 10 ms: (20 + 10) / (10 + 10) ms
    assert prefetch.on_training == pytest.approx(0.030 / 0.020)
    low, high = prefetch.on_training_low, prefetch.on_training_high
    assert low is not None and high is not None and low < 1.5 < high
    # the kept ones together, over the user's pipeline
    assert prescription.on_training == pytest.approx(0.050 / (1 / 100.0 + ADDED))
    # AND the text shows that figure, the train function's own ratio named beside it
    lines = rewrites_lines(report)
    assert lines[0].startswith("run the map in parallel at map(decode): 0.71x")
    assert "not kept (under the worth-it 1.05x); 0.66x on the train function alone" in lines[0]
    assert "1.50x" in lines[2] and "on top of the kept ones" in lines[2]
    assert "training 2.50x" in lines[-1] and "4.00x on the train function alone" in lines[-1]


def test_the_advice_and_the_row_show_one_figure_for_one_trial() -> None:
    report = with_prescription_in_run_terms(_report())
    prescription = report.pipeline.prescription
    assert prescription is not None
    shown = prescription.tried[0].on_training
    assert shown is not None
    said = [s for s in advise(report) if s.fix == "parallel-map"]
    for suggestion in said:
        if suggestion.training_speedup is not None:
            assert suggestion.training_speedup == pytest.approx(shown)


def test_a_custom_loop_s_ratio_is_its_gain_as_measured() -> None:
    report = with_prescription_in_run_terms(_report(style="custom-loop"))
    prescription = report.pipeline.prescription
    assert prescription is not None
    assert [c.on_training for c in prescription.tried] == [0.66, 2.0, 2.0]
    assert "on the train function alone" not in "\n".join(rewrites_lines(report))
    assert _read(report, 0.66) == 0.66


def test_a_report_written_before_the_figures_were_filled_in_shows_the_raw_ratio() -> None:
    lines = rewrites_lines(_report())
    assert lines[0].startswith("run the map in parallel at map(decode): 0.66x")


def test_each_side_s_epoch_start_is_spread_over_the_pass_where_the_iterator_restarts() -> None:
    # GIVEN a loop whose rewrite's trial ran 100 -> 125 steps/s (1.25x on the steps), the
    # user's pipeline taking 200 ms more to start each pass than the rewrite's
    report = _report(style="custom-loop")
    change = PrescribedChange(
        "hoist-cache",
        1,
        "map(preprocess)",
        training_speedup=1.25,
        training_speedup_low=1.2,
        training_speedup_high=1.3,
        kept=True,
        baseline_steps_per_s=100.0,
        variant_steps_per_s=125.0,
        baseline_start_s=0.2,
        variant_start_s=0.0,
    )
    prescription = Prescription(tried=[change])
    restarting = dataclasses.replace(
        report,
        pipeline=dataclasses.replace(report.pipeline, prescription=prescription, pass_batches=100),
    )
    # THEN a pass of 100 steps takes 1.0 + 0.2 s against 0.8 s: 1.5x
    (shown,) = _tried_in_run_terms(restarting)
    assert shown.on_training == pytest.approx(1.5)
    (line, _) = rewrites_lines(with_prescription_in_run_terms(restarting))
    assert "1.50x" in line and "; 1.25x on the steps alone" in line
    assert shown.on_training_low is not None and shown.on_training_low > 1.2
    # AND where the dataset repeats forever (no restarts), the steps' ratio stands
    endless = dataclasses.replace(
        restarting, pipeline=dataclasses.replace(restarting.pipeline, pass_batches=None)
    )
    (steady,) = _tried_in_run_terms(endless)
    assert steady.on_training == pytest.approx(1.25)


def _tried_in_run_terms(report: Report) -> list[PrescribedChange]:
    prescription = with_prescription_in_run_terms(report).pipeline.prescription
    assert prescription is not None
    return prescription.tried


def test_no_gain_on_training_exceeds_what_all_of_input_gives_back() -> None:
    # GIVEN a run whose input costs 42% (40-45%): T/A is 1 / (1 - 0.42), 1.72x
    report = _report(style="custom-loop")
    verdict = dataclasses.replace(
        report.verdict,
        input_cost_fraction=0.42,
        input_cost_interval=[0.40, 0.45],
        compute_alone_source="measured",
    )
    report = with_prescription_in_run_terms(dataclasses.replace(report, verdict=verdict))
    most = 1 / (1 - 0.42)
    # THEN a cache read at 2.5x against its trial's own, slower baseline is kept at that
    # most, as are the rewrites read at 2x, and a gain under it is kept as measured
    assert _read(report, 2.5) == pytest.approx(most)
    assert _read(report, 1.5) == 1.5
    prescription = report.pipeline.prescription
    assert prescription is not None
    assert [c.on_training for c in prescription.tried] == [0.66, most, most]
    # AND where T is an estimate nothing is capped: there is no measured T/A to keep to
    estimated = dataclasses.replace(verdict, compute_alone_source="estimated")
    assert _read(dataclasses.replace(report, verdict=estimated), 2.5) == 2.5


# --- the arithmetic, shared with the model-side trials (`training/step_rounds.py`) ----------


def test_without_fit_s_time_the_gain_is_the_ratio_of_rates() -> None:
    assert fit_added_s(None, None, 50.0) is None
    assert in_run_terms(50.0, 100.0, None) == 2.0


def test_fit_s_own_time_stays_on_both_sides() -> None:
    # GIVEN a 20 ms train function that fit runs at 40 steps/s (5 ms around it each step)
    added = fit_added_s(None, 40.0, 50.0)
    assert added == pytest.approx(0.005)
    # WHEN the variant makes the train function 10 ms
    # THEN fit's step goes from 25 ms to 15 ms, not 20 to 10
    assert in_run_terms(50.0, 100.0, added) == pytest.approx(25 / 15)


def test_steps_per_execution_pays_fit_s_time_once_a_call() -> None:
    # 10 ms of train function, fit at 50 steps/s: 10 ms around it; 8 steps a call
    gain = in_run_terms(100.0, 100.0, fit_added_s(None, 50.0, 100.0), shared_by=8)
    assert gain == pytest.approx(20 / (10 + 10 / 8))


def test_fit_s_time_measured_beside_its_train_function_wins_over_the_rate_gap() -> None:
    # GIVEN fit read at 25 steps/s against a 10-ms train function read later: a 30-ms gap,
    # most of it the host's drift between the two reads; fit's steps measured 2 ms beyond
    # their train function
    added = fit_added_s(0.002, 25.0, 100.0)
    # THEN 8 steps a call save 2 ms a step of 12, not 30 of 40
    assert in_run_terms(100.0, 100.0, added, shared_by=8) == pytest.approx(12 / (10 + 2 / 8))


def test_fit_faster_than_the_step_alone_adds_nothing() -> None:
    # GIVEN fit at 60 steps/s against a train function at 50: the gap is below zero
    assert fit_added_s(None, 60.0, 50.0) == 0.0
    assert in_run_terms(50.0, 100.0, 0.0) == pytest.approx(2.0)
    # AND a fix trial's ratio, with nothing for fit to add, stands as measured
    report = _report()
    for train in (
        dataclasses.replace(report.train, steps_per_s=60.0, fit_overhead_s=None),
        dataclasses.replace(report.train, fit_overhead_s=0.0),
    ):
        nothing_added = dataclasses.replace(report, train=train)
        assert fit_adds_s(nothing_added, 50.0) is None
        assert _read(nothing_added, 0.66, base=50.0) == 0.66


def test_an_epoch_start_counts_without_fit_s_time() -> None:
    # a loop's 10-ms step made 8 ms, and the user's pipeline's epoch start 2 ms a step more
    # than the rewrite's: 12 ms against 8
    gain = in_run_terms(100.0, 125.0, None, base_start_s=0.002, variant_start_s=0.0)
    assert gain == pytest.approx(0.012 / 0.008)
