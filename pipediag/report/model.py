"""The report: plain, frozen data that every renderer reads and the JSON file stores. Times
(`t_s`, `start_s`) are seconds on the session's clock from the diagnosis's start, one axis for
steps and samples; later fields have defaults (docs/design.md, "Rules of the house")."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pipediag.report.model_side import ModelTrial, TopOp
from pipediag.report.prescription import Prescription
from pipediag.report.reasons import Reason
from pipediag.report.samples import GpuAnalysis, GpuSection, HostContention, HostSection
from pipediag.report.scale_out import ScaleOut
from pipediag.report.stages import LatencyStats, StageStats
from pipediag.report.trials import FixTrial
from pipediag.report.vocabulary import (
    ComputeAloneMethod,
    ComputeAloneSource,
    ContentionKind,
    CostPart,
    DataPassReason,
    ExitStatus,
    FixName,
    GainBasis,
    GpuIdleCause,
    InputWaitSource,
    KerasBackend,
    NoVerdictReason,
    PhaseName,
    RateBlockKind,
    RuleId,
    Severity,
    StepLabel,
    StopReason,
    SuggestionKind,
    TrainStyle,
    TrialOutcome,
    UncertainReason,
    VerdictLabel,
)
from pipediag.report.watch import WatchSection

# What each version changed: CHANGELOG.md; how older reports are converted: `report/upgrades.py`.
SCHEMA_VERSION = 10


def timed_steps(steps: Iterable[StepRecord]) -> list[StepRecord]:
    """The steps a verdict reads: every one but the warm-up."""
    return [s for s in steps if s.label != "warmup"]


@dataclass(frozen=True)
class PipelineOptions:
    """The options in force, TF's defaults filled in (docs/design.md, "tf.data behaviours")."""

    autotune: bool = True
    apply_default_optimizations: bool = True
    inject_prefetch: bool = True
    map_parallelization: bool = True
    map_and_batch_fusion: bool = True
    parallel_batch: bool = True
    map_fusion: bool = False
    private_threadpool_size: int | None = None  # None: TF sizes it from `cpu_count` at run time
    max_intra_op_parallelism: int | None = None  # None: TF's default
    deterministic: bool = True
    cpu_count: int | None = None  # the cores this process could use when the options were read


@dataclass(frozen=True)
class PipelineBenchmark:
    """Phase 1: the training dataset read alone, on its own iterator."""

    measured: bool
    reason: Reason | None = None
    dataset: str = ""
    batches: int = 0
    duration_s: float = 0.0
    first_batch_s: float | None = None
    batches_per_s: float | None = None
    cpu_s_per_batch: float | None = None  # process CPU seconds, every thread counted
    latency: LatencyStats | None = None
    exhausted: bool = False
    stages: list[StageStats] = field(default_factory=list)
    notes: list[Reason] = field(default_factory=list)  # what the private copy left out
    options: PipelineOptions | None = None  # None where they were not read
    # What-if pipelines measured beside the original (`bench.whatif.verify_fixes`).
    trials: list[FixTrial] = field(default_factory=list)
    # Why stage timing and fix trials did not run (input cost too small); None: ran, or off.
    deep_skipped_reason: Reason | None = None
    # A `cache()` whose stream ends each epoch (no `repeat()` after it): a later epoch reads
    # the filled cache, so measuring goes on into it (`phases.measure_on`).
    cache_ends_each_epoch: bool = False
    prescription: Prescription | None = None
    # Batches in one pass; None: infinite or unknown (docs/design.md, "Epoch starts in the gains").
    pass_batches: int | None = None


@dataclass(frozen=True)
class StepRecord:
    """One train step: when it started, how long it took, how long it waited for input."""

    index: int
    start_s: float
    duration_s: float
    input_wait_s: float | None
    label: StepLabel
    epoch: int = 0
    # Long runs merge old steps: duration_s and input_wait_s are then totals over `count` steps.
    count: int = 1

    @property
    def compute_s(self) -> float | None:
        """The rest of the step: model work plus framework overhead."""
        return None if self.input_wait_s is None else max(0.0, self.duration_s - self.input_wait_s)


