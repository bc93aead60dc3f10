"""The terminal summary: the verdict first, then the figures behind it.

Issue 12: the verdict is input cost (1 - A/T, the share of training time input costs), so
the lines under the headline show that cost and its parts, then the three rates it comes
from: P (pipeline alone), T (compute alone) and A (training). Wording shared with the PNG
comes from `renderers/words.py`. Reports written before these fields existed still render:
each new line is left out, or falls back to what the old report has.
"""

from __future__ import annotations

import shlex
import textwrap

from pipediag.renderers import words
from pipediag.renderers.watch_view import over_time_text
from pipediag.report.model import COMPUTE_BOUND, LatencyStats, Report, Suggestion

LABEL_WIDTH = 16
EVIDENCE_WIDTH = 100
INDENT = " " * (LABEL_WIDTH + 2)  # where a row's text starts


def render_text(report: Report) -> str:
    lines = _headline(report)
    lines.append("")
    add = lines.append
    for label, text in (
        ("Input cost", _input_cost(report)),
        ("Input wait", _input_wait(report)),
        ("Rates", _rates(report)),
        ("Phases", _phases(report)),
        ("Over time", over_time_text(report, INDENT)),
        ("Pipeline alone", _pipeline(report)),
        ("Slowest stage", _slowest_stage(report)),
        ("Train step", _train(report)),
        ("Stages/fixes", _deep_skipped(report)),
        ("Host CPU", _host(report)),
        ("GPU", _gpu(report)),
        ("Run", _run(report)),
    ):
        if text:
            add(_row(label, text))
    lines.extend(_suggestions(report))
    for note in report.notes:
        add(f"note: {note}")
    return "\n".join(lines) + "\n"


def _input_cost(report: Report) -> str:
    """Input cost and its parts, with the evidence for each part; "" in old reports."""
    verdict = report.verdict
    cost = verdict.input_cost_fraction
    if cost is None:
        return ""
    text = f"{words.percent(cost)} of training time"
    training = words.training_rate(verdict, report.train.steps_per_s)
    free = words.speedup_if_input_free(verdict, training)
    if free is not None:
        text += f" ({words.speedup(free)} faster if input were free)"
    split = verdict.cost_split
    if split is None:
        return text
    evidence = [e for e in (words.contention_evidence(split), words.fetch_evidence(split)) if e]
    return f"\n{INDENT}".join([f"{text}: {words.cost_split_text(split)}", *evidence])


def _input_wait(report: Report) -> str:
    """The share of step time spent waiting for a batch: what XProf reports, kept beside the
    cost (it misses contention and fetch), and the only figure old reports have."""
    wait = report.verdict.input_wait_fraction
    if wait is None:
        return ""
    return f"{words.percent(wait)} of step time ({words.WAIT_SHARE_SOURCE})"


def _rates(report: Report) -> str:
    """P, T and A in one column, so the two rates measured alone read against training's."""
    verdict = report.verdict
    pipeline = report.pipeline.batches_per_s
    compute = verdict.compute_alone_steps_per_s
    training = words.training_rate(verdict, report.train.steps_per_s)
    if pipeline is None and compute is None and training is None:
        return ""
    estimated = compute is not None and words.compute_alone_estimated(verdict)
    rows = [
        ("P", "pipeline alone", pipeline, "batches/s", ""),
        ("T", "compute alone", compute, "steps/s", _compute_alone_origin(report)),
        ("A", "training", training, "steps/s", ""),
    ]
    numbers = [
        None if rate is None else ("~" if letter == "T" and estimated else "") + f"{rate:.1f}"
        for letter, _, rate, _, _ in rows
    ]
    width = max(len(n) for n in numbers if n is not None)
    lines = []
    for (letter, name, _, unit, origin), number in zip(rows, numbers, strict=True):
        if number is None:
            lines.append(f"{letter}  {name:<16}{words.NOT_MEASURED}")
            continue
        line = f"{letter}  {name:<16}{number:>{width}} {unit}"
        lines.append(line + (f"  ({origin})" if origin else ""))
    return f"\n{INDENT}".join(lines)


