"""The PNG report: a fixed-size page whose panels all show data, for any report."""

from __future__ import annotations

import dataclasses
import struct
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from synthetic_reports import RunLayout, synthetic_cost_report, synthetic_report
from worded import written

from pipediag.renderers.cost_words import cost_bar
from pipediag.renderers.no_verdict_words import NO_STEPS_TEXT
from pipediag.renderers.png import build_figure, render_png
from pipediag.renderers.png.header import header_lines, key_figures
from pipediag.renderers.png.rates import stage_ms
from pipediag.renderers.png.style import (
    COMPUTE_COLOUR,
    COST_COLOURS,
    FIGURE_SIZE_PX,
    INPUT_COLOUR,
    TIME_AXIS_LABEL,
    WARNING_COLOUR,
)
from pipediag.renderers.png.suggestions import MAX_SUGGESTIONS, suggestion_lines
from pipediag.renderers.png.timeline import MAX_STEP_BARS, bin_steps, phase_spans
from pipediag.renderers.reason_words import reason_words
from pipediag.renderers.suggestion_words import best_fix, best_fix_figure
from pipediag.renderers.text import render_text
from pipediag.renderers.verdict_words import NO_VERDICT
from pipediag.report.io import from_dict, to_dict
from pipediag.report.model import Gain, PhaseSpan, PhaseVerdict, Report, StepRecord
from pipediag.report.reasons import Reason
from pipediag.report.samples import GpuSection, HostSection
from pipediag.report.stages import StageStats

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
LONG_RUN_STEPS = 10_000
LONG_RUN_SECONDS_MAX = 20.0
LONG_RUN_PATCHES_MAX = 2_000


def _axes(figure: Figure, label: str) -> Axes:
    (found,) = [a for a in figure.axes if a.get_label() == label]
    return found


def _texts(figure: Figure) -> list[str]:
    """Every text on the page: figure-level, axes titles/labels/notes, legends, tick labels."""
    return [t.get_text() for t in figure.findobj(lambda a: hasattr(a, "get_text"))]


def _png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == PNG_SIGNATURE
    assert header[12:16] == b"IHDR"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def _with_stages(report: Report) -> Report:
    stages = [
        StageStats(0, "range", "RangeDataset", batches_per_s=5000.0),
        StageStats(1, "map", "parse", batches_per_s=30.0, bottleneck=True),
        StageStats(2, "batch", "batch(32)", batches_per_s=35.0),
    ]
    return dataclasses.replace(report, pipeline=dataclasses.replace(report.pipeline, stages=stages))


def test_render_png_writes_a_png_of_the_fixed_size(tmp_path: Path) -> None:
    # GIVEN an input-bound report  WHEN rendered
    report = synthetic_report(wait_s=0.03, compute_s=0.01)
    path = render_png(report, tmp_path / "out" / "report.png")
    # THEN a PNG of the fixed page size is written, with no temporary files left behind
    assert path == tmp_path / "out" / "report.png"
    assert _png_size(path) == FIGURE_SIZE_PX
    assert [p.name for p in path.parent.iterdir()] == ["report.png"]


def test_headline_states_the_verdict_in_plain_words() -> None:
    # GIVEN reports without input cost: the label, big, then its wait share in plain words
    figure = build_figure(synthetic_report(wait_s=0.03, compute_s=0.01))
    assert "INPUT-BOUND" in _texts(figure)
    assert any(t.startswith("75% of step time spent waiting for input") for t in _texts(figure))
    # as an older report read back words it
    report = _read_as_version_2(synthetic_report(wait_s=0.0005, compute_s=0.02))
    assert header_lines(report)[0] == "COMPUTE-BOUND"
    assert any(t.startswith("Only 2% of step time") for t in _texts(build_figure(report)))


def _read_as_version_2(report: Report) -> Report:
    """The report as pipediag reads it back from a version-2 file."""
    data = to_dict(report)
    data["schema_version"] = 2
    return from_dict(data)


