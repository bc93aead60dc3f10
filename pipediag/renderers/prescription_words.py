"""The rewrites tried on training in words (docs/design.md, "The pipeline pipediag would write")."""

from __future__ import annotations

from typing import Final

from pipediag.analysis.prescription_rules import PRESCRIPTION_RULE
from pipediag.analysis.run_terms import most_input_gives
from pipediag.renderers.numbers import bytes_text, gain, gain_within
from pipediag.renderers.reason_words import reason_words
from pipediag.report.fixes import fix_facts
from pipediag.report.model import Report, Suggestion
from pipediag.report.names import fix_words_at
from pipediag.report.prescription import PrescribedChange, Prescription
from pipediag.report.trials import FixTrial
from pipediag.report.vocabulary import SemanticsChange

REWRITES_HEADING = "Rewrites tried on training, each on top of the ones kept before it"
AT_STEP_ALONE = " (at the train step alone's rate: it fed training faster)"

SEMANTICS_WORDS: Final[dict[SemanticsChange, str]] = {
    "element-order": "element order: the map now runs before the shuffle",
    "batched": "the function is applied to whole batches",
    "vectorized-map": (
        "the function runs once per batch through tf.vectorized_map: each element's result is "
        "unchanged (to float rounding)"
    ),
    "cache": (
        "a cache: the elements are read once and kept in memory; randomness before it is frozen"
    ),
    "materialised": (
        "the generator is read once and its elements kept in memory: every epoch yields the "
        "first epoch's elements, and randomness in the generator is frozen"
    ),
}


def changes_besides_speed(report: Report, suggestion: Suggestion) -> str:
    """What the rewritten pipeline's lines change in what it yields, said after the evidence
    of its suggestion (PD016); "" for any other suggestion, or where they change nothing."""
    prescription = report.pipeline.prescription
    if suggestion.id != PRESCRIPTION_RULE or prescription is None:
        return ""
    # an unknown code reads as itself
    changes = [SEMANTICS_WORDS.get(c, c) for line in prescription.code for c in line.semantics]
    return f"What changes besides the speed: {'; '.join(changes)}." if changes else ""


def rewrites_lines(report: Report) -> list[str]:
    """One line per rewrite tried (or not), then the pipeline they make."""
    if (prescription := report.pipeline.prescription) is None:
        return []
    # What a trial's own ratio times: the figure shown adds fit's time and epoch starts to it.
    timed = "the train function" if report.train.style == "keras-fit" else "the steps"
    lines = [_change_line(_named(report, change), change, timed) for change in prescription.tried]
    return [*lines, together_text(prescription, timed)]


def _trial_of(report: Report, change: PrescribedChange) -> FixTrial | None:
    """The pipeline-alone trial of the rewrite a change tried on training (its facts)."""
    where = (change.fix, change.stage_index)
    return next((t for t in report.pipeline.trials if (t.fix, t.stage_index) == where), None)


def _named(report: Report, change: PrescribedChange) -> str:
    trial = _trial_of(report, change)
    vectorized_map = trial is not None and trial.facts.vectorized_map
    return fix_words_at(change.fix, change.stage, vectorized_map=vectorized_map)


def together_text(prescription: Prescription, timed: str = "the train function") -> str:
    """ "pipeline pipediag would write: the 2 kept rewrites together, training 2.10x
    (1.90-2.31x) over yours", or "rewrites kept: none (<why>)": never "the pipeline pipediag
    would write: none", which read as no change at all."""
    kept = prescription.kept
    value, low, high = prescription.shown
    if value is None:
        why = reason_words(prescription.reason) if prescription.reason else "nothing kept"
        return f"rewrites kept: none ({why})"
    what = "the kept rewrite" if len(kept) == 1 else f"the {len(kept)} kept rewrites together"
    raw = _raw_note(prescription.training_speedup, value, timed)
    figure = gain_within(value, low, high)
    capped = AT_STEP_ALONE if prescription.at_step_alone else ""
    return f"pipeline pipediag would write: {what}, training {figure} over yours{capped}{raw}"


def measured_change_text(report: Report) -> str | None:
    """The kept rewrites as the answer's one change, with the gain training measured."""
    if (prescription := report.pipeline.prescription) is None or not prescription.kept:
        return None
    kept = prescription.kept
    value, low, high = prescription.shown
    if value is None:
        return None
    if len(kept) == 1:
        only = kept[0]
        trial, what = _trial_of(report, only), _named(report, only)
        size = trial.facts.cache_bytes if trial is not None else None
        if fix_facts(only.fix).caches and size is not None:
            what += f" ({bytes_text(size)}, fits)"
    else:
        what = f"the {len(kept)} rewrites kept, together"
    text = f"{what}: {gain_within(value, low, high)} measured on your training"
    most, raw = most_input_gives(report), prescription.training_speedup
    if prescription.at_step_alone:
        text += AT_STEP_ALONE
    elif most is not None and value >= most * (1 - 1e-9) and raw is not None and raw > value:
        text += ", all that input cost it"  # the list of rewrites gives the trial's own ratio
    return text


def _change_line(what: str, change: PrescribedChange, timed: str) -> str:
    value, low, high = change.shown
    why = reason_words(change.reason) if change.reason else ""
    if value is None:
        return f"{what}: not measured ({why or 'no rate'})"
    on_top = " on top of the kept ones" if change.after else ""
    verdict = "kept" if change.kept else "not kept" + (f" ({why})" if why else "")
    if change.at_step_alone:
        verdict += AT_STEP_ALONE
    raw = _raw_note(change.training_speedup, value, timed)
    return f"{what}: {gain_within(value, low, high)}{on_top}, {verdict}{raw}"


def _raw_note(raw: float | None, shown: float, timed: str) -> str:
    """The trial's own ratio where the figure shown adds to it (`analysis/run_terms.py`)."""
    return "" if raw is None or gain(raw) == gain(shown) else f"; {gain(raw)} on {timed} alone"
