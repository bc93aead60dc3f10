"""The text summary: input cost and its parts, the three rates, phase verdicts.

Every case is a hand-built report; the lines are asserted as the user reads them.
"""

from __future__ import annotations

import dataclasses

from synthetic_reports import CostEvidence, RunLayout, synthetic_cost_report, synthetic_report

from pipediag.renderers.cost_words import contention_evidence, cost_bar
from pipediag.renderers.no_verdict_words import NO_STEPS_TEXT, NOT_ENOUGH_MEASURED
from pipediag.renderers.png.header import key_figures
from pipediag.renderers.run_words import epoch_start_text
from pipediag.renderers.text import render_text
from pipediag.renderers.verdict_words import NO_VERDICT, headline, phase_text
from pipediag.report.io import from_dict, to_dict
from pipediag.report.model import EpochStart, PhaseVerdict, Report
from pipediag.report.names import stage_name
from pipediag.report.reasons import Reason
from pipediag.report.stages import StageStats

# Where a row's text starts: two spaces, a 16-wide label.
INDENT = " " * 18


def _lines(report: Report) -> list[str]:
    return render_text(report).splitlines()


def _row(lines: list[str], label: str) -> list[str]:
    """The lines of one row: the labelled line and its continuation lines."""
    start = next(i for i, line in enumerate(lines) if line.startswith(f"  {label:<16}"))
    rows = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.startswith(INDENT):
            break
        rows.append(line)
    return rows


def _labels(lines: list[str]) -> list[str]:
    """The row labels, in order (the rows start after the headline's blank line)."""
    rows = lines[lines.index("") + 1 :]
    return [line[2:18].strip() for line in rows if line.startswith("  ") and line[2] != " "]


def test_contention_case_leads_with_the_headline_and_splits_the_cost() -> None:
    # GIVEN training at 25 steps/s, the step alone at 44.6 (measured), and input costing 44%,
    # mostly the pipeline's threads taking the cores
    report = synthetic_cost_report(wait=0.04, contention=0.40, fetch=0.0)
    # WHEN summarised
    lines = _lines(report)
    # THEN the headline comes first, worded from the cost and its dominant part, and the cost
    # row splits it, with its evidence
    assert lines[0] == (
        "INPUT-BOUND: input costs 44% of training time, mostly CPU contention: the pipeline's "
        "threads take cores the train step needs (it waited only 4% of the time)"
    )
    # nothing under it repeats the rates: they have a row of their own
    assert lines[1] == ""
    assert _row(lines, "Input cost") == [
        "  Input cost      44% of training time (1.8x faster if input were free): "
        "wait 4%, contention 40%, fetch 0%",
        f"{INDENT}the pipeline kept 1.1 more cores busy while training; 0.1 cores free: "
        "the host's cores were all busy",
    ]
    only_free = dataclasses.replace(report.verdict.cost_split, pipeline_cores_busy=None)
    assert contention_evidence(only_free) == (
        "0.1 cores free while training: the host's cores were all busy"
    )
    # the wait share XProf would report stays beside it
    assert _row(lines, "Input wait") == ["  Input wait      4% of step time (XProf's figure)"]
    assert _row(lines, "Rates") == [
        "  Rates           P  pipeline alone  60.0 batches/s",
        f"{INDENT}T  compute alone   44.6 steps/s  (measured on a cached batch, 100 steps)",
        f"{INDENT}A  training        25.0 steps/s",
    ]
    # the old estimate row is gone
    assert not any(line.lstrip().startswith("Compute alone") for line in lines)


def test_the_cost_comes_first_then_the_rates_then_the_details() -> None:
    report = dataclasses.replace(
        synthetic_cost_report(),
        pipeline=dataclasses.replace(
            synthetic_cost_report().pipeline,
            deep_skipped_reason=Reason("deep-skipped", value=0.02, limit=0.05),
        ),
    )
    assert _labels(_lines(report)) == [
        "Input cost",
        "Input wait",
        "Rates",
        "Pipeline alone",
        "Train step",
        "Stages/fixes",
        "Host CPU",
        "GPU",
        "Run",
    ]


