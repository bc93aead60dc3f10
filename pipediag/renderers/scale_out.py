"""The tf.data service section in words, for the text and the PNG; shown only where
`ScaleOut.shown` (docs/design.md, "tf.data service")."""

from __future__ import annotations

import os
import textwrap

from pipediag.renderers.numbers import BINARY_UNITS, bytes_text, counted, ms
from pipediag.renderers.reason_words import NO_BATCH_CAME_BACK, reason_words
from pipediag.report.model import Report
from pipediag.report.scale_out import (
    ScaleOut,
    ScaleOutPrediction,
    ServiceBlocker,
    ServiceMeasurement,
)

SOURCE_WORDS = {
    "cluster": "measured per worker on the cluster",
    "pipeline-alone": "the pipeline alone on this host",
    "stage-timing": "the movable part alone on this host, from stage timing",
    "local-service": "measured through the local service",
    "assumed-network": "what an assumed 10 Gbit/s link carries",
}
LIMIT_WORDS = {
    "compute": "the train step itself",
    "transfer": "moving batches to this host",
    "local-stages": "the stages that stay on this host",
}
CODE_INDENT = "  "
# Local files a blocker names (all are counted; `ServiceBlocker.paths` keeps a few more).
PATHS_SHOWN = 3


def scale_out_lines(report: Report, width: int | None = None) -> list[str]:
    """`width` wraps the prose (not the code)."""
    if (section := report.scale_out) is None or not section.shown:
        return []
    lines = [_status(section)]
    lines += [f"blocker: {blocker_words(b)}" for b in section.blockers]
    lines += [line for measurement in section.measurements for line in _measurement(measurement)]
    if section.prediction is not None:
        lines.append(_prediction(section.prediction))
    lines += [f"note: {reason_words(n)}" for n in section.notes]
    if width is not None:
        wrapped = [textwrap.wrap(line, width, subsequent_indent="  ") or [line] for line in lines]
        lines = [part for parts in wrapped for part in parts]
    if section.code:
        lines.append("code:")
        lines += [f"{CODE_INDENT}{line}" for line in section.code.splitlines()]
    return lines


def scale_out_headlines(report: Report) -> list[str]:
    """At most two lines for the PNG's foot: the status, then the prediction or a blocker."""
    if (section := report.scale_out) is None or not section.shown:
        return []
    lines = [_status(section)]
    if section.prediction is not None and section.prediction.workers_needed is not None:
        lines.append(_prediction(section.prediction))
    elif section.blockers:
        lines.append(f"blocker: {blocker_words(section.blockers[0])}")
    return lines


def blocker_words(blocker: ServiceBlocker) -> str:
    """What keeps the pipeline from the service as it is, and what to do about it."""
    if blocker.detail_as_written:
        return blocker.detail_as_written
    if blocker.kind == "python-function":
        return _python_function_words(blocker)
    if blocker.kind == "local-path":
        return _local_path_words(blocker)
    part = f"pipeline up to {blocker.up_to}" if blocker.up_to else "whole pipeline"
    return f"the service failed on the {part} when tried: {blocker.error or NO_BATCH_CAME_BACK}"


def _python_function_words(blocker: ServiceBlocker) -> str:
    if blocker.generator:
        return (
            f"{_stage_at(blocker)} runs a Python generator in this process: workers "
            "cannot call it. Write the data to TFRecord files, or build it with TF ops "
            "(from_tensor_slices, list_files + TFRecordDataset)"
        )
    ops = " and ".join(blocker.python_ops) or "Python (tf.py_function or tf.numpy_function)"
    return (
        f"{_stage_at(blocker)} calls {ops}: a worker cannot run this process's Python "
        "functions. Port it to TF ops (tf.image, tf.io, tf.strings), or keep it and the "
        "stages after it on this host"
    )


def _local_path_words(blocker: ServiceBlocker) -> str:
    reader = "the pipeline" if blocker.stage_index is None else _stage_at(blocker)
    if blocker.shared_fs:
        fix = (
            f"they are on a {blocker.shared_fs} filesystem: mount it at the same path on "
            "every worker"
        )
    else:
        fix = (
            "workers on other machines cannot see them: put them on a shared filesystem "
            "(NFS, mounted at the same path) or an object store (gs://, s3://) and read them "
            "from there; workers on this host (--scale-out) can read them"
        )
    return f"{reader} reads {_files(blocker.paths, blocker.paths_total)}: {fix}"


