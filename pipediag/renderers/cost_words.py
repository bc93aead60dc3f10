"""Input cost in words: its share, its parts and their evidence, and the PNG's cost bar."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeGuard

from pipediag.analysis.alternation import held_beyond_step_alone
from pipediag.analysis.compare import training_rate
from pipediag.renderers.numbers import ms, percent, percent_range, shown_interval, speedup
from pipediag.report.model import CostSplit, Report, Verdict

NOT_MEASURABLE = "not measurable above noise"
WAITS_NOT_TIMED = (
    "Waiting and contention are not told apart: the pulls run inside a tf.function, where "
    "their waits are not timed."
)

# The parts of input cost, in the order they are listed and drawn (after compute).
COST_PARTS = ("wait", "contention", "fetch", "epoch-start")
COST_PART_NAMES = {part: part.replace("-", " ") for part in COST_PARTS}
COMPUTE_PART_NAME = "compute"
UNSPLIT_PART_NAME = "input"  # input cost measured, its split not
WAIT_SHARE_SOURCE = "XProf's figure"
CONTENTION_KIND_WORDS = {
    "cores": "the host's cores were all busy",
    "gil": "cores were free, but the pipeline runs Python: it contends for the GIL",
}


def interval_not_measurable(interval: list[float] | None) -> TypeGuard[list[float]]:
    """The interval reaches zero: all that can be said is how large the cost could be."""
    return interval is not None and interval[0] <= 0.0


def input_cost_text(cost: float, interval: list[float] | None = None) -> str:
    """ "44% of training time (90% interval 40-48%)", or "not measurable above noise (...)"."""
    if interval_not_measurable(interval):
        return f"{NOT_MEASURABLE} ({cost_figure(cost, interval)} of training time)"
    shown, text = shown_interval(interval), f"{percent(cost)} of training time"
    return text if shown is None else f"{text} (90% interval {percent_range(*shown)})"


def bar_title(cost: float, interval: list[float] | None) -> str:
    """Short enough for a narrow panel: "Input cost: 44% (40-48%)"."""
    if interval_not_measurable(interval):
        return f"Input cost: not measurable ({cost_figure(cost, interval)})"
    if shown_interval(interval) is None:
        return f"Input cost: {percent(cost)} of training time"
    return f"Input cost: {cost_figure(cost, interval)}"


def speedup_if_input_free(report: Report) -> float | None:
    """1 / (1 - input cost); reports without a cost fall back on T/A."""
    verdict = report.verdict
    if (cost := verdict.input_cost_fraction) is not None and cost < 1.0:
        return 1.0 / (1.0 - cost)
    compute, training = verdict.compute_alone_steps_per_s, training_rate(report)
    return compute / training if compute and training else None


def free_input_text(report: Report) -> str:
    """ "1.8x faster if input were free", "at least 1.8x ..." where the cost is a lower bound
    (`lower_bound_evidence`); "" when unknown or not measurable."""
    free = speedup_if_input_free(report)
    if not free or interval_not_measurable(report.verdict.input_cost_interval):
        return ""
    at_least = "at least " if _held_beyond(report) is not None else ""
    return f"{at_least}{speedup(free)} faster if input were free"


def _held_beyond(report: Report) -> tuple[float, float] | None:
    """None where the cost pooled the held output's reading: it is no lower bound then."""
    alone = report.compute_alone
    if report.verdict.held_output_cost is not None:
        return None
    return held_beyond_step_alone(alone.blocks if alone else [], report.pipeline.stages)


def lower_bound_evidence(report: Report) -> str:
    """Why the cost is at least what it reads, where a hold trained faster than T."""
    if (held := _held_beyond(report)) is None:
        return ""
    rate, fastest = held
    return (
        f"a lower bound: with the whole pipeline held in memory, training ran {rate:.1f} "
        f"steps/s, faster than any step-alone block ({fastest:.1f}): the pipeline's own work "
        "slowed those blocks"
    )


def cost_parts(split: CostSplit) -> list[tuple[str, float]]:
    shares = (split.wait, split.contention, split.fetch, split.epoch_start)
    return list(zip(COST_PARTS, shares, strict=True))