@dataclass(frozen=True)
class DataPass:
    """A pass over a dataset that was not training, neither timed nor counted: `by` the Keras call
    that made it ("TextVectorization.adapt"; None: a loop), `where` its line ("train.py:58")."""

    batches: int
    reason: DataPassReason
    where: str | None = None
    by: str | None = None
    dataset: str = ""
    duration_s: float = 0.0
    # Passes alike (the same call, line and dataset: a validation loop each epoch), merged.
    passes: int = 1


@dataclass(frozen=True)
class EpochStart:
    """One epoch's start under fit: from `on_epoch_begin` to its first step's begin, where
    Keras makes the epoch's iterator and drops the last one (docs/design.md, "Epoch starts")."""

    epoch: int
    duration_s: float
    # `steps_per_epoch` or the dataset's cardinality, as fit was told; None when unknown.
    steps_per_epoch: int | None = None


@dataclass(frozen=True)
class TrainSection:
    """Phase 2: the full train step, as the user's script ran it."""

    style: TrainStyle = "none"
    input_wait_source: InputWaitSource = "unavailable"
    warmup_steps: int = 0
    measured_steps: int = 0
    merged_records: int = 0
    steps_per_s: float | None = None
    step_time: LatencyStats | None = None
    input_wait: LatencyStats | None = None
    steps: list[StepRecord] = field(default_factory=list)
    # Passes over the data before or beside training that were not taken for train steps.
    skipped_passes: list[DataPass] = field(default_factory=list)
    epoch_starts: list[EpochStart] = field(default_factory=list)  # under fit
    keras_backend: KerasBackend | None = None  # under fit; None: not Keras 3, or no fit
    # Under fit: its time around the train function (docs/design.md, "Fixes tried on training").
    fit_overhead_s: float | None = None


def no_verdict_reason(train: TrainSection) -> NoVerdictReason:
    """Why a train section whose steps give no verdict gives none. Here, below the analysis, because
    reading a report written before the code was typed gives it too (`report/upgrades.py`)."""
    if not train.steps:
        return "no-training" if train.skipped_passes else "no-steps"
    if train.measured_steps == 0:
        return "warmup-only"
    if any(s.label in ("input-bound", "compute-bound") for s in train.steps):
        # Steps a verdict could read: an older report's own reason, not one of these.
        return "unknown"
    return "wait-not-measured"


@dataclass(frozen=True)
class RateBlock:
    """One block of the alternation of rates (docs/design.md, "Rates in alternation"):
    `steps` and `seconds` are its steady part, after `dropped_steps` of transition."""

    kind: RateBlockKind
    start_s: float
    steps: int
    seconds: float
    dropped_steps: int = 0
    cpu_s_per_step: float | None = None  # process CPU over the block, all threads

    @property
    def steps_per_s(self) -> float | None:
        return self.steps / self.seconds if self.seconds > 0 and self.steps else None


@dataclass(frozen=True)
class ComputeAlone:
    """The train step alone, T: the user's own step on one cached batch, the pipeline idle
    (docs/design.md, "Input cost"); where not `measured`, `reason` says why T is estimated."""

    measured: bool
    reason: Reason | None = None
    method: ComputeAloneMethod = ""
    start_s: float | None = None
    duration_s: float = 0.0
    warmup_steps: int = 0
    steps: int = 0
    steps_per_s: float | None = None
    step_time: LatencyStats | None = None
    restored_variables: int = 0
    # Process CPU seconds per step, all threads: the step's own appetite for cores.
    cpu_s_per_step: float | None = None
    # Training's and the step alone's blocks as they ran; empty: the step alone ran in one piece.
    blocks: list[RateBlock] = field(default_factory=list)
    # The observer check's quiet and watched training blocks after the rounds, in turn: read
    # for `Verdict.observer_effect` only, never for the cost.
    observer_blocks: list[RateBlock] = field(default_factory=list)
    block_steps: int = 0  # steps per block, before the transition is dropped
    # Where the step's time goes, and model-side changes measured on the step alone
    # (`report/model_side.py`); `model_side_s` is the time they added.
    top_ops: list[TopOp] = field(default_factory=list)
    trials: list[ModelTrial] = field(default_factory=list)
    top_ops_reason: Reason | None = None
    model_side_reason: Reason | None = None
    model_side_s: float = 0.0