def test_every_panel_has_data_drawn() -> None:
    figure = build_figure(
        _with_stages(synthetic_report(wait_s=0.03, compute_s=0.01, with_gpu=True))
    )
    timeline = _axes(figure, "timeline")
    # 53 steps: a wait, a compute and a label bar each
    assert len(timeline.patches) == 3 * 53
    assert len(_axes(figure, "gpu").lines) == 1
    assert len(_axes(figure, "cpu").lines) == 2  # process and system
    pipeline = _axes(figure, "pipeline")
    assert len(pipeline.patches) == 3
    bottleneck = [p for p in pipeline.patches if p.get_facecolor()[:3] == _rgb(INPUT_COLOUR)]
    assert len(bottleneck) == 1
    assert len(_axes(figure, "cost").patches) == 2  # old report: wait and compute


def test_compute_bound_run_names_the_slowest_stage_without_calling_it_the_bottleneck() -> None:
    # GIVEN a compute-bound run whose pipeline still has a slowest stage
    figure = build_figure(_with_stages(synthetic_report(wait_s=0.0005, compute_s=0.02)))
    pipeline = _axes(figure, "pipeline")
    # THEN no stage is painted as the input problem, and the slowest is named as such
    painted = [p for p in pipeline.patches if p.get_facecolor()[:3] == _rgb(INPUT_COLOUR)]
    assert painted == []
    texts = _texts(figure)
    assert any("slowest stage" in t for t in texts)
    assert not any(t.endswith("bottleneck") for t in texts)


def test_gpu_panel_shares_the_steps_axis_and_cpu_keeps_the_whole_run() -> None:
    figure = build_figure(synthetic_report(with_gpu=True))
    timeline, gpu, cpu = (_axes(figure, label) for label in ("timeline", "gpu", "cpu"))
    assert gpu.get_shared_x_axes().joined(timeline, gpu)
    assert not cpu.get_shared_x_axes().joined(timeline, cpu)
    assert gpu.get_xlim() == timeline.get_xlim()
    assert cpu.get_xlim()[0] == 0.0


def test_no_gpu_report_says_why_in_one_line_and_gives_the_steps_its_room() -> None:
    report = synthetic_report()
    figure = build_figure(report)
    # no GPU panel: one line under the steps panel, which takes the room and its time axis
    assert "gpu" not in {axes.get_label() for axes in figure.axes}
    line = [t.get_text() for t in figure.texts if t.get_gid() == "no-gpu"]
    assert report.gpu.reason is not None
    assert line == [f"No GPU found: {reason_words(report.gpu.reason)}"]
    timeline = _axes(figure, "timeline")
    assert timeline.get_xlabel() == TIME_AXIS_LABEL
    assert timeline.get_position().height > 0.25


def test_unavailable_host_section_is_noted() -> None:
    report = dataclasses.replace(
        synthetic_report(), host=HostSection(available=False, reason=Reason("no-psutil"))
    )
    figure = build_figure(report)
    assert [t.get_text() for t in _axes(figure, "cpu").texts] == [
        "Host CPU not sampled: psutil is not installed: pip install psutil"
    ]


def test_without_stages_the_three_rates_are_compared() -> None:
    figure = build_figure(synthetic_report(wait_s=0.03, compute_s=0.01))
    pipeline = _axes(figure, "pipeline")
    assert len(pipeline.patches) == 3
    labels = [t.get_text() for t in pipeline.get_yticklabels()]
    # an old report: its compute-alone rate was step time minus input wait, an estimate
    assert labels == [
        "P pipeline alone\n(batches/s)",
        "A training\n(steps/s)",
        "T compute alone\n(steps/s, estimated)",
    ]
    # the pipeline (33 batches/s) is slower than compute alone (100 steps/s): it is the limit
    assert any("33.3" in t.get_text() and "limit" in t.get_text() for t in pipeline.texts)


def test_empty_report_renders(tmp_path: Path) -> None:
    path = render_png(Report(script="t.py"), tmp_path / "empty.png")
    assert _png_size(path) == FIGURE_SIZE_PX
    texts = _texts(build_figure(Report(script="t.py")))
    assert "No train steps recorded" in texts
    assert "No suggestions" in texts
    assert any(t.startswith("NO VERDICT") for t in texts)
    assert any("INCOMPLETE RUN" in t for t in texts)


