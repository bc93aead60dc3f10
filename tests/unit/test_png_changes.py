"""The PNG's model side and rewrites: "Where the step's time goes" where the model sets the
rate, and the foot's lists, line for line the text summary's."""

from __future__ import annotations

import dataclasses

import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Text
from synthetic_reports import synthetic_cost_report, synthetic_report
from worded import written

from pipediag.renderers.model_words import change_lines, time_bars, time_lines
from pipediag.renderers.png import build_figure
from pipediag.renderers.png.change_lists import change_lists
from pipediag.renderers.png.step_time import step_time_shown
from pipediag.renderers.png.style import COMPUTE_COLOUR, HOST_GAP_COLOUR
from pipediag.renderers.png.suggestions import (
    LINES_THAT_FIT,
    LIST_HEADING,
    SUGGESTION_FIRST_Y,
    SUGGESTION_LINE_STEP,
    foot_lines,
)
from pipediag.renderers.prescription_words import (
    REWRITES_HEADING,
    measured_change_text,
    rewrites_lines,
)
from pipediag.renderers.text import render_text
from pipediag.report.fixes import FIX_CACHE, FIX_MAP_FUSION, FIX_PARALLEL_MAP, FIX_PREFETCH
from pipediag.report.model import ComputeAlone, Gain, Report
from pipediag.report.model_side import ModelTrial, TopOp
from pipediag.report.prescription import CodeLine, PrescribedChange, Prescription
from pipediag.report.reasons import Reason
from pipediag.report.stages import StageStats
from pipediag.report.vocabulary import VerdictLabel

# As a residual conv net's step profiles on TF 2.21 (docs/design.md, "When the model sets
# the rate"): more op types and layers than the page lists, the longest op name TF has.
TOP = [
    TopOp("Conv2DBackpropFilter", "op_type", 0.29, 0.005),
    TopOp("Conv2DBackpropInput", "op_type", 0.14, 0.0024),
    TopOp("DepthwiseConv2dNativeBackpropFilter", "op_type", 0.12, 0.002),
    TopOp("_FusedConv2D", "op_type", 0.10, 0.0017),
    TopOp("BiasAddGrad", "op_type", 0.08, 0.0014),
    TopOp("AddV2", "op_type", 0.03, 0.0005),
    TopOp("separable_conv2d", "scope", 0.57, 0.0097),
    TopOp("conv2d", "scope", 0.29, 0.0049),
    TopOp("global_average_pooling2d", "scope", 0.04, 0.0007),
    TopOp("add", "scope", 0.03, 0.0005),
    TopOp("dense", "scope", 0.01, 0.0002),
    TopOp("", "host-python", 0.01, 0.0002),
    TopOp("", "host-launch", 0.05, 0.0009),
]
TRIALS = [
    ModelTrial("jit_compile", 40.0, 58.0, 1.45, [1.3, 1.6], 5, code="model.compile(..., jit=1)"),
    ModelTrial("steps_per_execution", 45.4, 44.0, 0.97, [0.8, 1.09], 5, setting="8"),
    ModelTrial("mixed_precision", reason=Reason("no-bfloat16")),
    ModelTrial("device_copy", reason=Reason("no-gpu-copy")),
]


def _model_side_report(label: VerdictLabel = "compute-bound", top: list[TopOp] = TOP) -> Report:
    report = synthetic_cost_report(wait=0.0, contention=0.01)
    alone = report.compute_alone or ComputeAlone(measured=True)
    alone = dataclasses.replace(alone, trials=TRIALS, top_ops=top)
    verdict = dataclasses.replace(report.verdict, label=label)
    return dataclasses.replace(report, compute_alone=alone, verdict=verdict)


