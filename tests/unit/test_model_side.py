"""Model-side trials: the schedule and arithmetic on fake clocks, the step's time grouped
from synthetic op events, and the advice's words (docs/design.md, "When the model sets the
rate")."""

from __future__ import annotations

import dataclasses

import pytest
from synthetic_reports import FakeClock, synthetic_cost_report

from pipediag.analysis.op_time import (
    OpEvent,
    ProfiledWindow,
    busy_ns,
    scope_of,
    self_times,
    top_ops,
)
from pipediag.bench.interleaved import Rounds
from pipediag.bench.pipeline import BatchTiming
from pipediag.progress import ProgressStep
from pipediag.renderers.model_words import (
    change_lines,
    model_lines,
    numerics_words,
    ranked,
    time_lines,
)
from pipediag.renderers.reason_words import reason_words
from pipediag.renderers.text import render_text
from pipediag.report import io
from pipediag.report.model import ComputeAlone, Report
from pipediag.report.model_side import HOST_GAP_KINDS, ModelTrial, TopOp
from pipediag.report.reasons import Reason
from pipediag.report.vocabulary import VerdictLabel
from pipediag.training.model_side import SPE_MAX_STEPS, SPE_MIN_STEPS, guarded, spe_steps
from pipediag.training.model_variants import policy_for, xla_failure
from pipediag.training.step_rounds import FitFacts, Side, measure, slice_seconds, trial_result


def _sleeper(clock: FakeClock, seconds: float) -> Side:
    return Side(lambda: clock.sleep(seconds))


def _step(step_s: float) -> FitFacts:
    """A measured step of `step_s`, fit's rate and its time around the step unknown."""
    return FitFacts(step_s, None, gpu=False, policy="mixed_bfloat16")


# --- arithmetic ------------------------------------------------------------------------------


def test_a_trial_result_maps_its_interval_through_the_same_arithmetic() -> None:
    # GIVEN rounds at 10 and 20 batches/s, interval of the ratios 1.8-2.2
    timing = [BatchTiming(None, [0.1] * 10, 1.0, False)]
    fast = [BatchTiming(None, [0.05] * 20, 1.0, False)]
    rounds = Rounds(timing * 5, fast * 5, [2.0] * 5, (1.8, 2.2), "clear gain")
    # WHEN read against fit at 8 steps/s (25 ms around the train function)
    trial = trial_result("jit_compile", rounds, fit_per_s=8.0)
    # THEN the gain and both ends carry fit's time
    assert trial.speedup == pytest.approx(0.125 / (0.05 + 0.025))
    assert trial.interval is not None
    low, high = trial.interval
    assert low == pytest.approx(0.125 / (0.1 / 1.8 + 0.025))
    assert high == pytest.approx(0.125 / (0.1 / 2.2 + 0.025))
    assert trial.rounds == 5 and trial.stopped == "clear gain"


def test_rounds_without_rates_say_so() -> None:
    empty = Rounds([], [], [], None, "budget")
    assert trial_result("jit_compile", empty, fit_per_s=None).reason == Reason("too-few-steps")


def test_steps_per_execution_is_8_to_32() -> None:
    assert spe_steps(0.0001) == SPE_MAX_STEPS
    assert spe_steps(0.1) == SPE_MIN_STEPS
    assert spe_steps(0.001) == 20


def test_a_slice_is_never_shorter_than_one_call() -> None:
    assert slice_seconds(0.3, 2.0) == pytest.approx(0.3)
    assert slice_seconds(0.001, 2.4) == pytest.approx(0.2)


# --- the schedule ----------------------------------------------------------------------------


def test_a_faster_variant_stops_on_a_clear_gain() -> None:
    # GIVEN a baseline of 20 ms a step and a variant of 10 ms, on a fake clock
    clock = FakeClock()
    trial = measure(
        "jit_compile",
        _sleeper(clock, 0.02),
        _sleeper(clock, 0.01),
        _step(0.02),
        clock=clock,
        share_s=3.0,
    )
    # THEN it measured 2x and stopped as soon as the interval allowed
    assert trial.speedup == pytest.approx(2.0)
    assert trial.stopped == "clear gain"
    assert trial.rounds == 5
    assert trial.interval == pytest.approx([2.0, 2.0])
    assert trial.seconds < 3.0


def test_an_equal_variant_stops_on_no_gain() -> None:
    clock = FakeClock()
    trial = measure(
        "mixed_precision",
        _sleeper(clock, 0.02),
        _sleeper(clock, 0.02),
        _step(0.02),
        clock=clock,
        share_s=3.0,
    )
    assert trial.speedup == pytest.approx(1.0)
    assert trial.stopped == "clear no gain"


