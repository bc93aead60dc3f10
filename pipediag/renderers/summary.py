"""The summary layer: a report turned into the words and numbers every renderer shows.

Each word and figure that more than one renderer shows is made here once, so the text
summary and the PNG cannot word the same fact two ways (a verdict, a stage's name, a fix's
gain, the command line): the headline, the verdict labels, the rates P/T/A, input cost and its
parts, the phases, the gains and suggestion lines, the run's status and command line. The text
summary, the PNG and any later renderer lay these out; they do not word them again.

Pure work over the report model: no matplotlib, no TensorFlow, nothing measured.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipediag.analysis.classifier import DEFAULT_THRESHOLDS
from pipediag.analysis.input_cost import SATURATED_FREE_CORES, interval_labels

# Words for numbers and for the run live in their own modules; re-exported for renderers.
from pipediag.renderers.numbers import DASH as DASH
from pipediag.renderers.numbers import NOT_MEASURED as NOT_MEASURED
from pipediag.renderers.numbers import RATE_DECIMALS_BELOW as RATE_DECIMALS_BELOW
from pipediag.renderers.numbers import gain as gain
from pipediag.renderers.numbers import ms as ms
from pipediag.renderers.numbers import percent as percent
from pipediag.renderers.numbers import percent_range as percent_range
from pipediag.renderers.numbers import rate_text as rate_text
from pipediag.renderers.numbers import speedup as speedup
from pipediag.renderers.run_words import EPOCH_START_SHOWN_S as EPOCH_START_SHOWN_S
from pipediag.renderers.run_words import HOST_TIMING_ONLY as HOST_TIMING_ONLY
from pipediag.renderers.run_words import INPUT_WAIT_SOURCES as INPUT_WAIT_SOURCES
from pipediag.renderers.run_words import INPUT_WAIT_UNMEASURED as INPUT_WAIT_UNMEASURED
from pipediag.renderers.run_words import NO_GPU as NO_GPU
from pipediag.renderers.run_words import NO_REASON as NO_REASON
from pipediag.renderers.run_words import NO_SCRIPT as NO_SCRIPT
from pipediag.renderers.run_words import STOP_REASONS as STOP_REASONS
from pipediag.renderers.run_words import command_line as command_line
from pipediag.renderers.run_words import data_pass_text as data_pass_text
from pipediag.renderers.run_words import epoch_start_text as epoch_start_text
from pipediag.renderers.run_words import input_wait_source_text as input_wait_source_text
from pipediag.renderers.run_words import no_gpu_text as no_gpu_text
from pipediag.renderers.run_words import run_status as run_status
from pipediag.renderers.run_words import stop_reason_text as stop_reason_text
from pipediag.report.model import (
    COMPUTE_BOUND,
    COST_CONTENTION,
    COST_FETCH,
    COST_WAIT,
    ESTIMATED,
    MEASURED,
    WARMUP,
    CostSplit,
    PhaseVerdict,
    Report,
    Suggestion,
    Verdict,
)

# The one spelling of verdicts and stages, shared with the analysis; re-exported for renderers.
from pipediag.report.names import NO_VERDICT as NO_VERDICT
from pipediag.report.names import VERDICT_TITLES as VERDICT_TITLES
from pipediag.report.names import stage_name as stage_name
from pipediag.report.names import verdict_title as verdict_title
from pipediag.report.vocabulary import (
    CONTENDS_FOR_CORES,
    CONTENDS_FOR_GIL,
    COST_EPOCH_START,
    STEP_ALONE_BLOCK,
)

# ---------------------------------------------------------------------------- the verdict

# A verdict with no input cost and no summary (nothing measured): its claim in plain words.
NOT_ENOUGH_MEASURED = "not enough was measured to tell"
# The headline's explanation of a verdict by what dominates its input cost.
TRAIN_STEP_SETS_THE_RATE = "the model's train step sets the rate"
WAITING_EXPLAINED = "the train step waits for batches the pipeline has not made"
ESTIMATED_NOTE = " (compute alone estimated: contention not measured)"
# A cost whose interval reaches zero: training ran as fast as the step alone, within noise.
NOT_MEASURABLE = "not measurable above noise"


@dataclass(frozen=True)
class Headline:
    """What a report leads with.

    `text` is the whole headline (the text summary's first line); `claim` and `explanation`
    are its two parts (the PNG draws the claim big and the explanation under it): the text
    is the claim, then ": " or "; ", then the explanation. `details` follow it: the
    analysis's summary, or for a verdict without input cost (whose first line holds the
    summary) the severity.
    """

    text: str
    claim: str
    explanation: str
    details: list[str]


def headline(report: Report) -> Headline:
    """The verdict's label, its input cost and the part that dominates it, worded from the
    verdict's figures; for a verdict without input cost (no verdict, or a report from
    before input cost was measured), the label with the verdict's summary."""
    verdict = report.verdict
    worded = cost_headline(verdict, report.pipeline.batches_per_s)
    if worded is not None:
        return worded
    claim = verdict_title(verdict.label)
    explanation = ""
    separator = ": "
    if verdict.summary:
        claim, separator, explanation = _first_clause(f"{claim}: {verdict.summary}")
    else:
        claim += f": {NOT_ENOUGH_MEASURED}"
    text = claim + (separator + explanation if explanation else "")
    details = [f"Severity: {verdict.severity}"] if verdict.label in VERDICT_TITLES else []
    return Headline(text, claim, explanation, details)


