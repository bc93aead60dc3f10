"""The rates in words: DS-Analyzer's P (pipeline alone), T (compute alone) and A (training),
where T came from, and the one spelling of an estimate ("estimated", "~")."""

from __future__ import annotations

from dataclasses import dataclass

from pipediag.analysis.compare import training_rate
from pipediag.renderers.numbers import rate_text
from pipediag.renderers.reason_words import reason_words
from pipediag.report.model import Report

MEASURED_WORDS = "measured on a cached batch"
# Where the cost pooled the trial of training on the pipeline's output held in memory.
HELD_OUTPUT_WORDS = "training on the output held in memory"
# What reports written before ComputeAlone existed did (`Verdict.compute_alone_source` "").
OLD_ESTIMATE_REASON = "median step time minus input wait"
ESTIMATED_WORD = "estimated"
ESTIMATE_MARK = "~"  # before a number that is an estimate
# The three rates as every page names them (the comparison's rows too): letter, name, unit.
PIPELINE_ALONE_WORDS = ("P", "pipeline alone", "batches/s")
COMPUTE_ALONE_WORDS = ("T", "compute alone", "steps/s")
TRAINING_WORDS = ("A", "training", "steps/s")


@dataclass(frozen=True)
class Rate:
    """One of DS-Analyzer's three rates: P (pipeline alone), T (compute alone), A (training)."""

    letter: str
    name: str
    unit: str
    value: float | None
    estimated: bool = False
    origin: str = ""  # where the figure comes from, when that needs saying

    @property
    def number(self) -> str:
        mark = ESTIMATE_MARK if self.estimated and self.value is not None else ""
        return mark + rate_text(self.value)

    @property
    def title(self) -> str:
        return f"{self.letter} {self.name}"

    @property
    def shown_unit(self) -> str:
        return ESTIMATED_WORD if self.estimated else self.unit


def rates(report: Report) -> list[Rate]:
    verdict = report.verdict
    compute = verdict.compute_alone_steps_per_s
    estimated = compute is not None and verdict.compute_alone_source != "measured"
    origin = "" if compute is None else compute_alone_origin(report)
    return [
        Rate(*PIPELINE_ALONE_WORDS, report.pipeline.batches_per_s),
        Rate(*COMPUTE_ALONE_WORDS, compute, estimated=estimated, origin=origin),
        Rate(*TRAINING_WORDS, training_rate(report)),
    ]


def compute_alone_origin(report: Report) -> str:
    verdict = report.verdict
    if verdict.compute_alone_source == "measured":
        if (alone := report.compute_alone) is not None and alone.blocks:
            rounds = sum(b.kind == "step-alone" for b in alone.blocks)
            held = verdict.held_output_cost
            return (
                f"{MEASURED_WORDS}, in turn with training: {rounds} rounds of "
                f"{alone.block_steps} steps"
            ) + ("" if held is None else f"; pooled with {HELD_OUTPUT_WORDS}, {held:.0%}")
        steps = f", {alone.steps} steps" if alone is not None and alone.steps else ""
        return MEASURED_WORDS + steps
    reason = OLD_ESTIMATE_REASON
    if verdict.compute_alone_source == "estimated" and verdict.compute_alone_reason:
        reason = reason_words(verdict.compute_alone_reason)
    return f"{ESTIMATED_WORD}: {reason}"
