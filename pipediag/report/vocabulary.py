"""The report's vocabulary: every word a report field may hold, typed once.

Each `Literal` lists the values one field may take and each `Final` constant spells one, so
mypy rejects a word not in the list; the JSON report keeps the plain strings.
"""

from __future__ import annotations

from typing import Final, Literal

# Verdict labels, for the run, a phase, one step, or a watch window.
VerdictLabel = Literal["input-bound", "compute-bound", "balanced", "uncertain", "unknown"]
INPUT_BOUND: Final = "input-bound"
COMPUTE_BOUND: Final = "compute-bound"
BALANCED: Final = "balanced"
# The run's verdict only: the input cost may be other processes' (docs/design.md, "A busy host").
UNCERTAIN: Final = "uncertain"
# Why a verdict is uncertain: other processes' load, or a cost too noisy to place in a band.
UncertainReason = Literal["", "busy-host", "too-noisy", "too-short"]
UNCERTAIN_BUSY_HOST: Final = "busy-host"
UNCERTAIN_TOO_NOISY: Final = "too-noisy"
UNCERTAIN_TOO_SHORT: Final = "too-short"
UNKNOWN: Final = "unknown"
# Why a run has no verdict (`Verdict.no_verdict_because`); "" where it has one, or none was
# judged (a report's default verdict).
NoVerdictReason = Literal[
    "", "no-training", "no-steps", "warmup-only", "wait-not-measured", "unknown"
]
NO_VERDICT_NO_TRAINING: Final = "no-training"  # passes over the data, none of them training
NO_VERDICT_NO_STEPS: Final = "no-steps"  # no pass over the data, no train step seen
NO_VERDICT_WARMUP_ONLY: Final = "warmup-only"  # every step ran in the warm-up
# Steps were measured, but not one step's input wait (nor the rates in alternation).
NO_VERDICT_WAIT_NOT_MEASURED: Final = "wait-not-measured"
# An older report whose train section tells none of these.
NO_VERDICT_UNKNOWN: Final = "unknown"
# Step label for steps kept out of the verdict (tracing, compilation, buffers filling).
StepLabel = Literal["input-bound", "compute-bound", "balanced", "unknown", "warmup"]
WARMUP: Final = "warmup"

# How badly input limits training (`Verdict.severity`), in XProf's words.
Severity = Literal["highly input-bound", "moderately input-bound", "not input-bound", "unknown"]
SEVERITY_HIGH: Final = "highly input-bound"
SEVERITY_MODERATE: Final = "moderately input-bound"
SEVERITY_NONE: Final = "not input-bound"
SEVERITY_UNKNOWN: Final = "unknown"

# Where the compute-alone rate comes from (`Verdict.compute_alone_source`); "" when no rate.
ComputeAloneSource = Literal["measured", "estimated", ""]
MEASURED: Final = "measured"  # the user's train step run on one cached batch, the pipeline idle
ESTIMATED: Final = "estimated"  # step time minus input wait: blind to CPU contention

# How the train step was run alone (`ComputeAlone.method`); "" when it was not. Variables are
# restored after `keras-train-function` and `training-function`.
ComputeAloneMethod = Literal["keras-train-function", "cached-batch-loop", "training-function", ""]
# The model's compiled train function on a repeated cached batch.
KERAS_TRAIN_FUNCTION: Final = "keras-train-function"
# The user's custom loop served one cached batch for its last steps.
CACHED_BATCH_LOOP: Final = "cached-batch-loop"
# A loop's own tf.function that pulls inside it, given an iterator over a repeated cached batch.
TRAINING_FUNCTION: Final = "training-function"

# The parts of input cost (`CostSplit`), named as the headline names them.
CostPart = Literal["wait", "contention", "fetch", "epoch-start"]
COST_WAIT: Final = "wait"  # the step waited for a batch that was not ready
COST_CONTENTION: Final = "contention"  # the pipeline's threads took cores the train step needed
COST_FETCH: Final = "fetch"  # the per-pull overhead of next() on a batch that was ready
COST_EPOCH_START: Final = "epoch-start"  # each epoch's start-up before its first batch

# What the pipeline contends for (`CostSplit.contention_kind`); "" when none, or unknown.
ContentionKind = Literal["cores", "gil", ""]
CONTENDS_FOR_CORES: Final = "cores"  # the host's cores were all busy while training
CONTENDS_FOR_GIL: Final = "gil"  # the pipeline runs Python while cores are free

# The kinds of block in the alternation of rates (`RateBlock.kind`).
RateBlockKind = Literal["training", "step-alone", "quiet-training"]
TRAINING_BLOCK: Final = "training"  # the script's own steps, fed by its pipeline: A
STEP_ALONE_BLOCK: Final = "step-alone"  # the same train step on a cached batch: T
# The script's own steps with pipediag's sampler threads paused (`--observer-check`).
QUIET_TRAINING_BLOCK: Final = "quiet-training"

# What the GPU idled on (`Verdict.gpu_idle_cause`, `IdleAttribution.dominant`).
GpuIdleCause = Literal["input-wait", "host-overhead", "transfer"]

