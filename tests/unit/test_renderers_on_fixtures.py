"""The renderers on recorded reports: the text summary row by row, the PNG's words checked
against the text's (the strings matplotlib was given), and `pipediag report` in-process.

The recorded reports are real runs (tests/fixtures/reports/), so every renderer is tested on
what a run writes, GPU sections included, without TensorFlow or a GPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import report_fixtures as fx
from matplotlib.figure import Figure

from pipediag.cli import main
from pipediag.renderers import REPORT_PNG, REPORT_TEXT, TRACE_JSON
from pipediag.renderers.answer import the_change
from pipediag.renderers.cost_words import cost_bar, cost_split_text, free_input_text
from pipediag.renderers.hardware_words import contention_text, gpu_idle_text
from pipediag.renderers.numbers import percent
from pipediag.renderers.png import build_figure
from pipediag.renderers.png.header import header_lines, key_figures
from pipediag.renderers.png.suggestions import foot_lines, suggestion_lines
from pipediag.renderers.rate_words import rates
from pipediag.renderers.run_words import (
    HOST_TIMING_ONLY,
    command_line,
    input_wait_source_text,
    no_gpu_text,
    run_status,
)
from pipediag.renderers.suggestion_words import (
    SUGGESTION_HEADINGS,
    actionable,
    suggestion_line,
    suggestions_of,
)
from pipediag.renderers.text import render_text
from pipediag.renderers.verdict_words import headline, phase_text, sentence, verdict_title
from pipediag.report.io import load_report
from pipediag.report.model import Report
from pipediag.report.names import stage_name

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png_texts(figure: Figure) -> list[str]:
    """Every string the page was given: figure texts, titles, tick labels, legends, notes."""
    return [t.get_text() for t in figure.findobj(lambda a: hasattr(a, "get_text"))]


def _text_row(text: str, label: str) -> list[str]:
    """One labelled row of the text summary and its continuation lines, label cut off."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"  {label:<16}"))
    rows = [lines[start][18:]]
    for line in lines[start + 1 :]:
        if not line.startswith(" " * 18):
            break
        rows.append(line[18:])
    return rows


@pytest.fixture(scope="module", params=fx.ALL)
def recorded(request: pytest.FixtureRequest) -> tuple[Report, str, list[str]]:
    """A recorded report, its text summary and its PNG's strings (built once per report)."""
    report = fx.load(request.param)
    return report, render_text(report), _png_texts(build_figure(report))


# ---------------------------------------------------------------------------- the text


def test_text_leads_with_the_headline_then_its_details(
    recorded: tuple[Report, str, list[str]],
) -> None:
    report, text, _ = recorded
    lines = text.splitlines()
    head = headline(report)
    assert lines[0] == head.text
    assert lines[0].startswith(f"{verdict_title(report.verdict.label)}: input costs ")
    # the details follow, wrapped and indented, up to the blank line before the rows
    body = lines[1 : lines.index("")]
    assert all(line.startswith("  ") for line in body)
    assert " ".join(line.strip() for line in body) == " ".join(head.details)


def test_text_rates_row_lists_p_t_a_with_their_numbers(
    recorded: tuple[Report, str, list[str]],
) -> None:
    report, text, _ = recorded
    rows = _text_row(text, "Rates")
    assert len(rows) == 3
    for row, rate in zip(rows, rates(report), strict=True):
        assert row.startswith(f"{rate.letter}  {rate.name}")
        assert f" {rate.number} {rate.unit}" in row


def test_text_cost_row_splits_the_cost_as_the_png_bar_does(
    recorded: tuple[Report, str, list[str]],
) -> None:
    report, text, png = recorded
    split = report.verdict.cost_split
    assert split is not None
    (first, *_) = _text_row(text, "Input cost")
    assert first.endswith(cost_split_text(split))
    free = free_input_text(report)
    assert f"({free})" in first and free in png
    for part in cost_bar(report).parts[1:]:
        assert part.text in first  # "wait 81%" in the row ...
        assert part.text in png  # ... and in the bar's legend


