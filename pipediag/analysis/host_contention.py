"""How much of the machine's CPU other processes took while the measured steps ran: a
pipeline can be slow because something else on the host takes its cores."""

from __future__ import annotations

from pipediag.analysis.gpu import DEFAULT_GPU_THRESHOLDS, measured_steps
from pipediag.report.model import TrainSection, Verdict, timed_steps
from pipediag.report.reasons import Reason
from pipediag.report.samples import HostContention, HostSample, HostSection
from pipediag.report.vocabulary import ContentionScope


def other_processes_cores(host: HostSection | None, begin_s: float, end_s: float) -> float | None:
    """The machine's busy share less this process's and less steal time (a VM counts it busy),
    averaged before clipped at zero (docs/design.md, "A busy host")."""
    if host is None or not host.available or not host.samples:
        return None
    cores, inside = _cores(host), _samples_within(host, begin_s, end_s)
    if cores <= 0 or not inside:
        return None
    others = sum(
        s.system_cpu_pct - (s.steal_pct or 0.0) - s.process_cpu_pct / cores for s in inside
    ) / len(inside)
    return max(0.0, others) / 100.0 * cores


def host_contention(
    host: HostSection, train: TrainSection, verdict: Verdict | None = None
) -> HostContention:
    """Per sample: system busy % - this process's % / cores (psutil counts a process 100 per
    core). It bears on the verdict only where input may limit training."""
    if not host.available:
        return HostContention(available=False, reason=host.reason or Reason("host-not-sampled"))
    if (cores := _cores(host)) <= 0 or not host.samples:
        return HostContention(available=False, reason=Reason("no-host-samples"))
    steps, samples = measured_steps(train) or timed_steps(train.steps), list(host.samples)
    scope: ContentionScope = "whole-run"
    if steps:
        begin, end = min(s.start_s for s in steps), max(s.start_s + s.duration_s for s in steps)
        if inside := _samples_within(host, begin, end):
            samples, scope = inside, "measured-steps"
    others = [max(0.0, s.system_cpu_pct - s.process_cpu_pct / cores) for s in samples]
    other_mean = sum(others) / len(others)
    bears = verdict is not None and verdict.label in ("input-bound", "balanced", "uncertain")
    return HostContention(
        available=True,
        cpu_count=cores,
        samples=len(samples),
        other_cpu_pct_mean=other_mean,
        other_cpu_pct_max=max(others),
        other_cores_mean=other_mean / 100 * cores,
        process_cpu_pct_mean=sum(s.process_cpu_pct for s in samples) / len(samples),
        system_cpu_pct_mean=sum(s.system_cpu_pct for s in samples) / len(samples),
        contended=other_mean / 100 >= DEFAULT_GPU_THRESHOLDS.contention_share,
        scope=scope,
        bears_on_verdict=bears,
    )


def _cores(host: HostSection) -> int:
    return host.cpu_count or max((len(s.per_core_pct) for s in host.samples), default=0)


def _samples_within(host: HostSection, begin_s: float, end_s: float) -> list[HostSample]:
    """A sample's reading covers the interval before its time."""
    return [s for s in host.samples if begin_s < s.t_s <= end_s + host.interval_s]
