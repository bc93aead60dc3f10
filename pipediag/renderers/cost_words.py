"""Input cost in words: its share of training time and 90% interval (or that it is not
measurable above noise), its parts (wait, contention, fetch, epoch start) and the evidence
for each, the speedup if input were free, the cost bar the PNG draws and the cost as a key
figure."""

from __future__ import annotations

from dataclasses import dataclass

from pipediag.analysis.compare import training_rate
from pipediag.renderers.numbers import ms, percent, percent_range, shown_interval, speedup
from pipediag.report.model import (
    COST_CONTENTION,
    COST_FETCH,
    COST_WAIT,
    WARMUP,
    CostSplit,
    Report,
    Verdict,
)
from pipediag.report.vocabulary import CONTENDS_FOR_CORES, CONTENDS_FOR_GIL, COST_EPOCH_START

# A cost whose interval reaches zero: training ran as fast as the step alone, within noise.
NOT_MEASURABLE = "not measurable above noise"
# A cost whose waits were not timed (`CostSplit.waits_timed` False): its wait part holds
# waiting and contention together.
WAITS_NOT_TIMED = (
    "Waiting and contention are not told apart: the pulls run inside a tf.function, where "
    "their waits are not timed."
)

# The parts of input cost, in the order they are listed and drawn (after compute).
COST_PARTS = (COST_WAIT, COST_CONTENTION, COST_FETCH, COST_EPOCH_START)
COST_PART_NAMES = {
    COST_WAIT: "wait",
    COST_CONTENTION: "contention",
    COST_FETCH: "fetch",
    COST_EPOCH_START: "epoch start",
}
COMPUTE_PART_NAME = "compute"
UNSPLIT_PART_NAME = "input"  # input cost measured, its split not
WAIT_SHARE_SOURCE = "XProf's figure"
# What the pipeline contends for, said after the cores figures.
CONTENTION_KIND_WORDS = {
    CONTENDS_FOR_CORES: "the host's cores were all busy",
    CONTENDS_FOR_GIL: "cores were free, but the pipeline runs Python: it contends for the GIL",
}


def cost_not_measurable(verdict: Verdict) -> bool:
    """Training ran as fast as the step alone within the interval: the cost is 0, and all
    that can be said is how large it could be."""
    interval = verdict.input_cost_interval
    return interval is not None and interval[0] <= 0.0


def input_cost_text(cost: float, interval: list[float] | None = None) -> str:
    """ "44% of training time", "44% of training time (90% interval 40-48%)", or for an
    interval that reaches zero "not measurable above noise (at most 3% of training time)"."""
    if interval is None:
        return f"{percent(cost)} of training time"
    if interval[0] <= 0.0:
        return f"{NOT_MEASURABLE} (at most {percent(interval[1])} of training time)"
    shown = shown_interval(interval)
    if shown is None:
        return f"{percent(cost)} of training time"
    return f"{percent(cost)} of training time (90% interval {percent_range(*shown)})"


def bar_title(cost: float, interval: list[float] | None) -> str:
    """The cost bar's title, short enough for a narrow panel: "Input cost: 44% (40-48%)",
    or "Input cost: not measurable (at most 3%)"."""
    if interval is not None and interval[0] <= 0.0:
        return f"Input cost: not measurable (at most {percent(interval[1])})"
    if shown_interval(interval) is None:
        return f"Input cost: {percent(cost)} of training time"
    return f"Input cost: {cost_figure(cost, interval)}"


def speedup_if_input_free(verdict: Verdict, training: float | None) -> float | None:
    """How much faster training would run if input cost nothing: 1 / (1 - input cost).

    That is T/A where A and T were measured in one piece; in alternation, the pairs' cost
    and the epoch starts decide it. Old reports without a cost fall back on T/A.
    """
    cost = verdict.input_cost_fraction
    if cost is not None and cost < 1.0:
        return 1.0 / (1.0 - cost)
    compute = verdict.compute_alone_steps_per_s
    if compute and training:
        return compute / training
    return None


def free_input_text(report: Report) -> str:
    """ "1.8x faster if input were free", or "" when it cannot be told (or the cost is not
    measurable: then there is nothing to gain that the run could see)."""
    verdict = report.verdict
    if cost_not_measurable(verdict):
        return ""
    free = speedup_if_input_free(verdict, training_rate(report))
    return f"{speedup(free)} faster if input were free" if free else ""


def cost_parts(split: CostSplit) -> list[tuple[str, float]]:
    """The parts of input cost as (part, share of training time), in drawing order."""
    shares = {
        COST_WAIT: split.wait,
        COST_CONTENTION: split.contention,
        COST_FETCH: split.fetch,
        COST_EPOCH_START: split.epoch_start,
    }
    return [(part, shares[part]) for part in COST_PARTS]


