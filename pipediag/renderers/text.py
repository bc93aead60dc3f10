"""The terminal summary: the verdict, then the figures behind it as labelled rows, in the
word modules' words. An older report's missing rows are left out or fall back."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable

from pipediag.renderers.advice_words import suggestion_words
from pipediag.renderers.cost_words import (
    WAIT_SHARE_SOURCE,
    contention_evidence,
    cost_split_text,
    epoch_start_evidence,
    fetch_evidence,
    free_input_text,
    input_cost_text,
    lower_bound_evidence,
)
from pipediag.renderers.hardware_words import contention_text, gpu_idle_text, process_cpu_text
from pipediag.renderers.model_words import model_lines
from pipediag.renderers.numbers import NOT_MEASURED, counted, gain, ms, percent, rate_text
from pipediag.renderers.prescription_words import changes_besides_speed, rewrites_lines
from pipediag.renderers.rate_words import rates
from pipediag.renderers.reason_words import reason_words
from pipediag.renderers.run_words import (
    HOST_TIMING_ONLY,
    command_line,
    data_pass_text,
    deep_skipped_text,
    epoch_start_text,
    no_gpu_text,
    run_status,
    training_text,
)
from pipediag.renderers.scale_out import scale_out_lines
from pipediag.renderers.stage_advice_words import stage_at
from pipediag.renderers.stage_cost_words import costliest_stage, held_stage, held_text
from pipediag.renderers.suggestion_words import SUGGESTION_HEADINGS, suggestion_line, suggestions_of
from pipediag.renderers.verdict_words import headline, phase_text
from pipediag.renderers.watch_view import over_time_text
from pipediag.report.model import Report, Suggestion
from pipediag.report.reasons import Reason
from pipediag.report.stages import LatencyStats, StageStats

LABEL_WIDTH = 16
EVIDENCE_WIDTH = 100
INDENT = " " * (LABEL_WIDTH + 2)  # where a row's text starts
CODE_INDENT = " " * 6  # a suggestion's evidence and code, under its number
RATE_NAME_WIDTH = 16


def render_text(report: Report) -> str:
    head = headline(report)
    lines = [head.text]
    for detail in head.details:
        lines += _wrapped(detail, "  ")
    lines.append("")
    deep_skipped = report.pipeline.deep_skipped_reason
    # XProf's figure, kept beside the cost (it misses contention and fetch).
    wait = report.verdict.input_wait_fraction
    input_wait = "" if wait is None else f"{percent(wait)} of step time ({WAIT_SHARE_SOURCE})"
    run = f"{run_status(report)}; {report.wall_time_s:.1f} s  [{command_line(report)}]"
    for label, text in (
        ("Input cost", _input_cost(report)),
        ("Input wait", input_wait),
        ("Rates", _rates(report)),
        ("Watching", _observer(report)),
        ("Phases", _phases(report)),
        ("Over time", over_time_text(report, INDENT)),
        ("Pipeline alone", _pipeline(report)),
        ("Slowest stage", _slowest_stage(report)),
        ("Train step", _train(report)),
        ("Stages/fixes", deep_skipped_text(deep_skipped) if deep_skipped else ""),
        ("Rewrites", _rows(rewrites_lines(report))),
        ("Host CPU", _host(report)),
        ("GPU", _gpu(report)),
        ("Scale out", _rows(scale_out_lines(report, EVIDENCE_WIDTH - len(INDENT)))),
        ("Run", run),
    ):
        if text:
            lines.append(f"  {label:<{LABEL_WIDTH}}{text}")
    lines.extend(_suggestions(report))
    if model := model_lines(report):
        lines += ["", *model]
    lines += [f"note: {reason_words(note)}" for note in report.notes]
    return "\n".join(lines) + "\n"


def _rows(lines: Iterable[str]) -> str:
    """A row's lines, each after the first under the row's text; empty ones left out."""
    return f"\n{INDENT}".join(line for line in lines if line)


def _wrapped(text: str, indent: str) -> list[str]:
    return textwrap.wrap(
        text, width=EVIDENCE_WIDTH, initial_indent=indent, subsequent_indent=indent
    )


def _input_cost(report: Report) -> str:
    verdict = report.verdict
    if (cost := verdict.input_cost_fraction) is None:
        return ""
    text, free = input_cost_text(cost, verdict.input_cost_interval), free_input_text(report)
    if free:
        text += f" ({free})"
    split, lower_bound = verdict.cost_split, lower_bound_evidence(report)
    if split is None:
        return _rows([text, lower_bound])
    evidence = [contention_evidence(split), fetch_evidence(split), epoch_start_evidence(split)]
    return _rows([f"{text}: {cost_split_text(split)}", *evidence, lower_bound])


def _rates(report: Report) -> str:
    shown = rates(report)
    if all(rate.value is None for rate in shown):
        return ""
    width, lines = max(len(rate.number) for rate in shown if rate.value is not None), []
    for rate in shown:
        start = f"{rate.letter}  {rate.name:<{RATE_NAME_WIDTH}}"
        if rate.value is None:
            lines.append(start + NOT_MEASURED)
            continue
        line = f"{start}{rate.number:>{width}} {rate.unit}"
        lines.append(line + (f"  ({rate.origin})" if rate.origin else ""))
    return _rows(lines)


def _observer(report: Report) -> str:
    if (effect := report.verdict.observer_effect) is None:
        return ""
    interval = ""
    if effect.low is not None and effect.high is not None:
        interval = f" ({effect.low:.2f}-{effect.high:.2f})"
    return (
        f"training ran at {gain(effect.ratio)}{interval} its rate with pipediag's samplers "
        f"paused ({counted(effect.pairs, 'pair')} of blocks in turn)"
    )


def _phases(report: Report) -> str:
    lines = []
    for phase in report.verdict.phases:
        rate = "" if phase.steps_per_s is None else f", {rate_text(phase.steps_per_s)} steps/s"
        lines.append(f"{phase_text(phase)} ({phase.steps} steps{rate})")
    return _rows(lines)


def _slowest_stage(report: Report) -> str:
    if report.verdict.label == "compute-bound":
        return ""  # when the model sets the rate, the pipeline's slowest stage is no news
    stage, held = costliest_stage(report.pipeline.stages), held_stage(report.pipeline.stages)
    alone = _stage_alone(stage) if stage is not None else ""
    on_training = held_text(held) if held is not None else ""
    return "; ".join(t for t in (alone, on_training) if t)


def _stage_alone(stage: StageStats) -> str:
    text, facts = stage_at(stage), []
    if stage.batches_per_s is not None:
        facts.append(f"{rate_text(stage.batches_per_s)} batches/s up to here")
    if stage.own_s_per_batch is not None:
        facts.append(f"adds {ms(stage.own_s_per_batch)} per batch")
    if stage.auto_parallel is False:
        facts.append("runs sequentially")
    if stage.uses_py_function:
        facts.append("calls Python")
    return f"{text}: {', '.join(facts)}" if facts else text


def _suggestions(report: Report) -> list[str]:
    lines: list[str] = []
    for kind, heading in SUGGESTION_HEADINGS.items():
        if not (chosen := suggestions_of(report, kind)):
            continue
        lines += ["", heading]
        for n, s in enumerate(chosen, 1):
            lines.append(f" {n}. {suggestion_line(s, report)}")
            lines += _wrapped(_evidence(report, s), CODE_INDENT)
            lines += [CODE_INDENT + line for line in s.code.splitlines()]
    return lines


def _evidence(report: Report, suggestion: Suggestion) -> str:
    """The evidence and what the rewrite changes, then why refused, not verified, tried or found."""
    evidence = suggestion_words(suggestion, report).evidence
    parts = [evidence, changes_besides_speed(report, suggestion)]
    for before, reason in (
        ("As written, ", suggestion.refused_as_written),
        ("Not verified: ", suggestion.not_verified),
        ("Not tried on training: ", suggestion.not_on_training),
        ("", suggestion.reason),
    ):
        if reason is not None:
            parts.append(f"{before}{reason_words(reason)}.")
    return " ".join(part for part in parts if part)


def _why(what: str, reason: Reason | None) -> str:
    return f"{what}: {reason_words(reason)}" if reason else what


def _dist(stats: LatencyStats | None) -> str:
    return "" if stats is None else f"median {ms(stats.median_s)}, p90 {ms(stats.p90_s)}"


def _pipeline(report: Report) -> str:
    p = report.pipeline
    if not p.measured or p.batches_per_s is None:
        return _why(NOT_MEASURED, p.reason)
    text = f"{rate_text(p.batches_per_s)} batches/s over {p.batches} batches, {_dist(p.latency)}"
    if p.cpu_s_per_batch is not None:
        # Near 0: the pipeline mostly waits (storage, sleeps); 1 or more: it computes.
        text += f", {p.cpu_s_per_batch * p.batches_per_s:.1f} cores busy"
    if p.exhausted:
        text += " (dataset ended)"
    return text + (f"  [{p.dataset}]" if p.dataset else "")


def _train(report: Report) -> str:
    t = report.train
    skipped = [f"skipped {data_pass_text(p)}" for p in t.skipped_passes]
    if t.steps_per_s is None:
        return _rows([f"no measured steps ({len(t.steps)} seen)", *skipped])
    text = f"{rate_text(t.steps_per_s)} steps/s, step {_dist(t.step_time)}"
    if t.input_wait is not None:
        text += f"; input wait {_dist(t.input_wait)}"
    steps = f"{t.measured_steps} measured + {t.warmup_steps} warm-up steps, {training_text(t)}"
    return _rows([text, steps, epoch_start_text(t, report.verdict.cost_split), *skipped])


def _host(report: Report) -> str:
    h = report.host
    if not h.available:
        return _why("not sampled", h.reason)
    parts = []
    if h.process_cpu_pct_mean is not None:
        parts.append(process_cpu_text(h.process_cpu_pct_mean, h.cpu_count))
    if h.system_cpu_pct_mean is not None:
        parts.append(f"system {h.system_cpu_pct_mean:.0f}%")
    if h.iowait_pct_mean is not None:
        parts.append(f"iowait {h.iowait_pct_mean:.1f}%")
    if h.process_rss_bytes_max is not None:
        parts.append(f"peak RSS {h.process_rss_bytes_max / 2**20:.0f} MiB")
    parts.append(_samplers_cpu(report))
    sampled = ", ".join(p for p in parts if p) or "sampled"
    return _rows([sampled, contention_text(report.host_contention)])


def _samplers_cpu(report: Report) -> str:
    """What pipediag's sampler threads took of the cores, over the run: "" where unknown."""
    spent = [s for s in (report.host.sampler_cpu_s, report.gpu.sampler_cpu_s) if s is not None]
    if not spent or report.wall_time_s <= 0:
        return ""
    return f"pipediag's samplers {100 * (sum(spent) / report.wall_time_s):.1f}% of a core"


def _gpu(report: Report) -> str:
    g = report.gpu
    if not g.available:
        return f"{no_gpu_text(g.reason)}. {HOST_TIMING_ONLY}"
    names, util = ", ".join(d.name for d in g.devices), g.gpu_util_pct_mean
    utilization = "utilization not available" if util is None else f"mean utilization {util:.0f}%"
    analysis = report.gpu_analysis
    idle = gpu_idle_text(analysis)
    if not idle and analysis is not None and not analysis.available and analysis.reason:
        idle = f"no idle-gap analysis: {reason_words(analysis.reason)}"
    return _rows([f"{names}: {utilization}", idle])