@dataclass(frozen=True)
class CostSplit:
    """What input costs, in parts that add up to `Verdict.input_cost_fraction`, and the evidence for
    contention (docs/design.md, "Input cost"); None where not measured."""

    wait: float = 0.0
    contention: float = 0.0
    fetch: float = 0.0
    dominant: CostPart | None = None  # None when input costs under 5%
    pipeline_cores_busy: float | None = None
    free_cores: float | None = None
    pull_s: float | None = None  # the per-pull overhead behind `fetch`, seconds per step
    contention_kind: ContentionKind = ""
    # Each epoch's start-up (iterator creation, buffer fills), spread over the epoch's steps.
    epoch_start: float = 0.0
    epoch_start_s: float | None = None  # the median start-up, seconds
    epoch_steps: int | None = None  # the steps it is spread over
    epoch_start_stage: str = ""  # the stage that likely makes it, e.g. "shuffle(10000)"
    # False where pulls run inside a tf.function: `wait` then holds contention too, read from rates.
    waits_timed: bool = True


@dataclass(frozen=True)
class PhaseVerdict:
    """The verdict over one stretch of training whose input cost differs from the rest
    (epoch 1 filling a `cache()`, the epochs after reading from it). Epochs count from 0."""

    first_epoch: int
    last_epoch: int
    steps: int
    steps_per_s: float | None
    input_wait_fraction: float | None
    input_cost_fraction: float | None
    label: VerdictLabel = "unknown"


@dataclass(frozen=True)
class Verdict:
    """What limits the training rate, how badly, the figures behind it: numbers and codes only."""

    label: VerdictLabel = "unknown"
    input_wait_fraction: float | None = None
    severity: Severity = "unknown"
    input_bound_steps: int = 0
    compute_bound_steps: int = 0
    compute_alone_steps_per_s: float | None = None
    pipeline_headroom: float | None = None
    gpu_idle_cause: GpuIdleCause | None = None  # where a GPU was sampled and idle
    # Input cost 1 - A/T decides the label, the wait share beside it (docs/design.md, "Input cost").
    input_cost_fraction: float | None = None
    training_steps_per_s: float | None = None
    compute_alone_source: ComputeAloneSource = ""
    compute_alone_reason: Reason | None = None  # why estimated
    cost_split: CostSplit | None = None
    phases: list[PhaseVerdict] = field(default_factory=list)
    # The cost's 90% interval; None without the alternation (docs/design.md, "Input cost").
    input_cost_interval: list[float] | None = None
    # Other processes' cores while A and T ran, where material (docs/design.md, "A busy host").
    busy_host_cores: float | None = None
    # Why the label is "uncertain"; the `--steps` suggested (docs/design.md, "Too noisy to tell").
    uncertain_because: UncertainReason = ""
    steps_to_tell: int | None = None
    alternation_pairs: int | None = None  # None where T was not measured in alternation
    # The in-epoch cost training read with the pipeline's output held in memory, pooled into
    # the cost and its interval; None where not (docs/design.md, "The held output").
    held_output_cost: float | None = None
    no_verdict_because: NoVerdictReason = ""  # "" where there is a verdict
    observer_effect: ObserverEffect | None = None  # None unless `--observer-check` ran


@dataclass(frozen=True)
class ObserverEffect:
    """What pipediag's sampler threads cost the training they watch: `ratio`, the watched
    blocks' rate over the quiet ones', and its 90% interval (None under two pairs); under 1,
    training ran slower while watched (docs/design.md, "What pipediag costs a step")."""

    ratio: float
    low: float | None
    high: float | None
    pairs: int


@dataclass(frozen=True)
class Gain:
    """A fix's one gain, where it was measured, its interval where measured on training or the
    step alone; `speedup` None where not measured (docs/design.md, "The advisor")."""

    basis: GainBasis = "not-measured"
    speedup: float | None = None
    interval: list[float] | None = None

    def on(self, basis: GainBasis) -> float | None:
        return self.speedup if self.basis == basis else None