def test_fetch_case_shows_the_pull_overhead_and_no_contention_evidence() -> None:
    # GIVEN a cost that is mostly next()'s own overhead on ready batches, no core figures
    report = synthetic_cost_report(
        wait=0.01,
        contention=0.0,
        fetch=0.12,
        evidence=CostEvidence(pipeline_cores_busy=None, free_cores=None, pull_s=0.0052),
    )
    lines = _lines(report)
    assert lines[0] == (
        "BALANCED: input costs 13% of training time, mostly the per-pull overhead of next(): "
        "the pipeline is 2x faster than training, but each step pulls one small batch"
    )
    assert _row(lines, "Input cost") == [
        "  Input cost      13% of training time (1.1x faster if input were free): "
        "wait 1%, contention 0%, fetch 12%",
        f"{INDENT}next() took 5.2 ms per step on a ready batch",
    ]


def test_estimated_compute_alone_says_so_and_why() -> None:
    # GIVEN a run where the step could not be run alone: T is an estimate
    report = synthetic_cost_report(measured=False, estimate_reason=Reason("marked-steps"))
    assert report.compute_alone is None
    rates = _row(_lines(report), "Rates")
    assert rates[1] == (
        f"{INDENT}T  compute alone   ~44.6 steps/s  (estimated: steps marked through "
        "pipediag.monitor() cannot be run on their own: compute alone is estimated)"
    )


def test_cost_without_a_split_still_gives_the_share_and_the_speedup() -> None:
    base = synthetic_cost_report()
    report = dataclasses.replace(base, verdict=dataclasses.replace(base.verdict, cost_split=None))
    assert _row(_lines(report), "Input cost") == [
        "  Input cost      44% of training time (1.8x faster if input were free)"
    ]


def test_phases_get_one_line_each() -> None:
    # GIVEN epoch 1 filling a cache (input-bound) and epochs 2-5 reading it
    base = synthetic_cost_report(RunLayout(epochs=5))
    phases = [
        PhaseVerdict(0, 0, 12, 8.4, 0.58, 0.66, "input-bound"),
        PhaseVerdict(1, 4, 48, 31.0, 0.01, 0.03, "compute-bound"),
    ]
    report = dataclasses.replace(base, verdict=dataclasses.replace(base.verdict, phases=phases))
    assert _row(_lines(report), "Phases") == [
        "  Phases          epoch 1: input-bound, input costs 66% (12 steps, 8.4 steps/s)",
        f"{INDENT}epochs 2-5: compute-bound, input costs 3% (48 steps, 31.0 steps/s)",
    ]


def test_phase_without_cost_falls_back_on_its_wait_and_unknown_reads_no_verdict() -> None:
    phase = PhaseVerdict(2, 2, 10, None, 0.4, None, "unknown")
    assert phase_text(phase) == "epoch 3: no verdict, input wait 40%"
    assert phase_text(dataclasses.replace(phase, input_wait_fraction=None)) == (
        "epoch 3: no verdict"
    )


def test_skipped_deep_analysis_is_one_line() -> None:
    base = synthetic_cost_report(wait=0.01, contention=0.01, fetch=0.0)
    reason = Reason("deep-skipped", value=0.02, limit=0.05)
    report = dataclasses.replace(
        base, pipeline=dataclasses.replace(base.pipeline, deep_skipped_reason=reason)
    )
    assert _row(_lines(report), "Stages/fixes") == [
        "  Stages/fixes    not measured: input costs 2% of training (under 5%): no pipeline "
        "fix can gain more; --deep measures stages and fixes anyway"
    ]
    assert "Stages/fixes" not in render_text(base)


def test_old_report_without_the_new_fields_still_renders() -> None:
    # GIVEN a report from before input cost was split: its JSON has none of the new fields
    data = to_dict(synthetic_report(steps=10, wait_s=0.03, compute_s=0.01))
    for key in (
        "input_cost_fraction",
        "training_steps_per_s",
        "compute_alone_source",
        "compute_alone_reason",
        "cost_split",
        "phases",
    ):
        del data["verdict"][key]
    data["schema_version"] = 2
    del data["compute_alone"]
    del data["pipeline"]["deep_skipped_reason"]
    lines = _lines(from_dict(data))
    # THEN the label with its wait share in words, the severity under it, the wait share in
    # place of the cost, and the estimate said as one
    assert lines[:2] == [
        "INPUT-BOUND: 75% of step time spent waiting for input",
        "  Severity: highly input-bound",
    ]
    assert _labels(lines)[:3] == ["Input wait", "Rates", "Pipeline alone"]
    assert _row(lines, "Input wait") == ["  Input wait      75% of step time (XProf's figure)"]
    assert _row(lines, "Rates") == [
        "  Rates           P  pipeline alone  33.3 batches/s",
        f"{INDENT}T  compute alone   ~100 steps/s  (estimated: median step time minus input wait)",
        f"{INDENT}A  training        25.0 steps/s",
    ]
    assert "Input cost" not in _labels(lines)
    assert "Phases" not in _labels(lines)