def shown_cost_parts(split: CostSplit) -> list[tuple[str, float]]:
    """All but an epoch start that costs nothing (most runs have none that counts)."""
    return [(p, share) for p, share in cost_parts(split) if p != "epoch-start" or share > 0.0]


def cost_split_text(split: CostSplit) -> str:
    return ", ".join(f"{COST_PART_NAMES[p]} {percent(s)}" for p, s in shown_cost_parts(split))


def contention_evidence(split: CostSplit) -> str:
    busy, free = split.pipeline_cores_busy, split.free_cores
    if busy is None:
        text = "" if free is None else f"{free:.1f} cores free while training"
    else:
        text = f"the pipeline kept {busy:.1f} more cores busy while training"
        text = text if free is None else f"{text}; {free:.1f} cores free"
    kind = CONTENTION_KIND_WORDS.get(split.contention_kind)
    return f"{text}: {kind}" if text and kind else text


def fetch_evidence(split: CostSplit) -> str:
    return (
        "" if split.pull_s is None else f"next() took {ms(split.pull_s)} per step on a ready batch"
    )


def epoch_start_evidence(split: CostSplit) -> str:
    if split.epoch_start_s is None or split.epoch_steps is None:
        return ""
    likely = f", likely {split.epoch_start_stage}" if split.epoch_start_stage else ""
    start = f"a {split.epoch_start_s:.2f} s start-up before each epoch{likely}"
    return f"{start}: {of_an_epoch(split.epoch_start, split.epoch_steps)}"


def of_an_epoch(share: float, steps: int) -> str:
    return f"{percent(share)} of an epoch of {steps:,} steps"


@dataclass(frozen=True)
class CostPart:
    part: str  # "compute", a COST_* part, or "input" when the cost was not split
    share: float  # of training time

    @property
    def text(self) -> str:
        return f"{self.part} {percent(self.share)}"


@dataclass(frozen=True)
class CostBar:
    parts: list[CostPart]
    title: str
    caption: str


def cost_bar(report: Report) -> CostBar:
    """Compute, then the cost's parts; before input cost, the mean step's wait and the rest."""
    verdict = report.verdict
    if (cost := verdict.input_cost_fraction) is not None:
        parts = [CostPart(COMPUTE_PART_NAME, max(0.0, 1.0 - cost))]
        if (split := verdict.cost_split) is None:
            parts.append(CostPart(UNSPLIT_PART_NAME, cost))
        else:
            parts += [CostPart(COST_PART_NAMES[p], share) for p, share in shown_cost_parts(split)]
        return CostBar(parts, bar_title(cost, verdict.input_cost_interval), free_input_text(report))
    measured = [s for s in report.train.steps if s.label != "warmup" and s.input_wait_s is not None]
    if (total_s := sum(s.duration_s for s in measured)) <= 0:
        return CostBar([], "Input cost", "")
    wait_s, count = min(total_s, sum(s.input_wait_s or 0.0 for s in measured)), len(measured)
    caption = (
        f"wait {1e3 * wait_s / count:.1f} + compute {1e3 * (total_s - wait_s) / count:.1f}"
        f" = {1e3 * total_s / count:.1f} ms"
    )
    parts = [
        CostPart(COMPUTE_PART_NAME, 1.0 - wait_s / total_s),
        CostPart(COST_PART_NAMES["wait"], wait_s / total_s),
    ]
    return CostBar(parts, "Mean step time", caption)


def input_cost_figure(verdict: Verdict) -> str:
    return cost_figure(verdict.input_cost_fraction or 0.0, verdict.input_cost_interval)


def cost_figure(cost: float, interval: list[float] | None) -> str:
    """ "44%", "44% (40-48%)", or "at most 3%" where not measurable."""
    if interval_not_measurable(interval):
        return f"at most {percent(interval[1])}"
    shown = shown_interval(interval)
    return percent(cost) if shown is None else f"{percent(cost)} ({percent_range(*shown)})"
