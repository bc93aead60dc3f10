"""`pipediag compare` in the terminal: the judgement of the training rate first (a changed
verdict always said), then one row per figure, the stages, and the fixes that moved."""

from __future__ import annotations

import shlex
from collections.abc import Collection, Sequence

from pipediag.analysis import noise
from pipediag.analysis.compare import (
    APPEARED,
    CHANGED,
    COMPUTE_ALONE,
    COST_PART_FIGURES,
    DOMINANT,
    FASTER,
    GONE,
    INPUT_COST,
    INPUT_WAIT,
    MISSING,
    NOISE,
    PIPELINE_ALONE,
    SLOWER,
    TRAINING,
    VERDICT,
    Comparison,
    FigureChange,
    FixChange,
    LabelChange,
    RunIdentity,
    StageChange,
)
from pipediag.renderers.advice_words import title_of
from pipediag.renderers.cost_words import COST_PART_NAMES
from pipediag.renderers.numbers import gain, gain_range, percent, slower, utc_time
from pipediag.renderers.rate_words import COMPUTE_ALONE_WORDS, PIPELINE_ALONE_WORDS, TRAINING_WORDS
from pipediag.renderers.suggestion_words import NOT_MEASURED, gains_text
from pipediag.renderers.verdict_words import VERDICT_TITLES
from pipediag.report.names import stage_name

# The rates compared, in the order the page draws them: (letter, name, unit).
RATE_WORDS = {
    PIPELINE_ALONE: PIPELINE_ALONE_WORDS,
    COMPUTE_ALONE: COMPUTE_ALONE_WORDS,
    TRAINING: TRAINING_WORDS,
}
FIGURE_NAMES = {
    **{key: f"{letter}  {name}, {unit}" for key, (letter, name, unit) in RATE_WORDS.items()},
    INPUT_COST: "input cost",
    INPUT_WAIT: "input wait",
    **{key: f"  {COST_PART_NAMES[part]}" for part, key in COST_PART_FIGURES.items()},
}
HEADLINES = {FASTER: "FASTER", SLOWER: "SLOWER", NOISE: "NO CHANGE BEYOND NOISE"}
NO_COMPARISON = "NO COMPARISON"
COLUMNS = ("", "base", "new", "change", "95% interval", "")
FIX_STATUS_WORDS = {APPEARED: "new", GONE: "gone", "kept": "kept"}


def render_comparison(
    comparison: Comparison, base_name: str = "base", new_name: str = "new"
) -> str:
    lines = [*headline_lines(comparison), "", *run_lines(comparison, base_name, new_name), ""]
    rows = [_label_row(label) for label in comparison.labels]
    rows += [_figure_row(f) for f in [*comparison.rates, *comparison.shares]]
    lines += columns([COLUMNS, *rows])
    for section in (_stages(comparison), _fixes(comparison.fixes)):
        if section:
            lines += ["", *section]
    rules = comparison.rules
    noise_note = (
        "Noise: 95% intervals from each run's own spread (A and the wait: its steps, "
        "resampled in blocks; P and T: their median and p90) and a run-to-run drift of "
        f"{percent(rules.run_to_run)} per run ({rules.run_to_run_points * 100:.0f} points for "
        "shares); a change inside its interval is noise."
    )
    return "\n".join([*lines, "", noise_note]) + "\n"


def headline_lines(comparison: Comparison) -> list[str]:
    claim, detail = training_claim(comparison.training)
    lines = [f"{claim}, {detail}" if detail else claim]
    verdict = next((label for label in comparison.labels if label.name == VERDICT), None)
    if verdict is None or verdict.judgement != CHANGED:
        return lines
    text = f"Verdict changed: {_label(verdict.base)} -> {_label(verdict.new)}"
    cost = comparison.input_cost
    if cost is not None and cost.base is not None and cost.new is not None:
        text += f" (input cost {percent(cost.base)} -> {percent(cost.new)}"
        if cost.judgement == NOISE:
            text += ", a move within noise: the cost sits near a band's edge"
        text += ")"
    return [*lines, "  " + text]


def training_claim(training: FigureChange | None) -> tuple[str, str]:
    """ "FASTER: training 1.78x faster", and "98.8 -> 175.5 steps/s (95% interval ...)"."""
    if training is None or training.judgement == MISSING or training.change is None:
        side = "the base report" if training is None or training.base is None else "the new one"
        return f"{NO_COMPARISON}: no training rate in {side} (no measured steps)", ""
    rates, span = f"{training.base:.1f} -> {training.new:.1f} steps/s", _interval(training)
    within = span if span == noise.NO_SPREAD_HOW else f"95% interval {span}"
    if training.judgement == NOISE:
        claim = f"{HEADLINES[NOISE]}: training {gain(training.change)}"
        return claim, f"{rates}, within the runs' noise ({within})"
    change = training.change
    how = f"{gain(change)} faster" if change >= 1.0 else slower(change)
    return f"{HEADLINES[training.judgement]}: training {how}", f"{rates} ({within})"


