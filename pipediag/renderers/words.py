"""The words the text summary and the PNG share, so both say the same thing the same way.

Issue 12 (item 5): the summary said "NO VERDICT" where the image said "NO CLEAR VERDICT", and
a stage was named by three different functions. Every label, part name and phrase that both
renderers print is made here, once. Pure string work over the report model: no matplotlib.
"""

from __future__ import annotations

from pipediag.report.model import (
    BALANCED,
    COMPUTE_BOUND,
    COST_CONTENTION,
    COST_FETCH,
    COST_WAIT,
    ESTIMATED,
    INPUT_BOUND,
    MEASURED,
    CostSplit,
    PhaseVerdict,
    Verdict,
)
from pipediag.report.names import stage_name as stage_name  # the one naming, re-exported

NO_VERDICT = "NO VERDICT"
VERDICT_TITLES = {
    INPUT_BOUND: "INPUT-BOUND",
    COMPUTE_BOUND: "COMPUTE-BOUND",
    BALANCED: "BALANCED",
}

# The parts of input cost, in the order they are listed and drawn (after compute).
COST_PARTS = (COST_WAIT, COST_CONTENTION, COST_FETCH)
COST_PART_NAMES = {COST_WAIT: "wait", COST_CONTENTION: "contention", COST_FETCH: "fetch"}
COST_PART_MEANINGS = {
    COST_WAIT: "batch not ready",
    COST_CONTENTION: "pipeline took the step's cores",
    COST_FETCH: "next() on a ready batch",
}
COMPUTE_PART_NAME = "compute"
UNSPLIT_PART_NAME = "input"  # input cost measured, its split not

# Where the compute-alone rate T comes from.
MEASURED_WORDS = "measured on a cached batch"
# What reports written before ComputeAlone existed did (`Verdict.compute_alone_source` "").
OLD_ESTIMATE_REASON = "median step time minus input wait"
ESTIMATED_WORD = "estimated"

NOT_MEASURED = "not measured"
WAIT_SHARE_SOURCE = "XProf's figure"


def verdict_title(label: str) -> str:
    """ "INPUT-BOUND", "COMPUTE-BOUND", "BALANCED", or NO_VERDICT for anything else."""
    return VERDICT_TITLES.get(label, NO_VERDICT)


def headline_parts(headline: str) -> tuple[str, str]:
    """The analysis's headline cut where its claim ends and its explanation begins.

    The analysis writes "INPUT-BOUND: input costs 44% of training time, mostly CPU
    contention: the pipeline's threads take cores the train step needs (...)", often over
    150 characters: the PNG draws the claim big and the explanation under it. The cut is the
    first ": " after the label's, outside parentheses (else "; "); no cut, no explanation.
    """
    label_end = headline.find(": ")
    start = label_end + 2 if label_end >= 0 else 0
    for separator in (": ", "; "):
        depth = 0
        for i in range(start, len(headline) - len(separator) + 1):
            char = headline[i]
            depth += (char == "(") - (char == ")")
            if depth == 0 and headline.startswith(separator, i):
                return headline[:i], headline[i + len(separator) :]
    return headline, ""


def percent(fraction: float) -> str:
    """A share as a whole percentage: 0.437 -> "44%"."""
    return f"{fraction:.0%}"


def speedup(value: float) -> str:
    """A ratio of rates: 1.78 -> "1.8x"."""
    return f"{value:.1f}x"


def training_rate(verdict: Verdict, fallback: float | None) -> float | None:
    """A, the training rate the verdict used; `fallback` (the train section's) in old reports."""
    return verdict.training_steps_per_s if verdict.training_steps_per_s is not None else fallback


def speedup_if_input_free(verdict: Verdict, training: float | None) -> float | None:
    """How much faster training would run if input cost nothing: 1 / (1 - input cost).

    That is T/A where the whole gap is input cost; where part of the gap could not be
    explained by input (`CostSplit.unexplained`, a busy host's noise), it is left out. Old
    reports without a cost fall back on T/A.
    """
    cost = verdict.input_cost_fraction
    if cost is not None and cost < 1.0:
        return 1.0 / (1.0 - cost)
    compute = verdict.compute_alone_steps_per_s
    if compute and training:
        return compute / training
    return None


def compute_alone_estimated(verdict: Verdict) -> bool:
    """True when T is a guess (step time minus input wait), not the step run alone."""
    return verdict.compute_alone_source != MEASURED


def compute_alone_origin(verdict: Verdict) -> str:
    """Where T comes from: "measured on a cached batch" or "estimated: <why>"."""
    if verdict.compute_alone_source == MEASURED:
        return MEASURED_WORDS
    if verdict.compute_alone_source == ESTIMATED:
        reason = verdict.compute_alone_reason or OLD_ESTIMATE_REASON
    else:
        reason = OLD_ESTIMATE_REASON
    return f"{ESTIMATED_WORD}: {reason}"


def cost_parts(split: CostSplit) -> list[tuple[str, float]]:
    """The parts of input cost as (part, share of training time), in drawing order."""
    shares = {COST_WAIT: split.wait, COST_CONTENTION: split.contention, COST_FETCH: split.fetch}
    return [(part, shares[part]) for part in COST_PARTS]


def cost_split_text(split: CostSplit) -> str:
    """ "wait 4%, contention 40%, fetch 0%"."""
    return ", ".join(
        f"{COST_PART_NAMES[part]} {percent(share)}" for part, share in cost_parts(split)
    )


def contention_evidence(split: CostSplit) -> str:
    """ "the pipeline kept 1.1 more cores busy while training; 0.1 cores free", or ""."""
    busy, free = split.pipeline_cores_busy, split.free_cores
    if busy is None:
        return "" if free is None else f"{free:.1f} cores free while training"
    text = f"the pipeline kept {busy:.1f} more cores busy while training"
    return text if free is None else f"{text}; {free:.1f} cores free"


def fetch_evidence(split: CostSplit) -> str:
    """ "next() took 0.4 ms per step on a ready batch", or ""."""
    if split.pull_s is None:
        return ""
    return f"next() took {split.pull_s * 1e3:.1f} ms per step on a ready batch"


def phase_text(phase: PhaseVerdict, *, first: bool = True) -> str:
    """ "epoch 1: input-bound, input costs 66%"; later phases of a list say just "3%"."""
    share = ""
    if phase.input_cost_fraction is not None:
        share = percent(phase.input_cost_fraction)
        if first:
            share = f"input costs {share}"
    elif phase.input_wait_fraction is not None:
        share = f"input wait {percent(phase.input_wait_fraction)}"
    label = phase.label if phase.label in VERDICT_TITLES else "no verdict"
    return f"{phase.name}: {label}" + (f", {share}" if share else "")


def deep_skipped_text(reason: str) -> str:
    """Why stage timing and fix trials did not run, as one line."""
    return f"{NOT_MEASURED}: {reason}"