# How the script trains (`TrainSection.style`).
TrainStyle = Literal["keras-fit", "custom-loop", "jax-loop", "none"]
KERAS_FIT: Final = "keras-fit"
CUSTOM_LOOP: Final = "custom-loop"
# A JAX or Flax loop over tf.data (`as_numpy_iterator()`, `iter(ds)` with `np.asarray`): a
# custom loop whose step is JAX's, measured as one (docs/design.md, "JAX").
JAX_LOOP: Final = "jax-loop"
NO_TRAINING: Final = "none"
# The styles where the script's own loop pulls its batches (the loop hook times them).
LOOP_STYLES: Final = frozenset({CUSTOM_LOOP, JAX_LOOP})

# The Keras backend that runs `fit` (`TrainSection.keras_backend`): pipediag drives the train
# step of the first two, and names the third (docs/design.md, "JAX").
KerasBackend = Literal["tensorflow", "jax", "torch"]
TENSORFLOW_BACKEND: Final = "tensorflow"
JAX_BACKEND: Final = "jax"
TORCH_BACKEND: Final = "torch"

# Where the steps' input waits come from (`TrainSection.input_wait_source`).
InputWaitSource = Literal["batch-stamps", "profiler-trace", "iterator-timing", "unavailable"]
WAIT_BATCH_STAMPS: Final = "batch-stamps"  # fit on a tf.data.Dataset
WAIT_PROFILER_TRACE: Final = "profiler-trace"  # fit on arrays or a generator
WAIT_ITERATOR_TIMING: Final = "iterator-timing"  # custom loops: next() timed at the iterator
WAIT_UNAVAILABLE: Final = "unavailable"

# Why a pass over a dataset was not taken for training (`DataPass.reason`).
DataPassReason = Literal["keras", "no-train-step"]
KERAS_PASS: Final = "keras"  # `adapt`, `evaluate`, `predict`
NO_TRAIN_STEP: Final = "no-train-step"  # no train step ran between its pulls

# Why the run stopped (`Report.stop_reason`) and how the script ended (`ExitInfo.status`).
StopReason = Literal[
    "step-budget", "script-finished", "system-exit", "script-error", "interrupted", ""
]
ExitStatus = Literal["ok", "step-budget", "system-exit", "exception", "interrupted"]

# Stage kinds pipediag knows (`StageStats.kind`, as `bench/structure.py` names them). A
# dataset op it does not know keeps its own name, kebab-cased, so the field stays `str`.
StageKind = Literal[
    "source",
    "map",
    "parallel-map",
    "filter",
    "parallel-filter",
    "interleave",
    "parallel-interleave",
    "flat-map",
    "batch",
    "padded-batch",
    "map-and-batch",
    "sparse-batch",
    "shuffle",
    "shuffle-and-repeat",
    "cache",
    "prefetch",
    "repeat",
    "take",
    "skip",
    "zip",
    "concatenate",
    "unbatch",
    "options",
    "shard",
    "choose",
    "scan",
    "window",
    "group-by-window",
    "assert-cardinality",
    "take-while",
    "unique",
    "ignore-errors",
    "rebatch",
    "snapshot",
]
KIND_SOURCE: Final = "source"
KIND_MAP: Final = "map"
KIND_PARALLEL_MAP: Final = "parallel-map"
KIND_FILTER: Final = "filter"
KIND_PARALLEL_FILTER: Final = "parallel-filter"
KIND_INTERLEAVE: Final = "interleave"
KIND_PARALLEL_INTERLEAVE: Final = "parallel-interleave"
KIND_FLAT_MAP: Final = "flat-map"
KIND_BATCH: Final = "batch"
KIND_PADDED_BATCH: Final = "padded-batch"
KIND_MAP_AND_BATCH: Final = "map-and-batch"
KIND_SPARSE_BATCH: Final = "sparse-batch"
KIND_SHUFFLE: Final = "shuffle"
KIND_SHUFFLE_AND_REPEAT: Final = "shuffle-and-repeat"
KIND_CACHE: Final = "cache"
KIND_PREFETCH: Final = "prefetch"
KIND_REPEAT: Final = "repeat"
KIND_OPTIONS: Final = "options"
KIND_SCAN: Final = "scan"
KIND_SNAPSHOT: Final = "snapshot"

# Why `map_parallelization` leaves a map sequential (`StageStats.auto_parallel_blocker`).
AutoParallelBlocker = Literal["option off", "autotune off", "stateful function"]
BLOCKED_BY_OPTION: Final = "option off"  # map_parallelization turned off
BLOCKED_BY_AUTOTUNE: Final = "autotune off"
BLOCKED_BY_STATE: Final = "stateful function"  # py_function, random ops

# The fixes a what-if trial applies (`FixTrial.fix`); their records: `report/fixes.py`.
FixName = Literal[
    "parallel-map",
    "parallel-interleave",
    "prefetch-end",
    "cache",
    "vectorize",
    "autotune-on",
    "thread-cap",
    "hoist-cache",
    "map-fusion",
    "materialise-generator",
    "prefetch-to-device",
]