def _files(paths: list[str], total: int) -> str:
    """ "16 local files in /data/ (shard-000.tfrecord, shard-001.tfrecord, ...)"."""
    count, shown = counted(total, "local file"), paths[:PATHS_SHOWN]
    more = ", ..." if total > len(shown) else ""
    folder = os.path.commonpath(shown) if shown else ""
    if folder and all(os.path.dirname(p) == folder for p in shown):
        names = ", ".join(os.path.basename(p) for p in shown)
        return f"{count} in {folder}{os.sep} ({names}{more})"
    return f"{count} ({', '.join(shown)}{more})"


def _stage_at(blocker: ServiceBlocker) -> str:
    """ "map(parse) at train.py:12": the stage, and where the script builds it."""
    return blocker.stage + (f" at {blocker.source}" if blocker.source else "")


def _status(section: ScaleOut) -> str:
    blockers = counted(len(section.blockers), "blocker")
    if section.distribute_after_index is None:
        return (
            f"tf.data service: cannot move as is ({blockers}); "
            "nothing worth moving can run on a worker"
        )
    where = f"distribute after {section.distribute_after}"
    if section.compatible:
        return f"tf.data service: the whole pipeline can move; {where}"
    if section.moves_whole_pipeline:
        return f"tf.data service: the whole pipeline can move once fixed ({blockers}); {where}"
    return f"tf.data service: part can move ({blockers}); {where}, the rest stays here"


def _measurement(m: ServiceMeasurement) -> list[str]:
    if m.where == "local":
        where = f"this host, {counted(m.workers, 'local worker')}"
    else:
        where = f"grpc://{m.address}" + (f", {counted(m.workers, 'worker')}" if m.workers else "")
    if m.startup_s is not None:
        where += f" (started in {m.startup_s:.1f} s)"
    if not m.measured:
        why = f": {reason_words(m.reason)}" if m.reason else ""
        return [f"through {where}: not measured{why}"]
    facts = [f"{m.batches_per_s:.1f} batches/s through the service"]
    if m.local_batches_per_s:
        facts[0] += f" vs {m.local_batches_per_s:.1f} in this process"
    if m.per_worker_batches_per_s:
        facts.append(f"{m.per_worker_batches_per_s:.1f} per worker")
    if m.bytes_per_batch is not None:
        facts.append(f"{bytes_text(m.bytes_per_batch, BINARY_UNITS)} per batch")
    if m.transfer_s_per_batch and m.transfer_batches_per_s:
        facts.append(
            f"transfer {m.transfer_s_per_batch * 1e3:.2f} ms per batch "
            f"(at most {m.transfer_batches_per_s:.0f} batches/s)"
        )
    cpu = []
    if m.consumer_cpu_s_per_batch is not None:
        cpu.append(f"this process {ms(m.consumer_cpu_s_per_batch)}")
    if m.worker_cpu_s_per_batch is not None:
        cpu.append(f"the workers {ms(m.worker_cpu_s_per_batch)}")
    if cpu:
        facts.append(f"CPU per batch: {', '.join(cpu)}")
    if m.train_steps_per_s is not None:
        facts.append(f"training fed by it {m.train_steps_per_s:.1f} steps/s")
    elif m.train_reason:
        facts.append(f"training not measured: {reason_words(m.train_reason)}")
    part = f" (pipeline up to {m.up_to})" if m.up_to else ""
    notes = [f"note: {reason_words(n)}" for n in m.notes]
    return [f"measured on {where}{part}: {'; '.join(facts)}", *notes]


def _prediction(p: ScaleOutPrediction) -> str:
    if p.workers_needed is None or p.predicted_steps_per_s is None:
        return f"prediction: none ({reason_words(p.reason)})" if p.reason else "prediction: none"
    assert p.per_worker_batches_per_s is not None
    workers = counted(p.workers_needed, "worker")
    source = SOURCE_WORDS.get(p.per_worker_source, p.per_worker_source)
    text = (
        f"prediction: {workers} at {p.per_worker_batches_per_s:.1f} batches/s each ({source}) "
        f"feed {p.predicted_steps_per_s:.1f} steps/s"
    )
    if p.predicted_speedup is not None and p.training_steps_per_s:
        text += f", training {p.predicted_speedup:.1f}x its {p.training_steps_per_s:.1f} steps/s"
    text += f"; limited by {LIMIT_WORDS.get(p.limited_by, p.limited_by)}"
    if p.limited_by == "transfer" and p.transfer_source:
        text += f" ({SOURCE_WORDS.get(p.transfer_source, p.transfer_source)})"
    if p.target_steps_per_s:
        text += f"; the train step alone runs {p.target_steps_per_s:.1f} steps/s"
    return text
