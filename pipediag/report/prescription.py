"""The pipeline pipediag would write: the rewrites kept on training, their combined gain and
their code (docs/design.md, "The pipeline pipediag would write")."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipediag.report.vocabulary import FixName


@dataclass(frozen=True)
class CodeLine:
    """One line of the user's chain as pipediag would write it, source first.

    `site` is where the script made this stage ("train.py:23"), `change` the fix that
    rewrote it (None: as the user wrote it), `semantics` what the change means for the data
    (None: nothing but the speed).
    """

    text: str
    site: str | None = None
    change: FixName | None = None
    semantics: str | None = None


@dataclass(frozen=True)
class PrescribedChange:
    """One rewrite tried on training on top of the ones kept before it.

    `training_speedup` is its training rate over theirs (medians of interleaved rounds) with
    the 90% interval; `kept` says whether the interval said it helps; `reason` why it was
    not kept, or not tried.
    """

    fix: FixName
    stage_index: int | None = None
    stage: str = ""
    training_speedup: float | None = None
    training_speedup_low: float | None = None
    training_speedup_high: float | None = None
    kept: bool = False
    reason: str | None = None
    # The changes it was tried on top of (the ones kept before it), in order.
    after: list[FixName] = field(default_factory=list)


@dataclass(frozen=True)
class Prescription:
    """The rewrites tried greedily on training and what they came to together.

    `training_speedup` is the kept rewrites together over the user's pipeline, on training
    (measured in one trial where two or more were kept, else the one kept's); None with
    nothing kept, and `reason` then says why.
    """

    tried: list[PrescribedChange] = field(default_factory=list)
    training_speedup: float | None = None
    training_speedup_low: float | None = None
    training_speedup_high: float | None = None
    baseline_steps_per_s: float | None = None
    variant_steps_per_s: float | None = None
    code: list[CodeLine] = field(default_factory=list)
    reason: str | None = None

    @property
    def kept(self) -> list[PrescribedChange]:
        return [change for change in self.tried if change.kept]