def test_a_multi_step_side_counts_its_batches() -> None:
    # GIVEN 8 batches a call at 40 ms a call (5 ms a batch) against 10 ms a batch
    clock = FakeClock()
    variant = Side(lambda: clock.sleep(0.04), batches_per_call=8)
    trial = measure(
        "steps_per_execution",
        _sleeper(clock, 0.01),
        variant,
        _step(0.005),  # a call: 8 steps of 5 ms
        clock=clock,
        share_s=3.0,
        shared_by=8,
    )
    assert trial.variant_steps_per_s == pytest.approx(200.0)
    assert trial.baseline_steps_per_s == pytest.approx(100.0)


def test_too_little_budget_is_a_reason_not_a_trial() -> None:
    def never(share: float) -> ModelTrial:
        raise AssertionError("not to be run")

    trial = guarded("jit_compile", never, 0.2, 0.05)
    assert trial.change == "jit_compile"
    assert trial.reason == Reason("budget-share", value=0.2)
    assert reason_words(trial.reason) == "not measured: its share of the budget is 0.2 s"


def test_a_failed_trial_is_one_line() -> None:
    def fails(share: float) -> ModelTrial:
        raise ValueError("bad\nthing")

    trial = guarded("mixed_precision", fails, 5.0, 0.01)
    assert trial.reason == Reason("failed", detail="ValueError: bad thing")
    assert reason_words(trial.reason) == "failed: ValueError: bad thing"


# --- variants' words --------------------------------------------------------------------------


def test_xla_failure_names_the_op() -> None:
    text = (
        "Detected unsupported operations when trying to compile graph __inference_x on "
        "XLA_CPU_JIT: PyFunc (No registered 'PyFunc' OpKernel for XLA_CPU_JIT devices)"
    )
    assert reason_words(xla_failure(RuntimeError(text))) == "XLA cannot compile the op PyFunc"
    assert reason_words(xla_failure(RuntimeError("other\nmore"))) == (
        "XLA failed to compile the train step: RuntimeError: other"
    )


def test_the_policy_follows_the_hardware() -> None:
    assert policy_for(True, "") == ("mixed_float16", None)
    assert policy_for(False, "fpu avx512_bf16 sse") == ("mixed_bfloat16", None)
    policy, reason = policy_for(False, "fpu avx2")
    assert policy == "mixed_bfloat16" and reason == Reason("no-bfloat16")


# The numerics notes as schema-8 reports stored them, word for word.
FLOAT16_NOTE = (
    "float16 compute with float32 variables; the loss is scaled (Keras wraps the optimizer in "
    "a LossScaleOptimizer); layers kept float32: dense, head"
)
BFLOAT16_NOTE = (
    "bfloat16 compute with float32 variables (no loss scaling needed); layers kept float32: none"
)


def test_the_numerics_words_are_the_notes_reports_stored() -> None:
    float16 = ModelTrial(
        "mixed_precision", setting="mixed_float16", float32_layers=["dense", "head"]
    )
    bfloat16 = ModelTrial("mixed_precision", setting="mixed_bfloat16", float32_layers=[])
    assert numerics_words(float16) == FLOAT16_NOTE
    assert numerics_words(bfloat16) == BFLOAT16_NOTE


# --- where the step's time goes --------------------------------------------------------------


def _window() -> ProfiledWindow:
    # one step of 10 ms: a function-call op holding two ops on thread 0, one op on thread 1;
    # 6 ms inside TensorFlow, 4 ms of Python
    ops = [
        OpEvent("sequential/dense_1/MatMul:MatMul", 1_000_000, 2_000_000, 0),
        OpEvent("ExecutorState::Process", 900_000, 3_000_000, 0),
        OpEvent("gradient_tape/sequential/dense_1/MatMul:MatMul", 3_000_000, 1_000_000, 1),
        OpEvent("adam/Add:AddV2", 3_500_000, 500_000, 0),
        OpEvent("sequential/conv_a/Relu:Relu", 1_500_000, 500_000, 0),
    ]
    return ProfiledWindow(steps=1, wall_ns=10_000_000, in_tensorflow_ns=6_000_000, ops=ops)


def test_self_time_excludes_nested_ops() -> None:
    owned = {e.name: own for e, own in self_times(_window().ops)}
    assert owned["sequential/dense_1/MatMul:MatMul"] == 1_500_000
    assert owned["sequential/conv_a/Relu:Relu"] == 500_000
    assert "ExecutorState::Process" not in owned


def test_busy_time_is_the_union_over_threads() -> None:
    assert busy_ns(_window().ops) == 3_000_000  # 1.0-3.0 ms, 3.0-4.0 ms


