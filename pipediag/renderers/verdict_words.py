"""The verdict in words: the headline, a one-line verdict, a phase's verdict; worded from the
verdict's figures only (docs/design.md, "Too noisy to tell")."""

from __future__ import annotations

from dataclasses import dataclass

from pipediag.analysis.classifier import pipeline_reading_disturbed
from pipediag.analysis.input_cost import SATURATED_FREE_CORES, interval_labels, unspread_epoch_start
from pipediag.renderers.cost_words import (
    NOT_MEASURABLE,
    WAITS_NOT_TIMED,
    epoch_start_evidence,
    input_cost_figure,
    interval_not_measurable,
)
from pipediag.renderers.no_verdict_words import no_verdict_text
from pipediag.renderers.numbers import percent, percent_range, rate_text, shown_interval, speedup
from pipediag.renderers.rate_words import HELD_OUTPUT_WORDS
from pipediag.report.model import CostSplit, PhaseVerdict, Report, TrainSection, Verdict

NO_VERDICT = "NO VERDICT"
VERDICT_TITLES = {
    label: label.upper() for label in ("input-bound", "compute-bound", "balanced", "uncertain")
}
ESTIMATED_NOTE = " (compute alone estimated: contention not measured)"
# A labelled verdict from before input cost, without a wait share either.
PLAIN_VERDICTS = {
    "input-bound": "training waits for its input pipeline",
    "compute-bound": "the model, not the input, sets the pace",
    "balanced": "input pipeline and model both limit training",
}


def verdict_title(label: str) -> str:
    return VERDICT_TITLES.get(label, NO_VERDICT)


@dataclass(frozen=True)
class Headline:
    """`text` is `claim`, ": " or "; ", then `explanation`; `details` are sentences under it."""

    text: str
    claim: str
    explanation: str
    details: list[str]


def headline(report: Report) -> Headline:
    verdict = report.verdict
    if (worded := cost_headline(verdict, report.pipeline.batches_per_s)) is not None:
        return worded
    claim = verdict_title(verdict.label)
    explanation = _without_cost_words(verdict, report.train, report.pipeline.batches_per_s)
    details = [f"Severity: {verdict.severity}"] if verdict.label in VERDICT_TITLES else []
    return Headline(f"{claim}: {explanation}", claim, explanation, details)


def verdict_line(
    verdict: Verdict, pipeline_batches_per_s: float | None, train: TrainSection
) -> str:
    """The headline where input cost was measured, else why there is no verdict."""
    worded = cost_headline(verdict, pipeline_batches_per_s)
    return worded.text if worded else _without_cost_words(verdict, train, pipeline_batches_per_s)


def _without_cost_words(
    verdict: Verdict, train: TrainSection, pipeline_batches_per_s: float | None
) -> str:
    """Why there is no verdict; before input cost, the wait share or the label in words."""
    fraction = verdict.input_wait_fraction
    if verdict.no_verdict_because or fraction is None:
        return PLAIN_VERDICTS.get(verdict.label) or no_verdict_text(
            verdict.no_verdict_because, train, pipeline_batches_per_s
        )
    share = f"{percent(fraction)} of step time spent waiting for input"
    return f"only {share}" if verdict.label == "compute-bound" else share


def cost_headline(verdict: Verdict, pipeline_batches_per_s: float | None) -> Headline | None:
    """Claim, why and dominant phase; None for a verdict without input cost."""
    cost, split = verdict.input_cost_fraction, verdict.cost_split
    if cost is None or split is None or verdict.label not in VERDICT_TITLES:
        return None
    if verdict.label == "uncertain":
        return _uncertain_headline(verdict, split, pipeline_batches_per_s)
    part, explanation = _dominant_words(verdict, split, pipeline_batches_per_s)
    claim = f"{cost_title(verdict)}: {cost_claim(verdict)}{part}"
    if verdict.busy_host_cores is not None and verdict.label != "compute-bound":
        busy = _busy_words(verdict.busy_host_cores)
        explanation = f"{explanation}; {busy}" if explanation else busy
    if verdict.compute_alone_source == "estimated":
        if explanation:
            explanation += ESTIMATED_NOTE
        else:
            claim += ESTIMATED_NOTE
    phases = _dominant_phase_text(verdict.phases)
    separator = ": " if explanation or not phases else "; "
    explanation = "; ".join(text for text in (explanation, phases) if text)
    text = claim + (separator + explanation if explanation else "")
    return Headline(text, claim, explanation, _cost_details(verdict, pipeline_batches_per_s))