def test_text_gpu_row_of_a_gpu_run_and_of_a_run_without_one(
    recorded: tuple[Report, str, list[str]],
) -> None:
    report, text, png = recorded
    gpu = _text_row(text, "GPU")
    if report.gpu.available:
        assert gpu[0] == f"NVIDIA H200: mean utilization {report.gpu.gpu_util_pct_mean:.0f}%"
        assert gpu[1] == gpu_idle_text(report.gpu_analysis)
        assert gpu[1].startswith("The GPU was busy ")
        assert any(t.startswith("GPU 0 NVIDIA H200 (mean ") for t in png)
    else:
        no_gpu = no_gpu_text(report.gpu.reason)
        assert gpu == [f"{no_gpu}. {HOST_TIMING_ONLY}"]
        assert sentence(no_gpu) in png


def test_text_host_row_names_other_processes_where_they_bear_on_the_verdict(
    recorded: tuple[Report, str, list[str]],
) -> None:
    # GIVEN recorded reports whose contention was stored as prose: the facts it held are read
    report, text, _ = recorded
    host = _text_row(text, "Host CPU")
    contention = report.host_contention
    assert contention is not None
    if contention.contended and contention.bears_on_verdict:
        # THEN the row words it from the figures, over the samples the finding named
        assert contention.scope == "measured-steps"
        assert host[1] == contention_text(contention)
        share = f"{contention.other_cpu_pct_mean:.0f}% of the host's CPU"
        assert host[1].startswith(f"Other processes took {share} (")
    else:
        assert host == host[:1]


def test_text_run_row_and_png_run_line_share_the_command(
    recorded: tuple[Report, str, list[str]],
) -> None:
    report, text, png = recorded
    command = command_line(report)
    assert _text_row(text, "Run")[0].endswith(f"[{command}]")
    assert _text_row(text, "Run")[0].startswith(run_status(report))
    (run_line,) = [t for t in png if t.startswith("$ pipediag run ")]
    assert run_line.startswith(f"$ pipediag run {command}")
    assert input_wait_source_text(report.train) in run_line
    assert input_wait_source_text(report.train) in _text_row(text, "Train step")[1]


def test_text_suggestions_are_the_summary_lines_grouped_by_kind(
    recorded: tuple[Report, str, list[str]],
) -> None:
    report, text, _ = recorded
    lines = text.splitlines()
    for kind, heading in SUGGESTION_HEADINGS.items():
        chosen = suggestions_of(report, kind)
        if not chosen:
            assert heading not in lines
            continue
        start = lines.index(heading)
        numbered = [line for line in lines[start + 1 :] if line[:4].strip().endswith(".")]
        for n, s in enumerate(chosen, 1):
            assert numbered[n - 1] == f" {n}. {suggestion_line(s, report)}"


def test_phases_row_of_the_cache_run() -> None:
    report = fx.load(fx.CACHE_PHASES_FIT)
    rows = _text_row(render_text(report), "Phases")
    assert len(rows) == len(report.verdict.phases)
    for row, phase in zip(rows, report.verdict.phases, strict=True):
        assert row.startswith(f"{phase_text(phase)} ({phase.steps} steps")
    # the image marks the same phases over their steps, in a shorter wording where narrow
    png = _png_texts(build_figure(report))
    for phase in report.verdict.phases:
        assert phase.input_cost_fraction is not None
        wordings = {
            phase_text(phase),
            phase_text(phase, first=False),
            percent(phase.input_cost_fraction),
        }
        assert wordings & set(png), phase.name
    # the compute-bound example has one phase only: no phase row
    assert "Phases" not in render_text(fx.load(fx.COMPUTE_BOUND_LOOP))


# ---------------------------------------------------------------------------- the PNG's words


def test_png_says_the_headline_and_the_key_figures_in_the_texts_words(
    recorded: tuple[Report, str, list[str]],
) -> None:
    report, text, png = recorded
    head = headline(report)
    claim, subhead = header_lines(report)
    # the claim drawn big is the start of the text's first line
    assert claim == head.claim and text.splitlines()[0].startswith(claim)
    assert claim in png
    # key figures: the labels and values, numbers as the text's rates row gives them
    for label, value in key_figures(report):
        assert label in png and value in png
    for rate in rates(report):
        assert rate.number in " ".join(_text_row(text, "Rates"))


