"""The PNG report's span and phase labels: however short and close the spans, no two labels
overlap, and a label with no room left is named under its panel instead. Which labels fit
turns on text sizes, which differ between matplotlib versions, so the tests assert what
must hold in any: no overlaps, and every label drawn, named or counted."""

from __future__ import annotations

import dataclasses
import itertools
import re

import pytest
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox
from synthetic_reports import RunLayout, synthetic_cost_report, synthetic_report

from pipediag.renderers.png import build_figure
from pipediag.renderers.png.text_fit import UNLABELLED_GID, UNLABELLED_PREFIX, ClearLabels
from pipediag.report.model import PhaseSpan, PhaseVerdict, RateBlock, Report

ALTERNATION_BLOCK_S = 0.3
ALTERNATION_BLOCKS = 6
STAGE_TIMING_S = 150.0  # long enough to leave the earlier phases a few pixels each
TRIAL_S = 3.0  # a fix trial, narrower than its label
LONG_WORDING = "a wording too long for the edge"
MOVED_GAP_PT = 4.0  # half a line of a span label's 8-pt font: kept by a label moved off another


def _axes(figure: Figure, label: str) -> Axes:
    (found,) = [a for a in figure.axes if a.get_label() == label]
    return found


def _labels(axes: Axes) -> list[Text]:
    return [
        t
        for t in axes.texts
        if (t.get_gid() or "").endswith("-label") or t.get_gid() == "phase-verdict"
    ]


def _overlapping(figure: Figure, axes: Axes) -> list[tuple[str, str]]:
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    extents = [(t.get_text(), t.get_window_extent(renderer)) for t in _labels(axes)]
    return [
        (first, second)
        for (first, one), (second, other) in itertools.combinations(extents, 2)
        if one.overlaps(other)
    ]


def _short_adjacent_spans(late_phases: list[PhaseSpan] | None = None) -> Report:
    """The pipeline benchmark, training, then the step alone in turn with training, all
    within the first seconds of a run whose stage timing takes 150 s more."""
    report = synthetic_cost_report()
    alone = report.compute_alone
    assert alone is not None and alone.start_s is not None
    blocks = [
        RateBlock(
            "step-alone" if k % 2 else "training",
            alone.start_s + k * ALTERNATION_BLOCK_S,
            steps=5,
            seconds=ALTERNATION_BLOCK_S,
        )
        for k in range(ALTERNATION_BLOCKS)
    ]
    alternation_s = ALTERNATION_BLOCKS * ALTERNATION_BLOCK_S
    after = alone.start_s + alternation_s
    late = late_phases or [PhaseSpan("deep_analysis", after, STAGE_TIMING_S)]
    return dataclasses.replace(
        report,
        compute_alone=dataclasses.replace(alone, blocks=blocks, duration_s=alternation_s),
        phases=[*report.phases, *late],
    )


def test_labels_of_short_adjacent_spans_do_not_overlap() -> None:
    # GIVEN pipeline alone, training and the alternation a few pixels wide each, side by side
    report = _short_adjacent_spans()
    # WHEN the page is drawn
    figure = build_figure(report)
    cpu, timeline = _axes(figure, "cpu"), _axes(figure, "timeline")
    # THEN no two labels overlap on either time panel
    assert _overlapping(figure, cpu) == []
    assert _overlapping(figure, timeline) == []
    # and every phase is labelled inside the panel, or named under it where it has no room
    _assert_inside(cpu)
    wordings = ["pipeline alone", "stages and fix trials", "training and step alone in turn"]
    named, counted = _unlabelled(figure, cpu)
    assert _drawn(cpu) | set(named) == {*wordings, "training"}
    assert counted == 0
    assert set(wordings) <= _drawn(cpu)
    # and a label moved off another keeps half a line from it, so the two read as two
    _assert_apart(figure, cpu)


def test_a_label_with_no_room_left_is_named_under_its_panel() -> None:
    # GIVEN six fix trials on training, each a few pixels wide, after the early phases
    report = _short_adjacent_spans()
    alone = report.compute_alone
    assert alone is not None and alone.start_s is not None
    after = alone.start_s + alone.duration_s
    trials = [PhaseSpan("training_trial", after + k * TRIAL_S, TRIAL_S) for k in range(6)]
    stages = PhaseSpan("deep_analysis", after + 6 * TRIAL_S, STAGE_TIMING_S)
    report = _short_adjacent_spans([*trials, stages])
    figure = build_figure(report)
    cpu = _axes(figure, "cpu")
    # THEN the labels that fit stay clear of each other, and those that do not are named once
    # in a line under the panel, their spans still drawn
    assert _overlapping(figure, cpu) == []
    _assert_inside(cpu)
    kept = [t.get_text() for t in _labels(cpu)].count("fixes on\ntraining")
    assert 0 < kept < len(trials)
    assert _unlabelled(figure, cpu)[0].count("fixes on training") == 1
    # and the repeated label crowds out no other: each wording is tried once before repeats
    without_trials = build_figure(_short_adjacent_spans())
    assert _drawn(_axes(without_trials, "cpu")) <= _drawn(cpu)
    _assert_apart(figure, cpu)


