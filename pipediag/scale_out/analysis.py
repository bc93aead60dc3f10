"""Scale-out, the pure part: what keeps a pipeline from tf.data service, where `distribute`
goes, what moving it buys, and when the summary shows it (docs/design.md, "tf.data service")."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from itertools import takewhile

from pipediag.analysis.advice_context import CPU_SATURATED_PCT, cpu_busy_pct
from pipediag.report.model import Report
from pipediag.report.names import stage_name
from pipediag.report.reasons import Reason
from pipediag.report.scale_out import (
    ScaleOut,
    ScaleOutPrediction,
    ServiceBlocker,
    ServiceMeasurement,
)
from pipediag.report.stage_facts import prefix_cost_s, upstream_of
from pipediag.report.stages import StageStats
from pipediag.report.vocabulary import LimitedBy, RateSource

# The pipeline alone kept this share of the host's cores busy: no setting here makes it faster.
PIPELINE_CORES_SHARE = 0.8
# With no cluster measured, a transfer is assumed to cross a 10 Gbit/s (data-centre) link.
ASSUMED_NETWORK_BYTES_PER_S = 10e9 / 8
# Below this share of the pipeline's own cost, what can move is not worth moving alone.
MIN_MOVED_SHARE = 0.5
DISPATCHER_PLACEHOLDER = "DISPATCHER_HOST:5050"

# Ops that call back into Python (among a stage's stateful ops), named as the user wrote them.
_PY_OPS = {"EagerPyFunc": "tf.py_function", "PyFunc": "tf.numpy_function"}
_GENERATOR = "from_generator"


def python_blockers(stages: Sequence[StageStats]) -> list[ServiceBlocker]:
    """One blocker per stage whose functions call this process's Python."""
    return [
        ServiceBlocker(
            kind="python-function",
            stage_index=stage.index,
            stage=stage_name(stage),
            source=stage.source,
            generator=stage.name == _GENERATOR,
            python_ops=sorted({_PY_OPS[op] for op in stage.stateful_ops if op in _PY_OPS}),
        )
        for stage in stages
        if stage.uses_py_function
    ]


def local_path_blocker(
    stage: StageStats | None, paths: Sequence[str], total: int, *, shared_fs: str | None = None
) -> ServiceBlocker:
    """Files only this host can read (unless `shared_fs`, the filesystem they are on, is one
    that other machines mount too: then it is a reminder, not a fix)."""
    return ServiceBlocker(
        kind="local-path",
        stage_index=None if stage is None else stage.index,
        stage="" if stage is None else stage_name(stage),
        source=None if stage is None else stage.source,
        paths=list(paths),
        paths_total=total,
        shared_fs=shared_fs,
    )


def stage_label(stage: StageStats) -> str:
    return stage_name(stage) + (f" ({stage.source})" if stage.source else "")


def refused_blocker(error: str, up_to: str) -> ServiceBlocker:
    """The service failed on the pipeline up to `up_to` ("": the whole), past the static checks."""
    return ServiceBlocker(kind="refused", error=error, up_to=up_to)


def distribute_point(
    stages: Sequence[StageStats], blockers: Sequence[ServiceBlocker]
) -> int | None:
    """The last stage, on the chain from the output, that can move with all its inputs (None: none).
    Python blockers pin their stage and all after it here; local paths do not (shared storage)."""
    if not stages:
        return None
    pinned = {b.stage_index for b in blockers if b.kind == "python-function"}
    movable: dict[int, bool] = {}

    def can_move(index: int) -> bool:
        if index not in movable:
            movable[index] = index not in pinned and all(can_move(i) for i in stages[index].inputs)
        return movable[index]

    return next((index for index in _chain_from_output(stages) if can_move(index)), None)


def _chain_from_output(stages: Sequence[StageStats]) -> Iterator[int]:
    """Stage indices from the output back, through the first without exactly one input."""
    current = len(stages) - 1  # the walk lists the output stage last
    for _ in range(len(stages)):
        yield current
        if len(stages[current].inputs) != 1:
            return
        current = stages[current].inputs[0]


def prefix_s_per_batch(stages: Sequence[StageStats], index: int) -> float | None:
    """Own cost per output batch of stage `index` and everything upstream; None if unknown."""
    known = any(stages[i].own_s_per_batch is not None for i in upstream_of(stages, index))
    return prefix_cost_s(stages, index) if known else None


