"""The host and the GPU in words: other processes' share of the host, the GPU's idle time."""

from __future__ import annotations

from pipediag.analysis.gpu_causes import CAUSE_HOST, CAUSE_INPUT, CAUSE_TRANSFER
from pipediag.renderers.numbers import percent
from pipediag.renderers.reason_words import reason_words
from pipediag.report.samples import GpuAnalysis, GpuSection, HostContention, HostSection
from pipediag.report.vocabulary import ContentionScope, GpuIdleCause

SCOPES: dict[ContentionScope, str] = {
    "measured-steps": "the measured steps",
    "whole-run": "the whole run",
    "": "the run",  # a report from before the scope was kept
}

CAUSE_PHRASE: dict[GpuIdleCause, str] = {
    CAUSE_INPUT: "waiting for input",
    CAUSE_HOST: "host-side overhead (Python, kernel launches, synchronisation)",
    CAUSE_TRANSFER: "host-device transfer (PCIe busy while the SMs idled)",
}

# Pearson r as "tracked" from Cohen's large effect (0.5), "did not track" under his small (0.2).
STRONG_CORRELATION = 0.5
WEAK_CORRELATION = 0.2


def process_cpu_text(process_cpu_pct_mean: float, cpu_count: int) -> str:
    return f"this process {process_cpu_pct_mean:.0f}% of {100 * cpu_count}%"


def contention_text(contention: HostContention | None) -> str:
    """'' unless enough to matter and the verdict leaves room to starve the input pipeline."""
    if contention is None or not (contention.contended and contention.bears_on_verdict):
        return ""
    share, cores = contention.other_cpu_pct_mean, contention.cpu_count
    if share is None:
        return ""
    busy = contention.other_cores_mean
    busy = share / 100 * cores if busy is None else busy
    return (
        f"Other processes took {share:.0f}% of the host's CPU ({busy:.1f} of {cores} cores) "
        f"during {SCOPES.get(contention.scope, SCOPES[''])}: the input pipeline competes with "
        "them for cores; free the machine or give the pipeline fewer, dedicated threads."
    )


def gpu_idle_text(analysis: GpuAnalysis | None) -> str:
    """The GPU's busy share, where its idle time went, how that tracked the input waits."""
    if analysis is None or not analysis.available or analysis.attribution is None:
        return ""
    a = analysis.attribution
    metric = "SM activity, GPM" if analysis.busy_source == "sm-active" else "NVML utilization"
    busy = analysis.gpu_busy_fraction or 0.0
    text = f"The GPU was busy {percent(busy)} of the measured time ({metric})"
    if a.dominant is None:
        text += ": it was hardly ever idle, so the device itself sets the rate"
    else:
        share = a.share_of(a.dominant)
        text += f"; {percent(share)} of its idle time was {CAUSE_PHRASE[a.dominant]}"
    if (r := analysis.idle_input_wait_correlation) is not None:
        tracked = "loosely tracked"
        if r >= STRONG_CORRELATION:
            tracked = "tracked"
        elif r < WEAK_CORRELATION:
            tracked = "did not track"
        text += (
            f"; GPU idle {tracked} input wait across {analysis.correlation_windows} "
            f"windows (r = {r:.2f})"
        )
    return text + "."


def sampler_note_lines(host: HostSection, gpu: GpuSection) -> list[str]:
    """The samplers' notes as said at the end of a run, each after the sampler it is from."""
    sections = (("host sampler", host.notes), ("GPU sampler", gpu.notes))
    return [f"{where}: {reason_words(note)}" for where, notes in sections for note in notes]
