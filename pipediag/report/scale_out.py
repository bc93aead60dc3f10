"""The scale-out section: can the pipeline move to a tf.data service, and what would it give."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipediag.report.reasons import Reason
from pipediag.report.stages import StageStats
from pipediag.report.vocabulary import (
    BlockerKind,
    LimitedBy,
    ProcessingMode,
    RateSource,
    ServiceWhere,
)


@dataclass(frozen=True)
class ServiceBlocker:
    """Why the training dataset cannot run on tf.data service workers as it is (docs/design.md,
    "tf.data service"). Its facts, by kind (`renderers/scale_out.py` words them): "python-function":
    the stage, whether a `generator` source, and the `python_ops` it calls (none when its ops do not
    say); "local-path": the stage reading the files (no `stage_index`: the pipeline), a sample in
    `paths` (`paths_total` in all) and `shared_fs`, their filesystem where other machines mount it;
    "refused": the service's `error` ("": no batch came back) on the pipeline up to `up_to` ("": the
    whole). `detail_as_written`: older words."""

    kind: BlockerKind
    stage_index: int | None = None
    stage: str = ""
    source: str | None = None
    generator: bool = False
    python_ops: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    paths_total: int = 0
    shared_fs: str | None = None
    error: str = ""
    up_to: str = ""
    detail_as_written: str = ""


@dataclass(frozen=True)
class ServiceMeasurement:
    """The pipeline (or its movable part) read through a real tf.data service, and one batch
    sent again and again, the transfer ceiling (docs/design.md, "tf.data service"). Rates are
    in output batches; the workers' CPU per batch is known for local workers only."""

    where: ServiceWhere
    address: str = ""
    workers: int = 0
    processing_mode: ProcessingMode = ""
    measured: bool = False
    reason: Reason | None = None
    # What was distributed: the pipeline up to this stage (its label); "" when the whole.
    up_to: str = ""
    startup_s: float | None = None  # starting the local dispatcher and workers
    first_batch_s: float | None = None
    batches: int = 0
    duration_s: float = 0.0
    batches_per_s: float | None = None
    per_worker_batches_per_s: float | None = None
    local_batches_per_s: float | None = None  # the same part read in this process, for contrast
    bytes_per_batch: float | None = None
    transfer_batches_per_s: float | None = None
    transfer_s_per_batch: float | None = None
    consumer_cpu_s_per_batch: float | None = None
    worker_cpu_s_per_batch: float | None = None
    # Training through the service (cluster, when asked): the user's train step fed by it.
    train_steps_per_s: float | None = None
    train_reason: Reason | None = None
    wall_time_s: float = 0.0
    notes: list[Reason] = field(default_factory=list)


@dataclass(frozen=True)
class ScaleOutPrediction:
    """How many workers would feed the train step, and what training would then gain; the
    predicted rate is a min, `limited_by` names which (docs/design.md, "tf.data service")."""

    target_steps_per_s: float | None = None  # compute alone T: the rate to feed
    training_steps_per_s: float | None = None  # A, as trained now
    per_worker_batches_per_s: float | None = None
    per_worker_source: RateSource = ""  # cluster, local service, pipeline alone, stage timing
    transfer_batches_per_s: float | None = None
    transfer_source: RateSource = ""  # cluster, local service or an assumed network
    local_s_per_batch: float | None = None  # stages that stay on the training host
    workers_needed: int | None = None
    predicted_steps_per_s: float | None = None
    predicted_speedup: float | None = None
    limited_by: LimitedBy = ""
    reason: Reason | None = None  # why there is no prediction


@dataclass(frozen=True)
class ScaleOut:
    """`distribute_after_index` places the `distribute` call: the last stage that can move
    (everything up to it runs on workers); None when nothing worth moving can."""

    checked: bool = False
    compatible: bool | None = None
    blockers: list[ServiceBlocker] = field(default_factory=list)
    distribute_after_index: int | None = None
    distribute_after: str = ""
    moves_whole_pipeline: bool = False
    measurements: list[ServiceMeasurement] = field(default_factory=list)
    prediction: ScaleOutPrediction | None = None
    code: str = ""
    wall_time_s: float = 0.0
    requested: bool = False  # --scale-out or --data-service was given
    # Whether summaries show it: asked for, or input-bound with the host CPU the limit.
    shown: bool = False
    notes: list[Reason] = field(default_factory=list)
    # The stages as walked for this check, only when the report has no stage timing
    # (`PipelineBenchmark.stages` empty): `distribute_after_index` points into these then.
    stages: list[StageStats] = field(default_factory=list)