def test_empty_report() -> None:
    lines = _lines(Report(script="t.py"))
    assert lines[0] == f"{NO_VERDICT}: {NOT_ENOUGH_MEASURED}"
    assert _labels(lines) == ["Pipeline alone", "Train step", "Host CPU", "GPU", "Run"]
    assert _row(lines, "Pipeline alone") == ["  Pipeline alone  not measured"]
    assert not any("None" in line for line in lines)


def test_unknown_verdict_says_why_from_its_code() -> None:
    report = Report(script="t.py")
    report = dataclasses.replace(
        report, verdict=dataclasses.replace(report.verdict, no_verdict_because="no-steps")
    )
    assert _lines(report)[:2] == [f"NO VERDICT: {NO_STEPS_TEXT}", ""]


def test_rates_partly_measured() -> None:
    # GIVEN only the pipeline read alone (the script failed before training)
    report = Report(script="t.py")
    report = dataclasses.replace(
        report,
        pipeline=dataclasses.replace(
            synthetic_report().pipeline, batches_per_s=12.5, deep_skipped_reason=None
        ),
    )
    assert _row(_lines(report), "Rates") == [
        "  Rates           P  pipeline alone  12.5 batches/s",
        f"{INDENT}T  compute alone   not measured",
        f"{INDENT}A  training        not measured",
    ]


def test_slowest_stage_is_named_as_the_png_names_it() -> None:
    base = synthetic_cost_report()
    stage = StageStats(0, "source", "TFRecordDatasetV2", batches_per_s=9.0, bottleneck=True)
    report = dataclasses.replace(base, pipeline=dataclasses.replace(base.pipeline, stages=[stage]))
    assert _row(_lines(report), "Slowest stage") == [
        "  Slowest stage   source: TFRecord: 9.0 batches/s up to here"
    ]


def test_stage_names() -> None:
    assert stage_name(StageStats(0, "map", "ParallelMapDatasetV2", function="parse")) == (
        "map(parse)"
    )
    assert stage_name(StageStats(1, "batch", "BatchDatasetV2")) == "batch"
    assert stage_name(StageStats(2, "parallel-map", "ParallelMapDatasetV2")) == "parallel-map"
    assert stage_name(StageStats(3, "source", "TensorSliceDataset")) == "source: TensorSlice"
    assert stage_name(StageStats(4, "prefetch", "")) == "prefetch"


def test_headline_is_worded_from_the_verdict_as_a_claim_then_its_explanation() -> None:
    # GIVEN a cost mostly contention: the claim names it, the explanation says why after ": "
    report = synthetic_cost_report(wait=0.04, contention=0.40, fetch=0.0)
    head = headline(report)
    assert head.claim == "INPUT-BOUND: input costs 44% of training time, mostly CPU contention"
    assert head.explanation.startswith("the pipeline's threads take cores")
    assert head.text == f"{head.claim}: {head.explanation}"
    # an estimated T with no dominant part: the note stays in the claim, nothing to explain
    estimated = synthetic_cost_report(wait=0.0, contention=0.0, fetch=0.0, measured=False)
    estimated = dataclasses.replace(
        estimated,
        verdict=dataclasses.replace(
            estimated.verdict,
            label="input-bound",
            cost_split=dataclasses.replace(estimated.verdict.cost_split, dominant=None),
        ),
    )
    head = headline(estimated)
    assert (
        head.text
        == head.claim
        == (
            "INPUT-BOUND: input costs 0% of training time "
            "(compute alone estimated: contention not measured)"
        )
    )
    # phases with no explanation before them: they follow the claim after "; "
    phases = [
        PhaseVerdict(0, 0, 12, 8.4, 0.6, 0.66, "input-bound"),
        PhaseVerdict(1, 4, 48, 31.0, 0.02, 0.03, "compute-bound"),
    ]
    phased = dataclasses.replace(
        estimated, verdict=dataclasses.replace(estimated.verdict, phases=phases)
    )
    head = headline(phased)
    assert head.explanation == (
        "epoch 1 dominates the measured steps; after it (epochs 2-5) compute-bound, input costs 3%"
    )
    assert head.text == f"{head.claim}; {head.explanation}"


