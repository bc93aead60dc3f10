"""Rules over rewrites tried on training: PD016, PD017 (a measured rewrite no stage rule
speaks for) and a stage's bound (docs/design.md, "The pipeline pipediag would write")."""

from __future__ import annotations

from typing import NamedTuple

from pipediag.analysis.advice_context import Context
from pipediag.analysis.run_terms import gain_in_run_terms, most_input_gives
from pipediag.report.model import Gain, Suggestion
from pipediag.report.names import fix_words_at
from pipediag.report.stage_facts import VERIFIED_MIN_GAIN, if_free_bound
from pipediag.report.stages import StageStats
from pipediag.report.vocabulary import RuleId

PRESCRIPTION_RULE: RuleId = "PD016-rewritten-pipeline"
MEASURED_RULE: RuleId = "PD017-measured-rewrite"


def check_prescription(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    """Two or more rewrites kept on training, as one fix with their gain measured together."""
    if (prescription := ctx.report.pipeline.prescription) is None or len(prescription.kept) < 2:
        return []
    gain, gain_interval = gain_in_run_terms(ctx.report, prescription)
    if gain is None or gain < VERIFIED_MIN_GAIN:
        return []
    code = "\n".join(line.text for line in prescription.code) or "\n".join(
        f"# {fix_words_at(c.fix, c.stage)}" for c in prescription.kept
    )
    return [
        Suggestion(id=rule_id, code=code, gain=Gain("training", gain, gain_interval), kind="fix")
    ]


def measured_rewrites(ctx: Context, found: list[Suggestion]) -> list[Suggestion]:
    """Rewrites clearly measured to help training (interval above 1) no rule spoke for."""
    said, extra = {(s.fix, s.stage_index) for s in found if s.fix is not None}, []
    for trial in ctx.report.pipeline.trials:
        training = trial.training
        if (trial.fix, trial.stage_index) in said or training is None:
            continue
        gain, interval = gain_in_run_terms(ctx.report, training)
        low = training.training_speedup_low
        if gain is None or gain < VERIFIED_MIN_GAIN or low is None or low <= 1.0:
            continue  # no gain, or one its interval does not make clear
        extra.append(
            Suggestion(
                id=MEASURED_RULE,
                stage=trial.stage or None,
                stage_index=trial.stage_index,
                code=f"# {fix_words_at(trial.fix, trial.stage)}",
                gain=Gain("training", gain, interval),
                kind="fix",
                fix=trial.fix,
            )
        )
    return extra


class Bound(NamedTuple):
    """`held`: the stage whose hold measured it; None: input free (T/A)."""

    speedup: float
    held: StageStats | None = None

    @property
    def gain(self) -> Gain:
        return Gain("input-free" if self.held is None else "held", self.speedup)


def stage_bound(ctx: Context, stats: StageStats) -> Bound | None:
    """The most a change at `stats` can gain training: its (or the nearest held stage
    after it) hold, capped by T/A, which stands alone where no hold was usable."""
    bound, most = if_free_bound(ctx.stages, stats.index), most_input_gives(ctx.report)
    if bound is not None and bound.training_speedup_if_free is not None:
        held = bound.training_speedup_if_free
        if most is not None and held > most:  # the host's noise: no hold gives back more
            return Bound(most)
        return Bound(held, bound)
    cost = ctx.report.verdict.input_cost_fraction
    return None if cost is None or not 0.0 < cost < 1.0 else Bound(1.0 / (1.0 - cost))
