"""Advisor rules over the host and the GPU: a saturated CPU (PD010), the GPU's idle cause
(PD011), and the note that the pipeline is fine when training is compute-bound (PD000)."""

from __future__ import annotations

from pipediag.analysis.advice_context import Context, share_fix
from pipediag.analysis.gpu_causes import CAUSE_FIX_CODE
from pipediag.report.model import Suggestion
from pipediag.report.vocabulary import RuleId


def check_cpu_saturated(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    if not ctx.saturated or ctx.cpu_busy_pct is None:
        return []
    code = (
        "# 1. precompute the expensive preprocessing once and store it as TFRecord\n"
        "# 2. offload preprocessing to the accelerator (e.g. Keras preprocessing layers "
        "in the model)\n"
        "# 3. run the pipeline on other machines with tf.data service "
        "(tf.data.experimental.service.distribute)"
    )
    return [Suggestion(id=rule_id, code=code, kind="fix")]


def check_gpu_idle_cause(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    """HTA's idle categories other than input wait (host overhead, transfer)."""
    analysis = ctx.report.gpu_analysis
    if analysis is None or not analysis.available or analysis.attribution is None:
        return []
    attribution = analysis.attribution
    cause = attribution.dominant
    if cause not in CAUSE_FIX_CODE or attribution.idle_s <= 0:
        return []
    seconds = attribution.host_overhead_s if cause == "host-overhead" else attribution.transfer_s
    share = seconds / attribution.idle_s
    busy = analysis.gpu_busy_fraction
    # Removing that idle time at best: busy share / (busy share + the rest of the idle time).
    removed = None
    if busy and attribution.window_s > 0:
        removed = attribution.idle_s / attribution.window_s * share
    return [share_fix(rule_id, CAUSE_FIX_CODE[cause], removed)]


def check_pipeline_fine(ctx: Context, rule_id: RuleId) -> list[Suggestion]:
    return [Suggestion(id=rule_id, kind="note")]
