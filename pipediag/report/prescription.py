"""The pipeline pipediag would write, as the report holds it: its tf.data code and the rewrites
tried greedily on training (docs/design.md, "The pipeline pipediag would write")."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipediag.report.reasons import Reason
from pipediag.report.vocabulary import FixName, SemanticsChange, TrialStop


@dataclass(frozen=True)
class CodeLine:
    """One line of the rewritten pipeline (docs/design.md, "The pipeline pipediag would
    write"); `change` None: the user's line as written."""

    text: str
    site: str | None = None
    change: FixName | None = None
    semantics: list[SemanticsChange] = field(default_factory=list)


@dataclass(frozen=True)
class StageChange:
    """A rewrite kept in pipediag's pipeline; `stage_index` None: the whole pipeline's options."""

    fix: FixName
    stage_index: int | None = None
    semantics: tuple[SemanticsChange, ...] = ()
    # cycle_length for an interleave, threads for a cap, one epoch's elements for a cache
    value: int | None = None
    # These three: as `TrialFacts`'s fields of the same names.
    vectorized_map: bool = False
    element_unpacked: bool = False
    cached_in_batches: bool = False


@dataclass(frozen=True, kw_only=True)
class GainOnTraining:
    """A rewrite's gain tried on training (a fix trial's, a prescribed change's), or the kept
    ones' together: `training_speedup` from the paired engine, `on_training` that ratio in the
    run's own terms (docs/design.md, "Fixes tried on training"), the figure the report shows,
    filled in for the prescription; for a fix trial the advice computes it."""

    training_speedup: float | None = None
    training_speedup_low: float | None = None
    training_speedup_high: float | None = None
    baseline_steps_per_s: float | None = None
    variant_steps_per_s: float | None = None
    on_training: float | None = None
    on_training_low: float | None = None
    on_training_high: float | None = None
    # What an epoch's start cost each side beyond a steady step, s (a fresh iterator, a cache read).
    baseline_start_s: float | None = None
    variant_start_s: float | None = None
    # The fixed pipeline fed training faster than the step alone (with noise): read at that ceiling.
    at_step_alone: bool = False
    rounds: int = 0
    stopped: TrialStop = ""
    # The rewrites kept before it, in order, applied under its figures (empty: the user's pipeline).
    after: list[FixName] = field(default_factory=list)

    @property
    def shown(self) -> tuple[float | None, float | None, float | None]:
        """The gain shown, with its interval: in the run's terms where filled in, else the ratio."""
        if self.on_training is not None:
            return self.on_training, self.on_training_low, self.on_training_high
        return self.training_speedup, self.training_speedup_low, self.training_speedup_high


@dataclass(frozen=True)
class PrescribedChange(GainOnTraining):
    """One rewrite tried on training on top of the ones kept before it (its gain over theirs);
    `kept` says whether the interval said it helps, `reason` why it was not kept, or not tried."""

    fix: FixName
    stage_index: int | None = None
    stage: str = ""
    kept: bool = False
    reason: Reason | None = None
    # Not tried: a cache kept before it serves its stage from memory after the first epoch.
    covered_by_cache: bool = False


@dataclass(frozen=True)
class Prescription(GainOnTraining):
    """The rewrites tried greedily on training and their gain together over the user's pipeline
    (docs/design.md, "The pipeline pipediag would write"); None with nothing kept, `reason` why."""

    tried: list[PrescribedChange] = field(default_factory=list)
    code: list[CodeLine] = field(default_factory=list)
    reason: Reason | None = None

    @property
    def kept(self) -> list[PrescribedChange]:
        return [change for change in self.tried if change.kept]
