"""The model side in words (docs/design.md, "When the model sets the rate")."""

from __future__ import annotations

from dataclasses import dataclass, replace

from pipediag.renderers.numbers import NOT_MEASURED, gain, gain_range, ms, percent
from pipediag.renderers.reason_words import reason_words
from pipediag.report.model import ComputeAlone, Report
from pipediag.report.model_side import HOST_GAP_KINDS, ModelTrial, TopOp, TopOpKind
from pipediag.report.stage_facts import VERIFIED_MIN_GAIN

MODEL_SETS_THE_RATE = ("compute-bound", "balanced")
TIME_HEADING = "Where the step's time goes"
CHANGE_HEADING = "What to change in the model"
# Op types listed by name in the text; the rest of the step is in the bar's "other".
LISTED_OPS = 5
LISTED_SCOPES = 4
# The bars' groups (`TimeBar.group`): op types, layers and scopes, and the host gaps together.
HOST = "host"
TIME_GROUP_WORDS = {"op_type": "op type", "scope": "layer or scope", HOST: "host, outside any op"}
TIME_LINE_LABELS = {"op_type": "  ops     ", "scope": "  layers  ", HOST: "  host    "}
# A host gap's bar: the profile names the ops and scopes, pipediag the gaps.
HOST_GAP_NAMES: dict[TopOpKind, str] = {
    "host-python": "Python (outside TensorFlow's calls)",
    "host-launch": "launch overhead and time between ops",
}
CHANGE_NAMES = {
    "jit_compile": "XLA (jit_compile=True)",
    "mixed_precision": "mixed precision",
    "device_copy": "host-to-device copy",
}


@dataclass(frozen=True)
class RankedChanges:
    """The measured changes worth making (best first), those under the floor, the rest."""

    worth: list[ModelTrial]
    notes: list[ModelTrial]
    not_measured: list[ModelTrial]


def model_side_of(report: Report) -> ComputeAlone | None:
    alone = report.compute_alone
    shown = alone is not None and (alone.trials or alone.top_ops or alone.model_side_reason)
    return alone if shown else None


def shown_model_side(report: Report) -> ComputeAlone | None:
    """The model side where shown: where the model sets the rate, or its trials ran; less a change a
    fix already gives with its gain (`steps_per_execution` against the per-pull overhead)."""
    if (alone := model_side_of(report)) is None:
        return None
    if any(s.gain.basis == "step-alone" for s in report.suggestions):
        trials = [t for t in alone.trials if t.change != "steps_per_execution"]
        alone = replace(alone, trials=trials)
    return alone if report.verdict.label in MODEL_SETS_THE_RATE or alone.trials else None


def ranked(trials: list[ModelTrial]) -> RankedChanges:
    measured = sorted((t for t in trials if t.speedup is not None), key=lambda t: -(t.speedup or 0))
    return RankedChanges(
        worth=[t for t in measured if (t.speedup or 0) >= VERIFIED_MIN_GAIN],
        notes=[t for t in measured if (t.speedup or 0) < VERIFIED_MIN_GAIN],
        not_measured=[t for t in trials if t.speedup is None],
    )


def change_name(trial: ModelTrial) -> str:
    if trial.change == "steps_per_execution" and trial.setting:
        return f"steps_per_execution={trial.setting}"
    if trial.change == "mixed_precision" and trial.setting:
        return f"mixed precision ({trial.setting})"
    return CHANGE_NAMES.get(trial.change, trial.change or "change")


def gain_text(trial: ModelTrial) -> str:
    if trial.speedup is None:
        return ""
    text = gain(trial.speedup)
    if trial.interval is not None and len(trial.interval) == 2:
        text += f" (90% interval {gain_range(*trial.interval)})"
    if trial.baseline_steps_per_s and trial.variant_steps_per_s:
        text += (
            f": the step alone ran {trial.variant_steps_per_s:.1f} steps/s against "
            f"{trial.baseline_steps_per_s:.1f} unchanged, {trial.rounds} rounds"
        )
    if trial.change == "device_copy" and trial.share is not None:
        text += f"; the copy is {percent(trial.share)} of the step fed from the host"
    return text


