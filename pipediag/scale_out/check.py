"""Scale-out, the measured part, after the verdict: the static check and, only when asked,
reads of a copy of the movable part through a real service (docs/design.md, "tf.data service")."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pipediag.bench.pipeline import BatchTiming
from pipediag.bench.structure import WalkedPipeline
from pipediag.bench.teardown import owned
from pipediag.clock import MONOTONIC, Clock
from pipediag.config import RunConfig
from pipediag.progress import ProgressStep
from pipediag.report.model import PipelineBenchmark
from pipediag.report.reasons import Reason
from pipediag.report.scale_out import ScaleOut, ServiceBlocker, ServiceMeasurement
from pipediag.report.stage_facts import upstream_of
from pipediag.report.stages import StageStats
from pipediag.scale_out.analysis import (
    MIN_MOVED_SHARE,
    distribute_point,
    local_path_blocker,
    moved_share,
    python_blockers,
    refused_blocker,
    stage_label,
)
from pipediag.scale_out.local_files import find_local_files
from pipediag.scale_out.service import (
    PROCESSING_MODE,
    READ_GRACE_S,
    READ_MAX_SECONDS,
    TRANSFER_MAX_SECONDS,
    LocalService,
    ServiceError,
    bounded,
    parse_address,
    probe_dispatcher,
    read_through,
    tf_error_text,
    transfer_ceiling,
)

# The user's train step fed through a service target: (steps/s, None) or (None, why not).
TrainThrough = Callable[[Any, str], tuple[float | None, Reason | None]]


def wanted(config: RunConfig, pipeline: PipelineBenchmark) -> bool:
    """Whether to check: asked for, or stages are known (the static check is one walk)."""
    return _requested(config) or bool(pipeline.stages)


def _requested(config: RunConfig) -> bool:
    return config.scale_out_workers > 0 or config.data_service is not None


def check_scale_out(
    walked: WalkedPipeline,
    pipeline: PipelineBenchmark,
    config: RunConfig,
    *,
    clock: Clock = MONOTONIC,
    note: Callable[[Reason], None] | None = None,
    phase: Callable[[ProgressStep, float | None], None] | None = None,
    train: TrainThrough | None = None,
) -> ScaleOut:
    """Compatibility, the distribute point and, asked, a copy of `walked` measured through a
    service. `note` takes the service's own failures; `train`: `--data-service-train`."""
    began, walked_stats = clock.now(), [s.stats for s in walked.stages]
    same = [s.kind for s in pipeline.stages] == [s.kind for s in walked_stats]
    stages = list(pipeline.stages) if pipeline.stages and same else walked_stats
    blockers = python_blockers(stages)
    for files in find_local_files(walked):
        stage = stages[files.stage_index] if files.stage_index is not None else None
        blockers.append(
            local_path_blocker(stage, files.paths, files.total, shared_fs=files.shared_fs)
        )
    cut = distribute_point(stages, blockers)
    notes: list[Reason] = []
    if (too_little := _too_little_moves(stages, cut, blockers)) is not None:
        notes.append(too_little)
        cut = None
    measurements: list[ServiceMeasurement] = []
    if _requested(config):
        if cut is None:
            notes.append(Reason("nothing-sent"))
        else:
            plan = _Plan.of(walked, stages, pipeline, cut)
            say = phase or (lambda step, budget_s: None)
            if config.scale_out_workers > 0:
                workers = config.scale_out_workers
                say(ProgressStep("service-local", workers=workers), None)
                measurements.append(_measure_local(plan, workers, clock))
            if config.data_service is not None:
                say(ProgressStep("service-cluster", service=config.data_service), None)
                measured = _measure_cluster(plan, config, clock, train)
                failed = measured.reason
                if failed is not None and failed.code == "service-error" and note:
                    note(Reason("data-service-failed", because=failed))
                measurements.append(measured)
            refused = [
                refused_blocker(m.reason.detail, plan.base.up_to)
                for m in measurements
                if m.reason is not None and m.reason.code == "service-refused"
            ]
            if refused:
                # The same failure on each service tried: one blocker, and nothing moves as is.
                blockers.append(refused[0])
                cut = None
    # A batching stage at or before the cut: batches cross to this host, not elements.
    batched = cut is not None and any("batch" in stages[i].kind for i in upstream_of(stages, cut))
    if cut is not None and cut < len(stages) - 1 and not batched:
        notes.append(Reason("distribute-before-batch"))
    return ScaleOut(
        checked=True,
        compatible=not blockers,
        blockers=blockers,
        distribute_after_index=cut,
        distribute_after="" if cut is None else stage_label(stages[cut]),
        moves_whole_pipeline=cut is not None and cut == len(stages) - 1,
        measurements=measurements,
        wall_time_s=clock.now() - began,
        requested=_requested(config),
        notes=notes,
        stages=[] if pipeline.stages and same else stages,
    )