def verdict_line(verdict: Verdict, pipeline_batches_per_s: float | None) -> str:
    """The verdict in one line, as a run's progress and a fleet's table say it: the
    headline where input cost was measured, else the verdict's summary.

    Args:
        verdict: the analysis's verdict.
        pipeline_batches_per_s: the rate P of the pipeline read alone, if measured.
    """
    worded = cost_headline(verdict, pipeline_batches_per_s)
    return worded.text if worded is not None else verdict.summary


def cost_headline(verdict: Verdict, pipeline_batches_per_s: float | None) -> Headline | None:
    """ "INPUT-BOUND: input costs 44% of training time (40-48%), mostly CPU contention" (the
    claim), then why ("the pipeline's threads take cores the train step needs (...)") and
    the phase that dominates; None for a verdict without input cost.

    The title is read from the cost's interval where it has one: an interval across a band
    boundary says both bands ("BALANCED TO INPUT-BOUND"), so that two runs of one script,
    whose points fall either side of 20%, are not called two things. Built from the
    verdict's figures only: its label, input cost and interval, the cost split's dominant
    part and evidence, the wait share, the rates P and A, where T came from, and the phases.
    """
    cost, split = verdict.input_cost_fraction, verdict.cost_split
    if cost is None or split is None or verdict.label not in VERDICT_TITLES:
        return None
    claim = f"{cost_title(verdict)}: {cost_claim(verdict)}"
    part, explanation = _dominant_words(verdict, split, pipeline_batches_per_s)
    claim += part
    separator = ": "
    if verdict.compute_alone_source == ESTIMATED:
        if explanation:
            explanation += ESTIMATED_NOTE
        else:
            claim += ESTIMATED_NOTE
    phases = _dominant_phase_text(verdict.phases)
    if phases and explanation:
        explanation += f"; {phases}"
    elif phases:
        separator, explanation = "; ", phases
    text = claim + (separator + explanation if explanation else "")
    details = [verdict.summary] if verdict.summary and verdict.summary != text else []
    return Headline(text, claim, explanation, details)


def cost_title(verdict: Verdict) -> str:
    """ "INPUT-BOUND", or "BALANCED TO INPUT-BOUND" where the cost's interval straddles the
    boundary of two bands (XProf's 5% and 20%)."""
    interval = verdict.input_cost_interval
    if interval is None:
        return verdict_title(verdict.label)
    low, high = interval_labels(
        interval,
        high=DEFAULT_THRESHOLDS.highly_input_bound,
        moderate=DEFAULT_THRESHOLDS.moderately_input_bound,
    )
    if low == high:
        return verdict_title(verdict.label)
    return f"{verdict_title(low)} TO {verdict_title(high)}"


def cost_not_measurable(verdict: Verdict) -> bool:
    """Training ran as fast as the step alone within the interval: the cost is 0, and all
    that can be said is how large it could be."""
    interval = verdict.input_cost_interval
    return interval is not None and interval[0] <= 0.0


def cost_claim(verdict: Verdict) -> str:
    """ "input costs 44% of training time (40-48%)", or "input cost not measurable above
    noise (at most 3%)"."""
    interval = verdict.input_cost_interval
    if interval is not None and cost_not_measurable(verdict):
        return f"input cost {NOT_MEASURABLE} (at most {percent(interval[1])})"
    text = f"input costs {percent(verdict.input_cost_fraction or 0.0)} of training time"
    return text + (f" ({percent_range(*interval)})" if interval is not None else "")


def _cores_were_free(split: CostSplit) -> bool:
    """Contention that is for neither the cores nor the GIL: the host had cores to spare and
    the pipeline runs no Python (shared caches, memory bandwidth, thread switching), or the
    report predates the kinds. Its free cores then say the threads did not take them."""
    free = split.free_cores
    return split.contention_kind == "" and free is not None and free >= SATURATED_FREE_CORES