def _compute_alone_origin(report: Report) -> str:
    origin = words.compute_alone_origin(report.verdict)
    alone = report.compute_alone
    if origin == words.MEASURED_WORDS and alone is not None and alone.steps:
        origin += f", {alone.steps} steps"
    return origin


def _phases(report: Report) -> str:
    """One line per stretch of training whose input cost differs from the rest."""
    lines = []
    for phase in report.verdict.phases:
        facts = [f"{phase.steps} steps"]
        if phase.steps_per_s is not None:
            facts.append(f"{phase.steps_per_s:.1f} steps/s")
        lines.append(f"{words.phase_text(phase)} ({', '.join(facts)})")
    return f"\n{INDENT}".join(lines)


def _deep_skipped(report: Report) -> str:
    reason = report.pipeline.deep_skipped_reason
    return words.deep_skipped_text(reason) if reason else ""


def _slowest_stage(report: Report) -> str:
    stage = next((s for s in report.pipeline.stages if s.bottleneck), None)
    if stage is None or report.verdict.label == COMPUTE_BOUND:
        return ""  # when the model sets the rate, the pipeline's slowest stage is no news
    text = words.stage_name(stage) + (f" at {stage.source}" if stage.source else "")
    facts = []
    if stage.batches_per_s is not None:
        facts.append(f"{stage.batches_per_s:.1f} batches/s up to here")
    if stage.own_s_per_batch is not None:
        facts.append(f"adds {_ms(stage.own_s_per_batch)} per batch")
    auto = stage.settings.get("auto_parallel", "")
    if auto.startswith("no"):
        facts.append("runs sequentially")
    if stage.settings.get("py_function") == "true":
        facts.append("calls Python")
    return f"{text}: {', '.join(facts)}" if facts else text


def _suggestions(report: Report) -> list[str]:
    groups = {
        "warning": "Warnings (these change what the model trains on):",
        "fix": "Fixes, best first (est./verified: pipeline-alone speedup, estimated from stage "
        "timings or measured on a rewritten copy of your pipeline in this run; "
        "end to end: predicted training speedup):",
        "note": "Notes from the checks:",
    }
    lines: list[str] = []
    for kind, heading in groups.items():
        chosen = [s for s in report.suggestions if (s.kind or "fix") == kind]
        if not chosen:
            continue
        lines += ["", heading]
        for n, s in enumerate(chosen, 1):
            lines.append(f" {n}. [{s.id}] {s.title}{_gains(s)}")
            if s.evidence:
                lines += textwrap.wrap(
                    s.evidence,
                    width=EVIDENCE_WIDTH,
                    initial_indent="      ",
                    subsequent_indent="      ",
                )
            lines += [f"      {line}" for line in s.code.splitlines()]
    return lines


def _gains(s: Suggestion) -> str:
    parts = []
    if s.estimated_speedup is not None:
        parts.append(f"est. {s.estimated_speedup:.2f}x")
    if s.verified_speedup is not None:
        parts.append(f"verified {s.verified_speedup:.2f}x")
    if s.training_speedup is not None:
        parts.append(f"on your training {s.training_speedup:.2f}x")
    elif s.predicted_speedup is not None:
        parts.append(f"end to end ~{s.predicted_speedup:.2f}x")
    return f"  ({', '.join(parts)})" if parts else ""


def _headline(report: Report) -> list[str]:
    """The analysis's own headline and the summary under it; old reports: label and summary."""
    verdict = report.verdict
    if verdict.headline:
        summary = textwrap.wrap(
            verdict.summary, width=EVIDENCE_WIDTH, initial_indent="  ", subsequent_indent="  "
        )
        return [verdict.headline, *(summary if verdict.summary != verdict.headline else [])]
    title = words.verdict_title(verdict.label)
    if title != words.NO_VERDICT:
        title += f" ({verdict.severity})"
    return [f"{title}: {verdict.summary}" if verdict.summary else title]


