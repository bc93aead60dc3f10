"""The report's vocabulary: every word a report field may hold, each `Literal` the one list
of a field's values (docs/design.md, "Architecture")."""

from __future__ import annotations

from typing import Final, Literal

# Verdict labels, for the run, a phase, one step, or a watch window.
VerdictLabel = Literal[
    "input-bound",
    "compute-bound",
    "balanced",
    # The run's verdict only: input cost may be other processes' (docs/design.md, "A busy host").
    "uncertain",
    "unknown",
]
# Why a verdict is uncertain: other processes' load, or a cost too noisy to place in a band.
UncertainReason = Literal["", "busy-host", "too-noisy", "too-short"]
# Why a run has no verdict (`Verdict.no_verdict_because`); "" where it has one, or none was judged.
NoVerdictReason = Literal[
    "",
    "no-training",  # passes over the data, none of them training
    "no-steps",  # no pass over the data, no train step seen
    "warmup-only",  # every step ran in the warm-up
    "wait-not-measured",  # steps measured, but no input wait nor rates in alternation
    "unknown",  # an older report whose train section tells none of these
]
# Step label; "warmup" for steps kept out of the verdict (tracing, compilation, buffers filling).
StepLabel = Literal["input-bound", "compute-bound", "balanced", "unknown", "warmup"]

# How badly input limits training (`Verdict.severity`), in XProf's words.
Severity = Literal["highly input-bound", "moderately input-bound", "not input-bound", "unknown"]

# Where the compute-alone rate comes from (`Verdict.compute_alone_source`); "" when no rate.
ComputeAloneSource = Literal[
    "measured",  # the user's train step run on one cached batch, the pipeline idle
    "estimated",  # step time minus input wait: blind to CPU contention
    "",
]

# How the train step was run alone (`ComputeAlone.method`); "" when it was not. Variables are
# restored after `keras-train-function` and `training-function`.
ComputeAloneMethod = Literal[
    "keras-train-function",  # the model's compiled train function on a repeated cached batch
    "cached-batch-loop",  # the user's custom loop served one cached batch for its last steps
    "training-function",  # a loop's own pulling tf.function, on a repeated cached batch
    "",
]

# The parts of input cost (`CostSplit`), named as the headline names them.
CostPart = Literal[
    "wait",  # the step waited for a batch that was not ready
    "contention",  # the pipeline's threads took cores the train step needed
    "fetch",  # the per-pull overhead of next() on a batch that was ready
    "epoch-start",  # each epoch's start-up before its first batch
]

# What the pipeline contends for (`CostSplit.contention_kind`); "" when none, or unknown.
ContentionKind = Literal[
    "cores",  # the host's cores were all busy while training
    "gil",  # the pipeline runs Python while cores are free
    "",
]

# The kinds of block in the alternation of rates (`RateBlock.kind`).
RateBlockKind = Literal[
    "training",  # the script's own steps, fed by its pipeline: A
    "step-alone",  # the same train step on a cached batch: T
    "quiet-training",  # the script's own steps with the samplers paused (`--observer-check`)
]

# What the GPU idled on (`Verdict.gpu_idle_cause`, `IdleAttribution.dominant`).
GpuIdleCause = Literal["input-wait", "host-overhead", "transfer"]

# How the script trains (`TrainSection.style`); "jax-loop": docs/design.md, "JAX".
TrainStyle = Literal["keras-fit", "custom-loop", "jax-loop", "none"]
# The styles where the script's own loop pulls its batches (the loop hook times them).
LOOP_STYLES: Final = frozenset({"custom-loop", "jax-loop"})

# The Keras backend that runs `fit` (`TrainSection.keras_backend`): pipediag drives the train
# step of the first two, and names the third (docs/design.md, "JAX").
KerasBackend = Literal["tensorflow", "jax", "torch"]

# Where the steps' input waits come from (`TrainSection.input_wait_source`).
InputWaitSource = Literal[
    "batch-stamps",  # fit on a tf.data.Dataset
    "profiler-trace",  # fit on arrays or a generator
    "iterator-timing",  # custom loops: next() timed at the iterator
    "unavailable",
]

# Why a pass over a dataset was not taken for training (`DataPass.reason`).
DataPassReason = Literal[
    "keras",  # `adapt`, `evaluate`, `predict`
    "no-train-step",  # no train step ran between its pulls
]

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

# Why `map_parallelization` leaves a map sequential (`StageStats.auto_parallel_blocker`).
AutoParallelBlocker = Literal[
    "option off",  # map_parallelization turned off
    "autotune off",
    "stateful function",  # py_function, random ops
]

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