def test_no_verdict_leads_with_its_title_then_why() -> None:
    report = Report(script="t.py")
    verdict = dataclasses.replace(report.verdict, no_verdict_because="no-steps")
    head = headline(dataclasses.replace(report, verdict=verdict))
    assert head.text == f"NO VERDICT: {NO_STEPS_TEXT}"
    assert head.claim == "NO VERDICT"
    assert head.explanation == NO_STEPS_TEXT


def test_epoch_starts_are_shown_beside_the_cost() -> None:
    from dataclasses import replace

    report = synthetic_report(steps=50, wait_s=0.0, compute_s=0.01)
    train = report.train
    assert epoch_start_text(train) == ""  # none seen
    starts = [EpochStart(0, 0.3, 100), EpochStart(1, 1.2, 100), EpochStart(2, 0.8, 100)]
    train = replace(train, epoch_starts=starts)
    text = epoch_start_text(train)
    # the first epoch's start (Keras's own set-up) is left out: median of 1.2 and 0.8
    assert text.startswith("epoch starts: 1.00 s before each epoch's first step (median of 2")
    assert "of an epoch of 100 steps" in text and text.endswith("not part of the input cost above")
    short = replace(train, epoch_starts=[EpochStart(0, 0.3), EpochStart(1, 0.001)])
    assert epoch_start_text(short) == ""
    assert "epoch starts: 1.00 s" in render_text(replace(report, train=train))


def test_a_cost_with_its_interval_says_it_and_a_straddling_one_names_both_bands() -> None:
    # GIVEN a cost of 21% whose 90% interval, 17-24%, reaches across XProf's 20% boundary
    report = synthetic_cost_report(wait=0.01, contention=0.20, cost_interval=(0.17, 0.24))
    lines = _lines(report)
    # THEN the headline names both bands and the interval, the cost row gives the interval
    assert lines[0].startswith(
        "BALANCED TO INPUT-BOUND: input costs 21% of training time (17-24%), mostly CPU "
        "contention: "
    )
    assert report.verdict.label == "input-bound"  # the point's band, for check and compare
    assert _row(lines, "Input cost")[0].startswith(
        "  Input cost      21% of training time (90% interval 17-24%) (1.3x faster if input "
        "were free): wait 1%, contention 20%, fetch 0%"
    )
    assert dict(key_figures(report))["Input cost (of training time)"] == "21% (17-24%)"
    # one band for the whole interval: one title
    inside = synthetic_cost_report(wait=0.04, contention=0.40, cost_interval=(0.40, 0.48))
    assert _lines(inside)[0].startswith("INPUT-BOUND: input costs 44% of training time (40-48%)")


def test_a_cost_not_measurable_above_noise_says_how_large_it_could_be() -> None:
    # GIVEN training as fast as the step alone within the pairs' interval: cost 0, at most 3%
    base = synthetic_cost_report(wait=0.0, contention=0.0, cost_interval=(0.0, 0.03))
    lines = _lines(base)
    assert lines[0] == (
        "COMPUTE-BOUND: input cost not measurable above noise (at most 3%): the model's train "
        "step sets the rate"
    )
    # the cost row says so in place of a share, with no gain promised from freeing input
    assert _row(lines, "Input cost")[0] == (
        "  Input cost      not measurable above noise (at most 3% of training time): "
        "wait 0%, contention 0%, fetch 0%"
    )
    assert dict(key_figures(base))["Input cost (of training time)"] == "at most 3%"
    # an interval reaching past 5% straddles a band boundary too
    wider = synthetic_cost_report(wait=0.0, contention=0.0, cost_interval=(0.0, 0.09))
    assert _lines(wider)[0].startswith(
        "COMPUTE-BOUND TO BALANCED: input cost not measurable above noise (at most 9%)"
    )
    assert "unexplained" not in render_text(base)


