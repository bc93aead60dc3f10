"""`pipediag compare` on recorded reports: noise for one script run twice, a clear speedup
for a run before and after a fix, and each part of the comparison on built reports."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from report_fixtures import AFTER, BEFORE, COMPUTE_BOUND_RUN, RUN1, RUN2
from synthetic_reports import synthetic_cost_report, synthetic_report
from worded import written

from pipediag.analysis import compare
from pipediag.analysis.compare import compare_reports
from pipediag.analysis.noise import ALTERNATION_HOW, NoiseRules
from pipediag.cli import main
from pipediag.renderers.compare_png import render_comparison_png
from pipediag.renderers.compare_text import render_comparison, training_claim
from pipediag.report.io import load_report, save_report
from pipediag.report.model import CostSplit, Gain, Report
from pipediag.report.stages import StageStats


def scaled(report: Report, factor: float) -> Report:
    """The same run with every step `factor` times as long (and the rates to match)."""
    steps = [
        replace(
            s,
            duration_s=s.duration_s * factor,
            input_wait_s=None if s.input_wait_s is None else s.input_wait_s * factor,
        )
        for s in report.train.steps
    ]
    verdict = report.verdict
    rate = verdict.training_steps_per_s
    return replace(
        report,
        train=replace(report.train, steps=steps),
        verdict=replace(verdict, training_steps_per_s=None if rate is None else rate / factor),
    )


def test_the_same_script_run_twice_is_noise() -> None:
    # GIVEN two real runs of one example WHEN compared
    comparison = compare_reports(load_report(RUN1), load_report(RUN2))
    # THEN training moved within the runs' noise, and nothing else is called a change
    training = comparison.training
    assert training is not None and comparison.judgement == compare.NOISE
    assert training.low is not None and training.high is not None
    assert training.low < 1.0 < training.high
    assert training.how == "steps, block bootstrap"
    assert [f.judgement for f in comparison.rates + comparison.shares] == [compare.NOISE] * 8
    assert {label.judgement for label in comparison.labels} == {compare.SAME}
    assert {fix.status for fix in comparison.fixes} == {compare.KEPT}
    assert {stage.figure.judgement for stage in comparison.stages} == {compare.NOISE}


def test_a_fix_is_called_faster_by_how_much() -> None:
    # GIVEN a real run before and after pipediag's suggested fix (a parallel map)
    comparison = compare_reports(load_report(BEFORE), load_report(AFTER))
    training = comparison.training
    # THEN training is faster, 1.78x, and the interval excludes no change
    assert comparison.judgement == compare.FASTER
    assert training is not None and training.change == pytest.approx(1.776, abs=0.01)
    assert training.low is not None and training.low > 1.4
    # The map stage is matched across the rename map -> parallel-map, and got faster.
    (mapped,) = [s for s in comparison.stages if s.base is not None and s.base.kind == "map"]
    assert mapped.new is not None and mapped.new.kind == "parallel-map"
    assert mapped.figure.judgement == compare.FASTER
    # The fix that was applied went away; the new bottleneck's appeared.
    statuses = {fix.id: fix.status for fix in comparison.fixes}
    assert statuses == {"PD001-sequential-map": compare.GONE, "PD012-input-contention": "appeared"}
    # The cost's dominant part changed from waiting to contention.
    dominant = next(label for label in comparison.labels if label.name == compare.DOMINANT)
    assert (dominant.base, dominant.new, dominant.judgement) == ("wait", "contention", "changed")


def test_the_other_way_round_is_slower() -> None:
    comparison = compare_reports(load_report(AFTER), load_report(BEFORE))
    assert comparison.judgement == compare.SLOWER
    text = render_comparison(comparison)
    assert text.startswith("SLOWER: training 44% slower, 175.5 -> 98.8 steps/s")


@pytest.mark.parametrize(
    ("factor", "judgement"),
    [(0.5, compare.FASTER), (0.98, compare.NOISE), (1.02, compare.NOISE), (1.3, compare.SLOWER)],
)
def test_scaled_steps(factor: float, judgement: str) -> None:
    # GIVEN a real run and a copy whose every step takes `factor` times as long
    base = load_report(RUN1)
    comparison = compare_reports(base, scaled(base, factor))
    # THEN large changes are called, small ones are noise
    assert comparison.judgement == judgement
    training = comparison.training
    assert training is not None and training.change == pytest.approx(1 / factor)


def test_a_quiet_machine_calls_smaller_changes() -> None:
    base = load_report(RUN1)
    faster = scaled(base, 0.88)  # 1.14x: inside 4% run-to-run noise, outside the steps alone
    busy = compare_reports(base, faster)
    quiet = compare_reports(base, faster, NoiseRules(run_to_run=0.0))
    training = quiet.training
    assert busy.judgement == compare.NOISE
    assert quiet.judgement == compare.FASTER
    assert training is not None and training.low is not None and training.low > 1.0


def _with_cost(report: Report, cost: float, label: str) -> Report:
    split = CostSplit(wait=cost, dominant="wait")
    return replace(
        report,
        verdict=replace(report.verdict, input_cost_fraction=cost, label=label, cost_split=split),
    )


def test_a_changed_label_is_reported_even_when_the_cost_moved_within_noise() -> None:
    # GIVEN one run at 19% input cost (balanced) and one at 21% (input-bound)
    report = synthetic_report(steps=100)
    base = _with_cost(report, 0.19, "balanced")
    new = _with_cost(report, 0.21, "input-bound")
    comparison = compare_reports(base, new)
    # THEN the cost is noise, but the verdict's change is said, and called worse
    verdict = comparison.labels[0]
    assert comparison.input_cost is not None
    assert comparison.input_cost.judgement == compare.NOISE
    assert (verdict.judgement, verdict.worse) == (compare.CHANGED, True)
    text = render_comparison(comparison)
    assert "Verdict changed: balanced -> input-bound (input cost 19% -> 21%" in text
    assert "near a band's edge" in text


def test_stages_are_matched_by_what_they_do() -> None:
    # GIVEN a pipeline and the same one with a prefetch added and the map parallelised
    source = StageStats(0, "source", own_s_per_batch=0.001)
    mapped = StageStats(1, "map", function="parse", own_s_per_batch=0.010)
    batch = StageStats(2, "batch", own_s_per_batch=0.0005)
    base = synthetic_report(steps=30)
    base = replace(base, pipeline=replace(base.pipeline, stages=[source, mapped, batch]))
    new_stages = [
        source,
        replace(mapped, kind="parallel-map", own_s_per_batch=0.004),
        batch,
        StageStats(3, "prefetch", own_s_per_batch=0.0),
    ]
    new = replace(base, pipeline=replace(base.pipeline, stages=new_stages))
    changes = {
        compare.stage_key(s.new or s.base): s  # type: ignore[arg-type]
        for s in compare_reports(base, new).stages
    }
    # THEN the map is one row that got faster, and the prefetch is new
    assert changes[("map", "parse")].figure.judgement == compare.FASTER
    assert changes[("source", "")].figure.judgement == compare.NOISE
    assert changes[("prefetch", "")].base is None
    assert changes[("prefetch", "")].figure.judgement == compare.CHANGED
    text = render_comparison(compare_reports(base, new))
    assert "map(parse) -> parallel-map(parse)" in text and "prefetch (new)" in text


def test_fixes_are_matched_by_id_and_stage() -> None:
    report = synthetic_report(steps=30)
    fix_a = written(
        "PD001-sequential-map", "parallelise", stage="map(a)", gain=Gain("training", 1.4)
    )
    fix_b = replace(fix_a, stage="map(b)")
    base = replace(report, suggestions=[fix_a, fix_b])
    new_b = replace(fix_b, gain=Gain("training", 1.1))
    new = replace(report, suggestions=[new_b])
    comparison = compare_reports(base, new)
    fixes = {(f.stage, f.status): f for f in comparison.fixes}
    assert set(fixes) == {("map(b)", compare.KEPT), ("map(a)", compare.GONE)}
    kept = fixes[("map(b)", compare.KEPT)]
    assert (kept.base, kept.new) == (fix_b, new_b)
    # each run's measured gain, never a prediction
    text = render_comparison(comparison)
    assert "(on your training 1.40x -> on your training 1.10x)" in text
    assert "end to end" not in text


def test_a_report_without_steps_cannot_be_compared_but_still_renders() -> None:
    comparison = compare_reports(Report(script="empty.py"), load_report(RUN1))
    assert comparison.judgement == compare.MISSING
    text = render_comparison(comparison)
    assert text.startswith("NO COMPARISON: no training rate in the base report")


def test_the_text_leads_with_the_judgement_and_lists_every_figure() -> None:
    text = render_comparison(
        compare_reports(load_report(BEFORE), load_report(AFTER)), "before.json", "after.json"
    )
    lines = text.splitlines()
    assert lines[0].startswith("FASTER: training 1.78x faster, 98.8 -> 175.5 steps/s (95% ")
    for expected in (
        "before.json",
        "after.json",
        "A  training, steps/s",
        "T  compute alone, steps/s",
        "P  pipeline alone, batches/s",
        "input cost",
        "contention",
        "[PD001-sequential-map]",
        "Noise: 95% intervals",
    ):
        assert expected in text
    row = next(line for line in lines if line.strip().startswith("A  training"))
    assert row.split()[-1] == "faster" and "1.78x" in row


def test_the_png_draws_both_runs(tmp_path: Path) -> None:
    base, new = load_report(BEFORE), load_report(AFTER)
    path = render_comparison_png(compare_reports(base, new), base, new, tmp_path / "c.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_png_of_empty_reports(tmp_path: Path) -> None:
    empty = Report(script="empty.py")
    path = render_comparison_png(compare_reports(empty, empty), empty, empty, tmp_path / "e.png")
    assert path.stat().st_size > 0


def test_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    png = tmp_path / "side-by-side.png"
    code = main(["compare", str(RUN1), str(RUN2), "--png", str(png)])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("NO CHANGE BEYOND NOISE: training 1.03x")
    assert f"Wrote: {png}" in out and png.is_file()


def test_the_command_reads_report_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    save_report(load_report(BEFORE), tmp_path / "before" / "report.json")
    assert main(["compare", str(tmp_path / "before"), str(AFTER)]) == 0
    assert capsys.readouterr().out.startswith("FASTER")


def test_a_newer_report_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    newer = tmp_path / "newer.json"
    newer.write_text(RUN2.read_text().replace('"schema_version": 1', '"schema_version": 99', 1))
    assert main(["compare", str(RUN1), str(newer)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "report schema version 99 is newer than this pipediag reads" in err


def test_a_missing_report_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(RUN1), "no/such/report.json"]) == 2
    assert capsys.readouterr().err == (
        "pipediag: error: no report at no/such/report.json: run `pipediag run` first\n"
    )


def test_compare_needs_two_reports(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["compare", str(RUN1)])
    assert exit_.value.code == 2
    assert "required: NEW" in capsys.readouterr().err


def test_a_compute_bound_run_against_an_input_bound_one() -> None:
    comparison = compare_reports(load_report(COMPUTE_BOUND_RUN), load_report(RUN1))
    verdict = comparison.labels[0]
    assert (verdict.base, verdict.new, verdict.worse) == ("compute-bound", "input-bound", True)
    # Different pipelines share no stage: each is listed as new or gone.
    assert all(s.figure.judgement == compare.CHANGED for s in comparison.stages)


def test_costs_measured_in_alternation_are_judged_by_their_own_intervals() -> None:
    # GIVEN two runs whose costs, 44% and 41%, carry the pairs' 90% intervals
    quiet = NoiseRules(run_to_run_points=0.0)
    base = synthetic_cost_report(wait=0.04, contention=0.40, cost_interval=(0.40, 0.48))
    near = synthetic_cost_report(wait=0.04, contention=0.37, cost_interval=(0.37, 0.45))
    # WHEN compared  THEN the cost's error is the intervals', and 3 points within them is noise
    cost = compare_reports(base, near, quiet).input_cost
    assert cost is not None and cost.how == ALTERNATION_HOW
    assert cost.judgement == compare.NOISE
    # the same 3 points between narrow intervals is a change
    narrow = synthetic_cost_report(wait=0.04, contention=0.40, cost_interval=(0.435, 0.445))
    moved = synthetic_cost_report(wait=0.04, contention=0.37, cost_interval=(0.405, 0.415))
    cost = compare_reports(narrow, moved, quiet).input_cost
    assert cost is not None and cost.judgement == compare.CHANGED


def test_the_epoch_start_part_is_compared_only_where_a_run_counted_one() -> None:
    base = synthetic_cost_report()
    names = [f.name for f in compare_reports(base, base).shares]
    assert "cost-epoch-start" not in names
    split = base.verdict.cost_split
    assert split is not None
    started = replace(
        base,
        verdict=replace(base.verdict, cost_split=replace(split, epoch_start=0.1, epoch_steps=9)),
    )
    names = [f.name for f in compare_reports(base, started).shares]
    assert names[-1] == "cost-epoch-start"


def test_a_training_change_without_a_spread_says_so_without_an_interval() -> None:
    # GIVEN a training rate moved between two runs, with no spread recorded for either
    training = compare.FigureChange(
        "training", "steps/s", 98.8, 175.5, 1.78, ratio=True, judgement=compare.FASTER
    )
    # WHEN it is worded
    claim, rates = training_claim(training)
    # THEN the figures say no spread was recorded, and no interval is claimed
    assert claim == "FASTER: training 1.78x faster"
    assert rates == "98.8 -> 175.5 steps/s (no spread recorded)"