def local_s_per_batch(stages: Sequence[StageStats], cut: int) -> float | None:
    """Time per output batch of the stages that stay on this host after the cut."""
    whole, moved = prefix_s_per_batch(stages, len(stages) - 1), prefix_s_per_batch(stages, cut)
    return None if whole is None or moved is None else max(0.0, whole - moved)


def moved_share(stages: Sequence[StageStats], cut: int) -> float | None:
    """Share of the pipeline's own cost that moves with a cut after stage `cut`."""
    whole, moved = prefix_s_per_batch(stages, len(stages) - 1), prefix_s_per_batch(stages, cut)
    return None if not whole or moved is None else min(1.0, moved / whole)


def stays_local(stages: Sequence[StageStats], cut: int) -> list[StageStats]:
    """The stages after the cut, on the chain to the output, in pipeline order."""
    after = takewhile(lambda index: index != cut, _chain_from_output(stages))
    return [stages[index] for index in after][::-1]


def checked_stages(report: Report) -> list[StageStats]:
    """The stages the check's indices point into: its own walk where it kept one."""
    if (section := report.scale_out) is not None and section.stages:
        return list(section.stages)
    return list(report.pipeline.stages)


def host_cpu_is_limit(report: Report) -> bool:
    """Whether this host's CPU, not a setting, limits how fast batches are made."""
    cores, pipeline = report.environment.cpu_count or report.host.cpu_count, report.pipeline
    pipeline_cores = (pipeline.cpu_s_per_batch or 0.0) * (pipeline.batches_per_s or 0.0)
    if cores and pipeline_cores >= PIPELINE_CORES_SHARE * cores:
        return True
    if (busy := cpu_busy_pct(report)) is not None and busy >= CPU_SATURATED_PCT:
        return True
    split = report.verdict.cost_split
    return split is not None and split.dominant == "contention"


def shows_scale_out(report: Report) -> bool:
    """The summary shows the section when asked for, or input-bound with the host CPU the limit."""
    if (section := report.scale_out) is None or not section.checked:
        return False
    return section.requested or (
        report.verdict.label == "input-bound" and host_cpu_is_limit(report)
    )


def _measured(section: ScaleOut, where: str) -> ServiceMeasurement | None:
    return next((m for m in section.measurements if m.where == where and m.measured), None)


def predict(report: Report) -> ScaleOutPrediction:
    """Workers needed to feed the train step alone, and the training rate to expect
    (docs/design.md, "tf.data service"); the per-worker rate falls back to stage timing."""
    if (section := report.scale_out) is None:
        return ScaleOutPrediction(reason=Reason("not-checked"))
    stages, verdict = checked_stages(report), report.verdict
    target = verdict.compute_alone_steps_per_s
    training = verdict.training_steps_per_s or report.train.steps_per_s
    base = ScaleOutPrediction(target_steps_per_s=target, training_steps_per_s=training)
    if (cut := section.distribute_after_index) is None:
        return dataclasses.replace(base, reason=Reason("nothing-to-move"))
    cluster, local = _measured(section, "cluster"), _measured(section, "local")
    per_worker, per_worker_source = _per_worker(report, cluster, cut)
    transfer, transfer_source = _transfer(cluster, local)
    local_cost = None if section.moves_whole_pipeline else local_s_per_batch(stages, cut)
    base = dataclasses.replace(
        base,
        per_worker_batches_per_s=per_worker,
        per_worker_source=per_worker_source,
        transfer_batches_per_s=transfer,
        transfer_source=transfer_source,
        local_s_per_batch=local_cost,
    )
    if not target:
        return dataclasses.replace(base, reason=Reason("no-compute-rate"))
    if not per_worker:
        return dataclasses.replace(base, reason=Reason("no-per-worker-rate"))
    measured = cluster or local
    receiving = measured.consumer_cpu_s_per_batch if measured is not None else None
    cores = report.environment.cpu_count or report.host.cpu_count or 1
    fed_target = 1.0 / (1.0 / target + (receiving or 0.0) / cores)
    limits: dict[LimitedBy, float] = {"compute": fed_target}
    if transfer:
        limits["transfer"] = transfer
    if local_cost:
        limits["local-stages"] = 1.0 / local_cost
    limited_by = min(limits, key=lambda k: limits[k])
    rate = limits[limited_by]
    return dataclasses.replace(
        base,
        workers_needed=max(1, math.ceil(rate / per_worker)),
        predicted_steps_per_s=rate,
        predicted_speedup=rate / training if training else None,
        limited_by=limited_by,
    )