def _rewrites_report(tried: int = 3) -> Report:
    changes = [
        PrescribedChange(
            FIX_PARALLEL_MAP,
            1,
            "map(parse)",
            training_speedup=1.8,
            training_speedup_low=1.6,
            training_speedup_high=2.0,
            kept=True,
        ),
        PrescribedChange(
            FIX_PREFETCH,
            2,
            "batch",
            training_speedup=0.98,
            training_speedup_low=0.9,
            training_speedup_high=1.06,
            reason=Reason("interval-reaches-one"),
            after=[FIX_PARALLEL_MAP],
            on_training=0.97,
            on_training_low=0.88,
            on_training_high=1.05,
        ),
        PrescribedChange(FIX_CACHE, 1, "map(parse)", reason=Reason("training-out-of-time")),
    ]
    changes += [
        PrescribedChange(FIX_MAP_FUSION, 1, f"map(f{k})", reason=Reason("training-out-of-time"))
        for k in range(max(0, tried - len(changes)))
    ]
    prescription = Prescription(
        tried=changes[:tried], training_speedup=1.8, training_speedup_low=1.6,
        training_speedup_high=2.0,
    )  # fmt: skip
    report = synthetic_cost_report()
    stages = [
        StageStats(0, "range", "RangeDataset", batches_per_s=5000.0),
        StageStats(1, "map", "parse", batches_per_s=30.0, bottleneck=True),
        StageStats(2, "batch", "batch(32)", batches_per_s=35.0),
    ]
    pipeline = dataclasses.replace(report.pipeline, stages=stages, prescription=prescription)
    fix = written(
        "PD001-sequential-map",
        "map(parse): add num_parallel_calls=tf.data.AUTOTUNE",
        stage="map(parse)",
        gain=Gain("training", 1.8, [1.6, 2.0]),
    )
    return dataclasses.replace(report, pipeline=pipeline, suggestions=[fix])


def _axes(figure: Figure, label: str) -> list[Axes]:
    return [a for a in figure.axes if a.get_label() == label]


def _by_gid(figure: Figure, *gids: str) -> list[Text]:
    found = figure.findobj(lambda a: isinstance(a, Text) and a.get_gid() in gids)
    return [t for t in found if isinstance(t, Text)]


def _foot_texts(figure: Figure) -> list[str]:
    return [t.get_text() for t in _by_gid(figure, LIST_HEADING, "list-line")]


# ------------------------------------------------------------- where the step's time goes


def test_the_bars_are_the_reports_top_ops_as_shares_of_the_step() -> None:
    # GIVEN a compute-bound run whose step alone was profiled
    report = _model_side_report()
    # WHEN drawn
    figure = build_figure(report)
    # THEN the input-cost panel gives its place to the step's time
    assert _axes(figure, "cost") == []
    (axes,) = _axes(figure, "step-time")
    # one bar per group the text lists: the top five op types, the top four layers, the gaps
    names = [t.get_text() for t in _by_gid(figure, "step-time-name")]
    assert names == [
        "Conv2DBackpropFilter",
        "Conv2DBackpropInput",
        "DepthwiseConv2dNativeBackpropFilter",
        "_FusedConv2D",
        "BiasAddGrad",
        "separable_conv2d",
        "conv2d",
        "global_average_pooling2d",
        "add",
        "Python (outside TensorFlow's calls)",
        "launch overhead and time between ops",
    ]
    widths = [patch.get_width() for patch in axes.patches]
    expected = [op.share for op in TOP if op.name not in ("AddV2", "dense")]
    assert widths == pytest.approx(expected)
    shares = [t.get_text().strip() for t in _by_gid(figure, "step-time-share")]
    assert shares == [f"{share:.0%}" for share in expected]
    # and the shares read as the text reads them
    text = "\n".join(time_lines(report.compute_alone or ComputeAlone()))
    for bar in time_bars(report.compute_alone or ComputeAlone()):
        assert f"{bar.name} {bar.share_text}" in text
    (title,) = _by_gid(figure, "step-time-title")
    assert title.get_text() == time_lines(report.compute_alone or ComputeAlone())[0]