def shown_cost_parts(split: CostSplit) -> list[tuple[str, float]]:
    """The parts a report lists: all but an epoch start that costs nothing (most runs have
    none that counts: one epoch, or epochs of unknown length)."""
    return [
        (part, share)
        for part, share in cost_parts(split)
        if part != COST_EPOCH_START or share > 0.0
    ]


def cost_split_text(split: CostSplit) -> str:
    """ "wait 4%, contention 40%, fetch 0%", and ", epoch start 12%" where it counts."""
    return ", ".join(
        f"{COST_PART_NAMES[part]} {percent(share)}" for part, share in shown_cost_parts(split)
    )


def contention_evidence(split: CostSplit) -> str:
    """ "the pipeline kept 1.1 more cores busy while training; 0.1 cores free: the host's
    cores were all busy", or ""."""
    busy, free = split.pipeline_cores_busy, split.free_cores
    if busy is None:
        text = "" if free is None else f"{free:.1f} cores free while training"
    else:
        text = f"the pipeline kept {busy:.1f} more cores busy while training"
        text = text if free is None else f"{text}; {free:.1f} cores free"
    kind = CONTENTION_KIND_WORDS.get(split.contention_kind)
    return f"{text}: {kind}" if text and kind else text


def fetch_evidence(split: CostSplit) -> str:
    """ "next() took 0.4 ms per step on a ready batch", or ""."""
    if split.pull_s is None:
        return ""
    return f"next() took {ms(split.pull_s)} per step on a ready batch"


def epoch_start_evidence(split: CostSplit) -> str:
    """ "a 1.80 s start-up before each epoch, likely shuffle(10000): 12% of an epoch of 140
    steps", or "" where no epoch start counts."""
    if split.epoch_start_s is None or split.epoch_steps is None:
        return ""
    likely = f", likely {split.epoch_start_stage}" if split.epoch_start_stage else ""
    return (
        f"a {split.epoch_start_s:.2f} s start-up before each epoch{likely}: "
        f"{percent(split.epoch_start)} of an epoch of {split.epoch_steps:,} steps"
    )


@dataclass(frozen=True)
class CostPart:
    """One part of a training step's time: compute, or a part of input cost."""

    part: str  # "compute", a COST_* part, or "input" when the cost was not split
    share: float  # of training time

    @property
    def text(self) -> str:
        """ "wait 4%"."""
        return f"{self.part} {percent(self.share)}"


@dataclass(frozen=True)
class CostBar:
    """A training step's time split by cause: its parts left to right, a title, a caption."""

    parts: list[CostPart]
    title: str
    caption: str


def cost_bar(report: Report) -> CostBar:
    """Compute first (1 - input cost), then wait, contention, fetch and epoch start (where
    it counts), as shares of training time. Without a split, the input cost is one part;
    reports that predate input cost split the mean measured step into its input wait and
    the rest."""
    verdict = report.verdict
    cost = verdict.input_cost_fraction
    if cost is not None:
        parts = [CostPart(COMPUTE_PART_NAME, max(0.0, 1.0 - cost))]
        split = verdict.cost_split
        if split is None:
            parts.append(CostPart(UNSPLIT_PART_NAME, cost))
        else:
            parts += [
                CostPart(COST_PART_NAMES[part], share) for part, share in shown_cost_parts(split)
            ]
        return CostBar(parts, bar_title(cost, verdict.input_cost_interval), free_input_text(report))
    measured = [s for s in report.train.steps if s.label != WARMUP and s.input_wait_s is not None]
    total_s = sum(s.duration_s for s in measured)
    if total_s <= 0:
        return CostBar([], "Input cost", "")
    wait_s = min(total_s, sum(s.input_wait_s or 0.0 for s in measured))
    count = len(measured)
    caption = (
        f"wait {1e3 * wait_s / count:.1f} + compute {1e3 * (total_s - wait_s) / count:.1f}"
        f" = {1e3 * total_s / count:.1f} ms"
    )
    parts = [
        CostPart(COMPUTE_PART_NAME, 1.0 - wait_s / total_s),
        CostPart(COST_PART_NAMES[COST_WAIT], wait_s / total_s),
    ]
    return CostBar(parts, "Mean step time", caption)


def input_cost_figure(verdict: Verdict) -> str:
    """ "44%", "44% (40-48%)" with its interval, "at most 3%" where not measurable."""
    return cost_figure(verdict.input_cost_fraction or 0.0, verdict.input_cost_interval)


def cost_figure(cost: float, interval: list[float] | None) -> str:
    """A cost as a figure: "44%", "44% (40-48%)", or "at most 3%" where not measurable."""
    if interval is not None and interval[0] <= 0.0:
        return f"at most {percent(interval[1])}"
    shown = shown_interval(interval)
    return percent(cost) if shown is None else f"{percent(cost)} ({percent_range(*shown)})"
