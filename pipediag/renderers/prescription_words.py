"""The rewrites tried on training, in words: each with its gain on top of the ones kept
before it, whether it was kept, and what the kept ones came to together (docs/design.md,
"The pipeline pipediag would write")."""

from __future__ import annotations

from pipediag.renderers.numbers import gain
from pipediag.report.model import Report
from pipediag.report.names import fix_words_at
from pipediag.report.prescription import PrescribedChange, Prescription


def rewrites_lines(report: Report) -> list[str]:
    """One line per rewrite tried (or not), then the pipeline they make; [] when the search
    did not run."""
    prescription = report.pipeline.prescription
    if prescription is None:
        return []
    lines = [_change_line(change) for change in prescription.tried]
    lines.append(together_text(prescription))
    return lines


def together_text(prescription: Prescription) -> str:
    """ "together 2.10x (1.90-2.31x) over your pipeline", or why there is no figure."""
    kept = prescription.kept
    if prescription.training_speedup is None:
        return f"pipeline pipediag would write: none ({prescription.reason or 'nothing kept'})"
    what = "the kept rewrite" if len(kept) == 1 else f"the {len(kept)} kept rewrites together"
    figure = _figure(
        prescription.training_speedup,
        prescription.training_speedup_low,
        prescription.training_speedup_high,
    )
    return f"pipeline pipediag would write: {what}, training {figure} over yours"


def _change_line(change: PrescribedChange) -> str:
    what = fix_words_at(change.fix, change.stage)
    if change.training_speedup is None:
        return f"{what}: not measured ({change.reason or 'no rate'})"
    figure = _figure(
        change.training_speedup, change.training_speedup_low, change.training_speedup_high
    )
    on_top = " on top of the kept ones" if change.after else ""
    verdict = "kept" if change.kept else f"not kept ({change.reason})"
    return f"{what}: {figure}{on_top}, {verdict}"


def _figure(value: float, low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return gain(value)
    return f"{gain(value)} ({low:.2f}-{gain(high)})"