def _cost_details(verdict: Verdict, pipeline_batches_per_s: float | None) -> list[str]:
    """What the headline does not say itself (the cost's parts and the rates have rows)."""
    if interval_not_measurable(verdict.input_cost_interval):
        details = [
            "Training ran as fast as the train step alone within the 90% interval of "
            f"{_pairs_text(verdict)}."
        ]
    else:
        details = [_rates_detail(verdict, pipeline_batches_per_s), _unspread_detail(verdict)]
    return [d for d in (_untimed_detail(verdict), *details) if d]


def _untimed_detail(verdict: Verdict) -> str:
    split = verdict.cost_split
    return WAITS_NOT_TIMED if split is not None and not split.waits_timed else ""


def _rates_detail(verdict: Verdict, pipeline_batches_per_s: float | None) -> str:
    """The pipeline's headroom where compute-bound, else a pipeline-alone reading too slow."""
    pipeline, training = pipeline_batches_per_s, verdict.training_steps_per_s
    if verdict.label == "compute-bound":
        if (headroom := verdict.pipeline_headroom) is None or pipeline is None:
            return ""
        return f"The pipeline alone delivers {speedup(headroom)} what the train step needs."
    if training is None or pipeline is None or not pipeline_reading_disturbed(training, pipeline):
        return ""
    return (
        f"Training outran the pipeline read alone ({rate_text(training)} against "
        f"{rate_text(pipeline)}): that reading was disturbed; read its stage figures with care."
    )


def _unspread_detail(verdict: Verdict) -> str:
    """An epoch start that matters, left out of the cost (its epoch's length unknown)."""
    split = verdict.cost_split
    start = unspread_epoch_start(split, verdict.training_steps_per_s) if split else None
    if start is None:
        return ""
    return (
        f"Each epoch after the first started {start:.2f} s late; the epoch's length is "
        "unknown, so that start-up is not in the cost above."
    )


def _pairs_text(verdict: Verdict) -> str:
    pairs = verdict.alternation_pairs
    text = f"{pairs} alternating pairs" if pairs is not None else "the alternating pairs"
    return text + (f" and {HELD_OUTPUT_WORDS}" if verdict.held_output_cost is not None else "")


def _busy_words(cores: float) -> str:
    return f"the host was busy (other processes kept {cores:.1f} cores busy)"


def _uncertain_headline(
    verdict: Verdict, split: CostSplit, pipeline_batches_per_s: float | None
) -> Headline:
    """Too short, too noisy, or the host was busy: then the cost and what to do."""
    part, _ = _dominant_words(verdict, split, pipeline_batches_per_s)
    cost = verdict.input_cost_fraction or 0.0
    low, high = verdict.input_cost_interval or [cost, cost]
    # On a busy host the low end may reach zero (the others' share): the cost is still said.
    claim_cost = f"{_costs(cost)} ({percent_range(low, high)})"
    if verdict.uncertain_because == "too-short":
        claim = f"{verdict_title('uncertain')}: too short to tell"
        explanation = (
            f"input read {percent(cost)} of training time{part}, from training and the train "
            "step alone timed once each; train for more steps to measure them in turn"
        )
        noisy = (
            "The run left too few steps after the measured ones to alternate training with "
            "the step alone, and two readings seconds apart differ by more than the bands "
            "on a shared host."
        )
    elif verdict.uncertain_because == "too-noisy":
        claim = f"{verdict_title('uncertain')}: too noisy to tell"
        steps = f" --steps {verdict.steps_to_tell}" if verdict.steps_to_tell else ""
        explanation = f"{claim_cost}{part}; measure more:{steps}" if steps else claim_cost + part
        noisy = (
            f"Its 90% interval, over {_pairs_text(verdict)}, reaches across "
            "a band's edge; the alternation runs longer with more steps."
        )
    else:
        claim = f"{verdict_title('uncertain')}: {_busy_words(verdict.busy_host_cores or 0.0)}"
        explanation, noisy = f"{claim_cost}{part}, perhaps theirs; run again on a quiet host", ""
    details = [d for d in (_untimed_detail(verdict), noisy) if d]
    return Headline(f"{claim}: {explanation}", claim, explanation, details)