def test_steps_without_input_wait_still_draw() -> None:
    steps = [StepRecord(i, 0.1 * i, 0.1, None, "unknown") for i in range(5)]
    report = Report(script="t.py", train=dataclasses.replace(Report("t").train, steps=steps))
    figure = build_figure(report)
    assert len(_axes(figure, "timeline").patches) == 3 * 5


def test_long_run_is_binned_and_fast(tmp_path: Path) -> None:
    report = synthetic_report(LONG_RUN_STEPS, wait_s=0.003, compute_s=0.01, with_gpu=True)
    started = time.perf_counter()
    render_png(report, tmp_path / "long.png")
    assert time.perf_counter() - started < LONG_RUN_SECONDS_MAX
    figure = build_figure(report)
    patches = sum(len(a.patches) for a in figure.axes)
    assert patches < LONG_RUN_PATCHES_MAX
    assert len(_axes(figure, "timeline").patches) <= 3 * MAX_STEP_BARS
    assert any("steps shown in" in t for t in _texts(figure))


def test_bins_keep_total_wait_share() -> None:
    steps = [StepRecord(i, 0.01 * i, 0.01, 0.004, "input-bound") for i in range(1000)]
    bins = bin_steps(steps, 10)
    assert len(bins) == 10
    assert sum(b.total_s for b in bins) == pytest.approx(10.0)
    assert all(b.wait_share == pytest.approx(0.4) for b in bins)
    assert {b.label for b in bins} == {"input-bound"}


def test_suggestions_are_listed_with_gains_and_warnings() -> None:
    suggestions = [
        written(f"PD00{i}", f"fix {i}", estimate=1.1 + i / 10, correctness_warning=i == 2)
        for i in range(7)
    ]
    suggestions[0] = dataclasses.replace(suggestions[0], gain=Gain("pipeline-alone", 2.5))
    report = dataclasses.replace(synthetic_report(), suggestions=suggestions)
    figure = build_figure(report)
    lines = [t for t in figure.texts if t.get_gid() == "suggestion"]
    assert len(lines) == MAX_SUGGESTIONS
    # the same line the text summary prints, numbered as the page lists it
    assert lines[0].get_text() == "1. [PD000] fix 0  (on the pipeline alone 2.50x)"
    assert "may change results" in lines[2].get_text()
    assert lines[2].get_color() == WARNING_COLOUR
    found = best_fix(report)
    assert found is not None and found[1] == 2.5
    assert "2.50x" in _texts(figure)


def test_incomplete_run_is_flagged() -> None:
    report = dataclasses.replace(synthetic_report(), complete=False, stop_reason="interrupted")
    texts = _texts(build_figure(report))
    assert any("INCOMPLETE RUN: interrupted" in t for t in texts)


def test_gpu_available_without_samples_is_noted() -> None:
    report = dataclasses.replace(synthetic_report(), gpu=GpuSection(available=True))
    figure = build_figure(report)
    assert "no utilization samples" in _axes(figure, "gpu").texts[0].get_text()


def _rgb(colour: str) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb

    return to_rgb(colour)


def test_long_header_lines_are_shortened_to_stay_on_the_page() -> None:
    # GIVEN an incomplete run with a long command line and a long reason
    report = dataclasses.replace(
        synthetic_report(),
        args=["--data-dir", "/a/very/long/path/" * 10],
        complete=False,
        stop_reason="interrupted by the user after many steps of the first epoch",
    )
    # WHEN drawn
    figure = build_figure(report)
    renderer = figure.canvas.get_renderer()
    banner = next(t for t in figure.texts if t.get_gid() == "incomplete")
    run_line = next(t for t in figure.texts if t.get_text().startswith("$ pipediag run"))
    # THEN the command line is clipped before the banner, and nothing leaves the page
    assert run_line.get_text().endswith("\N{HORIZONTAL ELLIPSIS}")
    assert run_line.get_window_extent(renderer).x1 < banner.get_window_extent(renderer).x0
    for text in figure.texts:
        extent = text.get_window_extent(renderer)
        assert extent.x0 >= 0 and extent.x1 <= figure.bbox.width, text.get_text()