def test_each_wording_is_placed_once_before_any_is_repeated() -> None:
    # GIVEN a panel with room for two rows of labels, over their spot and not under it, and
    # there six labels of one wording and one of another, placed in the panel's fractions
    # (not its data, whose scale differs)
    figure = Figure(figsize=(4.0, 0.6), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_axes((0.0, 0.0, 1.0, 1.0))
    axes.set_ylim(0, 100)
    clear = ClearLabels(axes)  # before the labels: it keeps clear of the texts already there
    labels = [
        axes.text(
            0.5,
            0.3,
            wording,
            transform=axes.transAxes,
            ha="center",
            va="center",
            fontsize=8,
            gid="span-label",
        )
        for wording in [*["fixes on training"] * 6, "training"]
    ]
    # WHEN they are placed
    clear.place_tallest_first(labels)
    # THEN the single wording keeps its label, over the first of the six, half a line clear
    assert _drawn(axes) == {"fixes on training", "training"}
    assert clear.unlabelled == ["fixes on training"] * 5
    assert _overlapping(figure, axes) == []
    _assert_inside(axes)
    _assert_apart(figure, axes)


def test_each_wording_is_tried_where_the_label_was_drawn() -> None:
    # GIVEN a label at a panel's right edge whose long wording, moved in from the edge, meets
    # a text there, and whose short wording fits where the label was drawn
    figure = Figure(figsize=(4.0, 0.6), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_axes((0.0, 0.0, 1.0, 1.0))
    label = axes.text(0.97, 0.5, LONG_WORDING, transform=axes.transAxes, ha="center")
    moved_in_middle_px = figure.bbox.width - label.get_window_extent().width / 2
    label.set_text("")  # not yet placed
    axes.text(moved_in_middle_px / figure.bbox.width, 0.5, "xx", transform=axes.transAxes)
    # WHEN it is placed, the long wording first
    clear = ClearLabels(axes)
    clear.place(label, [LONG_WORDING, "short"], movable=False)
    # THEN the short wording is drawn, not where the long one was moved to
    assert label in axes.texts
    assert label.get_text() == "short"


def _drawn(axes: Axes) -> set[str]:
    return {" ".join(t.get_text().split()) for t in _labels(axes)}


def _assert_inside(axes: Axes) -> None:
    panel = axes.get_window_extent()
    for label in _labels(axes):
        extent = label.get_window_extent()
        assert panel.y0 <= extent.y0 and extent.y1 <= panel.y1
        assert panel.x0 <= extent.x0 and extent.x1 <= panel.x1


def _assert_apart(figure: Figure, axes: Axes) -> None:
    """Labels that share a stretch of the time axis are half a line apart, or more."""
    gap_px = MOVED_GAP_PT * figure.dpi / 72
    extents = [t.get_window_extent() for t in _labels(axes)]
    for one, other in itertools.combinations(extents, 2):
        if one.x0 < other.x1 and other.x0 < one.x1:
            assert max(other.y0 - one.y1, one.y0 - other.y1) >= gap_px


def _unlabelled(figure: Figure, axes: Axes) -> tuple[list[str], int]:
    """The names in the line under `axes` and how many more it counts (none where it has no
    such line), checked to lie under the panel's tick marks, on the page and clear of every
    other text."""
    captions = [t for t in axes.texts if t.get_gid() == UNLABELLED_GID]
    if not captions:
        return [], 0
    (caption,) = captions
    extent = caption.get_window_extent()
    assert extent.y1 <= axes.get_window_extent().y0 - _tick_marks_px(figure, axes)
    assert extent.x0 >= 0 and extent.x1 <= figure.bbox.width
    others = [t for t in figure.findobj(Text) if t is not caption and t.get_visible()]
    assert not [t.get_text() for t in others if t.get_text() and extent.overlaps(_extent(t))]
    text = caption.get_text()
    assert text.startswith(UNLABELLED_PREFIX)
    *names, last = text.removeprefix(UNLABELLED_PREFIX).split("; ")
    more = re.fullmatch(r"and (\d+) more|(\d+) labels?", last)
    if more is None:
        return [*names, last], 0
    return names, int(more.group(1) or more.group(2))


def _tick_marks_px(figure: Figure, axes: Axes) -> float:
    return float(axes.xaxis.get_tick_padding() * figure.dpi / 72)


def _extent(text: Text) -> Bbox:
    return text.get_window_extent(text.figure.canvas.get_renderer())  # type: ignore[union-attr]


PHASES = 40


def _narrow_phases(*, with_gpu: bool) -> Report:
    """40 one-epoch phases over 40 short epochs: no wording fits a phase's width."""
    report = synthetic_cost_report(RunLayout(80, epochs=PHASES))
    phases = [
        PhaseVerdict(epoch, epoch, 2, 0.08, 0.5, 0.45, "input-bound") for epoch in range(PHASES)
    ]
    verdict = dataclasses.replace(report.verdict, phases=phases)
    report = dataclasses.replace(report, verdict=verdict)
    if with_gpu:
        report = dataclasses.replace(report, gpu=synthetic_report(80, with_gpu=True).gpu)
    return report


@pytest.mark.parametrize("with_gpu", [False, True], ids=["no-gpu", "gpu"])
def test_phase_verdicts_too_narrow_for_any_wording_do_not_overlap(with_gpu: bool) -> None:
    # GIVEN narrow phases, with and without the GPU panel (which hides the steps' x ticks'
    # labels, so the line naming what has no label sits under the tick marks themselves)
    figure = build_figure(_narrow_phases(with_gpu=with_gpu))
    timeline = _axes(figure, "timeline")
    # THEN the verdicts drawn keep clear of each other; the rest are named under the panel
    # (with semicolons: a name holds commas), or counted where the line has no more room
    shown = [t for t in _labels(timeline) if t.get_gid() == "phase-verdict"]
    assert _overlapping(figure, timeline) == []
    assert 0 < len(shown) < PHASES
    named, counted = _unlabelled(figure, timeline)
    assert named and all(re.fullmatch(r"epoch \d+: input-bound, 45%", name) for name in named)
    assert len(set(named)) + counted == PHASES - len(shown)