def _why(what: str, reason: str | None) -> str:
    return f"{what}: {reason}" if reason else what


def _row(label: str, text: str) -> str:
    return f"  {label:<{LABEL_WIDTH}}{text}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def _dist(stats: LatencyStats | None) -> str:
    if stats is None:
        return ""
    return f"median {_ms(stats.median_s)}, p90 {_ms(stats.p90_s)}"


def _pipeline(report: Report) -> str:
    p = report.pipeline
    if not p.measured or p.batches_per_s is None:
        return _why(words.NOT_MEASURED, p.reason)
    text = f"{p.batches_per_s:.1f} batches/s over {p.batches} batches, {_dist(p.latency)}"
    if p.cpu_s_per_batch is not None:
        # Near 0: the pipeline mostly waits (storage, sleeps); 1 or more: it computes.
        text += f", {p.cpu_s_per_batch * p.batches_per_s:.1f} cores busy"
    if p.exhausted:
        text += " (dataset ended)"
    return text + (f"  [{p.dataset}]" if p.dataset else "")


def _train(report: Report) -> str:
    t = report.train
    if t.steps_per_s is None:
        return f"no measured steps ({len(t.steps)} seen)"
    text = f"{t.steps_per_s:.1f} steps/s, step {_dist(t.step_time)}"
    if t.input_wait is not None:
        text += f"; input wait {_dist(t.input_wait)}"
    source = {
        "profiler-trace": "input wait from TF profiler trace",
        "batch-stamps": "input wait from batch time stamps",
        "iterator-timing": "input wait timed at the iterator",
    }.get(t.input_wait_source, "input wait not measured")
    return (
        f"{text}\n{INDENT}{t.measured_steps} measured + {t.warmup_steps} warm-up "
        f"steps, {t.style}, {source}"
    )


def _host(report: Report) -> str:
    h = report.host
    if not h.available:
        return _why("not sampled", h.reason)
    parts = []
    if h.process_cpu_pct_mean is not None:
        parts.append(f"this process {h.process_cpu_pct_mean:.0f}% of {100 * h.cpu_count}%")
    if h.system_cpu_pct_mean is not None:
        parts.append(f"system {h.system_cpu_pct_mean:.0f}%")
    if h.iowait_pct_mean is not None:
        parts.append(f"iowait {h.iowait_pct_mean:.1f}%")
    if h.process_rss_bytes_max is not None:
        parts.append(f"peak RSS {h.process_rss_bytes_max / 2**20:.0f} MiB")
    text = ", ".join(parts) or "sampled"
    contention = report.host_contention
    if contention is not None and contention.contended and contention.finding:
        text += f"\n{INDENT}{contention.finding}"
    return text


def _gpu(report: Report) -> str:
    g = report.gpu
    if not g.available:
        return f"{_why('none found', g.reason)}. Verdict from host timing alone."
    names = ", ".join(d.name for d in g.devices)
    if g.gpu_util_pct_mean is None:
        text = f"{names}: utilization not available"
    else:
        text = f"{names}: mean utilization {g.gpu_util_pct_mean:.0f}%"
    analysis = report.gpu_analysis
    if analysis is not None and analysis.available and analysis.finding:
        text += f"\n{INDENT}{analysis.finding}"
    elif analysis is not None and not analysis.available and analysis.reason:
        text += f"\n{INDENT}no idle-gap analysis: {analysis.reason}"
    return text


def _run(report: Report) -> str:
    reasons = {
        "step-budget": "complete: step budget reached, script stopped",
        "script-finished": "complete: the script finished",
        "system-exit": f"incomplete: the script exited with code {report.exit.code}",
        "script-error": f"incomplete: the script failed ({report.exit.error})",
        "interrupted": "incomplete: interrupted",
    }
    text = reasons.get(report.stop_reason, report.stop_reason or "unknown")
    command = shlex.join([report.script, *report.args])
    return f"{text}; {report.wall_time_s:.1f} s  [{command}]"
