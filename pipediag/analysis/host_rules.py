"""Advisor rules over the host and the GPU: a saturated CPU (PD010), the GPU's idle cause
(PD011), and the note that the pipeline is fine when training is compute-bound (PD000)."""

from __future__ import annotations

from pipediag.analysis.advice_context import CPU_SATURATED_PCT, Context, share_fix
from pipediag.analysis.gpu_causes import CAUSE_FIXES
from pipediag.report.model import Suggestion


def check_cpu_saturated(ctx: Context, rule_id: str) -> list[Suggestion]:
    if not ctx.saturated or ctx.cpu_busy_pct is None:
        return []
    wait = ctx.report.verdict.input_wait_fraction
    wait_text = f"{wait:.0%} of step time waits for input while " if wait is not None else ""
    return [
        Suggestion(
            id=rule_id,
            title="the host CPU is saturated: no tf.data setting can help",
            evidence=(
                f"{wait_text}all {ctx.cores} cores are {ctx.cpu_busy_pct:.0f}% busy on average "
                f"during the measured steps (>= {CPU_SATURATED_PCT:.0f}%)"
                f"{contention_text(ctx)}. More parallel calls only add threads to busy cores; "
                "the input work itself must shrink or move."
            ),
            code=(
                "# 1. precompute the expensive preprocessing once and store it as TFRecord\n"
                "# 2. offload preprocessing to the accelerator (e.g. Keras preprocessing layers "
                "in the model)\n"
                "# 3. run the pipeline on other machines with tf.data service "
                "(tf.data.experimental.service.distribute)"
            ),
            kind="fix",
        )
    ]


def contention_text(ctx: Context) -> str:
    contention = ctx.report.host_contention
    if contention is None or not contention.contended or contention.other_cpu_pct_mean is None:
        return ""
    return (
        f", {contention.other_cpu_pct_mean:.0f}% of the machine by other processes: "
        "free the machine first"
    )


def check_gpu_idle_cause(ctx: Context, rule_id: str) -> list[Suggestion]:
    """HTA's idle categories other than input wait (host overhead, transfer)."""
    analysis = ctx.report.gpu_analysis
    if analysis is None or not analysis.available or analysis.attribution is None:
        return []
    attribution = analysis.attribution
    cause = attribution.dominant
    if cause not in CAUSE_FIXES or attribution.idle_s <= 0:
        return []
    seconds = attribution.host_overhead_s if cause == "host-overhead" else attribution.transfer_s
    share = seconds / attribution.idle_s
    busy = analysis.gpu_busy_fraction
    title, code = CAUSE_FIXES[cause]
    evidence = (
        f"The GPU was busy {busy:.0%} of the measured time; {share:.0%} of its idle time "
        f"({seconds:.2f} s) was {cause.replace('-', ' ')}, not waiting for input."
        if busy is not None
        else f"{share:.0%} of the GPU's idle time was {cause.replace('-', ' ')}."
    )
    # Removing that idle time at best: busy share / (busy share + the rest of the idle time).
    removed = None
    if busy and attribution.window_s > 0:
        removed = attribution.idle_s / attribution.window_s * share
    return [share_fix(rule_id, title, evidence, code, removed)]


def check_pipeline_fine(ctx: Context, rule_id: str) -> list[Suggestion]:
    verdict = ctx.report.verdict
    parts = []
    if ctx.pipeline_rate:
        parts.append(f"the pipeline alone delivers {ctx.pipeline_rate:.1f} batches/s")
    if ctx.compute_rate:
        parts.append(f"the train step alone runs {ctx.compute_rate:.1f} steps/s")
    headroom = verdict.pipeline_headroom
    title = "the input pipeline is fine: the model sets the rate"
    if headroom is not None:
        title += f" (pipeline headroom {headroom:.1f}x)"
    wait = verdict.input_wait_fraction
    evidence = f"{wait:.0%} of step time waits for input" if wait is not None else ""
    if parts:
        evidence += ("; " if evidence else "") + " and ".join(parts)
    return [
        Suggestion(
            id=rule_id,
            title=title,
            evidence=(evidence + ". Input fixes would not speed up training.").lstrip(". "),
            kind="note",
        )
    ]