def _dominant_words(
    verdict: Verdict, split: CostSplit, pipeline_batches_per_s: float | None
) -> tuple[str, str]:
    """(what the claim adds, the explanation): the part that dominates, and why."""
    wait = percent(verdict.input_wait_fraction or 0.0)
    if verdict.label == COMPUTE_BOUND:
        return "", TRAIN_STEP_SETS_THE_RATE
    if split.dominant == COST_CONTENTION and split.contention_kind == CONTENDS_FOR_GIL:
        return ", mostly contention for Python's GIL", (
            "the pipeline's Python code holds the interpreter lock the train step needs, "
            f"though cores are free (it waited only {wait} of the time)"
        )
    if split.dominant == COST_CONTENTION and _cores_were_free(split):
        return ", mostly contention", (
            "the train step runs slower beside the pipeline's threads though "
            f"{split.free_cores:.1f} cores were free (it waited only {wait} of the time)"
        )
    if split.dominant == COST_CONTENTION:
        return ", mostly CPU contention", (
            f"the pipeline's threads take cores the train step needs (it waited only {wait} "
            "of the time)"
        )
    if split.dominant == COST_FETCH:
        training = verdict.training_steps_per_s
        faster = pipeline_batches_per_s / training if pipeline_batches_per_s and training else None
        how = f"{faster:.0f}x faster than training" if faster else "far faster than training"
        return ", mostly the per-pull overhead of next()", (
            f"the pipeline is {how}, but each step pulls one small batch"
        )
    if split.dominant == COST_WAIT:
        return ", mostly waiting", WAITING_EXPLAINED
    if split.dominant == COST_EPOCH_START:
        return ", mostly epoch starts", epoch_start_evidence(split)
    return "", ""


def _dominant_phase_text(phases: list[PhaseVerdict]) -> str:
    """ "epoch 1 dominates the measured steps; after it (epochs 2-5) compute-bound, input
    costs 3%": the phase that holds most of the input cost, and the last one if not it."""
    if not phases:
        return ""
    heavy = max(phases, key=lambda p: (p.input_cost_fraction or 0.0) * p.steps)
    last = phases[-1]
    text = f"{heavy.name} dominates the measured steps"
    if last is not heavy and last.input_cost_fraction is not None:
        text += (
            f"; after it ({last.name}) {verdict_title(last.label).lower()}, "
            f"input costs {percent(last.input_cost_fraction)}"
        )
    return text


def _first_clause(text: str) -> tuple[str, str, str]:
    """(claim, separator, rest): a verdict's summary led by its label, cut after its first
    clause, the first ": " after the label's outside parentheses (else "; ").

    The analysis says why there is no verdict in a sentence ("No training steps were seen:
    the script did not iterate a tf.data dataset ..."); the PNG draws its first clause big.
    """
    start = text.find(": ") + 2
    for separator in (": ", "; "):
        depth = 0
        for i in range(start, len(text) - len(separator) + 1):
            depth += (text[i] == "(") - (text[i] == ")")
            if depth == 0 and text.startswith(separator, i):
                return text[:i], separator, text[i + len(separator) :]
    return text, "", ""


def sentence(text: str) -> str:
    """The text with its first letter capitalised, to stand on its own."""
    return text[:1].upper() + text[1:]


# ---------------------------------------------------------------------------- rates

# Where the compute-alone rate T comes from.
MEASURED_WORDS = "measured on a cached batch"
# What reports written before ComputeAlone existed did (`Verdict.compute_alone_source` "").
OLD_ESTIMATE_REASON = "median step time minus input wait"
ESTIMATED_WORD = "estimated"
ESTIMATE_MARK = "~"  # before a number that is an estimate


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
        """ "76.6", "~44.6" for an estimate, or a dash."""
        mark = ESTIMATE_MARK if self.estimated and self.value is not None else ""
        return mark + rate_text(self.value)

    @property
    def title(self) -> str:
        """ "P pipeline alone"."""
        return f"{self.letter} {self.name}"


def rates(report: Report) -> list[Rate]:
    """P, T and A, in that order (the order the text summary lists them)."""
    verdict = report.verdict
    compute = verdict.compute_alone_steps_per_s
    return [
        Rate("P", "pipeline alone", "batches/s", report.pipeline.batches_per_s),
        Rate(
            "T",
            "compute alone",
            "steps/s",
            compute,
            estimated=compute is not None and compute_alone_estimated(verdict),
            origin="" if compute is None else compute_alone_origin(report),
        ),
        Rate("A", "training", "steps/s", training_rate(verdict, report.train.steps_per_s)),
    ]