def test_what_to_change_lists_fixes_not_notes() -> None:
    # GIVEN a fix, and a note from a check that measured another fix not worth making
    report = dataclasses.replace(
        synthetic_report(),
        suggestions=[
            written("PD001-sequential-map", "map(f): parallelise (measured 0.74x)", kind="note"),
            written("PD007-py-function", "map(f): port it to TF ops"),
        ],
    )
    # THEN only the fix is a thing to change, numbered first
    lines = [text for text, _ in suggestion_lines(report)]
    assert len(lines) == 1 and lines[0].startswith("1. ") and "PD007" in lines[0]


# ------------------------------------------------------- input cost, its parts and the phases


def _by_gid(artists: Sequence[Artist], prefix: str) -> list[Artist]:
    return [a for a in artists if (a.get_gid() or "").startswith(prefix)]


def _with_phases(report: Report) -> Report:
    # epochs counted from 0, as the hooks and the analysis count them
    phases = [
        PhaseVerdict(0, 0, 12, 8.4, 0.58, 0.66, "input-bound"),
        PhaseVerdict(1, 4, 48, 31.0, 0.01, 0.03, "compute-bound"),
    ]
    return dataclasses.replace(report, verdict=dataclasses.replace(report.verdict, phases=phases))


def test_cost_bar_stacks_compute_and_the_three_parts_of_input_cost() -> None:
    # GIVEN input costing 44% of training time: wait 4%, contention 40%, fetch 0%
    figure = build_figure(synthetic_cost_report(wait=0.04, contention=0.40, fetch=0.0))
    cost = _axes(figure, "cost")
    # THEN one step's time is one bar: compute, then each part, left to right, in shares
    bars = _by_gid(cost.patches, "cost-")
    assert [b.get_gid() for b in bars] == [
        "cost-compute",
        "cost-wait",
        "cost-contention",
        "cost-fetch",
    ]
    assert [b.get_width() for b in bars] == pytest.approx([0.56, 0.04, 0.40, 0.0])
    assert [b.get_x() for b in bars] == pytest.approx([0.0, 0.56, 0.60, 1.0])
    # in the page's colours: blue compute, orange input (the wait as the per-step bars)
    assert bars[0].get_facecolor()[:3] == _rgb(COMPUTE_COLOUR)
    assert bars[1].get_facecolor()[:3] == _rgb(INPUT_COLOUR)
    assert bars[2].get_facecolor()[:3] == _rgb(COST_COLOURS["contention"])
    # percentages: inside the segments wide enough to hold one, all of them in the legend
    assert [t.get_text() for t in _by_gid(cost.texts, "cost-share")] == ["56%", "40%"]
    legend = cost.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == [
        "compute 56%",
        "wait 4%",
        "contention 40%",
        "fetch 0%",
    ]
    assert cost.get_title(loc="left") == "Input cost: 44% of training time"
    assert [t.get_text() for t in _by_gid(cost.texts, "cost-caption")] == [
        "1.8x faster if input were free"
    ]


def test_cost_bar_draws_an_epoch_start_part_and_titles_the_cost_with_its_interval() -> None:
    # GIVEN 28% of training time: 8% waiting in the steps, 20% each epoch's start-up, with its
    # 90% interval
    base = synthetic_cost_report(wait=0.08, contention=0.0, cost_interval=(0.25, 0.31))
    split = dataclasses.replace(
        base.verdict.cost_split, epoch_start=0.20, epoch_start_s=1.8, epoch_steps=140
    )
    verdict = dataclasses.replace(base.verdict, cost_split=split, input_cost_fraction=0.28)
    cost = _axes(build_figure(dataclasses.replace(base, verdict=verdict)), "cost")
    # THEN the start-up is a segment of its own, in its own shade, after the steps' parts
    bars = _by_gid(cost.patches, "cost-")
    assert [b.get_gid() for b in bars][-1] == "cost-epoch start"
    assert bars[-1].get_width() == pytest.approx(0.20)
    assert bars[-1].get_facecolor()[:3] == _rgb(COST_COLOURS["epoch-start"])
    assert cost.get_title(loc="left") == "Input cost: 28% (25-31%)"