@dataclass(frozen=True)
class SuggestionWords:
    """A suggestion's heading and the evidence for it, in words."""

    title: str
    evidence: str = ""


@dataclass(frozen=True)
class Suggestion:
    """One fix or finding of a rule (`id`), the code to write and its one measured gain, and
    the facts its words are made from (docs/design.md, "The advisor")."""

    id: RuleId
    stage: str | None = None
    code: str = ""
    gain: Gain = field(default_factory=Gain)
    # Orders the fixes not measured on training; never shown (docs/design.md, "The advisor").
    estimate: float | None = None
    correctness_warning: bool = False
    kind: SuggestionKind = "fix"
    stage_index: int | None = None
    fix: FixName | None = None  # the rewrite whose trial it reports; None: a rule, no trial
    outcome: TrialOutcome | None = None
    # The reasons its evidence gives (docs/design.md, "Architecture").
    reason: Reason | None = None
    not_on_training: Reason | None = None
    not_verified: Reason | None = None
    refused_as_written: Reason | None = None
    # A report before schema 10 stored the words, not the facts they were made from.
    as_written: SuggestionWords | None = None


@dataclass(frozen=True)
class Environment:
    """Where the diagnosis ran."""

    python_version: str = ""
    platform: str = ""
    pipediag_version: str = ""
    tensorflow_version: str | None = None
    keras_version: str | None = None
    cpu_count: int = 0
    gpus: list[str] = field(default_factory=list)
    gpu_reason: Reason | None = None


@dataclass(frozen=True)
class ExitInfo:
    """How the user's script ended."""

    status: ExitStatus = "ok"
    code: int = 0
    error: str | None = None


@dataclass(frozen=True)
class TaskInfo:
    """This process's task in a multi-worker job, from `TF_CONFIG`; `cluster_size` counts
    every task of the cluster, all types (docs/design.md, "Multi-worker jobs")."""

    type: str
    index: int
    cluster_size: int = 1

    @property
    def name(self) -> str:
        """`worker-0`: the directory its report is written to, and its row in a fleet report."""
        return f"{self.type}-{self.index}"


@dataclass(frozen=True)
class PhaseSpan:
    """One phase of the diagnosis on the report's time axis (e.g. the pipeline benchmark)."""

    name: PhaseName
    start_s: float
    duration_s: float


@dataclass(frozen=True)
class Report:
    """Everything one diagnosis found; the JSON report is this, serialised."""

    script: str
    args: list[str] = field(default_factory=list)
    schema_version: int = SCHEMA_VERSION
    created_utc: str = ""
    environment: Environment = field(default_factory=Environment)
    verdict: Verdict = field(default_factory=Verdict)
    pipeline: PipelineBenchmark = field(default_factory=lambda: PipelineBenchmark(measured=False))
    train: TrainSection = field(default_factory=TrainSection)
    host: HostSection = field(default_factory=lambda: HostSection(available=False))
    gpu: GpuSection = field(default_factory=lambda: GpuSection(available=False))
    suggestions: list[Suggestion] = field(default_factory=list)
    complete: bool = False
    stop_reason: StopReason = ""
    exit: ExitInfo = field(default_factory=ExitInfo)
    wall_time_s: float = 0.0
    phase_times_s: dict[PhaseName, float] = field(default_factory=dict)
    phases: list[PhaseSpan] = field(default_factory=list)
    notes: list[Reason] = field(default_factory=list)
    gpu_analysis: GpuAnalysis | None = None
    host_contention: HostContention | None = None
    compute_alone: ComputeAlone | None = None
    # Seconds to the first verdict line (after the measured steps and compute alone); None if none.
    first_verdict_s: float | None = None
    task: TaskInfo | None = None  # None for a single process
    # Unix time of time zero: a job's workers on one clock (docs/design.md, "Multi-worker jobs").
    origin_unix_s: float | None = None
    scale_out: ScaleOut | None = None  # None when not checked
    watch: WatchSection | None = None  # None for a diagnosis
