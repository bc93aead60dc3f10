"""The terminal summary: the verdict first, then the figures behind it."""

from __future__ import annotations

import shlex
import textwrap

from pipediag.report.model import COMPUTE_BOUND, UNKNOWN, LatencyStats, Report, Suggestion

LABEL_WIDTH = 16
EVIDENCE_WIDTH = 100


def render_text(report: Report) -> str:
    lines = [_headline(report), ""]
    add = lines.append
    add(_row("Pipeline alone", _pipeline(report)))
    slowest = _slowest_stage(report)
    if slowest:
        add(_row("Slowest stage", slowest))
    add(_row("Train step", _train(report)))
    if report.verdict.compute_alone_steps_per_s is not None:
        add(
            _row(
                "Compute alone",
                f"~{report.verdict.compute_alone_steps_per_s:.1f} steps/s "
                "(median step time minus input wait)",
            )
        )
    add(_row("Host CPU", _host(report)))
    add(_row("GPU", _gpu(report)))
    add(_row("Run", _run(report)))
    lines.extend(_suggestions(report))
    for note in report.notes:
        add(f"note: {note}")
    return "\n".join(lines) + "\n"


def _slowest_stage(report: Report) -> str:
    stage = next((s for s in report.pipeline.stages if s.bottleneck), None)
    if stage is None or report.verdict.label == COMPUTE_BOUND:
        return ""  # when the model sets the rate, the pipeline's slowest stage is no news
    name = f"{stage.kind}({stage.function})" if stage.function else stage.kind
    text = name + (f" at {stage.source}" if stage.source else "")
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
    if s.predicted_speedup is not None:
        parts.append(f"end to end ~{s.predicted_speedup:.2f}x")
    return f"  ({', '.join(parts)})" if parts else ""


def _headline(report: Report) -> str:
    verdict = report.verdict
    if verdict.label == UNKNOWN:
        return f"NO VERDICT: {verdict.summary}"
    return f"{verdict.label.upper()} ({verdict.severity}): {verdict.summary}"


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
        return f"not measured: {p.reason}"
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
        f"{text}\n{'':<{LABEL_WIDTH + 2}}{t.measured_steps} measured + {t.warmup_steps} warm-up "
        f"steps, {t.style}, {source}"
    )


def _host(report: Report) -> str:
    h = report.host
    if not h.available:
        return f"not sampled: {h.reason}"
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
        text += f"\n{'':<{LABEL_WIDTH + 2}}{contention.finding}"
    return text


def _gpu(report: Report) -> str:
    g = report.gpu
    if not g.available:
        return f"none found: {g.reason}. Verdict from host timing alone."
    names = ", ".join(d.name for d in g.devices)
    if g.gpu_util_pct_mean is None:
        text = f"{names}: utilization not available"
    else:
        text = f"{names}: mean utilization {g.gpu_util_pct_mean:.0f}%"
    analysis = report.gpu_analysis
    if analysis is not None and analysis.available and analysis.finding:
        text += f"\n{'':<{LABEL_WIDTH + 2}}{analysis.finding}"
    elif analysis is not None and not analysis.available and analysis.reason:
        text += f"\n{'':<{LABEL_WIDTH + 2}}no idle-gap analysis: {analysis.reason}"
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
