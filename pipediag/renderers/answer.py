"""The default answer on the terminal: a divider, then at most 12 lines a user acts on (the
verdict, A, T and P, the one change and its code); every other figure is in `summary.txt`."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

from pipediag.analysis.cost_rules import SATURATED_RULE
from pipediag.analysis.stage_rules import PORT_RULE
from pipediag.renderers.advice_words import title_of
from pipediag.renderers.cost_words import free_input_text, speedup_if_input_free
from pipediag.renderers.files import REPORT_TEXT, TRACE_JSON
from pipediag.renderers.hardware_words import process_cpu_text
from pipediag.renderers.model_words import change_name, gain_text, model_side_of, ranked
from pipediag.renderers.numbers import gain
from pipediag.renderers.prescription_words import measured_change_text
from pipediag.renderers.rate_words import PIPELINE_ALONE_WORDS, TRAINING_WORDS, Rate, rates
from pipediag.renderers.run_words import run_status
from pipediag.renderers.suggestion_words import (
    FIX,
    NOTE,
    WARNING,
    bound_of,
    from_epoch_two,
    suggestions_of,
)
from pipediag.renderers.verdict_words import VERDICT_TITLES, headline
from pipediag.report.model import Report, Suggestion

DIVIDER = "── pipediag "
MAX_LINES = 12
WIDTH = 100
MIN_WIDTH = 60
CODE_LINES = 4  # of the change's code, at most
MORE_LINES = 3
NO_CHANGE = "none measured to help on your training"
MEASURED_HELD = "measured with its output held in memory"  # a gain read on its stage's hold
IF_INPUT_FREE = "if all input were free"


def render_answer(
    report: Report, report_line: str, width: int = WIDTH, *, quiet: bool = False
) -> str:
    """At most `MAX_LINES` under the divider; `quiet`: the verdict and the report line."""
    width, verdict = max(MIN_WIDTH, min(width, WIDTH)), report.verdict
    last = _wrap(report_line, width)
    if verdict.label not in VERDICT_TITLES or verdict.input_cost_fraction is None:
        # No verdict: what was seen and how to get one is the answer.
        head = _wrap(verdict_text(report), width, most=4)
        seen = _wrap(seen_text(report), width, most=2)
        ran = _wrap(f"Run: {run_status(report)}", width, most=1)
        lines = [*head, *seen, *ran, *last]
    elif quiet:
        lines = [*_wrap(verdict_text(report), width), *last]
    else:
        head, figures = _wrap(verdict_text(report), width), _wrap(_figures(report), width)
        change = the_change(report)  # its words, then its code, indented
        code = [f"    {line}" for line in change.code]
        said = [line[:width] for line in [*_wrap(change.head, width), *code]]
        room = MAX_LINES - len(head) - len(figures) - len(said) - len(last)
        more = [line[:width] for line in _more(report, width)][: max(0, min(MORE_LINES, room))]
        lines = [*head, *figures, *said, *more, *last][:MAX_LINES]
    return "\n".join([DIVIDER + "─" * max(0, width - len(DIVIDER)), *lines]) + "\n"


def _wrap(text: str, width: int, most: int = 2) -> list[str]:
    """`text` in lines of `width`, at most `most` of them (the last ends in "..." if cut)."""
    lines = textwrap.wrap(text, width, subsequent_indent="  ") if text else []
    if len(lines) > most:
        lines = lines[:most]
        lines[-1] = lines[-1][: width - 3].rstrip() + "..."
    return lines


def verdict_text(report: Report) -> str:
    return headline(report).text.rstrip(".")


def seen_text(report: Report) -> str:
    """Without a verdict, what was still measured: "Seen: A training 12.0 steps/s · ..."."""
    seen = [Rate(*TRAINING_WORDS, report.train.steps_per_s)]
    if report.pipeline.measured:
        seen.append(Rate(*PIPELINE_ALONE_WORDS, report.pipeline.batches_per_s))
    parts = [f"{rate.title} {rate.number} {rate.unit}" for rate in seen if rate.value]
    host = report.host
    if host.available and host.system_cpu_pct_mean is not None:
        cpu = f"host CPU {host.system_cpu_pct_mean:.0f}% busy"
        if host.process_cpu_pct_mean is not None:
            cpu += f", {process_cpu_text(host.process_cpu_pct_mean, host.cpu_count)}"
        parts.append(cpu)
    return f"Seen: {' · '.join(parts)}" if parts else ""


def report_line(folder: object, names: list[str]) -> str:
    """Where the report went: the folder, summary.txt first (it holds every figure)."""
    if not names:
        return "Report: not written (see the lines above)"
    rest = ", ".join(n for n in names if n not in (REPORT_TEXT, TRACE_JSON))
    if REPORT_TEXT not in names:
        return f"Report: {folder}/{rest}"
    return f"Report: {folder}/{REPORT_TEXT} has every figure" + (f"; also {rest}" if rest else "")


def _figures(report: Report) -> str:
    # A, T, P: training first
    parts = [f"{rate.title} {rate.number} {rate.shown_unit}" for rate in reversed(rates(report))]
    return " · ".join(part for part in [*parts, free_input_text(report)] if part)


@dataclass(frozen=True)
class Change:
    """The one change; its code only where measured to help."""

    words: str
    code: list[str] = field(default_factory=list)
    suggestion: Suggestion | None = None
    model: bool = False

    @property
    def head(self) -> str:
        return ("Change (model): " if self.model else "Change: ") + self.words


def the_change(report: Report) -> Change:
    """A port ranked first, else the kept rewrites, else the best fix on training, else the
    model change, else a fix that may help, else none, with the note saying where the cost
    lies or that none can help."""
    fixes = suggestions_of(report, FIX)
    if fixes and fixes[0].id == PORT_RULE and bound_of(fixes[0]):
        return Change(_at_most(report, fixes[0]), suggestion=fixes[0])
    prescription, words = report.pipeline.prescription, measured_change_text(report)
    if prescription is not None and words is not None and (prescription.shown[0] or 0.0) > 1.0:
        code = [c.text for c in prescription.code if c.change is not None]
        return Change(words, _code(code or [c.text for c in prescription.code]))
    on_training = [
        s for s in report.suggestions if s.kind == FIX and (s.gain.on("training") or 0.0) > 1.0
    ]
    fix = max(on_training, key=lambda s: s.gain.speedup or 0.0, default=None)
    if fix is not None:
        words = (
            f"{title_of(fix, report)}: {gain(fix.gain.speedup or 1.0)} measured on your training"
        )
        return Change(words, _code(fix.code.splitlines()), fix)
    if report.verdict.label == "compute-bound":
        alone = model_side_of(report)
        worth = ranked(alone.trials).worth if alone is not None else []
        if worth:
            best = worth[0]
            words = f"{change_name(best)}: {gain_text(best)}"
            return Change(words, _code(best.code.splitlines()), model=True)
    fixes = [s for s in suggestions_of(report, FIX) if s.gain.basis != "training" and _may_help(s)]
    if not fixes:
        # Where the cost lies still guides, with the most it can give: no code to paste.
        notes = suggestions_of(report, NOTE)
        if (where := next((s for s in notes if bound_of(s)), None)) is not None:
            return Change(f"{NO_CHANGE}; {_at_most(report, where)}", suggestion=where)
        if (saturated := next((s for s in notes if s.id == SATURATED_RULE), None)) is not None:
            return Change(f"{NO_CHANGE}; {title_of(saturated, report)}", suggestion=saturated)
        return Change(NO_CHANGE)
    fix = fixes[0]
    title, cached = title_of(fix, report), from_epoch_two(report, fix)
    if cached is not None:
        words = f"{title}: {gain(cached)} on your training from epoch 2 ({MEASURED_HELD})"
        return Change(words, _code(fix.code.splitlines()), fix)
    if fix.gain.basis == "step-alone" and fix.gain.speedup is not None:
        words = f"{title}: {gain(fix.gain.speedup)} on the train step alone, not on your training"
        return Change(words, _code(fix.code.splitlines()), fix)
    if not bound_of(fix):
        return Change(f"{title} (not measured on your training)", suggestion=fix)
    return Change(_at_most(report, fix), suggestion=fix)


def _may_help(fix: Suggestion) -> bool:
    """Not a fix whose end-to-end prediction is no gain (more parallel calls on saturated cores, a
    pipeline already faster than the step), unless a bound or a gain on the step alone says more."""
    nothing = fix.estimate is not None and fix.estimate <= 1.0
    return not nothing or bool(bound_of(fix)) or fix.gain.basis == "step-alone"


def _at_most(report: Report, fix: Suggestion) -> str:
    """A change's title and the most it can give training, as its bound says."""
    bound = bound_of(fix) or 1.0
    held = gain(bound)
    # The lower of two bounds holds: the hold can read above T/A by the host's noise.
    free = speedup_if_input_free(report)
    if fix.gain.basis == "input-free":
        most, why = held, IF_INPUT_FREE
    elif free is not None and free < bound:
        most, why = gain(free), f"{IF_INPUT_FREE}; holding its output measured {held}"
    else:
        most, why = held, MEASURED_HELD
    return f"{title_of(fix, report)}: at most {most} on your training ({why})"


def _code(lines: list[str]) -> list[str]:
    """The code lines worth pasting: no comments, at most `CODE_LINES`."""
    code = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    return code[:CODE_LINES]


def _more(report: Report, width: int) -> list[str]:
    """What else must be known: a warning, a run that did not end as planned."""
    lines = []
    for warning in suggestions_of(report, WARNING)[:1]:
        lines += _wrap(f"Warning: {title_of(warning, report)}", width, most=1)
    if not report.complete:
        lines += _wrap(f"Run: {run_status(report)}", width, most=1)
    return lines