def test_host_gaps_are_coloured_and_named_apart_from_the_ops() -> None:
    figure = build_figure(_model_side_report())
    (axes,) = _axes(figure, "step-time")
    colours = [patch.get_facecolor()[:3] for patch in axes.patches]
    from matplotlib.colors import to_rgb

    assert colours[-2:] == [to_rgb(HOST_GAP_COLOUR)] * 2
    assert to_rgb(HOST_GAP_COLOUR) not in colours[:-2]
    assert colours[0] == to_rgb(COMPUTE_COLOUR)
    legend = axes.get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == [
        "op type",
        "layer or scope",
        "host, outside any op",
    ]


@pytest.mark.parametrize("label", ["compute-bound", "balanced"])
def test_the_panel_is_drawn_where_the_model_sets_the_rate(label: VerdictLabel) -> None:
    assert step_time_shown(_model_side_report(label))


def test_where_input_sets_the_rate_the_cost_panel_stays_and_the_foot_has_the_profile() -> None:
    # GIVEN an input-bound run that still measured the model side (--deep)
    report = _model_side_report("input-bound")
    figure = build_figure(report)
    # THEN the cost panel keeps its place, and the foot lists the text's lines for the model
    assert _axes(figure, "step-time") == [] and len(_axes(figure, "cost")) == 1
    alone = report.compute_alone or ComputeAlone()
    assert _foot_texts(figure)[:2] == time_lines(alone)[:2]


def test_a_step_not_profiled_says_why_in_the_foot_and_keeps_the_cost_panel() -> None:
    report = _model_side_report(top=[])
    alone = dataclasses.replace(
        report.compute_alone or ComputeAlone(),
        top_ops_reason=Reason("profiler-no-start", detail="another session is active"),
    )
    report = dataclasses.replace(report, compute_alone=alone)
    figure = build_figure(report)
    assert _axes(figure, "step-time") == []
    assert _foot_texts(figure) == [
        "Where the step's time goes: not measured: the TF profiler could not start (another "
        "session is active)",
        *change_lines(alone),
    ]


# ------------------------------------------------------------------------- the foot's lists


def test_the_model_changes_are_the_texts_lines() -> None:
    report = _model_side_report()
    figure = build_figure(report)
    lines = change_lines(report.compute_alone or ComputeAlone())
    assert _foot_texts(figure) == lines
    text = render_text(report)
    assert all(line in text for line in lines)
    assert " 1. XLA (jit_compile=True): 1.45x (90% interval 1.30-1.60x)" in lines[1]
    # no pipeline fix to list: the model's changes are not called "No suggestions"
    assert _by_gid(figure, "no-suggestions") == []


def test_the_rewrites_list_is_the_texts_rows_in_the_runs_terms() -> None:
    report = _rewrites_report()
    figure = build_figure(report)
    rows = rewrites_lines(report)
    assert _foot_texts(figure) == [REWRITES_HEADING, *rows]
    # the figure in the run's terms, the train function's own ratio named beside it
    assert rows[1].startswith("prefetch at the end (AUTOTUNE) at batch: 0.97x (0.88-1.05x)")
    assert rows[1].endswith("; 0.98x on the train function alone")
    assert rows[-1] == (
        "pipeline pipediag would write: the kept rewrite, training 1.80x (1.60-2.00x) over yours"
    )
    text = render_text(report)
    assert all(row in text for row in rows)
    # the fix stays first, numbered, above the list
    (fix,) = _by_gid(figure, "suggestion")
    assert fix.get_text().startswith("1. [PD001-sequential-map]")
    assert fix.get_position()[1] > _by_gid(figure, LIST_HEADING)[0].get_position()[1]


def test_a_long_list_keeps_its_heading_and_conclusion_and_says_what_it_left_out() -> None:
    report = _rewrites_report(tried=12)
    lines = foot_lines(report)
    assert len(lines) == LINES_THAT_FIT
    texts = [line.text for line in lines]
    assert REWRITES_HEADING in texts
    assert texts[-1] == rewrites_lines(report)[-1]  # what the kept ones came to
    (more,) = [line for line in lines if line.gid == "more-in-text"]
    shown = sum(1 for line in lines if line.gid == "list-line")
    assert more.text.endswith(f"{12 + 1 - shown} more lines in the text summary")


