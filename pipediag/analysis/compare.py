"""Two reports side by side: what changed, by how much, and whether it is more than noise.
Stages are matched by what they do, fixes by id and stage (docs/design.md, "Comparing runs")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pipediag.analysis import noise
from pipediag.analysis.noise import DEFAULT_RULES, Estimate, NoiseRules
from pipediag.report.model import Report, Suggestion
from pipediag.report.stages import StageStats
from pipediag.report.vocabulary import RuleId

FASTER = "faster"
SLOWER = "slower"
NOISE = "noise"
CHANGED = "changed"
SAME = "same"
MISSING = "missing"

APPEARED = "appeared"
GONE = "gone"
KEPT = "kept"

# A higher rank is a worse verdict.
VERDICT_RANK = {"compute-bound": 0, "balanced": 1, "input-bound": 2}

# Figure names: keys the renderers word (`renderers/compare_text.py`).
TRAINING = "training"
COMPUTE_ALONE = "compute-alone"
PIPELINE_ALONE = "pipeline-alone"
INPUT_COST = "input-cost"
INPUT_WAIT = "input-wait"
COST_PART_FIGURES = {
    part: f"cost-{part}" for part in ("wait", "contention", "fetch", "epoch-start")
}
STAGE = "stage"
VERDICT = "verdict"
DOMINANT = "dominant-part"


@dataclass(frozen=True)
class FigureChange:
    """`change`: new/base when `ratio`, else new - base; `low`-`high` its 95% interval."""

    name: str
    unit: str
    base: float | None
    new: float | None
    change: float | None
    ratio: bool
    judgement: str
    low: float | None = None
    high: float | None = None
    how: str = ""  # where the interval comes from (noise.BOOTSTRAP_HOW, ...)


@dataclass(frozen=True)
class LabelChange:
    """`worse` when input limits the new run more."""

    name: str
    base: str
    new: str
    judgement: str  # SAME or CHANGED
    worse: bool = False


@dataclass(frozen=True)
class StageChange:
    base: StageStats | None
    new: StageStats | None
    figure: FigureChange


@dataclass(frozen=True)
class FixChange:
    """A suggestion in one run or both; `status` is APPEARED, GONE or KEPT. `report` is the
    run of the suggestion `shown` (the new run's, where it has one)."""

    id: RuleId
    stage: str | None
    kind: str
    status: str
    report: Report
    base: Suggestion | None = None
    new: Suggestion | None = None

    @property
    def shown(self) -> Suggestion:
        shown = self.new or self.base
        assert shown is not None
        return shown


@dataclass(frozen=True)
class RunIdentity:
    script: str
    args: list[str] = field(default_factory=list)
    created_utc: str = ""
    measured_steps: int = 0


@dataclass(frozen=True)
class Comparison:
    """What changed from `base` to `new`; `judgement` is the training rate's."""

    base: RunIdentity
    new: RunIdentity
    judgement: str
    rules: NoiseRules
    labels: list[LabelChange] = field(default_factory=list)
    rates: list[FigureChange] = field(default_factory=list)
    shares: list[FigureChange] = field(default_factory=list)
    stages: list[StageChange] = field(default_factory=list)
    fixes: list[FixChange] = field(default_factory=list)

    @property
    def training(self) -> FigureChange | None:
        return next((f for f in self.rates if f.name == TRAINING), None)

    @property
    def input_cost(self) -> FigureChange | None:
        return next((f for f in self.shares if f.name == INPUT_COST), None)


@dataclass(frozen=True)
class RunFigures:
    training: Estimate | None
    compute: Estimate | None
    pipeline: Estimate | None
    input_cost: Estimate | None
    input_wait: Estimate | None
    measured_steps: int


def run_figures(report: Report, rules: NoiseRules = DEFAULT_RULES) -> RunFigures:
    verdict, spread = report.verdict, noise.step_spread(report.train.steps, rules)
    training, alone = _with_spread(training_rate(report), spread.rate), report.compute_alone
    if verdict.compute_alone_source == "measured" and alone is not None:
        compute = noise.summary_rate(verdict.compute_alone_steps_per_s, alone.step_time, rules)
    else:  # estimated from the steps themselves: no spread of its own
        compute = noise.bare(verdict.compute_alone_steps_per_s, log_scale=True)
    pipeline = noise.summary_rate(report.pipeline.batches_per_s, report.pipeline.latency, rules)
    cost = noise.input_cost_estimate(
        verdict.input_cost_fraction, training, compute, verdict.input_cost_interval
    )
    wait = _with_spread(verdict.input_wait_fraction, spread.wait_share, log_scale=False)
    return RunFigures(training, compute, pipeline, cost, wait, spread.steps)


def training_rate(report: Report) -> float | None:
    """The verdict's A; the train section's in a report without it."""
    rate = report.verdict.training_steps_per_s
    return rate if rate is not None else report.train.steps_per_s


def compare_reports(base: Report, new: Report, rules: NoiseRules = DEFAULT_RULES) -> Comparison:
    before, after = run_figures(base, rules), run_figures(new, rules)
    rates = [
        _figure(TRAINING, "steps/s", before.training, after.training, rules, higher_better=True),
        _figure(COMPUTE_ALONE, "steps/s", before.compute, after.compute, rules, True),
        _figure(PIPELINE_ALONE, "batches/s", before.pipeline, after.pipeline, rules, True),
    ]
    shares = [
        _figure(INPUT_COST, "share", before.input_cost, after.input_cost, rules, None),
        _figure(INPUT_WAIT, "share", before.input_wait, after.input_wait, rules, None),
        *_cost_parts(base, new, before, after, rules),
    ]
    return Comparison(
        base=_identity(base, before),
        new=_identity(new, after),
        judgement=rates[0].judgement,
        rules=rules,
        labels=_labels(base, new),
        rates=rates,
        shares=shares,
        stages=_stages(base, new, rules),
        fixes=_fixes(base, new),
    )


def _figure(
    name: str,
    unit: str,
    base: Estimate | None,
    new: Estimate | None,
    rules: NoiseRules,
    higher_better: bool | None,
) -> FigureChange:
    change = None if base is None or new is None else noise.interval(base, new, rules)
    if change is None:
        judgement = MISSING
    elif noise.is_noise(change):
        judgement = NOISE
    elif higher_better is None:
        judgement = CHANGED
    else:
        up = change.change > (1.0 if change.ratio else 0.0)
        judgement = FASTER if up == higher_better else SLOWER
    known = [e for e in (base, new) if e is not None]
    if any(e.se is None for e in known):
        how = noise.NO_SPREAD_HOW
    else:
        how = "; ".join(dict.fromkeys(e.how for e in known))
    return FigureChange(
        name=name,
        unit=unit,
        base=None if base is None else base.value,
        new=None if new is None else new.value,
        change=None if change is None else change.change,
        ratio=unit != "share",
        low=None if change is None else change.low,
        high=None if change is None else change.high,
        judgement=judgement,
        how=how,
    )


def _with_spread(
    value: float | None, spread: Estimate | None, *, log_scale: bool = True
) -> Estimate | None:
    if spread is None or value is None or (log_scale and value <= 0):
        return noise.bare(value, log_scale=log_scale)
    return Estimate(value, spread.se, log_scale=log_scale, how=spread.how)


def _cost_parts(
    base: Report, new: Report, before: RunFigures, after: RunFigures, rules: NoiseRules
) -> list[FigureChange]:
    """Each part with the larger error of cost and wait share; the epoch start where counted."""
    splits = (base.verdict.cost_split, new.verdict.cost_split)
    if splits == (None, None):
        return []
    errors = [_part_error(figures) for figures in (before, after)]
    figures = []
    for part, name in COST_PART_FIGURES.items():
        if part == "epoch-start" and not any(s is not None and s.epoch_start for s in splits):
            continue
        estimates = [
            None
            if split is None
            else Estimate(getattr(split, part.replace("-", "_")), se, log_scale=False, how=how)
            for split, (se, how) in zip(splits, errors, strict=True)
        ]
        figures.append(_figure(name, "share", estimates[0], estimates[1], rules, None))
    return figures


def _part_error(figures: RunFigures) -> tuple[float | None, str]:
    known = [e for e in (figures.input_cost, figures.input_wait) if e is not None]
    if not known or any(e.se is None for e in known):
        return None, noise.NO_SPREAD_HOW
    widest = max(known, key=lambda e: e.se or 0.0)
    return widest.se, widest.how


def _labels(base: Report, new: Report) -> list[LabelChange]:
    before, after = base.verdict.label, new.verdict.label
    judgement = SAME if before == after else CHANGED
    verdict = LabelChange(VERDICT, before, after, judgement, worse=verdict_worse(before, after))
    dominant = [
        (split.dominant or "") if split is not None else ""
        for split in (base.verdict.cost_split, new.verdict.cost_split)
    ]
    if not any(dominant):
        return [verdict]
    same = dominant[0] == dominant[1]
    return [verdict, LabelChange(DOMINANT, dominant[0], dominant[1], SAME if same else CHANGED)]


def verdict_worse(before: str, after: str) -> bool:
    """An uncertain or missing verdict is neither better nor worse."""
    return (
        before in VERDICT_RANK
        and after in VERDICT_RANK
        and VERDICT_RANK[after] > VERDICT_RANK[before]
    )


def stage_key(stage: StageStats) -> tuple[str, str]:
    """What a stage does, whatever a fix made of it: `parallel-map(f)` is `map(f)`."""
    return stage.kind.removeprefix("parallel-"), stage.function or ""


def _keyed(stages: Sequence[StageStats]) -> dict[tuple[str, str, int], StageStats]:
    seen: dict[tuple[str, str], int] = {}
    keyed = {}
    for stage in stages:
        key = stage_key(stage)
        seen[key] = seen.get(key, 0) + 1
        keyed[(key[0], key[1], seen[key] - 1)] = stage
    return keyed


def _stages(base: Report, new: Report, rules: NoiseRules) -> list[StageChange]:
    """Each stage's own time per batch; a stage one run lacks is `changed`."""
    before, after = _keyed(base.pipeline.stages), _keyed(new.pipeline.stages)
    rates = [r for r in (base.pipeline.batches_per_s, new.pipeline.batches_per_s) if r]
    batch_s = 1.0 / max(rates) if rates else None
    order, changes = list(after) + [key for key in before if key not in after], []
    for key in order:
        old, now = before.get(key), after.get(key)
        base_s = None if old is None else old.own_s_per_batch
        new_s = None if now is None else now.own_s_per_batch
        if old is None or now is None:
            judgement = CHANGED
        elif base_s is None or new_s is None:
            judgement = MISSING
        else:
            judgement = _stage_judgement(base_s, new_s, batch_s, rules)
        change = new_s / base_s if base_s and new_s is not None else None
        figure = FigureChange(
            STAGE, "s/batch", base_s, new_s, change, True, judgement, how=noise.NO_SPREAD_HOW
        )
        changes.append(StageChange(old, now, figure))
    return changes


def _stage_judgement(base: float, new: float, batch_s: float | None, rules: NoiseRules) -> str:
    """Stage timings carry no spread: a change counts over both floors (`NoiseRules`)."""
    if (step := abs(new - base)) <= rules.stage_floor * max(base, new) or (
        batch_s is not None and step <= rules.stage_floor_of_batch * batch_s
    ):
        return NOISE
    return FASTER if new < base else SLOWER


def _fixes(base: Report, new: Report) -> list[FixChange]:
    before = {(s.id, s.stage): s for s in base.suggestions}
    after = {(s.id, s.stage): s for s in new.suggestions}
    changes = [
        FixChange(
            s.id, s.stage, s.kind, KEPT if key in before else APPEARED, new, before.get(key), s
        )
        for key, s in after.items()
    ]
    changes += [
        FixChange(id=s.id, stage=s.stage, kind=s.kind, status=GONE, report=base, base=s)
        for key, s in before.items()
        if key not in after
    ]
    return changes


def _identity(report: Report, figures: RunFigures) -> RunIdentity:
    return RunIdentity(report.script, list(report.args), report.created_utc, figures.measured_steps)