def training_rate(verdict: Verdict, fallback: float | None) -> float | None:
    """A, the training rate the verdict used; `fallback` (the train section's) in old reports."""
    return verdict.training_steps_per_s if verdict.training_steps_per_s is not None else fallback


def compute_alone_estimated(verdict: Verdict) -> bool:
    """True when T is a guess (step time minus input wait), not the step run alone."""
    return verdict.compute_alone_source != MEASURED


def compute_alone_origin(report: Report) -> str:
    """Where T comes from: "measured on a cached batch, 50 steps" or "estimated: <why>"."""
    verdict = report.verdict
    if verdict.compute_alone_source == MEASURED:
        alone = report.compute_alone
        if alone is not None and alone.blocks:
            rounds = sum(b.kind == STEP_ALONE_BLOCK for b in alone.blocks)
            return (
                f"{MEASURED_WORDS}, in turn with training: {rounds} rounds of "
                f"{alone.block_steps} steps"
            )
        steps = f", {alone.steps} steps" if alone is not None and alone.steps else ""
        return MEASURED_WORDS + steps
    reason = OLD_ESTIMATE_REASON
    if verdict.compute_alone_source == ESTIMATED and verdict.compute_alone_reason:
        reason = verdict.compute_alone_reason
    return f"{ESTIMATED_WORD}: {reason}"


# ---------------------------------------------------------------------------- input cost

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


def input_cost_text(cost: float, interval: list[float] | None = None) -> str:
    """ "44% of training time", "44% of training time (90% interval 40-48%)", or for an
    interval that reaches zero "not measurable above noise (at most 3% of training time)"."""
    if interval is None:
        return f"{percent(cost)} of training time"
    if interval[0] <= 0.0:
        return f"{NOT_MEASURABLE} (at most {percent(interval[1])} of training time)"
    return f"{percent(cost)} of training time (90% interval {percent_range(*interval)})"


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
    free = speedup_if_input_free(verdict, training_rate(verdict, report.train.steps_per_s))
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
        title = f"Input cost: {input_cost_text(cost, verdict.input_cost_interval)}"
        return CostBar(parts, title, free_input_text(report))
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


# ---------------------------------------------------------------------------- phases


def phase_text(phase: PhaseVerdict, *, first: bool = True) -> str:
    """ "epoch 1: input-bound, input costs 66%"; later phases of a list say just "3%"."""
    share = ""
    if phase.input_cost_fraction is not None:
        share = percent(phase.input_cost_fraction)
        if first:
            share = f"input costs {share}"
    elif phase.input_wait_fraction is not None:
        share = f"input wait {percent(phase.input_wait_fraction)}"
    # As the headline names a phase's verdict: "balanced", "no verdict".
    label = verdict_title(phase.label).lower()
    return f"{phase.name}: {label}" + (f", {share}" if share else "")


def deep_skipped_text(reason: str) -> str:
    """Why stage timing and fix trials did not run, as one line."""
    return f"{NOT_MEASURED}: {reason}"


# ---------------------------------------------------------------------------- suggestions

FIX, WARNING, NOTE = "fix", "warning", "note"
# Said before the title of a fix that changes what the model trains on, so that a line cut
# short never hides it.
MAY_CHANGE_RESULTS = "may change results: "
SUGGESTION_HEADINGS = {
    WARNING: "Warnings (these change what the model trains on):",
    FIX: "Fixes, best first (estimated/verified: pipeline-alone speedup, estimated from stage "
    "timings or measured on a rewritten copy of your pipeline in this run; on your training: "
    "training speedup measured with the fix in this run; end to end: predicted training "
    "speedup):",
    NOTE: "Notes from the checks:",
}


def gains_text(s: Suggestion) -> str:
    """ "estimated 1.90x, verified 1.62x, end to end ~1.42x", or "" without figures.

    Estimated and verified are the pipeline alone's speedups; end to end is the predicted
    training speedup (`Suggestion.predicted_speedup`), an estimate, hence the tilde. A fix
    tried on training shows that measured gain instead ("on your training 1.30x").
    """
    parts = []
    if s.estimated_speedup is not None:
        parts.append(f"{ESTIMATED_WORD} {gain(s.estimated_speedup)}")
    if s.verified_speedup is not None:
        parts.append(f"verified {gain(s.verified_speedup)}")
    if s.training_speedup is not None:
        parts.append(f"on your training {gain(s.training_speedup)}")
    elif s.predicted_speedup is not None:
        parts.append(f"end to end {ESTIMATE_MARK}{gain(s.predicted_speedup)}")
    return ", ".join(parts)