def test_png_suggestion_lines_are_the_texts(recorded: tuple[Report, str, list[str]]) -> None:
    report, text, png = recorded
    # the answer's one change, measured to help, leads the foot, its code under it, and is
    # not listed again
    change = the_change(report)
    drawn = bool(change.code) and not change.model
    if drawn:
        assert any(line.startswith("Change: " + change.words[:60]) for line in png), png
        assert all(code in png for code in change.code[:3])
    said = [change.suggestion] if drawn and change.suggestion is not None else []
    if drawn and change.suggestion is None:  # the prescription: its kept rewrites are said
        kept = {(c.fix, c.stage_index) for c in report.pipeline.prescription.kept}
        said = [
            s
            for s in report.suggestions
            if (s.fix, s.stage_index) in kept and s.gain.on("training") is not None
        ]
    listed = [s for s in actionable(report) if not any(s is x for x in said)]
    lines = suggestion_lines(report, said_already=said)
    assert len(lines) == min(len(listed), 5)
    for (line, _), s in zip(lines, listed, strict=False):
        # the page numbers one list, the text one per group: the rest of the line is the same
        assert line.split(". ", 1)[1] == suggestion_line(s, report)
        assert suggestion_line(s, report) in text
    # the page draws them in order, as many as its foot has room for beside the change
    on_page = [line for line, _ in lines if line in png]
    assert on_page == [line for line, _ in lines][: len(on_page)]
    assert on_page or not lines or any(line.gid == "scale-out" for line in foot_lines(report))
    if not listed and not drawn:
        assert "No suggestions" in png


def test_png_stage_labels_are_the_texts_stage_names(
    recorded: tuple[Report, str, list[str]],
) -> None:
    report, text, png = recorded
    timed = [s for s in report.pipeline.stages if s.batches_per_s is not None]
    for stage in timed:
        assert stage_name(stage)[:20] in " ".join(png)
    bottleneck = next((s for s in timed if s.bottleneck), None)
    if bottleneck is not None and report.verdict.label != "compute-bound":
        assert _text_row(text, "Slowest stage")[0].startswith(stage_name(bottleneck))


def test_neither_renderer_says_a_verdict_another_way(
    recorded: tuple[Report, str, list[str]],
) -> None:
    _, text, png = recorded
    words = [text, *png]
    for other in ("NO CLEAR VERDICT", "est. ", "\N{MULTIPLICATION SIGN}"):
        assert not any(other in w for w in words), other


# ---------------------------------------------------------------------------- pipediag report


@pytest.mark.parametrize("name", [fx.GPU_INPUT_BOUND_FIT, fx.CACHE_PHASES_FIT])
def test_pipediag_report_re_renders_a_recorded_run(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a recorded report  WHEN re-rendered in-process into a fresh folder
    code = main(["report", str(fx.path(name)), "--out", str(tmp_path)])
    out = capsys.readouterr().out
    # THEN it succeeds, prints the answer, and writes every file from the same report
    assert code == 0
    report = fx.load(name)
    text = render_text(report)
    assert out.startswith("── pipediag") and out.splitlines()[1].startswith(text.split(",")[0])
    assert main(["report", str(fx.path(name)), "--out", str(tmp_path), "--full"]) == 0
    assert capsys.readouterr().out.startswith(text)
    assert out.splitlines()[-1].startswith("Wrote: ")
    assert (tmp_path / REPORT_TEXT).read_text() == text
    assert (tmp_path / REPORT_PNG).read_bytes()[:8] == PNG_SIGNATURE
    trace = json.loads((tmp_path / TRACE_JSON).read_text())
    assert trace["traceEvents"]
    assert load_report(tmp_path / "report.json") == report


def test_pipediag_report_on_a_missing_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["report", str(tmp_path / "nothing.json")])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "pipediag run" in err
