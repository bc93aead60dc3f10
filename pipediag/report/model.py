"""The report: plain, frozen data that every renderer reads and the JSON file stores.

Times are seconds from the start of the diagnosis (`t_s`, `start_s`) on the session's
monotonic clock, so the step timeline, host samples and GPU samples share one axis.
Units are in the field names. Fields added later must have defaults, so that older
reports still load (see `report/io.py`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pipediag.report.vocabulary import (
    BALANCED,
    BLOCKER_LOCAL_PATH,
    BLOCKER_PYTHON,
    BLOCKER_REFUSED,
    COMPUTE_BOUND,
    COST_CONTENTION,
    COST_FETCH,
    COST_WAIT,
    ESTIMATED,
    FROM_ASSUMED_NETWORK,
    FROM_CLUSTER,
    FROM_LOCAL_SERVICE,
    FROM_PIPELINE_ALONE,
    FROM_STAGE_TIMING,
    INPUT_BOUND,
    KERAS_PASS,
    LIMITED_BY_COMPUTE,
    LIMITED_BY_LOCAL,
    LIMITED_BY_TRANSFER,
    MEASURED,
    NO_TRAIN_STEP,
    SERVICE_CLUSTER,
    SERVICE_LOCAL,
    UNKNOWN,
    WARMUP,
    AutoParallelBlocker,
    BlockerKind,
    BusySource,
    ComputeAloneMethod,
    ComputeAloneSource,
    CostPart,
    DataPassReason,
    ExitStatus,
    FixName,
    GpuIdleCause,
    InputWaitSource,
    LabelBasis,
    LimitedBy,
    ProcessingMode,
    RateSource,
    ServiceWhere,
    Severity,
    StepLabel,
    StopReason,
    SuggestionKind,
    TimeSource,
    TrainStyle,
    TrialStop,
    UtilSource,
    VerdictLabel,
)

# The vocabulary is typed in `report/vocabulary.py`; the words code imported from here before
# that module existed are re-exported (mypy reads `__all__` as the re-exports).
__all__ = [
    "BALANCED",
    "BLOCKER_LOCAL_PATH",
    "BLOCKER_PYTHON",
    "BLOCKER_REFUSED",
    "COMPUTE_BOUND",
    "COST_CONTENTION",
    "COST_FETCH",
    "COST_WAIT",
    "ComputeAloneSource",
    "CostPart",
    "DataPassReason",
    "ESTIMATED",
    "ExitStatus",
    "FROM_ASSUMED_NETWORK",
    "FROM_CLUSTER",
    "FROM_LOCAL_SERVICE",
    "FROM_PIPELINE_ALONE",
    "FROM_STAGE_TIMING",
    "GpuIdleCause",
    "INPUT_BOUND",
    "KERAS_PASS",
    "LIMITED_BY_COMPUTE",
    "LIMITED_BY_LOCAL",
    "LIMITED_BY_TRANSFER",
    "MEASURED",
    "NO_TRAIN_STEP",
    "SERVICE_CLUSTER",
    "SERVICE_LOCAL",
    "StepLabel",
    "StopReason",
    "SuggestionKind",
    "TrainStyle",
    "UNKNOWN",
    "VerdictLabel",
    "WARMUP",
]

# 3: what pipediag itself found about a stage or a fix trial is typed: a stage's
# `auto_parallel`, `not_measured` and `graph_error` left `settings` (which keeps the raw
# tf.data attributes); `FixTrial.details` strings became `FixTrial.facts`, numbers written as
# numbers; the verdict's headline is no longer stored as text (the summary layer words it
# from the verdict's figures). Version 1 and 2 reports are read and converted (`report/io.py`).
SCHEMA_VERSION = 3


def timed_steps(steps: Iterable[StepRecord]) -> list[StepRecord]:
    """The steps a verdict reads: every one but the warm-up."""
    return [s for s in steps if s.label != WARMUP]


@dataclass(frozen=True)
class LatencyStats:
    """Distribution of a duration over many events (batches or steps)."""

    count: int
    mean_s: float
    median_s: float
    p90_s: float
    min_s: float
    max_s: float


@dataclass(frozen=True)
class StageStats:
    """One stage of the input pipeline, listed from source (index 0) to output.

    `inputs` holds the indices of the stages this one reads, so multi-input stages (zip,
    concatenate, choose) keep the pipeline's shape in a flat list. `function` and `source`
    name the user's Python callable and where it is defined ("file.py:LINE"). Rates come from
    benchmarking the pipeline cut after this stage: `elements_per_s` counts what the stage
    itself yields (elements before a batch stage), `batches_per_s` is that rate expressed in
    the pipeline's output batches, and `own_s_per_batch` is the time this stage adds per
    output batch over its inputs.

    `kind` is a `StageKind`, or for a dataset op pipediag does not know, the op's own name
    kebab-cased (tf.data has more ops than pipediag names): hence `str`. `settings` are the
    raw tf.data attributes read from the dataset graph (`num_parallel_calls`, `batch_size`,
    ...), as the user would write them; what pipediag decides about a stage has its own fields.
    """

    index: int
    kind: str
    name: str = ""
    settings: dict[str, str] = field(default_factory=dict)
    function: str | None = None
    source: str | None = None
    batches_per_s: float | None = None
    bottleneck: bool = False
    inputs: list[int] = field(default_factory=list)
    uses_py_function: bool = False
    stateful: bool = False
    # A function TF adds itself (unbatch's `normalize`): the user cannot edit it.
    tf_internal: bool = False
    # Its functions draw random numbers: not deterministic, not cacheable.
    random: bool = False
    stateful_ops: list[str] = field(default_factory=list)
    elements_per_s: float | None = None
    own_s_per_batch: float | None = None
    # A sequential map: whether tf.data's `map_parallelization` runs it in parallel anyway,
    # and if not, why (`bench/structure.py`); None for other stages or options unreadable.
    auto_parallel: bool | None = None
    auto_parallel_blocker: AutoParallelBlocker | None = None
    # Why stage timing gave this stage no rate (the time ran out, a file cache); None if timed.
    not_measured: str | None = None
    # Why the dataset graph could not be read (on the last stage only); None when it was.
    graph_error: str | None = None


@dataclass(frozen=True)
class TrialFacts:
    """What a what-if trial found beside its rates: the facts a rule needs to explain a fix.

    `stopped` says why the interleaved rounds ended and `speedup_low`/`speedup_high` give the
    90% interval of their ratios (`bench/interleaved.py`); the `training_` ones are the same
    for the fix tried on training. The rest belong to one fix each; None where they do not
    apply or were not found.
    """

    stopped: TrialStop = ""
    speedup_low: float | None = None
    speedup_high: float | None = None
    training_stopped: TrialStop = ""
    training_speedup_low: float | None = None
    training_speedup_high: float | None = None
    # What was made private in the copies so the user's state is untouched (a file cache).
    isolation: str = ""
    # vectorize: elements the function was checked on, both ways.
    sample_elements: int | None = None
    # parallel-interleave: the cycle length tried (the cores).
    cycle_length: int | None = None
    # thread-cap: the private thread pool's size tried.
    threads: int | None = None
    # prefetch-end: the buffer size of the final prefetch raised to AUTOTUNE, None if added.
    existing_buffer: str | None = None
    # cache: the work it would keep, the elements of one epoch (None: infinite or unknown),
    # their size, the memory available and the time to fill it.
    prefix_s_per_batch: float | None = None
    elements: int | None = None
    cache_bytes: int | None = None
    available_bytes: int | None = None
    fill_s: float | None = None


@dataclass(frozen=True)
class FixTrial:
    """One what-if pipeline: a fix applied to a copy of the dataset graph, timed beside it.

    `speedup` is the measured pipeline-alone speedup (variant over original, medians of
    interleaved runs in the same process), not the end-to-end one: that is
    `training_speedup` where the fix was tried on training, and the advisor predicts it
    otherwise.
    `verified` is False when the fix could not be rewritten or run, and `reason` says why;
    `facts` carries the facts a rule needs to explain the fix (e.g. a cache's size).
    """

    fix: FixName
    stage_index: int | None = None
    stage: str = ""
    verified: bool = False
    reason: str | None = None
    baseline_batches_per_s: float | None = None
    variant_batches_per_s: float | None = None
    speedup: float | None = None
    rounds: int = 0
    facts: TrialFacts = field(default_factory=TrialFacts)
    # Process CPU seconds per batch (medians of the same runs): a fix can make batches come
    # faster yet cost the cores more (parallel calls) or less (vectorised, cached).
    baseline_cpu_s_per_batch: float | None = None
    variant_cpu_s_per_batch: float | None = None
    # The fix tried on training itself (`hooks/training_trial.py`): the user's train step fed
    # by the unedited copy and by the fixed one in turn, steps/s each (medians over
    # `training_rounds` interleaved rounds); `training_reason` says why it was not tried.
    training_baseline_steps_per_s: float | None = None
    training_variant_steps_per_s: float | None = None
    training_speedup: float | None = None
    training_rounds: int = 0
    training_reason: str | None = None
    # The vectorise check found the function not elementwise (or failing on a batch).
    unsafe: bool = False
    # A cache trial: whether the cached data fits in the memory available (None: other fixes).
    fits_in_memory: bool | None = None


@dataclass(frozen=True)
class PipelineBenchmark:
    """Phase 1: the training dataset read alone, on its own iterator."""

    measured: bool
    reason: str | None = None
    dataset: str = ""
    batches: int = 0
    duration_s: float = 0.0
    first_batch_s: float | None = None
    batches_per_s: float | None = None
    # Process CPU seconds per batch while read alone, every thread counted.
    cpu_s_per_batch: float | None = None
    latency: LatencyStats | None = None
    exhausted: bool = False
    stages: list[StageStats] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # `tf.data.Options` in force that change what runs (`bench.structure.effective_options`).
    options: dict[str, str] = field(default_factory=dict)
    # What-if pipelines measured beside the original (`bench.whatif.verify_fixes`).
    trials: list[FixTrial] = field(default_factory=list)
    # Why stage timing and fix trials did not run (input costs too little to matter); None
    # when they ran, or were turned off (`--no-stages`).
    deep_skipped_reason: str | None = None


@dataclass(frozen=True)
class StepRecord:
    """One train step: when it started, how long it took, how long it waited for input."""

    index: int
    start_s: float
    duration_s: float
    input_wait_s: float | None
    label: StepLabel
    epoch: int = 0
    # Consecutive steps this record stands for: long runs merge old steps to bound memory;
    # then duration_s and input_wait_s are totals over them.
    count: int = 1

    @property
    def compute_s(self) -> float | None:
        """The rest of the step: model work plus framework overhead."""
        if self.input_wait_s is None:
            return None
        return max(0.0, self.duration_s - self.input_wait_s)


@dataclass(frozen=True)
class DataPass:
    """A pass over a dataset that was not training, and so was neither timed nor counted.

    `by` names the Keras call that made it ("TextVectorization.adapt"), None for the
    script's own loop; `where` is the script's line that started it ("train.py:58").
    """

    batches: int
    reason: DataPassReason
    where: str | None = None
    by: str | None = None
    dataset: str = ""
    duration_s: float = 0.0
    # Passes alike (the same call, line and dataset: a validation loop each epoch), merged.
    passes: int = 1


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


@dataclass(frozen=True)
class ComputeAlone:
    """The train step alone: the user's own step on one cached batch, the pipeline idle.

    `method` says how it was run: "keras-train-function" (the model's compiled train function
    on a repeated cached batch, every variable it touches restored afterwards) or
    "cached-batch-loop" (the user's custom loop served the same cached batch for its last
    steps, before the step budget ended the script). `start_s` places it on the report's time
    axis. When `measured` is False, `reason` says why the rate is estimated instead.
    """

    measured: bool
    reason: str | None = None
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


@dataclass(frozen=True)
class CostSplit:
    """What input costs, as shares of training time, in parts that add up to the whole.

    `wait + contention + fetch == Verdict.input_cost_fraction`. Evidence for contention:
    `pipeline_cores_busy` is how many more cores the process kept busy while training than
    while the train step ran alone (the pipeline's threads), `free_cores` how many of the
    host's cores were idle while training (host samples); None where not sampled.
    """

    wait: float = 0.0
    contention: float = 0.0
    fetch: float = 0.0
    dominant: CostPart | None = None  # None when input costs under 5%
    pipeline_cores_busy: float | None = None
    free_cores: float | None = None
    pull_s: float | None = None  # the per-pull overhead behind `fetch`, seconds per step
    # The part of 1 - A/T that the pipeline's CPU cannot explain (the step alone ran faster
    # than waiting, fetching and the pipeline's cores account for: a shared host's noise);
    # left out of the cost.
    unexplained: float = 0.0


@dataclass(frozen=True)
class PhaseVerdict:
    """The verdict over one stretch of training whose input cost differs from the rest.

    E.g. epoch 1 filling a `cache()` and the epochs after reading from it.
    """

    name: str  # "epoch 1", "epochs 2-3"
    first_epoch: int
    last_epoch: int
    steps: int
    steps_per_s: float | None
    input_wait_fraction: float | None
    input_cost_fraction: float | None
    label: VerdictLabel = UNKNOWN


@dataclass(frozen=True)
class Verdict:
    """The answer: what limits the training rate, how badly, and why in one sentence."""

    label: VerdictLabel = UNKNOWN
    input_wait_fraction: float | None = None
    severity: Severity = "unknown"
    summary: str = ""
    input_bound_steps: int = 0
    compute_bound_steps: int = 0
    compute_alone_steps_per_s: float | None = None
    pipeline_headroom: float | None = None
    # What the GPU's own counters say (analysis/gpu.py), when a GPU was sampled.
    gpu_finding: str = ""
    gpu_idle_cause: GpuIdleCause | None = None
    # The three rates of DS-Analyzer: pipeline alone P (`PipelineBenchmark.batches_per_s`),
    # compute alone T (`compute_alone_steps_per_s`) and training A (`training_steps_per_s`).
    # Input cost = 1 - A/T: the share of training time input costs, so T/A is the speedup if
    # input were free. It decides the label (XProf's bands); the wait share stays beside it.
    input_cost_fraction: float | None = None
    training_steps_per_s: float | None = None
    compute_alone_source: ComputeAloneSource = ""
    compute_alone_reason: str | None = None  # why estimated
    cost_split: CostSplit | None = None
    phases: list[PhaseVerdict] = field(default_factory=list)


@dataclass(frozen=True)
class HostSample:
    """One psutil reading of the host."""

    t_s: float
    process_cpu_pct: float
    system_cpu_pct: float
    iowait_pct: float | None
    per_core_pct: list[float]
    process_rss_bytes: int
    system_mem_used_pct: float


@dataclass(frozen=True)
class HostSection:
    """Host CPU and memory over the run, from a psutil sampler thread."""

    available: bool
    reason: str | None = None
    cpu_count: int = 0
    interval_s: float = 0.0
    samples: list[HostSample] = field(default_factory=list)
    process_cpu_pct_mean: float | None = None
    system_cpu_pct_mean: float | None = None
    iowait_pct_mean: float | None = None
    process_rss_bytes_max: int | None = None
    sampler_cpu_s: float | None = None
    notes: list[str] = field(default_factory=list)  # sampler failures, one line per kind


@dataclass(frozen=True)
class GpuDevice:
    """A GPU that NVML found."""

    index: int
    name: str
    uuid: str = ""
    memory_total_bytes: int | None = None
    mig_enabled: bool = False  # MIG on: readings are the parent GPU's, not one MIG slice's
    util_source: UtilSource = ""
    gpm_supported: bool = False  # GPU Performance Monitoring (Hopper+): SM activity/occupancy


@dataclass(frozen=True)
class GpuSample:
    """One NVML reading of one device."""

    t_s: float
    device_index: int
    gpu_util_pct: float | None
    mem_util_pct: float | None = None
    mem_used_bytes: int | None = None
    power_w: float | None = None
    sm_clock_mhz: float | None = None
    pcie_rx_bytes_per_s: float | None = None
    pcie_tx_bytes_per_s: float | None = None
    # Session time of the newest driver utilization sample behind gpu_util_pct (driver
    # timestamps converted to the session clock); None when read with GetUtilizationRates.
    gpu_util_t_s: float | None = None
    sm_active_pct: float | None = None  # GPM SM activity since the previous GPM reading
    sm_occupancy_pct: float | None = None  # GPM SM occupancy since the previous GPM reading


@dataclass(frozen=True)
class GpuSection:
    """GPU activity over the run, from an NVML sampler thread, or why there is none."""

    available: bool
    reason: str | None = None
    driver_version: str | None = None
    devices: list[GpuDevice] = field(default_factory=list)
    interval_s: float = 0.0
    samples: list[GpuSample] = field(default_factory=list)
    gpu_util_pct_mean: float | None = None
    notes: list[str] = field(default_factory=list)
    sampler_cpu_s: float | None = None
    calls_per_s: float | None = None  # NVML calls the sampler made per second of sampling


@dataclass(frozen=True)
class GpuWindow:
    """One aggregation window: what the GPU and the host did over the same stretch of time.

    NVML averages over about 1/6 s to 1 s, so a window holds many short steps; the fractions
    are shares of the window, never per-step figures.
    """

    start_s: float
    end_s: float
    gpu_busy_fraction: float
    input_wait_fraction: float  # share of the measured steps' time in the window spent waiting
    step_coverage: float  # share of the window covered by measured steps
    pcie_busy_fraction: float | None = None  # max(RX, TX) over the reference link bandwidth


@dataclass(frozen=True)
class IdleAttribution:
    """GPU idle time split by cause, HTA-style, over the windows the measured steps cover.

    `input_wait_s`: idle while the host waited for the input pipeline; `transfer_s`: idle
    while PCIe was busy (copies, not kernels); `host_overhead_s`: the rest (Python, kernel
    launches, synchronisation). The three add up to `idle_s`.
    """

    window_s: float
    idle_s: float
    input_wait_s: float
    host_overhead_s: float
    transfer_s: float
    dominant: GpuIdleCause | None = None  # the largest cause; None when hardly idle


@dataclass(frozen=True)
class GpuAnalysis:
    """The GPU's view of the run: busy share, idle causes, and their link to input waits."""

    available: bool
    reason: str | None = None
    device_index: int | None = None
    busy_source: BusySource = ""
    time_source: TimeSource = ""
    window_s_median: float | None = None
    windows: list[GpuWindow] = field(default_factory=list)
    gpu_busy_fraction: float | None = None
    input_wait_fraction: float | None = None
    idle_input_wait_correlation: float | None = None  # Pearson r over the windows
    correlation_windows: int = 0
    attribution: IdleAttribution | None = None
    coverage_fraction: float | None = None  # share of measured step time inside a window
    finding: str = ""
    advice: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class HostContention:
    """How much of the host's CPU other processes took while the steps were measured.

    From the host sampler: system busy share minus this process's share (psutil's process
    percent is per core, the system one is of the whole machine).
    """

    available: bool
    reason: str | None = None
    cpu_count: int = 0
    samples: int = 0
    other_cpu_pct_mean: float | None = None  # share of the whole machine, 100 = every core
    other_cpu_pct_max: float | None = None
    other_cores_mean: float | None = None
    process_cpu_pct_mean: float | None = None  # per core, as psutil reports it
    system_cpu_pct_mean: float | None = None
    contended: bool = False
    finding: str = ""


@dataclass(frozen=True)
class Suggestion:
    """One fix, with the evidence for it and the code to write."""

    id: str
    title: str
    stage: str | None = None
    evidence: str = ""
    code: str = ""
    estimated_speedup: float | None = None
    verified_speedup: float | None = None
    correctness_warning: bool = False
    # "fix" (changes the speed), "warning" (changes what is trained on) or "note".
    kind: SuggestionKind = "fix"
    stage_index: int | None = None
    # Predicted end-to-end training speedup (DS-Analyzer rule, discounted for shared cores);
    # `estimated_speedup` and `verified_speedup` are pipeline-alone speedups.
    predicted_speedup: float | None = None
    # The training speedup measured with the fix in place (`FixTrial.training_speedup`);
    # when present it is the gain the suggestion is ranked by.
    training_speedup: float | None = None


@dataclass(frozen=True)
class ServiceBlocker:
    """One reason the training dataset cannot run on tf.data service workers as it is.

    `stage_index`/`stage`/`source` locate it (the stage and the user's function, "file.py:LINE"),
    `detail` says what fails and how to fix it; `paths` are the local files of a local-path
    blocker (a sample, `paths_total` in all).
    """

    kind: BlockerKind
    detail: str
    stage_index: int | None = None
    stage: str = ""
    source: str | None = None
    paths: list[str] = field(default_factory=list)
    paths_total: int = 0


@dataclass(frozen=True)
class ServiceMeasurement:
    """The pipeline (or its movable part) read through a real tf.data service.

    `where` is "local" (a dispatcher and workers pipediag started on this host, sharing its
    cores: it shows the pipeline runs there and what transfer costs, not a cluster's speed) or
    "cluster" (an existing dispatcher, `--data-service`). Rates are in the pipeline's output
    batches. `transfer_batches_per_s` is a batch already made, sent through the same service
    again and again: the most it can deliver to this consumer, so `transfer_s_per_batch`
    (its inverse) is what moving one batch costs. CPU figures are per batch: this process's
    (receiving, timed in the transfer read, where batches arrive back to back) and the
    workers' (making and sending; local workers only).
    """

    where: ServiceWhere
    address: str = ""
    workers: int = 0
    processing_mode: ProcessingMode = ""
    measured: bool = False
    reason: str | None = None
    part: str = "whole pipeline"  # or "up to <stage>": what was distributed
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
    train_reason: str | None = None
    wall_time_s: float = 0.0
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ScaleOutPrediction:
    """How many workers would feed the train step, and what training would then gain.

    `workers_needed` = ceil(target / per-worker rate); the predicted rate is
    min(compute alone, transfer ceiling, local stages' rate); `limited_by` names which.
    """

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
    reason: str | None = None  # why there is no prediction


@dataclass(frozen=True)
class ScaleOut:
    """Can the training pipeline move to tf.data service, and what would it take.

    `compatible` is True when nothing blocks it; `blockers` say what does, with the stage and
    line. `distribute_after_index`/`distribute_after` place the `distribute` call (the last
    stage that can move: everything up to it runs on workers, the rest stays here); None when
    nothing worth moving can. `code` is ready to paste.
    """

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
    notes: list[str] = field(default_factory=list)
    # The stages as walked for this check, only when the report has no stage timing
    # (`PipelineBenchmark.stages` empty): `distribute_after_index` points into these then.
    stages: list[StageStats] = field(default_factory=list)


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
    gpu_reason: str | None = None


@dataclass(frozen=True)
class ExitInfo:
    """How the user's script ended."""

    status: ExitStatus = "ok"
    code: int = 0
    error: str | None = None


@dataclass(frozen=True)
class TaskInfo:
    """This process's task in a multi-worker job, from `TF_CONFIG` (`pipediag/cluster.py`).

    `cluster_size` counts every task of the cluster (all types); above 1 the workers train in
    lockstep, and the diagnosis counts its extra steps instead of timing them.
    """

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

    name: str
    start_s: float
    duration_s: float


@dataclass(frozen=True)
class WatchWindow:
    """Watch mode: one window of training (N steps, or an epoch) and its verdict.

    The label is by input wait share, in XProf's bands (20%, 5%): input cost needs the train
    step run alone, which watch mode does not do (docs/design.md, "Watching a long run").
    `step_time_s` sums the steps' own times; `input_wait_s` sums the waits that are known
    (None when none is), and `input_wait_fraction` is their share of those steps' time.
    `windows` counts the windows this one stands for: past a bound, older ones are merged.
    """

    index: int
    first_step: int
    last_step: int
    start_s: float
    end_s: float
    steps: int
    step_time_s: float
    steps_per_s: float | None
    input_wait_s: float | None
    input_wait_fraction: float | None
    label: VerdictLabel = UNKNOWN
    epoch: int = 0
    windows: int = 1


@dataclass(frozen=True)
class WatchAlert:
    """An alert: the input wait share was at or over the threshold for K windows in a row.

    Figures are over those K windows; `t_s` is when the last of them ended.
    """

    t_s: float
    window_index: int
    first_step: int
    last_step: int
    windows: int
    threshold: float
    input_wait_fraction: float
    steps_per_s: float | None
    message: str
    epoch: int = 0


@dataclass(frozen=True)
class WatchSection:
    """Watch mode over a whole run: the windows, the alerts fired, and where scalars went."""

    every_steps: int | None = None  # None: a window per epoch
    windows: list[WatchWindow] = field(default_factory=list)
    alerts: list[WatchAlert] = field(default_factory=list)
    alert_input_share: float | None = None
    alert_windows: int = 0
    alert_command: str | None = None
    alert_hook: str | None = None  # the callable's name
    tensorboard_logdir: str | None = None  # the run directory the scalars were written to
    label_basis: LabelBasis = "input-wait-share"
    merged_windows: int = 0


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
    phase_times_s: dict[str, float] = field(default_factory=dict)
    phases: list[PhaseSpan] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gpu_analysis: GpuAnalysis | None = None
    host_contention: HostContention | None = None
    compute_alone: ComputeAlone | None = None
    # Seconds from the start of the diagnosis to the first verdict line (printed as soon as
    # the measured steps and the compute-alone phase are done); None if none was printed.
    first_verdict_s: float | None = None
    # The task of a multi-worker job (`TF_CONFIG`); None for a single process.
    task: TaskInfo | None = None
    # Unix time (seconds) of the report's time zero: puts the reports of a job's workers on
    # one clock (`pipediag merge`); `created_utc` has whole seconds only. None in older reports.
    origin_unix_s: float | None = None
    # tf.data service compatibility, measurements and prediction; None when not
    # checked (reports written before it, or no dataset to check).
    scale_out: ScaleOut | None = None
    # Watch mode (`pipediag run --watch`, `pipediag.keras.Watch`); None for a diagnosis.
    watch: WatchSection | None = None