# Why interleaved A/B rounds stopped (`TrialFacts.stopped`); "" when they did not run.
TrialStop = Literal["clear gain", "clear no gain", "outranked", "budget", ""]
STOP_GAIN: Final = "clear gain"
STOP_NO_GAIN: Final = "clear no gain"
STOP_OUTRANKED: Final = "outranked"
STOP_BUDGET: Final = "budget"

# A change to the speed, a change to what is trained on, or a note.
SuggestionKind = Literal["fix", "warning", "note"]
FIX: Final = "fix"
WARNING: Final = "warning"
NOTE: Final = "note"
# Where a fix's one gain was measured (`Gain.basis`): on training with the fix in place; on
# training with its stage's output held in memory (the most a port can gain, or a cache's
# gain from epoch 2); as training's speedup if input were free (T/A: the most where no hold
# was usable); on the pipeline alone; or nowhere.
GainBasis = Literal["training", "held", "input-free", "pipeline-alone", "not-measured"]
GAIN_ON_TRAINING: Final = "training"
GAIN_HELD: Final = "held"
GAIN_INPUT_FREE: Final = "input-free"
GAIN_PIPELINE_ALONE: Final = "pipeline-alone"
GAIN_NOT_MEASURED: Final = "not-measured"

# The host samples other processes' share was read over (`HostContention.scope`).
ContentionScope = Literal["measured-steps", "whole-run", ""]
OVER_MEASURED_STEPS: Final = "measured-steps"  # the samples inside the measured steps
OVER_WHOLE_RUN: Final = "whole-run"  # every sample: no measured step, or none inside them

# How a device's utilization was read (`GpuDevice.util_source`); "" in reports before it.
UtilSource = Literal["driver-samples", "utilization-rates", "none", ""]
UTIL_SOURCE_SAMPLES: Final = "driver-samples"  # nvmlDeviceGetSamples
UTIL_SOURCE_RATES: Final = "utilization-rates"  # nvmlDeviceGetUtilizationRates

# What the GPU's busy share is read from (`GpuAnalysis.busy_source`); "" when not analysed.
BusySource = Literal["sm-active", "utilization", ""]
BUSY_SM_ACTIVE: Final = "sm-active"  # GPM SM activity (Hopper+)
BUSY_UTILIZATION: Final = "utilization"  # NVML utilization

# Whose clock places the GPU readings on the report's axis (`GpuAnalysis.time_source`).
TimeSource = Literal["driver-timestamps", "gpm-sample-times", "sampler-ticks", "mixed", ""]
TIME_DRIVER: Final = "driver-timestamps"
TIME_GPM: Final = "gpm-sample-times"
TIME_TICKS: Final = "sampler-ticks"
TIME_MIXED: Final = "mixed"

# Kinds of `ServiceBlocker`: what keeps a pipeline from running on tf.data service workers.
BlockerKind = Literal["python-function", "local-path", "refused"]
BLOCKER_PYTHON: Final = "python-function"  # py_function, numpy_function, from_generator
BLOCKER_LOCAL_PATH: Final = "local-path"  # files only this host can read
BLOCKER_REFUSED: Final = "refused"  # the service failed on it when tried

# Where a `ServiceMeasurement` was made.
ServiceWhere = Literal["local", "cluster"]
SERVICE_LOCAL: Final = "local"  # a dispatcher and workers pipediag started on this host
SERVICE_CLUSTER: Final = "cluster"  # an existing dispatcher and its workers (--data-service)

# tf.data service's processing mode (`ServiceMeasurement.processing_mode`); "" when unknown.
ProcessingMode = Literal["parallel_epochs", "distributed_epoch", ""]
PARALLEL_EPOCHS: Final = "parallel_epochs"

# Where a `ScaleOutPrediction`'s per-worker rate and transfer ceiling come from; "" when none.
RateSource = Literal[
    "cluster", "local-service", "pipeline-alone", "stage-timing", "assumed-network", ""
]
FROM_CLUSTER: Final = "cluster"  # measured through an existing service (--data-service)
FROM_LOCAL_SERVICE: Final = "local-service"  # measured through local workers (--scale-out)
FROM_PIPELINE_ALONE: Final = "pipeline-alone"  # phase 1: the whole pipeline alone on this host
FROM_STAGE_TIMING: Final = "stage-timing"  # the movable part alone, from stage timing
FROM_ASSUMED_NETWORK: Final = "assumed-network"  # bytes per batch over an assumed link

# What a `ScaleOutPrediction`'s rate is limited by; "" when there is no prediction.
LimitedBy = Literal["compute", "transfer", "local-stages", ""]
LIMITED_BY_COMPUTE: Final = "compute"
LIMITED_BY_TRANSFER: Final = "transfer"
LIMITED_BY_LOCAL: Final = "local-stages"

# What a watch window's label is judged by (`WatchSection.label_basis`).
LabelBasis = Literal["input-wait-share"]
INPUT_WAIT_SHARE: Final = "input-wait-share"