def _too_little_moves(
    stages: Sequence[StageStats], cut: int | None, blockers: Sequence[ServiceBlocker]
) -> Reason | None:
    """Why the part that can move is too little of the pipeline's cost to move, or None."""
    if cut is None or cut == len(stages) - 1:
        return None
    if (share := moved_share(stages, cut)) is None or share >= MIN_MOVED_SHARE:
        return None
    pinned = ", ".join(b.stage for b in blockers if b.kind == "python-function")
    port = Reason("port-to-tf", detail=pinned)
    return Reason("too-little-moves", detail=stage_label(stages[cut]), value=share, because=port)


@dataclass
class _Plan:
    """What is sent through the service: a private copy of the part that can move, and its
    measurement before anything is read (`base`; each measurement sets its own `where`)."""

    copy: Any
    elements_per_batch: float  # the part's elements per output batch of the pipeline
    base: ServiceMeasurement  # with a reason when the part could not be copied

    @classmethod
    def of(
        cls,
        walked: WalkedPipeline,
        stages: Sequence[StageStats],
        pipeline: PipelineBenchmark,
        cut: int,
    ) -> _Plan:
        from pipediag.bench.isolate import IsolationError, isolated_copy
        from pipediag.bench.stages import elements_per_output_batch

        whole = cut == len(stages) - 1
        target = walked.dataset if whole else walked.stages[cut].dataset
        factor = 1.0 if whole else (elements_per_output_batch(walked.stages)[cut] or 1.0)
        base = ServiceMeasurement(
            where="local",
            processing_mode=PROCESSING_MODE,
            up_to="" if whole else stage_label(stages[cut]),  # "" when the whole pipeline moves
            local_batches_per_s=pipeline.batches_per_s if whole else stages[cut].batches_per_s,
        )
        try:
            copy, notes = isolated_copy(target)
        except IsolationError as exc:
            return cls(None, factor, replace(base, reason=Reason("not-copied", detail=str(exc))))
        # Endless, so a short dataset does not end a read early: reads are bounded by time.
        return cls(copy.repeat(), factor, replace(base, notes=notes))


def _measure_local(plan: _Plan, workers: int, clock: Clock) -> ServiceMeasurement:
    base = replace(plan.base, where="local", workers=workers, notes=list(plan.base.notes))
    if base.reason is not None:
        return base
    began = clock.now()
    try:
        with LocalService(workers, clock=clock) as service:
            base = replace(base, address=service.address, startup_s=service.startup_s)
            measured = _measured_through(base, plan, service.target, clock, service.worker_cpu_s)
    except (ServiceError, OSError) as exc:
        return replace(base, reason=_service_failed(exc), wall_time_s=clock.now() - began)
    one_host = Reason("one-host", value=workers, limit=os.cpu_count())
    return replace(measured, wall_time_s=clock.now() - began, notes=[*base.notes, one_host])