def test_an_epoch_start_part_is_listed_with_its_evidence_and_counted_in_the_train_row() -> None:
    # GIVEN a cost of 28%: 8% waiting within the steps, 20% each epoch's 1.8 s start-up
    base = synthetic_cost_report(RunLayout(epochs=3), wait=0.08, contention=0.0)
    split = dataclasses.replace(
        base.verdict.cost_split,
        epoch_start=0.20,
        epoch_start_s=1.8,
        epoch_steps=140,
        epoch_start_stage="shuffle(10000)",
        dominant="epoch-start",
    )
    starts = [EpochStart(0, 3.0, 140), EpochStart(1, 1.8, 140), EpochStart(2, 1.8, 140)]
    report = dataclasses.replace(
        base,
        verdict=dataclasses.replace(
            base.verdict, cost_split=split, input_cost_fraction=0.28, label="input-bound"
        ),
        train=dataclasses.replace(base.train, epoch_starts=starts),
    )
    lines = _lines(report)
    assert lines[0] == (
        "INPUT-BOUND: input costs 28% of training time, mostly epoch starts: a 1.80 s start-up "
        "before each epoch, likely shuffle(10000): 20% of an epoch of 140 steps"
    )
    assert _row(lines, "Input cost") == [
        "  Input cost      28% of training time (1.4x faster if input were free): "
        "wait 8%, contention 0%, fetch 0%, epoch start 20%",
        f"{INDENT}the pipeline kept 1.1 more cores busy while training; 0.1 cores free",
        f"{INDENT}a 1.80 s start-up before each epoch, likely shuffle(10000): 20% of an epoch "
        "of 140 steps",
    ]
    assert any(
        line.endswith(
            "epoch starts: 1.80 s before each epoch's first step (median of 2 epochs); 20% of "
            "an epoch of 140 steps, counted in the input cost above"
        )
        for line in _row(lines, "Train step")
    )
    # the bar draws it as a part of its own
    assert [p.part for p in cost_bar(report).parts] == [
        "compute",
        "wait",
        "contention",
        "fetch",
        "epoch start",
    ]


def test_an_epoch_start_of_unknown_length_is_said_to_be_left_out() -> None:
    report = synthetic_report(steps=50, wait_s=0.0, compute_s=0.01)
    train = dataclasses.replace(
        report.train, epoch_starts=[EpochStart(0, 0.3), EpochStart(1, 1.2), EpochStart(2, 1.2)]
    )
    assert epoch_start_text(train).endswith(
        "(median of 2 epochs); not part of the input cost above: the epoch's length is unknown"
    )


def test_the_observer_check_reads_as_one_row_and_survives_the_json() -> None:
    from pipediag.report.model import ObserverEffect

    report = synthetic_cost_report(cost_interval=(0.3, 0.5))
    assert "Watching" not in _labels(_lines(report))  # no check, no row
    effect = ObserverEffect(ratio=0.98, low=0.96, high=1.01, pairs=3)
    checked = dataclasses.replace(
        report, verdict=dataclasses.replace(report.verdict, observer_effect=effect)
    )
    assert from_dict(to_dict(checked)).verdict.observer_effect == effect
    (line,) = _row(_lines(checked), "Watching")
    assert line.endswith(
        "training ran at 0.98x (0.96-1.01) its rate with pipediag's samplers paused "
        "(3 pairs of blocks in turn)"
    ), line


def test_the_host_row_says_what_pipediag_s_samplers_took_of_a_core() -> None:
    # GIVEN a 20 s run whose host sampler took 0.08 s of CPU and GPU sampler 0.02 s
    report = synthetic_cost_report()
    report = dataclasses.replace(
        report,
        wall_time_s=20.0,
        host=dataclasses.replace(report.host, sampler_cpu_s=0.08),
        gpu=dataclasses.replace(report.gpu, sampler_cpu_s=0.02),
    )
    # THEN the host row gives their share of one core over the run
    (host, *_) = _row(_lines(report), "Host CPU")
    assert host.endswith(", pipediag's samplers 0.5% of a core")
    # AND says nothing where the samplers' CPU was not kept
    unknown = dataclasses.replace(report, host=dataclasses.replace(report.host, sampler_cpu_s=None))
    unknown = dataclasses.replace(unknown, gpu=dataclasses.replace(report.gpu, sampler_cpu_s=None))
    assert "samplers" not in _row(_lines(unknown), "Host CPU")[0]