def _per_worker(
    report: Report, cluster: ServiceMeasurement | None, cut: int
) -> tuple[float | None, RateSource]:
    if cluster is not None and cluster.per_worker_batches_per_s:
        return cluster.per_worker_batches_per_s, "cluster"
    section = report.scale_out
    if section is not None and section.moves_whole_pipeline and report.pipeline.batches_per_s:
        return report.pipeline.batches_per_s, "pipeline-alone"
    stages = checked_stages(report)
    if 0 <= cut < len(stages) and stages[cut].batches_per_s:
        return stages[cut].batches_per_s, "stage-timing"
    return None, ""


def _transfer(
    cluster: ServiceMeasurement | None, local: ServiceMeasurement | None
) -> tuple[float | None, RateSource]:
    if cluster is not None and cluster.transfer_batches_per_s:
        return cluster.transfer_batches_per_s, "cluster"
    if local is None:
        return None, ""
    candidates: list[tuple[float, RateSource]] = []
    if local.transfer_batches_per_s:
        candidates.append((local.transfer_batches_per_s, "local-service"))
    if local.bytes_per_batch:
        candidates.append((ASSUMED_NETWORK_BYTES_PER_S / local.bytes_per_batch, "assumed-network"))
    return min(candidates) if candidates else (None, "")


def paste_code(report: Report, prediction: ScaleOutPrediction, address: str | None) -> str:
    """A dispatcher, the workers and the `distribute` line, for this pipeline."""
    if (section := report.scale_out) is None or section.distribute_after_index is None:
        return ""
    stages, host = checked_stages(report), address or DISPATCHER_PLACEHOLDER
    port, workers = host.rsplit(":", 1)[-1], prediction.workers_needed
    count = "the workers" if not workers else f"{workers} worker{'s' if workers > 1 else ''}"
    cut = section.distribute_after_index
    after = f" after {stage_label(stages[cut])}" if 0 <= cut < len(stages) else ""
    lines = [
        "# 1. one dispatcher (any machine), e.g. dispatcher.py:",
        "import tensorflow as tf",
        "tf.data.experimental.service.DispatchServer(",
        f"    tf.data.experimental.service.DispatcherConfig(port={port})).join()",
        f"# 2. {count}, one per machine, e.g. worker.py:",
        "tf.data.experimental.service.WorkerServer(",
        "    tf.data.experimental.service.WorkerConfig(",
        f'        dispatcher_address="{host}")).join()',
        f"# 3. in the training script,{after}:",
        "ds = ds.apply(tf.data.experimental.service.distribute(",
        f'    processing_mode="parallel_epochs", service="grpc://{host}"))',
    ]
    if not section.moves_whole_pipeline and 0 <= cut < len(stages):
        rest = ", ".join(stage_name(s) for s in stays_local(stages, cut))
        if rest:
            lines.append(f"# ...then the stages that stay here: {rest}")
    lines += [
        "ds = ds.prefetch(tf.data.AUTOTUNE)",
        "# parallel_epochs: every worker makes the whole dataset with its own shuffle, so one",
        "# pass through the service holds each element once per worker. For exactly one pass",
        '# per epoch use processing_mode="distributed_epoch" (a splittable source:',
        "# from_tensor_slices, range, list_files + TFRecordDataset), and give fit",
        "# steps_per_epoch: the dataset's size is unknown through the service.",
    ]
    return "\n".join(lines)


def enrich_report(report: Report) -> Report:
    """The report with its scale-out prediction and code filled in (analysis, after judge)."""
    if (section := report.scale_out) is None or not section.checked:
        return report
    prediction = predict(report)
    cluster = next((m for m in section.measurements if m.where == "cluster"), None)
    address = cluster.address if cluster is not None and cluster.address else None
    code, shown = paste_code(report, prediction, address), shows_scale_out(report)
    scale_out = dataclasses.replace(section, prediction=prediction, code=code, shown=shown)
    return dataclasses.replace(report, scale_out=scale_out)