def test_scopes_are_layers_or_the_optimizer() -> None:
    layers = ["dense", "conv_a"]
    assert scope_of("gradient_tape/sequential/dense_1/MatMul", layers) == "dense"
    assert scope_of("sequential/conv_a/Relu", layers) == "conv_a"
    assert scope_of("adam/Add", layers) == "optimizer"
    assert scope_of("Identity", layers) == "(top level)"


def test_top_ops_shares_of_each_kind_add_up_to_one_with_the_gaps() -> None:
    found = top_ops(_window(), ["dense", "conv_a"])
    by_kind = {kind: [t for t in found if t.kind == kind] for kind in ("op_type", "scope")}
    gaps = sum(t.share for t in found if t.kind in HOST_GAP_KINDS)
    assert sum(t.share for t in by_kind["op_type"]) + gaps == pytest.approx(1.0)
    assert sum(t.share for t in by_kind["scope"]) + gaps == pytest.approx(1.0)
    first = by_kind["op_type"][0]
    assert first.name == "MatMul"
    assert first.self_s == pytest.approx(0.0025)
    # THEN the two host gaps close the list, each a kind of its own with no name
    python, launch = found[-2:]
    assert (python.kind, python.name) == ("host-python", "")
    assert python.self_s == pytest.approx(0.004)
    assert (launch.kind, launch.name) == ("host-launch", "")
    assert launch.self_s == pytest.approx(0.003)


def test_an_empty_window_has_no_top_ops() -> None:
    assert top_ops(ProfiledWindow(0, 0, 0, [])) == []


# --- the report and its words ----------------------------------------------------------------

TRIALS = [
    ModelTrial("jit_compile", 40.0, 60.0, 1.45, [1.3, 1.6], 5, "clear gain", code="jit"),
    ModelTrial("steps_per_execution", 40.0, 41.0, 1.02, None, 5, "clear no gain", setting="8"),
    ModelTrial("mixed_precision", reason=Reason("subclassed-model", detail="Net")),
    ModelTrial("device_copy", reason=Reason("no-gpu-copy")),
]
TOP = [
    TopOp("Conv2D", "op_type", 0.6, 0.012),
    TopOp("conv_a", "scope", 0.6, 0.012),
    TopOp("", "host-python", 0.1, 0.002),
    TopOp("", "host-launch", 0.05, 0.001),
]


def _report(label: VerdictLabel = "compute-bound") -> Report:
    report = synthetic_cost_report(wait=0.0, contention=0.01)
    alone = report.compute_alone or ComputeAlone(measured=True)
    alone = dataclasses.replace(alone, trials=TRIALS, top_ops=TOP)
    verdict = dataclasses.replace(report.verdict, label=label)
    return dataclasses.replace(report, compute_alone=alone, verdict=verdict)


def test_changes_are_ranked_with_notes_under_the_floor() -> None:
    found = ranked(TRIALS)
    assert [t.change for t in found.worth] == ["jit_compile"]
    assert [t.change for t in found.notes] == ["steps_per_execution"]
    assert [t.change for t in found.not_measured] == ["mixed_precision", "device_copy"]


def test_the_text_ends_with_what_to_change_in_the_model() -> None:
    text = render_text(_report())
    assert "Where the step's time goes" in text
    assert " 1. XLA (jit_compile=True): 1.45x (90% interval 1.30-1.60x)" in text
    assert "      jit" in text
    assert "note: steps_per_execution=8: 1.02x" in text
    assert "mixed precision: not measured: a subclassed model (Net) cannot be rebuilt" in text
    assert "host-to-device copy: not measured: no GPU (the batch is already where" in text


@pytest.mark.parametrize("label", ["compute-bound", "balanced"])
def test_compute_bound_and_balanced_verdicts_show_the_model_side(label: VerdictLabel) -> None:
    assert model_lines(_report(label))


def test_an_input_bound_verdict_without_trials_does_not() -> None:
    report = _report("input-bound")
    assert report.compute_alone is not None
    alone = dataclasses.replace(report.compute_alone, trials=[])
    assert model_lines(dataclasses.replace(report, compute_alone=alone)) == []


def test_a_reason_alone_is_said() -> None:
    alone = ComputeAlone(measured=True, model_side_reason=Reason("model-side-fit-only"))
    assert change_lines(alone) == [
        "What to change in the model: not tried: model-side trials run under Keras fit, and on "
        "a custom TF loop at its step budget"
    ]


def test_the_model_side_round_trips() -> None:
    report = _report()
    assert io.from_dict(io.to_dict(report)) == report


def test_the_host_gaps_are_worded_by_the_renderer() -> None:
    report = _report()
    assert report.compute_alone is not None
    assert time_lines(report.compute_alone)[-1] == (
        "  host    Python (outside TensorFlow's calls) 10%, launch overhead and time between ops 5%"
    )


