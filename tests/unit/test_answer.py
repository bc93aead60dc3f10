"""The default answer: one divider, at most 12 lines of at most 100 columns, a measured change
with its code, and no code for a change not measured to help."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from synthetic_reports import synthetic_cost_report, synthetic_report
from worded import written

from pipediag.analysis.run_terms import most_input_gives
from pipediag.renderers.answer import MAX_LINES, WIDTH, render_answer, report_line
from pipediag.renderers.png.header import key_figures
from pipediag.report.fixes import FIX_HOIST_CACHE, FIX_VECTORIZE
from pipediag.report.io import load_report
from pipediag.report.model import Gain, Report, Suggestion, Verdict
from pipediag.report.names import fix_words_at
from pipediag.report.prescription import CodeLine, PrescribedChange, Prescription
from pipediag.report.trials import FixTrial, TrialFacts

FIXTURES = sorted((Path(__file__).parent.parent / "fixtures" / "reports").glob("*.json"))


def _lines(text: str) -> list[str]:
    divider, *rest = text.rstrip("\n").split("\n")
    assert divider.startswith("── pipediag")
    return [line for line in rest if line.strip()]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
@pytest.mark.parametrize("width", [WIDTH, 72])
def test_every_report_s_answer_fits_twelve_lines_of_the_width(path: Path, width: int) -> None:
    report = load_report(path)
    text = render_answer(report, report_line("out", ["report.json", "summary.txt"]), width)

    lines = _lines(text)
    assert len(lines) <= MAX_LINES, text
    assert all(len(line) <= width for line in text.splitlines()), text
    assert lines[0].startswith(report.verdict.label.upper().replace("_", "-")[:5]), text
    assert lines[-1] == "Report: out/summary.txt has every figure; also report.json"


def _with(report: Report, *suggestions: Suggestion) -> Report:
    return dataclasses.replace(report, suggestions=list(suggestions))


def test_the_change_measured_fastest_on_training_leads_with_its_code() -> None:
    report = _with(
        synthetic_cost_report(cost_interval=(0.35, 0.5)),
        written(
            "PD001-sequential-map",
            "map(decode): add num_parallel_calls=tf.data.AUTOTUNE",
            code="ds = ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE)",
            gain=Gain("training", 1.8),
        ),
        written(
            "PD002-no-prefetch",
            "add prefetch(tf.data.AUTOTUNE) at the end",
            code="ds = ds.prefetch(tf.data.AUTOTUNE)",
            gain=Gain("training", 1.1),
        ),
    )
    lines = _lines(render_answer(report, "Report: out/"))

    change = next(i for i, line in enumerate(lines) if line.startswith("Change:"))
    assert (
        "num_parallel_calls" in lines[change]
        and "1.80x measured on your training" in (lines[change])
    )
    assert lines[change + 1].strip() == "ds = ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE)"
    assert not any("prefetch" in line for line in lines)
    # A, T and P once, training first
    (rates,) = [line for line in lines if line.startswith("A training")]
    assert rates.index("T compute alone") < rates.index("P pipeline alone")


def test_no_code_for_a_change_not_measured_to_help() -> None:
    report = _with(
        synthetic_cost_report(cost_interval=(0.35, 0.5)),
        written(
            "PD001-sequential-map",
            "map(decode): add num_parallel_calls=tf.data.AUTOTUNE",
            code="ds = ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE)",
            gain=Gain("training", 0.72),
            estimate=1.5,
        ),
    )
    lines = _lines(render_answer(report, "Report: out/"))

    assert "Change: none measured to help on your training" in lines
    assert not any("ds = ds.map" in line for line in lines)


def test_a_fix_not_tried_on_training_is_named_as_not_measured_without_code() -> None:
    report = _with(
        synthetic_cost_report(cost_interval=(0.35, 0.5)),
        written(
            "PD007-py-function",
            "map(to_example) runs Python: port it to TF ops",
            code="# rewrite to_example with TensorFlow ops",
            estimate=3.0,
        ),
    )
    lines = _lines(render_answer(report, "Report: out/"))

    assert "Change: map(to_example) runs Python: port it to TF ops (not measured on your " in (
        "\n".join(lines)
    )
    assert not any("rewrite to_example" in line for line in lines)


def test_a_held_stage_s_bound_above_t_over_a_is_capped_at_t_over_a() -> None:
    base = synthetic_cost_report(cost_interval=(0.35, 0.5))
    free = 1 / (1 - (base.verdict.input_cost_fraction or 0.0))
    report = _with(
        base,
        written(
            "PD007-py-function",
            "map(to_example) runs Python: port it to TF ops",
            gain=Gain("held", free * 1.2),
        ),
    )
    text = " ".join(line.strip() for line in _lines(render_answer(report, "Report: out/")))

    assert f"at most {free:.2f}x on your training (if all input were free" in text, text


def test_a_cache_moved_above_its_shuffle_shows_its_held_gain_from_epoch_2_and_its_code() -> None:
    base = synthetic_cost_report(cost_interval=(0.35, 0.5))
    report = _with(
        base,
        written(
            "PD018-hoist-cache",
            "cache() after map(to_example), moved above shuffle(1024) (24.0 MiB, fits)",
            code="ds = ds.map(to_example)\nds = ds.cache()\nds = ds.shuffle(1024)",
            gain=Gain("held", 1.5),
            estimate=1.5,
            fix="hoist-cache",
        ),
        written(
            "PD007-py-function",
            "map(to_example) runs Python: port it to TF ops",
            code="# rewrite to_example with TensorFlow ops",
            gain=Gain("held", 1.5),
        ),
    )
    lines = _lines(render_answer(report, "Report: out/"))
    text = " ".join(line.strip() for line in lines)

    assert "Change: cache() after map(to_example), moved above shuffle(1024) (24.0 MiB, fits):" in (
        text
    )
    assert "1.50x on your training from epoch 2 (measured with its output held in memory)" in text
    assert [line.strip() for line in lines if line.startswith("    ")] == [
        "ds = ds.map(to_example)",
        "ds = ds.cache()",
        "ds = ds.shuffle(1024)",
    ]
    # AND the PNG's key figures name the same gain the same way, not as an estimate
    assert ("Best fix (from epoch 2)", "1.50x") in key_figures(report)


def test_an_answer_without_a_verdict_still_gives_what_was_measured() -> None:
    # GIVEN a run with no training steps seen, whose pipeline was read alone (3,524 batches/s)
    # and whose host was sampled
    plain = synthetic_report()
    report = dataclasses.replace(
        plain,
        verdict=Verdict(no_verdict_because="no-steps"),
        train=dataclasses.replace(plain.train, steps=[], measured_steps=0, steps_per_s=None),
        pipeline=dataclasses.replace(plain.pipeline, measured=True, batches_per_s=3524.0),
    )
    # WHEN answered
    lines = _lines(render_answer(report, report_line("out", ["summary.txt"])))
    # THEN it says there is no verdict and how to get one, then what it measured
    assert lines[0].startswith("NO VERDICT: No training steps were seen")
    assert any("(--train-function NAME), pass it the" in line for line in lines), lines
    (seen,) = [line for line in lines if line.startswith("Seen: ")]
    assert "P pipeline alone 3,524 batches/s" in seen
    assert "host CPU" in seen and "this process" in seen
    assert "A training" not in seen


def _kept_alone(fix: str, stage: str, raw: float, shown: float, facts: TrialFacts) -> Report:
    """A cost report whose search kept one rewrite: its trial's `raw` ratio, `shown` in the
    run's terms, and the pipeline trial's `facts`."""
    base = synthetic_cost_report(cost_interval=(0.35, 0.5))
    change = PrescribedChange(
        fix, 2, stage, kept=True,
        training_speedup=raw, training_speedup_low=raw * 0.95, training_speedup_high=raw * 1.05,
        on_training=shown, on_training_low=shown, on_training_high=shown,
    )  # fmt: skip
    prescription = Prescription(
        tried=[change], training_speedup=raw, on_training=shown, on_training_low=shown,
        on_training_high=shown,
        code=[CodeLine("ds = ds.cache()", "train.py:3", fix)],
    )  # fmt: skip
    trial = FixTrial(fix, 2, stage, facts=facts)
    pipeline = dataclasses.replace(base.pipeline, prescription=prescription, trials=[trial])
    return dataclasses.replace(base, pipeline=pipeline, suggestions=[])


def test_a_kept_cache_is_named_as_the_summary_names_it_with_its_size_and_its_cap() -> None:
    # GIVEN one kept rewrite, a cache moved above its shuffle, whose trial read more than
    # input costs, so its gain in the run's terms is capped at T/A
    probe = synthetic_cost_report(cost_interval=(0.35, 0.5))
    most = most_input_gives(probe)
    assert most is not None
    report = _kept_alone(
        FIX_HOIST_CACHE, "map(to_example)", most * 1.5, most, TrialFacts(cache_bytes=100_728_832)
    )
    # WHEN the answer says the change
    text = " ".join(line.strip() for line in _lines(render_answer(report, "Report: out/")))
    # THEN it names the rewrite as the list of rewrites does, with the memory it takes, and
    # says the gain is all that input cost, not a figure of its own
    named = fix_words_at(FIX_HOIST_CACHE, "map(to_example)")
    assert f"Change: {named} (100.7 MB, fits): {most:.2f}x measured on your training" in text
    assert "all that input cost it" in text
    assert "ds = ds.cache()" in text


def test_a_kept_vectorise_through_vectorized_map_says_so() -> None:
    report = _kept_alone(FIX_VECTORIZE, "map(decode)", 1.2, 1.2, TrialFacts(vectorized_map=True))
    text = " ".join(line.strip() for line in _lines(render_answer(report, "Report: out/")))
    named = fix_words_at(FIX_VECTORIZE, "map(decode)", vectorized_map=True)
    assert f"Change: {named}: 1.20x measured on your training" in text
    assert "all that input cost it" not in text
    assert "MB, fits" not in text


def test_a_port_ranked_first_is_the_change_with_its_bound_and_no_code() -> None:
    report = _with(
        synthetic_cost_report(cost_interval=(0.3, 0.45)),
        written(
            "PD007-py-function",
            "rewrite make_image with TensorFlow ops",
            code="# rewrite make_image with TensorFlow ops",
            gain=Gain("held", 1.6),
        ),
        written(
            "PD012-input-contention",
            "cap the pipeline's threads",
            code="options.threading.private_threadpool_size = 1",
            gain=Gain("training", 1.07),
        ),
    )
    lines = _lines(render_answer(report, "Report: out/"))

    change = next(i for i, line in enumerate(lines) if line.startswith("Change:"))
    assert "make_image" in lines[change] and "at most 1.60x" in lines[change], lines
    assert not any("private_threadpool_size" in line for line in lines)