def cost_title(verdict: Verdict) -> str:
    """ "INPUT-BOUND", or "BALANCED TO INPUT-BOUND" for an interval across a band's edge."""
    if (interval := verdict.input_cost_interval) is not None:
        low, high = interval_labels(interval)
        if low != high:
            return f"{verdict_title(low)} TO {verdict_title(high)}"
    return verdict_title(verdict.label)


def cost_claim(verdict: Verdict) -> str:
    if interval_not_measurable(verdict.input_cost_interval):
        return f"input cost {NOT_MEASURABLE} ({input_cost_figure(verdict)})"
    shown = shown_interval(verdict.input_cost_interval)
    text = _costs(verdict.input_cost_fraction or 0.0)
    return text + (f" ({percent_range(*shown)})" if shown is not None else "")


def _costs(cost: float) -> str:
    return f"input costs {percent(cost)} of training time"


def _cores_were_free(split: CostSplit) -> bool:
    """Contention for neither cores nor GIL (caches, switching), or from before the kinds."""
    free = split.free_cores
    return split.contention_kind == "" and free is not None and free >= SATURATED_FREE_CORES


def _dominant_words(
    verdict: Verdict, split: CostSplit, pipeline_batches_per_s: float | None
) -> tuple[str, str]:
    """(what the claim adds, the explanation): the part that dominates, and why."""
    waited = f"(it waited only {percent(verdict.input_wait_fraction or 0.0)} of the time)"
    if verdict.label == "compute-bound":
        return "", "the model's train step sets the rate"
    if split.dominant == "contention" and split.contention_kind == "gil":
        return ", mostly contention for Python's GIL", (
            "the pipeline's Python code holds the interpreter lock the train step needs, "
            f"though cores are free {waited}"
        )
    if split.dominant == "contention" and _cores_were_free(split):
        return ", mostly contention", (
            "the train step runs slower beside the pipeline's threads though "
            f"{split.free_cores:.1f} cores were free {waited}"
        )
    if split.dominant == "contention":
        return ", mostly CPU contention", (
            f"the pipeline's threads take cores the train step needs {waited}"
        )
    if split.dominant == "fetch":
        training = verdict.training_steps_per_s
        faster = pipeline_batches_per_s / training if pipeline_batches_per_s and training else None
        how = f"{faster:.0f}x faster than training" if faster else "far faster than training"
        return ", mostly the per-pull overhead of next()", (
            f"the pipeline is {how}, but each step pulls one small batch"
        )
    if split.dominant == "wait":
        return ", mostly waiting", "the train step waits for batches the pipeline has not made"
    if split.dominant == "epoch-start":
        return ", mostly epoch starts", epoch_start_evidence(split)
    return "", ""


def _dominant_phase_text(phases: list[PhaseVerdict]) -> str:
    """The phase that holds most of the input cost, and the last one if not it."""
    if not phases:
        return ""
    heavy = max(phases, key=lambda p: (p.input_cost_fraction or 0.0) * p.steps)
    last, text = phases[-1], f"{phase_name(heavy)} dominates the measured steps"
    if last is not heavy and last.input_cost_fraction is not None:
        text += (
            f"; after it ({phase_name(last)}) {verdict_title(last.label).lower()}, "
            f"input costs {percent(last.input_cost_fraction)}"
        )
    return text


def sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def phase_name(phase: PhaseVerdict) -> str:
    """ "epoch 1", "epochs 2-3": counted from 1, as a user counts them (the report from 0)."""
    first, last = phase.first_epoch + 1, phase.last_epoch + 1
    return f"epoch {first}" if first == last else f"epochs {first}-{last}"


def phase_text(phase: PhaseVerdict, *, first: bool = True) -> str:
    """ "epoch 1: input-bound, input costs 66%"; later phases of a list say just "3%"."""
    share = ""
    if phase.input_cost_fraction is not None:
        share = percent(phase.input_cost_fraction)
        if first:
            share = f"input costs {share}"
    elif phase.input_wait_fraction is not None:
        share = f"input wait {percent(phase.input_wait_fraction)}"
    label = verdict_title(phase.label).lower()
    return f"{phase_name(phase)}: {label}" + (f", {share}" if share else "")
