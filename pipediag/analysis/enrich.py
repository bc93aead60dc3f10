"""The hardware's part of a report, in one call for the session and the monitor: the GPU
analysis, the host's contention, and the GPU's idle cause in the verdict."""

from __future__ import annotations

from dataclasses import replace

from pipediag.analysis.gpu import analyze_gpu, with_gpu_idle_cause
from pipediag.analysis.host_contention import host_contention
from pipediag.report.model import Report


def enrich_report(report: Report) -> Report:
    """Idempotent: parts already present are kept."""
    analysis = report.gpu_analysis or analyze_gpu(report.gpu, report.train)
    contention = report.host_contention or host_contention(
        report.host, report.train, report.verdict
    )
    verdict = report.verdict
    if verdict.gpu_idle_cause is None:
        verdict = with_gpu_idle_cause(verdict, analysis)
    return replace(report, gpu_analysis=analysis, host_contention=contention, verdict=verdict)