def test_the_pipeline_pipediag_would_write_as_the_change_is_said_once() -> None:
    # GIVEN the kept parallel map, with its code, and the same rewrite as a fix of its own
    base = _rewrites_report()
    assert base.pipeline.prescription is not None
    prescription = dataclasses.replace(
        base.pipeline.prescription,
        code=[
            CodeLine(
                "ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)", None, FIX_PARALLEL_MAP
            )
        ],
    )
    fix = dataclasses.replace(base.suggestions[0], fix=FIX_PARALLEL_MAP, stage_index=1)
    report = dataclasses.replace(
        base,
        pipeline=dataclasses.replace(base.pipeline, prescription=prescription),
        suggestions=[fix],
    )
    texts = [line.text for line in foot_lines(report)]
    # THEN it leads as the change, with its code, and neither its list's conclusion nor the
    # fix says it again
    words = measured_change_text(report)
    assert words is not None and words.startswith("run the map in parallel at ")
    assert texts[0].startswith(f"Change: {words}")
    assert not any("pipeline pipediag would write" in t for t in texts)
    assert not any(t.startswith("1. [PD001") for t in texts)
    assert REWRITES_HEADING in texts  # the rewrites tried still listed


@pytest.mark.parametrize("build", [_model_side_report, lambda: _rewrites_report(12)])
def test_nothing_overlaps_and_everything_stays_on_the_page(build: object) -> None:
    report = build()  # type: ignore[operator]
    figure = build_figure(report)
    figure.canvas.draw()  # lays out the axes' labels and ticks, as saving the page does
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    page = figure.bbox
    texts = [t for t in figure.findobj(Text) if isinstance(t, Text) and t.get_text().strip()]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts if t.get_visible()]
    for text, box in boxes:
        assert box.x0 >= 0 and box.x1 <= page.width and box.y0 >= 0, text
        assert box.y1 <= page.height, text
    # the foot's lines and the step's time do not overlap one another
    ours = [
        t.get_window_extent(renderer)
        for t in _by_gid(figure, LIST_HEADING, "list-line", "suggestion", "more-in-text")
        + _by_gid(figure, "step-time-name", "step-time-title")
    ]
    for i, a in enumerate(ours):
        for b in ours[i + 1 :]:
            assert not a.overlaps(b)
    # and the step's time starts under what the pipeline panel drew
    (pipeline,) = _axes(figure, "pipeline")
    drawn = pipeline.get_tightbbox(renderer)
    assert drawn is not None
    for box in ours:
        assert box.y1 < drawn.y0 or box.x1 < drawn.x0


def test_a_report_without_these_parts_draws_as_before() -> None:
    report = dataclasses.replace(
        synthetic_report(),
        suggestions=[written("PD007-py-function", "map(f): port it to TF ops")],
    )
    assert change_lists(report) == []
    figure = build_figure(report)
    assert len(_axes(figure, "cost")) == 1 and _axes(figure, "step-time") == []
    assert _foot_texts(figure) == []
    (fix,) = _by_gid(figure, "suggestion")
    assert fix.get_position() == (pytest.approx(0.02), pytest.approx(SUGGESTION_FIRST_Y))
    assert fix.get_fontsize() == pytest.approx(11.0)
    two = dataclasses.replace(report, suggestions=[*report.suggestions, *report.suggestions])
    tops = [t.get_position()[1] for t in _by_gid(build_figure(two), "suggestion")]
    assert tops[0] - tops[1] == pytest.approx(SUGGESTION_LINE_STEP)