def test_cost_bar_without_a_split_shows_input_cost_whole() -> None:
    base = synthetic_cost_report()
    report = dataclasses.replace(base, verdict=dataclasses.replace(base.verdict, cost_split=None))
    bars = _by_gid(_axes(build_figure(report), "cost").patches, "cost-")
    assert [(b.get_gid(), round(b.get_width(), 2)) for b in bars] == [
        ("cost-compute", 0.56),
        ("cost-input", 0.44),
    ]


def test_old_report_cost_bar_splits_the_mean_step() -> None:
    # GIVEN a report from before input cost: the mean step is split into wait and the rest
    bar = cost_bar(synthetic_report(wait_s=0.03, compute_s=0.01))
    assert [(s.part, s.share) for s in bar.parts] == [
        ("compute", pytest.approx(0.25)),
        ("wait", pytest.approx(0.75)),
    ]
    assert bar.title == "Mean step time"
    assert bar.caption == "wait 30.0 + compute 10.0 = 40.0 ms"
    assert cost_bar(Report(script="t.py")).parts == []


def test_steps_get_their_own_time_axis_and_cpu_keeps_the_whole_run() -> None:
    # GIVEN a 3 s pipeline benchmark from 0.5 s, then the steps, then the step run alone
    report = synthetic_cost_report()
    alone = report.compute_alone
    assert alone is not None and alone.start_s is not None
    first_step = report.train.steps[0].start_s
    alone_end = alone.start_s + alone.duration_s
    figure = build_figure(report)
    timeline, cpu = _axes(figure, "timeline"), _axes(figure, "cpu")
    # THEN the steps panel spans the steps and the compute-alone run, not the benchmark
    low, high = timeline.get_xlim()
    assert 3.5 < low <= first_step
    assert alone_end <= high
    assert (alone_end - first_step) / (high - low) > 0.95
    # the compute-alone run is shaded and named there
    (span,) = _by_gid(timeline.patches, "compute-alone-span")
    extent = span.get_path().get_extents(span.get_patch_transform())
    assert (extent.x0, extent.x1) == pytest.approx((alone.start_s, alone_end))
    assert [t.get_text() for t in _by_gid(timeline.texts, "compute-alone-label")] == [
        "compute\nalone"
    ]
    # the CPU panel keeps the whole run, its three phases named
    assert cpu.get_xlim()[0] == 0.0 and cpu.get_xlim()[1] >= alone_end
    assert sorted(t.get_text() for t in cpu.texts if t.get_gid()) == [
        "compute\nalone",
        "pipeline\nalone",
        "training",
    ]


def test_the_phases_after_the_verdict_are_named_on_the_whole_runs_cpu_panel() -> None:
    # GIVEN a run whose stage timing and fix trials follow the compute-alone run
    report = synthetic_cost_report()
    alone = report.compute_alone
    assert alone is not None and alone.start_s is not None
    after = alone.start_s + alone.duration_s
    report = dataclasses.replace(
        report,
        phases=[
            *report.phases,
            PhaseSpan("deep_analysis", after, 4.0),
            PhaseSpan("training_trial", after + 4.0, 1.5),
        ],
    )
    figure = build_figure(report)
    timeline, cpu = _axes(figure, "timeline"), _axes(figure, "cpu")
    # THEN the CPU panel, which spans them, names them after the three earlier phases
    assert cpu.get_xlim()[1] >= after + 5.5
    assert [t.get_text() for t in _by_gid(cpu.texts, "late-phase-label")] == [
        "stages and\nfix trials",
        "fixes on\ntraining",
    ]
    # and the steps panel, which ends with the compute-alone run, does not
    assert _by_gid(timeline.texts, "late-phase-label") == []