# What a rewrite changes in what the pipeline yields (`TrialFacts.semantics`), one code a
# change; a hoist-cache makes two. The words: `renderers/prescription_words.py`.
SemanticsChange = Literal[
    "element-order",  # the map runs before the shuffle
    "batched",  # the function is applied to whole batches
    "vectorized-map",  # once per batch through tf.vectorized_map, each result unchanged
    "cache",  # elements read once and kept in memory, randomness before it frozen
    "materialised",  # the generator read once: every epoch yields the first's elements
]

# Why interleaved A/B rounds stopped (`TrialFacts.stopped`); "" when they did not run.
TrialStop = Literal["clear gain", "clear no gain", "outranked", "budget", ""]

# The parts of a diagnosis on the report's time axis (`PhaseSpan.name`, `Report.phase_times_s`).
PhaseName = Literal[
    "train",
    "pipeline_benchmark",
    "compute_alone",
    "deep_analysis",
    "stage_holds",
    "training_trial",
    "model_side",
    "scale_out",
    "analysis",
    "profiler_overhead",  # the profiler trace's own cost (no span: a duration only)
]
# The advisor's rules (`Suggestion.id`: analysis/advisor.py's table; renderers/advice_words.py).
RuleId = Literal[
    "PD000-pipeline-fine",
    "PD001-sequential-map",
    "PD002-sequential-interleave",
    "PD003-no-prefetch",
    "PD004-vectorize-map",
    "PD005-cache-prefix",
    "PD006-cache-after-random",
    "PD007-py-function",
    "PD008-small-shuffle-buffer",
    "PD009-autotune-off",
    "PD010-cpu-saturated",
    "PD011-gpu-idle-cause",
    "PD012-input-contention",
    "PD013-per-pull-overhead",
    "PD014-no-input-fix",
    "PD015-epoch-start",
    "PD016-rewritten-pipeline",
    "PD017-measured-rewrite",
    "PD018-hoist-cache",
]
# How a stage rule read its fix's trial (`Suggestion.outcome`).
TrialOutcome = Literal[
    "on-training",  # measured on training
    "unclear-on-training",  # tried on training, the rounds could not tell
    "under-worth-it-on-training",  # measured on training under the worth-it 1.05x
    "covered-by-cache",  # not needed under the cache the search kept
    "under-worth-it-alone",  # measured on the pipeline alone under the worth-it 1.05x
    "saturated",  # not tried on training; the CPU is saturated and no gain is forecast
]

# A change to the speed, a change to what is trained on, or a note.
SuggestionKind = Literal["fix", "warning", "note"]
# Where a fix's one gain was measured (`Gain.basis`; docs/design.md, "The advisor").
GainBasis = Literal[
    "training", "held", "input-free", "pipeline-alone", "step-alone", "not-measured"
]

# The host samples other processes' share was read over (`HostContention.scope`).
ContentionScope = Literal[
    "measured-steps",  # the samples inside the measured steps
    "whole-run",  # every sample: no measured step, or none inside them
    "",
]

# How a device's utilization was read (`GpuDevice.util_source`); "" in reports before it.
UtilSource = Literal[
    "driver-samples",  # nvmlDeviceGetSamples
    "utilization-rates",  # nvmlDeviceGetUtilizationRates
    "none",
    "",
]

# What the GPU's busy share is read from (`GpuAnalysis.busy_source`); "" when not analysed.
BusySource = Literal[
    "sm-active",  # GPM SM activity (Hopper+)
    "utilization",  # NVML utilization
    "",
]

# Whose clock places the GPU readings on the report's axis (`GpuAnalysis.time_source`).
TimeSource = Literal["driver-timestamps", "gpm-sample-times", "sampler-ticks", "mixed", ""]

# Kinds of `ServiceBlocker`: what keeps a pipeline from running on tf.data service workers.
BlockerKind = Literal[
    "python-function",  # py_function, numpy_function, from_generator
    "local-path",  # files only this host can read
    "refused",  # the service failed on it when tried
]

# Where a `ServiceMeasurement` was made.
ServiceWhere = Literal[
    "local",  # a dispatcher and workers pipediag started on this host
    "cluster",  # an existing dispatcher and its workers (--data-service)
]

# tf.data service's processing mode (`ServiceMeasurement.processing_mode`); "" when unknown.
ProcessingMode = Literal["parallel_epochs", "distributed_epoch", ""]

# Where a `ScaleOutPrediction`'s per-worker rate and transfer ceiling come from; "" when none.
RateSource = Literal[
    "cluster",  # measured through an existing service (--data-service)
    "local-service",  # measured through local workers (--scale-out)
    "pipeline-alone",  # phase 1: the whole pipeline alone on this host
    "stage-timing",  # the movable part alone, from stage timing
    "assumed-network",  # bytes per batch over an assumed link
    "",
]

# What a `ScaleOutPrediction`'s rate is limited by; "" when there is no prediction.
LimitedBy = Literal["compute", "transfer", "local-stages", ""]

# What a watch window's label is judged by (`WatchSection.label_basis`).
LabelBasis = Literal["input-wait-share"]