def test_a_schema_9_reports_worded_host_gaps_load_as_their_kinds() -> None:
    # GIVEN a schema-9 report whose host gaps stored pipediag's words as their names
    report = _report()
    data = io.to_dict(report)
    data["schema_version"] = 9
    python, launch = data["compute_alone"]["top_ops"][-2:]
    python.update(kind="host_gap", name="host: Python (outside TensorFlow's calls)")
    launch.update(kind="host_gap", name="host: launch overhead and time between ops")
    # WHEN it is read
    loaded = io.from_dict(data)
    # THEN the gaps are their kinds again, and the text says them as before
    assert loaded.compute_alone is not None and report.compute_alone is not None
    assert loaded.compute_alone.top_ops == report.compute_alone.top_ops
    assert time_lines(loaded.compute_alone) == time_lines(report.compute_alone)


def test_a_schema_9_host_gap_in_other_words_is_kept_as_written() -> None:
    data = io.to_dict(_report())
    data["schema_version"] = 9
    data["compute_alone"]["top_ops"][-1].update(kind="host_gap", name="host: edited")
    loaded = io.from_dict(data)
    assert loaded.compute_alone is not None
    assert loaded.compute_alone.top_ops[-1] == TopOp("host: edited", "host-as-written", 0.05, 0.001)
    # ... and shown on the host line, as it was
    assert time_lines(loaded.compute_alone)[-1] == (
        "  host    Python (outside TensorFlow's calls) 10%, edited 5%"
    )


def _measured_mixed_precision(
    policy: str = "", float32_layers: list[str] | None = None
) -> ModelTrial:
    measured = ModelTrial("mixed_precision", 40.0, 60.0, 1.5, [1.3, 1.7], 5, "clear gain")
    return dataclasses.replace(measured, setting=policy, float32_layers=float32_layers)


@pytest.mark.parametrize(
    ("note", "policy", "layers"),
    [(FLOAT16_NOTE, "mixed_float16", ["dense", "head"]), (BFLOAT16_NOTE, "mixed_bfloat16", [])],
    ids=["float16", "bfloat16"],
)
def test_a_schema_8_numerics_note_loads_as_its_layers_and_reads_as_written(
    note: str, policy: str, layers: list[str]
) -> None:
    # GIVEN a schema-8 report whose mixed-precision trial stored its numerics as words
    report = _report()
    assert report.compute_alone is not None
    trial = _measured_mixed_precision(policy, layers)
    alone = dataclasses.replace(report.compute_alone, trials=[trial])
    data = io.to_dict(dataclasses.replace(report, compute_alone=alone))
    data["schema_version"] = 8
    stored = data["compute_alone"]["trials"][0]
    del stored["float32_layers"], stored["setting"]
    stored["numerics"] = note
    # WHEN it is read
    loaded = io.from_dict(data)
    # THEN the note is its facts again, and the text says it as before
    assert loaded.compute_alone is not None
    assert loaded.compute_alone.trials == [trial]
    assert f"      numerics: {note}" in change_lines(loaded.compute_alone)


def test_a_trial_without_a_clone_says_nothing_of_numerics() -> None:
    lines = change_lines(ComputeAlone(measured=True, trials=[_measured_mixed_precision()]))
    assert not any("numerics" in line for line in lines)


# --- when it runs ----------------------------------------------------------------------------


class _Quiet:
    def note(self, message: str) -> None: ...
    def phase(
        self, step: ProgressStep, budget_s: float | None = None, *, redraw: bool = True
    ) -> None: ...
    def add_phase(self, name: str, start: float, end: float) -> None: ...


def _gate(cost: float, *, style: str = "keras-fit", **settings: object) -> Reason | None:
    from pipediag.config import RunConfig
    from pipediag.phases import Seen, model_side
    from pipediag.report.model import Verdict

    alone = ComputeAlone(measured=True)
    seen = Seen(style, dataset=None, model=object(), batch=object())  # type: ignore[arg-type]
    found = model_side(
        seen,
        alone,
        Verdict(input_cost_fraction=cost),
        config=RunConfig(**settings),  # type: ignore[arg-type]
        clock=FakeClock(),
        say=_Quiet(),
    )
    assert found is not None
    return found.model_side_reason


def test_an_input_cost_of_20_percent_or_more_skips_the_model_side() -> None:
    gate = _gate(0.25)
    assert gate == Reason("input-cost-high", value=0.25, limit=0.2)
    assert "input costs 25% of training (model-side trials run under 20%" in reason_words(gate)


def test_no_verify_skips_the_model_side() -> None:
    assert _gate(0.01, verify=False) == Reason("no-verify")


def test_a_loop_not_served_at_its_budget_is_told_where_the_trials_run() -> None:
    assert _gate(0.01, style="custom-loop") == Reason("model-side-fit-only")