def test_phase_verdicts_are_drawn_over_their_epochs() -> None:
    # GIVEN 60 steps over 5 epochs (12 each, counted from 0 by the hooks) and two phases
    report = _with_phases(synthetic_cost_report(RunLayout(60, epochs=5)))
    figure = build_figure(report)
    timeline = _axes(figure, "timeline")
    texts = _by_gid(timeline.texts, "phase-verdict")
    # THEN each phase's verdict sits over its own steps, in its verdict's colour, in the
    # longest wording that fits between the phase's edges
    assert [t.get_text() for t in texts] == [
        "epoch 1: input-bound, 66%",
        "epochs 2-5: compute-bound, 3%",
    ]
    assert texts[0].get_color() == INPUT_COLOUR
    assert texts[1].get_color() == COMPUTE_COLOUR
    renderer = figure.canvas.get_renderer()
    for text, (_, start, end) in zip(texts, phase_spans(report), strict=True):
        left, right = (timeline.transData.transform((x, 0))[0] for x in (start, end))
        extent = text.get_window_extent(renderer)
        assert left <= extent.x0 and extent.x1 <= right
    second_epoch = next(s.start_s for s in report.train.steps if s.epoch == 1)
    assert texts[0].get_position()[0] < second_epoch < texts[1].get_position()[0]
    (boundary,) = _by_gid(timeline.lines, "phase-boundary")
    assert boundary.get_xdata()[0] == pytest.approx(second_epoch)


def test_phase_spans_follow_the_steps_epochs() -> None:
    report = _with_phases(synthetic_cost_report(RunLayout(60, epochs=5)))
    steps = report.train.steps
    (_, start1, end1), (_, start2, end2) = phase_spans(report)
    assert start1 == steps[0].start_s  # epoch 0's warm-up steps belong to its phase
    assert end1 == pytest.approx(start2)
    assert end2 == pytest.approx(steps[-1].start_s + steps[-1].duration_s)
    # a phase whose epochs have no recorded steps (merged away, or beyond them) is left out
    ghost = PhaseVerdict(8, 8, 5, None, None, None, "unknown")
    report = dataclasses.replace(
        report,
        verdict=dataclasses.replace(report.verdict, phases=[*report.verdict.phases, ghost]),
    )
    assert [(p.first_epoch, p.last_epoch) for p, _, _ in phase_spans(report)] == [(0, 0), (1, 4)]


def test_no_phases_no_phase_strip() -> None:
    figure = build_figure(synthetic_cost_report())
    timeline = _axes(figure, "timeline")
    assert _by_gid(timeline.texts, "phase-verdict") == []
    assert "phase" not in [t.get_text() for t in timeline.get_yticklabels()]


def test_best_fix_shows_only_a_measured_gain() -> None:
    # GIVEN a fix whose gain rests on stage timings only
    estimated = written("PD002", "vectorise", estimate=1.42)
    report = dataclasses.replace(synthetic_cost_report(), suggestions=[estimated])
    # THEN the key figure says it was not measured, and no estimate is drawn
    assert best_fix_figure(report) == ("Best fix (not measured)", "\N{EM DASH}")
    assert not any("1.42x" in t for t in _texts(build_figure(report)))
    # measured on the pipeline alone, it says so, and not the prediction from it
    verified = dataclasses.replace(estimated, gain=Gain("pipeline-alone", 1.6), estimate=1.3)
    report = dataclasses.replace(report, suggestions=[verified])
    assert best_fix_figure(report) == ("Best fix (pipeline alone)", "1.60x")
    assert "1.60x" in _texts(build_figure(report))
    # a fix measured without gain says so, and no fix at all is a dash
    slower = dataclasses.replace(estimated, gain=Gain("pipeline-alone", 0.8))
    report = dataclasses.replace(report, suggestions=[slower])
    assert best_fix_figure(report) == ("Best fix (measured)", "no gain")
    report = dataclasses.replace(report, suggestions=[])
    assert best_fix_figure(report) == ("Best fix (none found)", "\N{EM DASH}")


