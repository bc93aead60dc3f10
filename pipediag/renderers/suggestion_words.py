"""The suggestions in words: fixes, warnings and notes, their headings and one-line form,
their gains (estimated, verified, on your training, end to end), and the best fix as a key
figure."""

from __future__ import annotations

from pipediag.renderers.cost_words import speedup_if_input_free
from pipediag.renderers.numbers import DASH, gain
from pipediag.renderers.rate_words import ESTIMATE_MARK, ESTIMATED_WORD, training_rate
from pipediag.report.fixes import fix_facts
from pipediag.report.model import Report, Suggestion

FIX, WARNING, NOTE = "fix", "warning", "note"
# Said before the title of a fix that changes what the model trains on, so that a line cut
# short never hides it.
MAY_CHANGE_RESULTS = "may change results: "
SUGGESTION_HEADINGS = {
    WARNING: "Warnings (these change what the model trains on):",
    FIX: "Fixes, best first (estimated/verified: pipeline-alone speedup, estimated from stage "
    "timings or measured on a rewritten copy of your pipeline in this run; on your training: "
    "training speedup measured with the fix in this run; end to end: predicted training "
    "speedup):",
    NOTE: "Notes from the checks:",
}


def gains_text(s: Suggestion) -> str:
    """ "estimated 1.90x, verified 1.62x, end to end ~1.42x", or "" without figures.

    Estimated and verified are the pipeline alone's speedups; end to end is the predicted
    training speedup (`Suggestion.predicted_speedup`), an estimate, hence the tilde. A fix
    tried on training shows that measured gain instead ("on your training 1.30x").
    """
    parts = []
    if s.estimated_speedup is not None:
        parts.append(f"{ESTIMATED_WORD} {gain(s.estimated_speedup)}")
    if s.verified_speedup is not None:
        parts.append(f"verified {gain(s.verified_speedup)}")
    if s.training_speedup is not None:
        interval = s.training_interval
        within = f" ({interval[0]:.2f}-{gain(interval[1])})" if interval else ""
        parts.append(f"on your training {gain(s.training_speedup)}{within}")
    elif s.predicted_speedup is not None:
        parts.append(f"end to end {ESTIMATE_MARK}{gain(s.predicted_speedup)}")
    if s.bound_speedup is not None and s.training_speedup is None:
        parts.append(f"at most {gain(s.bound_speedup)} on your training")
    return ", ".join(parts)


def suggestion_line(s: Suggestion, max_chars: int | None = None) -> str:
    """One suggestion in one line, unnumbered (numbering is the renderer's layout):
    "[PD002] may change results: vectorise (stage: map(f))  (estimated 1.90x)".

    The stage is added only where the title does not already name it. With `max_chars`, the
    title is shortened (never the warning or the gains) so that the line fits.
    """
    head = f"[{s.id}] " + (MAY_CHANGE_RESULTS if s.correctness_warning else "")
    stage = f" (stage: {s.stage})" if s.stage and s.stage not in s.title else ""
    gains = gains_text(s)
    tail = stage + (f"  ({gains})" if gains else "")
    title = s.title
    if max_chars is not None and len(head) + len(title) + len(tail) > max_chars:
        room = max(1, max_chars - len(head) - len(tail))
        title = title[: room - 1].rstrip() + "\N{HORIZONTAL ELLIPSIS}"
    return head + title + tail


def suggestions_of(report: Report, kind: str) -> list[Suggestion]:
    """The report's suggestions of one kind, best first (the advisor's order)."""
    return [s for s in report.suggestions if (s.kind or FIX) == kind]


def actionable(report: Report) -> list[Suggestion]:
    """Fixes and warnings, best first: the things to change. Notes (a check that found a fix
    not worth making) are not."""
    return [s for s in report.suggestions if (s.kind or FIX) != NOTE]


def best_fix(report: Report) -> tuple[Suggestion, float] | None:
    """The fix that promises most, and its gain: measured on training where tried, else end
    to end where predicted, else measured on the pipeline, else estimated. Notes (fixes
    measured without gain) and warnings promise nothing."""
    best: tuple[Suggestion, float] | None = None
    for s in report.suggestions:
        if s.kind != FIX:
            continue
        promised = next(
            (
                g
                for g in (
                    s.training_speedup,
                    s.predicted_speedup,
                    s.verified_speedup,
                    s.estimated_speedup,
                )
                if g
            ),
            None,
        )
        if promised is not None and promised > 1.0 and (best is None or promised > best[1]):
            best = (s, promised)
    return best


def from_epoch_two(report: Report, fix: Suggestion) -> float | None:
    """What a cache moved above its shuffle gains from the second epoch: its stage's hold,
    measured on training, at most all of input's cost (the hold can read above T/A by the
    host's noise). None for any other fix (`FixFacts.from_epoch_two`)."""
    if fix.fix is None or not fix_facts(fix.fix).from_epoch_two or not fix.bound_speedup:
        return None
    verdict = report.verdict
    free = speedup_if_input_free(verdict, training_rate(verdict, report.train.steps_per_s))
    return min(fix.bound_speedup, free) if free is not None else fix.bound_speedup


def best_fix_figure(report: Report) -> tuple[str, str]:
    """The best fix as a key figure, (label, value): "1.40x" when its pipeline gain was
    measured in this run; "~1.40x" under "Best fix (estimated)" when it rests on stage
    timings alone; under "Best fix (from epoch 2)" for a cache moved above its shuffle."""
    found = best_fix(report)
    if found is None:
        fixes = suggestions_of(report, FIX)
        bounds = [s.bound_speedup for s in fixes if s.bound_speedup]
        if bounds:
            # A change no rewrite can make: the most it can gain, measured on training.
            return ("Best fix (at most)", "\N{LESS-THAN OR EQUAL TO}" + gain(max(bounds)))
        if not fixes:
            return ("Best fix (predicted)", DASH)
        if any(s.predicted_speedup or s.verified_speedup or s.estimated_speedup for s in fixes):
            return ("Best fix (predicted)", "no gain")
        return ("Best fix (no estimate)", DASH)
    fix, promised = found
    if fix.training_speedup is not None:
        return ("Best fix (on your training)", gain(promised))
    cached = from_epoch_two(report, fix)
    if cached is not None:
        return ("Best fix (from epoch 2)", gain(cached))
    if fix.verified_speedup is None:
        return (f"Best fix ({ESTIMATED_WORD})", ESTIMATE_MARK + gain(promised))
    return ("Best fix (predicted)", gain(promised))
