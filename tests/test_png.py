"""The PNG report: a fixed-size page whose panels all show data, for any report."""

from __future__ import annotations

import dataclasses
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pipediag.renderers.png import (
    FIGURE_SIZE_PX,
    INPUT_COLOUR,
    MAX_STEP_BARS,
    MAX_SUGGESTIONS,
    WARNING_COLOUR,
    best_predicted_gain,
    bin_steps,
    build_figure,
    render_png,
    suggestion_lines,
)
from pipediag.report.model import (
    GpuSection,
    HostSection,
    Report,
    StageStats,
    StepRecord,
    Suggestion,
)
from pipediag.testing import synthetic_report

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
    figure = build_figure(synthetic_report(wait_s=0.03, compute_s=0.01))
    assert "INPUT-BOUND: 75% of step time spent waiting for input" in _texts(figure)

    figure = build_figure(synthetic_report(wait_s=0.0005, compute_s=0.02))
    assert any(t.startswith("COMPUTE-BOUND: only 2%") for t in _texts(figure))


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
    assert len(_axes(figure, "split").patches) == 2


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


def test_timeline_panels_share_the_time_axis() -> None:
    figure = build_figure(synthetic_report(with_gpu=True))
    timeline = _axes(figure, "timeline")
    for label in ("gpu", "cpu"):
        assert _axes(figure, label).get_shared_x_axes().joined(timeline, _axes(figure, label))
    assert _axes(figure, "cpu").get_xlim() == timeline.get_xlim()


def test_no_gpu_report_says_why() -> None:
    report = synthetic_report()
    figure = build_figure(report)
    gpu_texts = [t.get_text() for t in _axes(figure, "gpu").texts]
    assert gpu_texts == [f"No GPU found: {report.gpu.reason}"]
    assert not _axes(figure, "gpu").lines


def test_unavailable_host_section_is_noted() -> None:
    report = dataclasses.replace(
        synthetic_report(), host=HostSection(available=False, reason="psutil missing")
    )
    figure = build_figure(report)
    assert [t.get_text() for t in _axes(figure, "cpu").texts] == [
        "Host CPU not sampled: psutil missing"
    ]


def test_without_stages_the_three_rates_are_compared() -> None:
    figure = build_figure(synthetic_report(wait_s=0.03, compute_s=0.01))
    pipeline = _axes(figure, "pipeline")
    assert len(pipeline.patches) == 3
    labels = [t.get_text() for t in pipeline.get_yticklabels()]
    assert labels == [
        "pipeline alone\n(batches/s)",
        "training\n(steps/s)",
        "compute alone\n(steps/s)",
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
        Suggestion(
            f"PD00{i}", f"fix {i}", estimated_speedup=1.0 + i / 10, correctness_warning=i == 2
        )
        for i in range(7)
    ]
    suggestions[0] = dataclasses.replace(suggestions[0], verified_speedup=2.5)
    report = dataclasses.replace(synthetic_report(), suggestions=suggestions)
    figure = build_figure(report)
    lines = [t for t in figure.texts if t.get_gid() == "suggestion"]
    assert len(lines) == MAX_SUGGESTIONS
    assert "verified \N{MULTIPLICATION SIGN}2.50" in lines[0].get_text()
    assert "may change results" in lines[2].get_text()
    assert lines[2].get_color() == WARNING_COLOUR
    assert best_predicted_gain(report) == 2.5
    assert "\N{MULTIPLICATION SIGN}2.50" in _texts(figure)


def test_incomplete_run_is_flagged() -> None:
    report = dataclasses.replace(synthetic_report(), complete=False, stop_reason="interrupted")
    texts = _texts(build_figure(report))
    assert any("INCOMPLETE RUN: interrupted" in t for t in texts)


def test_gpu_available_without_samples_is_noted() -> None:
    report = dataclasses.replace(synthetic_report(), gpu=GpuSection(available=True))
    figure = build_figure(report)
    assert "no utilization samples" in _axes(figure, "gpu").texts[0].get_text()


def test_importing_renderers_does_not_import_matplotlib_and_rendering_avoids_pyplot(
    tmp_path: Path,
) -> None:
    code = (
        "import sys\n"
        "import pipediag.renderers.png as png, pipediag.renderers.chrome_trace\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported'\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow imported'\n"
        "from pipediag.report.model import Report\n"
        "from pathlib import Path\n"
        f"png.render_png(Report(script='t.py'), Path({str(tmp_path / 'a.png')!r}))\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


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
            Suggestion("PD001-sequential-map", "map(f): parallelise (measured 0.74x)", kind="note"),
            Suggestion("PD007-py-function", "map(f): port it to TF ops"),
        ],
    )
    # THEN only the fix is a thing to change, numbered first
    lines = [text for text, _ in suggestion_lines(report)]
    assert len(lines) == 1 and lines[0].startswith("1. ") and "PD007" in lines[0]