def test_key_figures_show_input_cost_and_the_three_rates() -> None:
    assert key_figures(synthetic_cost_report(measured=False))[:4] == [
        ("Input cost (of training time)", "44%"),
        ("P pipeline alone (batches/s)", "60.0"),
        ("T compute alone (estimated)", "~44.6"),
        ("A training (steps/s)", "25.0"),
    ]
    # an old report: the wait share first, as before
    assert key_figures(synthetic_report(wait_s=0.03, compute_s=0.01))[0] == (
        "Input-wait share",
        "75%",
    )


def test_headline_is_the_verdicts_claim_and_its_explanation_leads_the_subhead() -> None:
    # GIVEN a verdict whose headline is a claim, then why
    report = synthetic_cost_report(wait=0.04, contention=0.40, fetch=0.0)
    headline = (
        "INPUT-BOUND: input costs 44% of training time, mostly CPU contention: the pipeline's "
        "threads take cores the train step needs (it waited only 4% of the time)"
    )
    figure = build_figure(report)
    (big,) = [t for t in figure.texts if t.get_gid() == "headline"]
    subhead = " ".join(t.get_text() for t in figure.texts if t.get_gid() == "subhead")
    # THEN the claim is drawn big, whole, and the explanation opens the line under it
    assert big.get_text() == "INPUT-BOUND: input costs 44% of training time, mostly CPU contention"
    assert subhead.startswith(
        "The pipeline's threads take cores the train step needs (it waited only 4% of the time)"
    )
    # and the text summary leads with the same headline, whole
    assert render_text(report).splitlines()[0] == headline
    assert header_lines(report)[0] == big.get_text()


def test_long_headline_shrinks_to_stay_whole_on_the_page() -> None:
    # GIVEN a long claim: input cost mostly next()'s own overhead
    report = synthetic_cost_report(wait=0.01, contention=0.0, fetch=0.12)
    long = "BALANCED: input costs 13% of training time, mostly the per-pull overhead of next()"
    figure = build_figure(report)
    (headline,) = [t for t in figure.texts if t.get_gid() == "headline"]
    assert headline.get_text() == long
    assert headline.get_fontsize() < 24
    extent = headline.get_window_extent(figure.canvas.get_renderer())
    assert extent.x1 <= 0.98 * figure.bbox.width


def test_no_verdict_is_said_the_same_way_in_the_image_and_the_text() -> None:
    # GIVEN an unknown verdict that says why (the image said "NO CLEAR VERDICT")
    base = synthetic_report()
    report = dataclasses.replace(
        base,
        verdict=dataclasses.replace(base.verdict, label="unknown", no_verdict_because="no-steps"),
    )
    assert header_lines(report) == (NO_VERDICT, NO_STEPS_TEXT)
    assert render_text(report).startswith(f"{NO_VERDICT}: {NO_STEPS_TEXT}\n")
    # an older report with a wait share but no reason: both give the wait share in plain words
    report = dataclasses.replace(
        report, verdict=dataclasses.replace(report.verdict, no_verdict_because="")
    )
    report = _read_as_version_2(report)
    assert header_lines(report) == (NO_VERDICT, "67% of step time spent waiting for input")
    assert render_text(report).startswith(f"{NO_VERDICT}: 67% of step time")
    assert not any("CLEAR" in t for t in _texts(build_figure(report)))


def test_stage_bars_are_named_as_the_text_names_them_and_marked_with_t_and_a() -> None:
    stages = [
        StageStats(0, "source", "TensorSliceDataset", batches_per_s=5000.0),
        StageStats(1, "map", "ParallelMapDatasetV2", function="parse", batches_per_s=30.0),
        StageStats(2, "batch", "BatchDatasetV2", batches_per_s=35.0, bottleneck=True),
    ]
    base = synthetic_cost_report()
    report = dataclasses.replace(base, pipeline=dataclasses.replace(base.pipeline, stages=stages))
    pipeline = _axes(build_figure(report), "pipeline")
    assert [t.get_text() for t in pipeline.get_yticklabels()] == [
        "source: TensorSlice",
        "map(parse)",
        "batch",
    ]
    # the step times the stages are read against, on the stages' own axis
    assert [t.get_text() for t in pipeline.get_legend().get_texts()] == [
        "A training: 40.0 ms per step",
        "T compute alone: 22.4 ms per step",
    ]
    # each bar is the stage's own time per batch, linear: what it adds to the cut before it
    # (never below zero), so the costliest stage draws longest
    bars = _by_gid(pipeline.patches, "stage-bars")
    assert [round(bar.get_width(), 1) for bar in bars] == [0.2, 33.1, 0.0]
    assert pipeline.get_xscale() == "linear"
    assert stage_ms([dataclasses.replace(stages[1], own_s_per_batch=0.025)]) == [25.0]