def _measure_cluster(
    plan: _Plan, config: RunConfig, clock: Clock, train: TrainThrough | None
) -> ServiceMeasurement:
    assert config.data_service is not None
    try:
        address = parse_address(config.data_service)
    except ValueError as exc:  # the CLI checks it; an API caller may not have
        reason = Reason("service-error", detail=str(exc))
        return ServiceMeasurement(where="cluster", reason=reason, up_to=plan.base.up_to)
    base = replace(plan.base, where="cluster", address=address, notes=list(plan.base.notes))
    if base.reason is not None:
        return base
    began = clock.now()
    try:
        workers = probe_dispatcher(address)
        base = replace(base, workers=len(workers))
        if not workers:
            reason = Reason("no-workers", detail=address)
            return replace(base, reason=reason, wall_time_s=clock.now() - began)
        measured = _measured_through(base, plan, f"grpc://{address}", clock, None)
    except ServiceError as exc:
        return replace(base, reason=_service_failed(exc), wall_time_s=clock.now() - began)
    if measured.batches_per_s:
        measured = replace(measured, per_worker_batches_per_s=measured.batches_per_s / len(workers))
    if config.data_service_train and measured.measured:
        rate: float | None = None
        why: Reason | None = Reason("part-only")
        if train is None:
            why = Reason("no-train-step-service")
        elif not plan.base.up_to:  # the whole pipeline
            rate, why = train(plan.copy, f"grpc://{address}")
        measured = replace(measured, train_steps_per_s=rate, train_reason=why)
    return replace(measured, wall_time_s=clock.now() - began)


def _measured_through(
    base: ServiceMeasurement,
    plan: _Plan,
    target: str,
    clock: Clock,
    worker_cpu: Callable[[], float | None] | None,
) -> ServiceMeasurement:
    """`base` measured: the part read through the service, then its first batch resent; ServiceError
    for a stalled service. Spent iterators go before any server stops."""
    with owned(None) as releaser:
        try:
            read = bounded(
                lambda: read_through(
                    plan.copy, target, clock=clock, teardown=releaser, worker_cpu=worker_cpu
                ),
                READ_MAX_SECONDS + READ_GRACE_S,
            )
        except ServiceError:
            raise
        except Exception as exc:  # the user's pipeline failed on a worker: a blocker
            return replace(base, reason=Reason("service-refused", detail=tf_error_text(exc)))
        transfer: BatchTiming | None = None
        if read.sample is not None:
            sample = read.sample
            with contextlib.suppress(Exception):  # the ceiling is a bonus: keep the read
                transfer = bounded(
                    lambda: transfer_ceiling(sample, target, clock=clock, teardown=releaser),
                    TRANSFER_MAX_SECONDS + READ_GRACE_S,
                )
    timing, factor = read.timing, plan.elements_per_batch or 1.0
    if (rate := timing.batches_per_s) is None:
        return replace(base, reason=Reason("too-few-elements"))
    made = len(timing.latencies_s) + 1  # the warm-up element too
    ceiling = None if transfer is None else transfer.batches_per_s
    # Receiving is timed on the transfer read, batches back to back: in a slower read the
    # client's threads also poll between batches, CPU no batch costs.
    receiving = transfer.cpu_s_per_batch if transfer is not None else None
    if receiving is None:
        receiving = timing.cpu_s_per_batch
    return replace(
        base,
        measured=True,
        first_batch_s=timing.first_batch_s,
        batches=len(timing.latencies_s),
        duration_s=timing.duration_s,
        batches_per_s=rate / factor,
        bytes_per_batch=None if read.bytes_per_batch is None else read.bytes_per_batch * factor,
        transfer_batches_per_s=None if ceiling is None else ceiling / factor,
        transfer_s_per_batch=None if not ceiling else factor / ceiling,
        consumer_cpu_s_per_batch=None if receiving is None else receiving * factor,
        worker_cpu_s_per_batch=(
            None if read.worker_cpu_s is None else read.worker_cpu_s / made * factor
        ),
    )


def _service_failed(exc: ServiceError | OSError) -> Reason:
    if isinstance(exc, ServiceError):
        return Reason("service-error", because=exc.reason)
    # A server process could not be started: the error's first line.
    lines = str(exc).strip().splitlines()
    return Reason("service-error", detail=lines[0] if lines else type(exc).__name__)
