"""The summary layer: a report turned into the words and numbers every renderer shows.

Each word and figure that more than one renderer shows is made once, so the text summary
and the PNG cannot word the same fact two ways (a verdict, a stage's name, a fix's gain, the
command line): the headline, the verdict labels, the rates P/T/A, input cost and its parts,
the phases, the gains and suggestion lines, the run's status and command line. The text
summary, the PNG and any later renderer lay these out; they do not word them again.

This module is the one renderers import (`from pipediag.renderers import summary`). The
words are made by job, each in its own module, and re-exported here:

- `verdict_words`: the headline (title, claim, explanation), the verdict line, a phase's verdict
- `rate_words`: the rates P, T and A as `Rate`s, and where T came from
- `cost_words`: input cost, its interval, its parts and their evidence, the cost bar
- `suggestion_words`: fixes, warnings and notes, their gains, the best fix
- `run_words`: the run's command line, how it ended, its waits, epoch starts and skipped passes
- `numbers`: numbers in words (shares, ratios, rates, durations)

What is left here draws on all of them: the key figures a report is read by.

Pure work over the report model: no matplotlib, no TensorFlow, nothing measured.
"""

from __future__ import annotations

# Each job's words live in its own module; re-exported for renderers.
from pipediag.renderers.cost_words import COMPUTE_PART_NAME as COMPUTE_PART_NAME
from pipediag.renderers.cost_words import CONTENTION_KIND_WORDS as CONTENTION_KIND_WORDS
from pipediag.renderers.cost_words import COST_PART_NAMES as COST_PART_NAMES
from pipediag.renderers.cost_words import COST_PARTS as COST_PARTS
from pipediag.renderers.cost_words import NOT_MEASURABLE as NOT_MEASURABLE
from pipediag.renderers.cost_words import UNSPLIT_PART_NAME as UNSPLIT_PART_NAME
from pipediag.renderers.cost_words import WAIT_SHARE_SOURCE as WAIT_SHARE_SOURCE
from pipediag.renderers.cost_words import CostBar as CostBar
from pipediag.renderers.cost_words import CostPart as CostPart
from pipediag.renderers.cost_words import contention_evidence as contention_evidence
from pipediag.renderers.cost_words import cost_bar as cost_bar
from pipediag.renderers.cost_words import cost_not_measurable as cost_not_measurable
from pipediag.renderers.cost_words import cost_parts as cost_parts
from pipediag.renderers.cost_words import cost_split_text as cost_split_text
from pipediag.renderers.cost_words import epoch_start_evidence as epoch_start_evidence
from pipediag.renderers.cost_words import fetch_evidence as fetch_evidence
from pipediag.renderers.cost_words import free_input_text as free_input_text
from pipediag.renderers.cost_words import input_cost_figure as input_cost_figure
from pipediag.renderers.cost_words import input_cost_text as input_cost_text
from pipediag.renderers.cost_words import shown_cost_parts as shown_cost_parts
from pipediag.renderers.cost_words import speedup_if_input_free as speedup_if_input_free
from pipediag.renderers.numbers import DASH as DASH
from pipediag.renderers.numbers import NOT_MEASURED as NOT_MEASURED
from pipediag.renderers.numbers import RATE_DECIMALS_BELOW as RATE_DECIMALS_BELOW
from pipediag.renderers.numbers import gain as gain
from pipediag.renderers.numbers import ms as ms
from pipediag.renderers.numbers import percent as percent
from pipediag.renderers.numbers import percent_range as percent_range
from pipediag.renderers.numbers import rate_text as rate_text
from pipediag.renderers.numbers import speedup as speedup
from pipediag.renderers.rate_words import ESTIMATE_MARK as ESTIMATE_MARK
from pipediag.renderers.rate_words import ESTIMATED_WORD as ESTIMATED_WORD
from pipediag.renderers.rate_words import MEASURED_WORDS as MEASURED_WORDS
from pipediag.renderers.rate_words import OLD_ESTIMATE_REASON as OLD_ESTIMATE_REASON
from pipediag.renderers.rate_words import Rate as Rate
from pipediag.renderers.rate_words import compute_alone_estimated as compute_alone_estimated
from pipediag.renderers.rate_words import compute_alone_origin as compute_alone_origin
from pipediag.renderers.rate_words import rates as rates
from pipediag.renderers.rate_words import training_rate as training_rate
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
from pipediag.renderers.run_words import deep_skipped_text as deep_skipped_text
from pipediag.renderers.run_words import epoch_start_text as epoch_start_text
from pipediag.renderers.run_words import input_wait_source_text as input_wait_source_text
from pipediag.renderers.run_words import no_gpu_text as no_gpu_text
from pipediag.renderers.run_words import run_status as run_status
from pipediag.renderers.run_words import stop_reason_text as stop_reason_text
from pipediag.renderers.run_words import style_text as style_text
from pipediag.renderers.suggestion_words import FIX as FIX
from pipediag.renderers.suggestion_words import MAY_CHANGE_RESULTS as MAY_CHANGE_RESULTS
from pipediag.renderers.suggestion_words import NOTE as NOTE
from pipediag.renderers.suggestion_words import SUGGESTION_HEADINGS as SUGGESTION_HEADINGS
from pipediag.renderers.suggestion_words import WARNING as WARNING
from pipediag.renderers.suggestion_words import actionable as actionable
from pipediag.renderers.suggestion_words import best_fix as best_fix
from pipediag.renderers.suggestion_words import best_fix_figure as best_fix_figure
from pipediag.renderers.suggestion_words import gains_text as gains_text
from pipediag.renderers.suggestion_words import suggestion_line as suggestion_line
from pipediag.renderers.suggestion_words import suggestions_of as suggestions_of
from pipediag.renderers.verdict_words import ESTIMATED_NOTE as ESTIMATED_NOTE
from pipediag.renderers.verdict_words import NOT_ENOUGH_MEASURED as NOT_ENOUGH_MEASURED
from pipediag.renderers.verdict_words import TRAIN_STEP_SETS_THE_RATE as TRAIN_STEP_SETS_THE_RATE
from pipediag.renderers.verdict_words import WAITING_EXPLAINED as WAITING_EXPLAINED
from pipediag.renderers.verdict_words import Headline as Headline
from pipediag.renderers.verdict_words import cost_claim as cost_claim
from pipediag.renderers.verdict_words import cost_headline as cost_headline
from pipediag.renderers.verdict_words import cost_title as cost_title
from pipediag.renderers.verdict_words import headline as headline
from pipediag.renderers.verdict_words import phase_text as phase_text
from pipediag.renderers.verdict_words import sentence as sentence
from pipediag.renderers.verdict_words import verdict_line as verdict_line
from pipediag.report.model import Report

# The one spelling of verdicts and stages, shared with the analysis; re-exported for renderers.
from pipediag.report.names import NO_VERDICT as NO_VERDICT
from pipediag.report.names import VERDICT_TITLES as VERDICT_TITLES
from pipediag.report.names import stage_name as stage_name
from pipediag.report.names import verdict_title as verdict_title


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