def test_rates_panel_says_why_stages_were_not_timed_and_marks_no_limit() -> None:
    # GIVEN a new report whose deep analysis was skipped (input costs too little)
    base = synthetic_cost_report(wait=0.01, contention=0.01, fetch=0.0)
    reason = Reason("deep-skipped", value=0.02, limit=0.05)
    report = dataclasses.replace(
        base, pipeline=dataclasses.replace(base.pipeline, deep_skipped_reason=reason)
    )
    pipeline = _axes(build_figure(report), "pipeline")
    (note,) = _by_gid(pipeline.texts, "rate-note")
    assert (
        "Stages/fixes not measured: input costs 2% of training (under 5%)"
        in note.get_text().replace("\n", " ")
    )
    # the slower rate measured alone is no longer called the limit: input cost says what is
    assert not any("limit" in t.get_text() for t in pipeline.texts)


def test_suggestion_lines_give_the_measured_gain_as_the_text_does() -> None:
    fix = written("PD002", "vectorise", estimate=1.42)
    report = dataclasses.replace(synthetic_report(), suggestions=[fix])
    ((line, _),) = suggestion_lines(report)
    assert line == "1. [PD002] vectorise  (gain not measured)"
    assert f" 1. {line[3:]}" in render_text(report).splitlines()


def test_each_stage_held_on_training_shows_its_gain_and_the_jump_takes_the_mark() -> None:
    # GIVEN an input-bound run whose prefix timing blames the batch, while holding each
    # stage on training found the jump at the map
    stages = [
        StageStats(0, "range", "RangeDataset", batches_per_s=5000.0),
        StageStats(
            1,
            "map",
            "parse",
            batches_per_s=30.0,
            training_speedup_if_free=2.4,
            training_cost_jump=True,
        ),
        StageStats(2, "batch", "batch(32)", batches_per_s=25.0, bottleneck=True),
        StageStats(
            3,
            "prefetch",
            "prefetch",
            batches_per_s=26.0,
            training_speedup_if_free_unused="faster than the train step alone",
        ),
    ]
    stages[0] = dataclasses.replace(stages[0], training_speedup_if_free=1.02)
    base = synthetic_report(wait_s=0.03, compute_s=0.01)
    report = dataclasses.replace(base, pipeline=dataclasses.replace(base.pipeline, stages=stages))
    pipeline = _axes(build_figure(report), "pipeline")
    # THEN each measured stage says its gain beside its bar, the jump marked and in bold,
    # and a disturbed trial says its gain is not used
    beside = _by_gid(pipeline.texts, "stage-if-free")
    assert [t.get_text() for t in beside] == [
        "1.0x if free",
        "2.4x if free (jump)",
        "if free: not used",
    ]
    assert [t.get_fontweight() for t in beside][1] == "bold"
    # and the bottleneck mark and colour go to the jump, not to prefix timing's pick
    bars = _by_gid(pipeline.patches, "stage-bars")
    painted = [i for i, bar in enumerate(bars) if bar.get_facecolor()[:3] == _rgb(INPUT_COLOUR)]
    assert painted == [1]
    # (beside the column of gains the mark is the bar's colour and its bold figure)
    bold = [t.get_text() for t in pipeline.texts if t.get_fontweight() == "bold"]
    assert " 33.1 ms" in bold and not any("bottleneck" in t for t in _texts(pipeline.figure))
    # the summary's slowest-stage line names the jump too
    line = next(x for x in render_text(report).splitlines() if x.strip().startswith("Slowest"))
    assert "map: parse: 30.0 batches/s" in line and "batch(32)" not in line