def test_the_cost_panel_moves_under_a_long_note_and_its_title_stays_on_the_page() -> None:
    # GIVEN a compute-bound custom loop (no model side) whose rates panel explains at length
    # why stages were not timed, and whose cost has the long "not measurable" title
    report = synthetic_cost_report(wait=0.0, contention=0.0, cost_interval=(0.0, 0.12))
    reason = Reason("deep-skipped", value=0.0, limit=0.05)
    report = dataclasses.replace(
        report,
        verdict=dataclasses.replace(report.verdict, label="compute-bound"),
        pipeline=dataclasses.replace(report.pipeline, deep_skipped_reason=reason),
    )
    figure = build_figure(report)
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    (note,) = _by_gid(figure, "rate-note")
    (cost,) = _axes(figure, "cost")
    (title_text,) = [t for t in cost.findobj(Text) if isinstance(t, Text) and t.get_text()
                     and t.get_text() == cost.get_title(loc="left")]  # fmt: skip
    title = title_text.get_window_extent(renderer)
    # THEN the cost's title starts under the note, and ends on the page
    assert title.y1 < note.get_window_extent(renderer).y0
    assert title.x1 <= figure.bbox.width


def test_the_change_measured_to_help_leads_the_foot_with_its_code_and_is_not_listed_again() -> None:
    measured = written(
        "PD001-sequential-map",
        "map(decode): add num_parallel_calls=tf.data.AUTOTUNE",
        code="ds = ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE)",
        gain=Gain("training", 1.8),
    )
    other = written("PD007-py-function", "map(f): port it to TF ops")
    figure = build_figure(dataclasses.replace(synthetic_report(), suggestions=[measured, other]))
    (change,) = _by_gid(figure, "change")
    assert change.get_text() == (
        "Change: map(decode): add num_parallel_calls=tf.data.AUTOTUNE: 1.80x measured on "
        "your training"
    )
    assert change.get_fontweight() == "bold"
    (code,) = _by_gid(figure, "change-code")
    assert code.get_text() == "ds = ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE)"
    assert code.get_fontfamily() == ["monospace"]
    (fix,) = _by_gid(figure, "suggestion")
    assert fix.get_text().startswith("1. [PD007-py-function] map(f): port it to TF ops")


def test_a_long_change_is_drawn_whole_in_a_smaller_font() -> None:
    # GIVEN a change whose words run past the page's width at the foot's size (the README's)
    title = (
        "cache() after map(to_example), moved above shuffle(1024, seed=0) (100.7 MB, fits) "
        "and map(augment) in parallel with num_parallel_calls=AUTOTUNE"
    )
    code = "ds = ds.map(to_example)\nds = ds.cache()\nds = ds.shuffle(1024, seed=0)"
    measured = written("PD001-sequential-map", title, code=code, gain=Gain("training", 1.8))
    other = written("PD007-py-function", "map(f): port it to TF ops")
    figure = build_figure(dataclasses.replace(synthetic_report(), suggestions=[measured, other]))
    # THEN every word is drawn, on one bold line, smaller than the code under it
    (change,) = _by_gid(figure, "change")
    assert change.get_text() == f"Change: {title}: 1.80x measured on your training"
    codes = _by_gid(figure, "change-code")
    assert change.get_fontsize() < codes[0].get_fontsize()


def test_the_note_the_answer_gives_where_no_change_helped_leads_the_foot() -> None:
    # GIVEN input costing training, no fix, and the cores full
    saturated = written(
        "PD010-cpu-saturated",
        "the host CPU is saturated: more parallel calls cannot help",
        kind="note",
    )
    report = dataclasses.replace(
        synthetic_cost_report(cost_interval=(0.35, 0.5)), suggestions=[saturated]
    )
    (head, *_) = foot_lines(report)
    # THEN the PNG says what the terminal's answer says, in bold, with no code
    assert head.text == (
        "Change: none measured to help on your training; the host CPU is saturated: "
        "more parallel calls cannot help"
    )
    assert head.bold and not any(line.gid == "change-code" for line in foot_lines(report))
