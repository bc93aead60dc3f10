"""The host and the GPU in words: other processes' share of the host, and the GPU's busy
share, what its idle time went to and how that tracked the input waits, each worded from
the record's own figures (`HostContention`, `GpuAnalysis`)."""

from __future__ import annotations

from pipediag.analysis.gpu_causes import CAUSE_HOST, CAUSE_INPUT, CAUSE_TRANSFER
from pipediag.renderers.numbers import percent
from pipediag.report.model import GpuAnalysis, GpuIdleCause, HostContention
from pipediag.report.vocabulary import (
    BUSY_SM_ACTIVE,
    OVER_MEASURED_STEPS,
    OVER_WHOLE_RUN,
    ContentionScope,
)

SCOPES: dict[ContentionScope, str] = {
    OVER_MEASURED_STEPS: "the measured steps",
    OVER_WHOLE_RUN: "the whole run",
    "": "the run",  # a report from before the scope was kept
}

CAUSE_PHRASE: dict[GpuIdleCause, str] = {
    CAUSE_INPUT: "waiting for input",
    CAUSE_HOST: "host-side overhead (Python, kernel launches, synchronisation)",
    CAUSE_TRANSFER: "host-device transfer (PCIe busy while the SMs idled)",
}

STRONG_CORRELATION = 0.5
WEAK_CORRELATION = 0.2
"""Wording for Pearson r: conventional 'large' (>= 0.5) and 'small' (< 0.2, Cohen 1988) effects."""


def process_cpu_text(process_cpu_pct_mean: float, cpu_count: int) -> str:
    """ "this process 85% of 200%": the process's CPU against all the host's cores."""
    return f"this process {process_cpu_pct_mean:.0f}% of {100 * cpu_count}%"


def contention_text(contention: HostContention | None) -> str:
    """ "Other processes took 40% of the host's CPU (0.8 of 2 cores) during the measured
    steps: ..."; "" unless they took enough of it to matter and the verdict leaves room for
    them to starve the input pipeline."""
    if (
        contention is None
        or not contention.contended
        or not contention.bears_on_verdict
        or contention.other_cpu_pct_mean is None
    ):
        return ""
    share = contention.other_cpu_pct_mean
    cores = contention.cpu_count
    busy = contention.other_cores_mean
    busy = share / 100 * cores if busy is None else busy
    return (
        f"Other processes took {share:.0f}% of the host's CPU ({busy:.1f} of {cores} cores) "
        f"during {SCOPES.get(contention.scope, SCOPES[''])}: the input pipeline competes with "
        "them for cores; free the machine or give the pipeline fewer, dedicated threads."
    )


def gpu_idle_text(analysis: GpuAnalysis | None) -> str:
    """ "The GPU was busy 19% of the measured time (NVML utilization); 96% of its idle time
    was waiting for input; GPU idle tracked input wait across 40 windows (r = 0.81)."; ""
    without an analysis of a sampled GPU."""
    if analysis is None or not analysis.available or analysis.attribution is None:
        return ""
    a = analysis.attribution
    metric = "SM activity, GPM" if analysis.busy_source == BUSY_SM_ACTIVE else "NVML utilization"
    busy = analysis.gpu_busy_fraction or 0.0
    text = f"The GPU was busy {percent(busy)} of the measured time ({metric})"
    if a.dominant is None:
        text += ": it was hardly ever idle, so the device itself sets the rate"
    else:
        seconds = {
            CAUSE_INPUT: a.input_wait_s,
            CAUSE_TRANSFER: a.transfer_s,
            CAUSE_HOST: a.host_overhead_s,
        }[a.dominant]
        share = seconds / a.idle_s if a.idle_s > 0 else 0.0
        text += f"; {percent(share)} of its idle time was {CAUSE_PHRASE[a.dominant]}"
    r = analysis.idle_input_wait_correlation
    if r is not None:
        text += (
            f"; GPU idle {_tracked(r)} input wait across {analysis.correlation_windows} "
            f"windows (r = {r:.2f})"
        )
    return text + "."


def _tracked(r: float) -> str:
    if r >= STRONG_CORRELATION:
        return "tracked"
    if r < WEAK_CORRELATION:
        return "did not track"
    return "loosely tracked"
