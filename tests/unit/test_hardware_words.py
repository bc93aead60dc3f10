"""The host's contention and the GPU's idle time in words, from hand-built records: the
renderers word the analysis's figures, and the text summary shows them on its host and GPU
rows."""

from __future__ import annotations

from dataclasses import replace

import pytest
from synthetic_reports import synthetic_report

from pipediag.analysis.enrich import enrich_report
from pipediag.analysis.gpu_causes import CAUSE_HOST, CAUSE_INPUT, CAUSE_TRANSFER
from pipediag.renderers.hardware_words import contention_text, gpu_idle_text
from pipediag.renderers.text import render_text
from pipediag.report.reasons import Reason
from pipediag.report.samples import GpuAnalysis, HostContention, IdleAttribution
from pipediag.report.vocabulary import GpuIdleCause

CONTENDED = HostContention(
    available=True,
    cpu_count=2,
    samples=100,
    other_cpu_pct_mean=40.0,
    other_cores_mean=0.8,
    contended=True,
    scope="measured-steps",
    bears_on_verdict=True,
)


def test_a_contended_host_is_worded_from_its_figures() -> None:
    # GIVEN other processes took 40% of a 2-core host while the steps were measured
    # THEN the words give the share, the cores and the samples, and what to do
    assert contention_text(CONTENDED) == (
        "Other processes took 40% of the host's CPU (0.8 of 2 cores) during the measured "
        "steps: the input pipeline competes with them for cores; free the machine or give "
        "the pipeline fewer, dedicated threads."
    )
    whole = contention_text(replace(CONTENDED, scope="whole-run"))
    assert "(0.8 of 2 cores) during the whole run: " in whole


@pytest.mark.parametrize(
    "contention",
    [
        None,
        replace(CONTENDED, contended=False, other_cpu_pct_mean=3.0),
        replace(CONTENDED, bears_on_verdict=False),  # e.g. compute-bound
        HostContention(available=False),
    ],
)
def test_a_host_that_is_quiet_or_beside_the_point_gets_no_words(
    contention: HostContention | None,
) -> None:
    assert contention_text(contention) == ""


def analysis(
    dominant: GpuIdleCause | None,
    *,
    r: float | None = None,
    gpm: bool = False,
) -> GpuAnalysis:
    """A GPU busy 40% of 10 s of windows; of its 6 s idle, 3 s input wait, 2 s host
    overhead, 1 s transfer."""
    return GpuAnalysis(
        available=True,
        busy_source="sm-active" if gpm else "utilization",
        gpu_busy_fraction=0.4,
        idle_input_wait_correlation=r,
        correlation_windows=12 if r is not None else 0,
        attribution=IdleAttribution(
            window_s=10.0,
            idle_s=6.0,
            input_wait_s=3.0,
            host_overhead_s=2.0,
            transfer_s=1.0,
            dominant=dominant,
        ),
    )


def test_the_gpus_idle_cause_is_worded_with_its_share_of_the_idle_time() -> None:
    assert gpu_idle_text(analysis(CAUSE_INPUT, r=0.81)) == (
        "The GPU was busy 40% of the measured time (NVML utilization); 50% of its idle time "
        "was waiting for input; GPU idle tracked input wait across 12 windows (r = 0.81)."
    )
    host = gpu_idle_text(analysis(CAUSE_HOST, gpm=True))
    assert host == (
        "The GPU was busy 40% of the measured time (SM activity, GPM); 33% of its idle time "
        "was host-side overhead (Python, kernel launches, synchronisation)."
    )
    transfer = gpu_idle_text(analysis(CAUSE_TRANSFER))
    assert "17% of its idle time was host-device transfer (PCIe busy while the SMs idled)" in (
        transfer
    )
    busy = gpu_idle_text(analysis(None))
    assert busy.endswith(": it was hardly ever idle, so the device itself sets the rate.")


@pytest.mark.parametrize(
    ("r", "words"),
    [
        (0.5, "tracked"),
        (0.49, "loosely tracked"),
        (0.2, "loosely tracked"),
        (0.19, "did not track"),
    ],
)
def test_the_correlation_is_worded_by_its_strength(r: float, words: str) -> None:
    assert f"; GPU idle {words} input wait across 12 windows (r = {r:.2f})." in gpu_idle_text(
        analysis(CAUSE_INPUT, r=r)
    )


def test_no_gpu_analysis_gets_no_words() -> None:
    assert gpu_idle_text(None) == ""
    assert gpu_idle_text(GpuAnalysis(available=False, reason=Reason("no-timed-wait-step"))) == ""


def test_the_text_summary_words_the_gpu_and_the_host_on_their_rows() -> None:
    # GIVEN an analysed run with a GPU, on a host other processes contended
    report = enrich_report(synthetic_report(300, with_gpu=True))
    report = replace(report, host_contention=CONTENDED)
    text = render_text(report)
    # THEN the GPU row and the host row carry the words, each under its first line
    lines = text.splitlines()
    gpu = next(i for i, line in enumerate(lines) if line.startswith("  GPU "))
    assert lines[gpu + 1].strip() == gpu_idle_text(report.gpu_analysis)
    assert lines[gpu + 1].strip().startswith("The GPU was busy ")
    host = next(i for i, line in enumerate(lines) if line.startswith("  Host CPU "))
    assert lines[host + 1].strip() == contention_text(CONTENDED)