@dataclass(frozen=True)
class TimeBar:
    """One bar of the step's time: an op type, a layer or scope, or a host gap (`HOST`)."""

    name: str
    share: float
    group: str

    @property
    def share_text(self) -> str:
        return percent(self.share)


def time_bars(alone: ComputeAlone) -> list[TimeBar]:
    """Top op types, top layers and scopes, host gaps: each kind adds up to the whole step."""
    ops = alone.top_ops
    chosen = [
        *[op for op in ops if op.kind == "op_type"][:LISTED_OPS],
        *[op for op in ops if op.kind == "scope"][:LISTED_SCOPES],
        *[op for op in ops if op.kind in HOST_GAP_KINDS],
    ]
    return [_bar(op) for op in chosen]


def _bar(op: TopOp) -> TimeBar:
    if op.kind == "host-as-written":
        return TimeBar(str(op.name).removeprefix("host: "), op.share, HOST)
    if op.kind in HOST_GAP_KINDS:
        return TimeBar(HOST_GAP_NAMES[op.kind], op.share, HOST)
    return TimeBar(op.name, op.share, op.kind)


def time_heading(alone: ComputeAlone) -> str:
    step = alone.step_time.median_s if alone.step_time is not None else None
    return TIME_HEADING + (f" (a step alone: {ms(step)})" if step else "")


def time_lines(alone: ComputeAlone) -> list[str]:
    if not alone.top_ops:
        reason = alone.top_ops_reason
        return [f"{TIME_HEADING}: {reason_words(reason)}"] if reason else []
    lines, bars = [time_heading(alone)], time_bars(alone)
    for group, label in TIME_LINE_LABELS.items():
        listed = [f"{bar.name} {percent(bar.share)}" for bar in bars if bar.group == group]
        if listed or group == "op_type":
            lines.append(label + ", ".join(listed))
    return lines


def numerics_words(trial: ModelTrial) -> str:
    """What a mixed-precision trial's policy (`setting`) means for the numerics, in one line."""
    kept = ", ".join(trial.float32_layers or []) or "none"
    compute = "bfloat16 compute with float32 variables (no loss scaling needed)"
    if trial.setting == "mixed_float16":
        compute = (
            "float16 compute with float32 variables; the loss is scaled (Keras wraps the "
            "optimizer in a LossScaleOptimizer)"
        )
    return f"{compute}; layers kept float32: {kept}"


def change_lines(alone: ComputeAlone) -> list[str]:
    """The measured changes ranked; those under the floor as notes; the rest and why."""
    if not alone.trials:
        reason = alone.model_side_reason
        return [f"{CHANGE_HEADING}: not tried: {reason_words(reason)}"] if reason else []
    found, lines = ranked(alone.trials), [f"{CHANGE_HEADING} (measured on the train step alone)"]
    if not found.worth:
        lines.append(f"  no change measured a gain of {gain(VERIFIED_MIN_GAIN)} or more")
    for n, trial in enumerate(found.worth, 1):
        lines.append(f" {n}. {change_name(trial)}: {gain_text(trial)}")
        if trial.code:
            lines.append(f"      {trial.code}")
        if trial.float32_layers is not None:
            lines.append(f"      numerics: {numerics_words(trial)}")
        if trial.reason:
            lines.append(f"      ({reason_words(trial.reason)})")
    lines += [
        f"  note: {change_name(t)}: {gain_text(t)}, under {gain(VERIFIED_MIN_GAIN)}"
        for t in found.notes
    ]
    lines += [
        f"  {change_name(t)}: {reason_words(t.reason) if t.reason else NOT_MEASURED}"
        for t in found.not_measured
    ]
    return lines


def model_lines(report: Report) -> list[str]:
    if (alone := shown_model_side(report)) is None:
        return []
    lines, changes = time_lines(alone), change_lines(alone)
    if lines and changes:
        lines.append("")
    return lines + changes