def run_lines(comparison: Comparison, base_name: str, new_name: str) -> list[str]:
    return [run_line("base", comparison.base, base_name), run_line("new", comparison.new, new_name)]


def run_line(role: str, run: RunIdentity, name: str) -> str:
    """ "  base  train.py --epochs 2  (2026-01-01 10:00:00 UTC, 100 steps)  base.json"."""
    command = shlex.join([run.script, *run.args])
    when = f"{utc_time(run.created_utc)} UTC, " if run.created_utc else ""
    where = f"  {name}" if name and name != role else ""
    return f"  {role:<6}{command}  ({when}{run.measured_steps} steps){where}"


def _label_row(label: LabelChange) -> tuple[str, ...]:
    name = "verdict" if label.name == VERDICT else "input cost, mostly"
    if label.name == DOMINANT:
        base, new = label.base or "-", label.new or "-"
    else:
        base, new = _label(label.base), _label(label.new)
    return (name, base, new, "", "", label.judgement + (" (worse)" if label.worse else ""))


def _figure_row(figure: FigureChange) -> tuple[str, ...]:
    return (
        FIGURE_NAMES.get(figure.name, figure.name),
        _value(figure, figure.base),
        _value(figure, figure.new),
        _change(figure),
        _interval(figure),
        figure.judgement,
    )


def _stages(comparison: Comparison) -> list[str]:
    if not comparison.stages:
        return []
    rules = comparison.rules
    header = (
        "Stages, own time per batch (no spread recorded: a change counts over "
        f"{percent(rules.stage_floor)} of the stage and {percent(rules.stage_floor_of_batch)} "
        "of a batch)"
    )
    rows = []
    for stage in comparison.stages:
        figure, name, change = stage.figure, _stage_name(stage), _stage_change(stage)
        rows.append((name, _ms(figure.base), _ms(figure.new), change, "", figure.judgement))
    return [header, *columns(rows)]


def _stage_name(stage: StageChange) -> str:
    if stage.base is None and stage.new is not None:
        return f"{stage_name(stage.new)} (new)"
    if stage.new is None and stage.base is not None:
        return f"{stage_name(stage.base)} (gone)"
    assert stage.base is not None and stage.new is not None
    old, now = stage_name(stage.base), stage_name(stage.new)
    return now if old == now else f"{old} -> {now}"


def _stage_change(stage: StageChange) -> str:
    figure = stage.figure
    if figure.change is not None:
        return gain(figure.change)
    if figure.base is not None and figure.new is not None:
        return f"{(figure.new - figure.base) * 1e3:+.2f} ms"
    return ""


def _fixes(fixes: list[FixChange]) -> list[str]:
    if not fixes:
        return []
    lines = ["Suggestions (by id and stage)"]
    for fix in sorted(fixes, key=lambda f: f.status == "kept"):  # those that moved first
        status = FIX_STATUS_WORDS.get(fix.status, fix.status)
        lines.append(f"  {status:<5} [{fix.id}] {title_of(fix.shown, fix.report)}{_fix_gain(fix)}")
    return lines


def _fix_gain(fix: FixChange) -> str:
    """Each run's measured gain of the fix, once where both read the same."""
    gains = [gains_text(s) for s in (fix.base, fix.new) if s is not None]
    shown = [g for g in dict.fromkeys(gains) if g not in ("", NOT_MEASURED)]
    return f"  ({' -> '.join(shown)})" if shown else ""


def columns(rows: Sequence[tuple[str, ...]], right: Collection[int] | None = None) -> list[str]:
    """Two spaces apart; `right` (default: all but the first and last) right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    if right is None:
        right = range(1, len(widths) - 1)
    lines = []
    for row in rows:
        cells = [
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append(("  " + "  ".join(cells)).rstrip())
    return lines


def _label(label: str) -> str:
    return label if label in VERDICT_TITLES else "no verdict"


def _value(figure: FigureChange, value: float | None) -> str:
    if value is None:
        return "-"
    return percent(value) if figure.unit == "share" else f"{value:.1f}"


def _change(figure: FigureChange) -> str:
    if figure.change is None:
        return ""
    return gain(figure.change) if figure.ratio else _points(figure.change)


def _interval(figure: FigureChange) -> str:
    if figure.low is None or figure.high is None:
        return noise.NO_SPREAD_HOW if figure.change is not None else ""
    if figure.ratio:
        return gain_range(figure.low, figure.high)
    return f"{figure.low * 100:+.0f}..{_points(figure.high)}"


def _points(value: float) -> str:
    return f"{value * 100:+.0f} pts"


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.2f} ms"