def suggestion_line(s: Suggestion, max_chars: int | None = None) -> str:
    """One suggestion in one line, unnumbered (numbering is the renderer's layout):
    "[PD002] may change results: vectorise (stage: map(f))  (estimated 1.90x)".

    The stage is added only where the title does not already name it. With `max_chars`, the
    title is shortened (never the warning or the gains) so that the line fits.
    """
    head = f"[{s.id}] " + (MAY_CHANGE_RESULTS if s.correctness_warning else "")
    stage = f" (stage: {s.stage})" if s.stage and s.stage not in s.title else ""
    gains = gains_text(s)
    tail = stage + (f"  ({gains})" if gains else "")
    title = s.title
    if max_chars is not None and len(head) + len(title) + len(tail) > max_chars:
        room = max(1, max_chars - len(head) - len(tail))
        title = title[: room - 1].rstrip() + "\N{HORIZONTAL ELLIPSIS}"
    return head + title + tail


def suggestions_of(report: Report, kind: str) -> list[Suggestion]:
    """The report's suggestions of one kind, best first (the advisor's order)."""
    return [s for s in report.suggestions if (s.kind or FIX) == kind]


def actionable(report: Report) -> list[Suggestion]:
    """Fixes and warnings, best first: the things to change. Notes (a check that found a fix
    not worth making) are not."""
    return [s for s in report.suggestions if (s.kind or FIX) != NOTE]


def best_fix(report: Report) -> tuple[Suggestion, float] | None:
    """The fix that promises most, and its gain: measured on training where tried, else end
    to end where predicted, else measured on the pipeline, else estimated. Notes (fixes
    measured without gain) and warnings promise nothing."""
    best: tuple[Suggestion, float] | None = None
    for s in report.suggestions:
        if s.kind != FIX:
            continue
        promised = next(
            (
                g
                for g in (
                    s.training_speedup,
                    s.predicted_speedup,
                    s.verified_speedup,
                    s.estimated_speedup,
                )
                if g
            ),
            None,
        )
        if promised is not None and promised > 1.0 and (best is None or promised > best[1]):
            best = (s, promised)
    return best


def best_fix_figure(report: Report) -> tuple[str, str]:
    """The best fix as a key figure, (label, value): "1.40x" when its pipeline gain was
    measured in this run; "~1.40x" under "Best fix (estimated)" when it rests on stage
    timings alone."""
    found = best_fix(report)
    if found is None:
        fixes = suggestions_of(report, FIX)
        if not fixes:
            return ("Best fix (predicted)", DASH)
        if any(s.predicted_speedup or s.verified_speedup or s.estimated_speedup for s in fixes):
            return ("Best fix (predicted)", "no gain")
        return ("Best fix (no estimate)", DASH)
    fix, promised = found
    if fix.training_speedup is not None:
        return ("Best fix (on your training)", gain(promised))
    if fix.verified_speedup is None:
        return (f"Best fix ({ESTIMATED_WORD})", ESTIMATE_MARK + gain(promised))
    return ("Best fix (predicted)", gain(promised))


# ---------------------------------------------------------------------------- key figures


def input_cost_figure(verdict: Verdict) -> str:
    """ "44%", "44% (40-48%)" with its interval, "at most 3%" where not measurable."""
    interval = verdict.input_cost_interval
    if interval is None:
        return percent(verdict.input_cost_fraction or 0.0)
    if cost_not_measurable(verdict):
        return f"at most {percent(interval[1])}"
    return f"{percent(verdict.input_cost_fraction or 0.0)} ({percent_range(*interval)})"


def key_figures(report: Report) -> list[tuple[str, str]]:
    """The figures a report is read by, (label, value): input cost, the three rates P, T and
    A, the best fix and the steps measured. Old reports show the input-wait share first."""
    verdict, train = report.verdict, report.train
    if verdict.input_cost_fraction is not None:
        first = ("Input cost (of training time)", input_cost_figure(verdict))
    else:
        fraction = verdict.input_wait_fraction
        first = ("Input-wait share", percent(fraction) if fraction is not None else DASH)
    figures = [first]
    for rate in rates(report):
        unit = ESTIMATED_WORD if rate.estimated else rate.unit
        figures.append((f"{rate.title} ({unit})", rate.number))
    warmup = f" (+{train.warmup_steps} warm-up)" if train.warmup_steps else ""
    return [
        *figures,
        best_fix_figure(report),
        (f"Steps measured{warmup}", f"{train.measured_steps:,}"),
    ]
