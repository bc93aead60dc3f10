"""The suggestions in words: headings, one-line form, measured gain, the best fix."""

from __future__ import annotations

from pipediag.renderers.advice_words import title_of
from pipediag.renderers.cost_words import speedup_if_input_free
from pipediag.renderers.numbers import DASH, gain, gain_within
from pipediag.report.fixes import fix_facts
from pipediag.report.model import Report, Suggestion

FIX, WARNING, NOTE = "fix", "warning", "note"
# Before the title, so that a line cut short never hides it.
MAY_CHANGE_RESULTS = "may change results: "
SUGGESTION_HEADINGS = {
    WARNING: "Warnings (these change what the model trains on):",
    FIX: "Fixes, best first, each with its gain where one was measured:",
    NOTE: "Notes from the checks:",
}
NOT_MEASURED = "gain not measured"
# The most a change can give, measured on training: its stage held, or all input free.
BOUNDS = ("held", "input-free")
BEST_FIX_WHERE = {"training": "on your training", "step-alone": "step alone"}


def gains_text(s: Suggestion) -> str:
    """A suggestion's one gain, as measured; estimates only order the fixes, never shown."""
    measured = s.gain
    if measured.speedup is None:
        return NOT_MEASURED if s.kind == FIX else ""
    figure = gain(measured.speedup)
    low, high = measured.interval or (None, None)  # both ends at a ceiling: no interval
    if measured.basis == "training":
        return f"on your training {gain_within(measured.speedup, low, high)}"
    if measured.basis in BOUNDS:
        return f"at most {figure} on your training"
    if measured.basis == "step-alone":
        return f"on the train step alone {gain_within(measured.speedup, low, high)}"
    return f"on the pipeline alone {figure}"


def suggestion_line(s: Suggestion, report: Report, max_chars: int | None = None) -> str:
    """One line, unnumbered; with `max_chars`, only the title is shortened to fit."""
    head = f"[{s.id}] " + (MAY_CHANGE_RESULTS if s.correctness_warning else "")
    title = title_of(s, report)
    stage = f" (stage: {s.stage})" if s.stage and s.stage not in title else ""
    gains = gains_text(s)
    tail = stage + (f"  ({gains})" if gains else "")
    if max_chars is not None and len(head) + len(title) + len(tail) > max_chars:
        room = max(1, max_chars - len(head) - len(tail))
        title = title[: room - 1].rstrip() + "\N{HORIZONTAL ELLIPSIS}"
    return head + title + tail


def suggestions_of(report: Report, kind: str) -> list[Suggestion]:
    return [s for s in report.suggestions if (s.kind or FIX) == kind]


def actionable(report: Report) -> list[Suggestion]:
    """Fixes and warnings, best first: the things to change (not the notes)."""
    return [s for s in report.suggestions if (s.kind or FIX) != NOTE]


def best_fix(report: Report) -> tuple[Suggestion, float] | None:
    """On training where tried, else from epoch 2, else on the pipeline or the step alone."""
    best: tuple[Suggestion, float] | None = None
    for s in report.suggestions:
        if s.kind != FIX:
            continue
        gains = (
            s.gain.on("training"),
            from_epoch_two(report, s),
            # not where the CPU is saturated: more threads cannot run there
            s.gain.on("pipeline-alone") if (s.estimate or 2.0) > 1.0 else None,
            s.gain.on("step-alone"),
        )
        measured = next((g for g in gains if g is not None), None)
        if measured is not None and measured > 1.0 and (best is None or measured > best[1]):
            best = (s, measured)
    return best


def bound_of(fix: Suggestion) -> float | None:
    return fix.gain.speedup if fix.gain.basis in BOUNDS else None


def from_epoch_two(report: Report, fix: Suggestion) -> float | None:
    """What a cache moved above its shuffle gains from the second epoch: its stage's hold, at
    most all of input's cost (the hold can read above T/A by noise). None for any other fix."""
    held = bound_of(fix)
    if fix.fix is None or not fix_facts(fix.fix).from_epoch_two or not held:
        return None
    free = speedup_if_input_free(report)
    return min(held, free) if free is not None else held


def best_fix_figure(report: Report) -> tuple[str, str]:
    """(label, value), the label saying where the gain was measured."""
    found, fixes = best_fix(report), suggestions_of(report, FIX)
    if found is None:
        bounds = [held for s in fixes if (held := bound_of(s))]
        if bounds:
            # A change no rewrite can make: the most it can gain, measured on training.
            return ("Best fix (at most)", "\N{LESS-THAN OR EQUAL TO}" + gain(max(bounds)))
        if any(s.gain.speedup is not None for s in fixes):
            return ("Best fix (measured)", "no gain")
        return ("Best fix (not measured)" if fixes else "Best fix (none found)", DASH)
    fix, measured = found
    where = BEST_FIX_WHERE.get(fix.gain.basis, "pipeline alone")
    if fix.gain.basis != "training" and from_epoch_two(report, fix) is not None:
        where = "from epoch 2"
    return (f"Best fix ({where})", gain(measured))
