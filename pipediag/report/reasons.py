"""Why something was not measured, or what limits a reading: a code with its parameters.

A report stores the code, so a tool reading the JSON can branch on it; the words are made
from it in one place (`renderers/reason_words.py`). `detail` holds only words from outside
pipediag (an exception's message, an op's or a class's name); `value` and `limit` the
figures the words give; `because` the reason behind this one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

ReasonCode = Literal[
    "as-written",
    "failed",
    "error",
    "too-few-steps",
    "no-dataset",
    "pipeline-failed",
    "no-bench",
    "watch-no-bench",
    "bench-interrupted",
    "no-pipeline-benchmark",
    "distributed-feed",
    "not-read-alone",
    "pipeline-not-read",
    "fit-given",
    "empty-dataset",
    "one-batch",
    "deep-skipped",
    "no-batch-kept",
    "no-cached-batch",
    "no-compiled-train-function",
    "stateful-random-op",
    "reads-iterator-to-end",
    "backend-no-step-alone",
    "jax-state-purged",
    "iterator-unreadable",
    "not-plain-tensors",
    "no-step-in-blocks",
    "no-step-alone",
    "step-alone-failed",
    "no-measured-step",
    "no-train-step-to-run",
    "step-not-run-alone",
    "lockstep-fit",
    "watch-no-step-alone",
    "marked-steps",
    "loop-steps-all",
    "loop-ended-early",
    "no-verify",
    "input-cost-high",
    "model-side-fit-only",
    "no-step-time",
    "budget-share",
    "runs-eagerly",
    "already-xla",
    "functions-eager",
    "no-python-function",
    "no-jit-support",
    "xla-op",
    "xla-failed",
    "spe-already",
    "spe-step-long",
    "spe-multi-replica",
    "spe-fit-share",
    "no-bfloat16",
    "subclassed-model",
    "no-gpu-copy",
    "copy-at-most",
    "loop-stopped",
    "no-train-step-found",
    "steps-too-few-to-find",
    "framework-step",
    "no-function",
    "several-once",
    "called-several",
    "none-once",
    "profiler-no-start",
    "profiler-not-started",
    "no-host-trace",
    "no-op-events",
    "profile-stopped",
    "service-error",
    "not-copied",
    "no-workers",
    "service-refused",
    "too-few-elements",
    "part-only",
    "no-train-step-service",
    "service-fit-only",
    "service-tf-only",
    "service-multi-replica",
    "service-train-failed",
    "not-checked",
    "nothing-to-move",
    "no-compute-rate",
    "no-per-worker-rate",
    "host-sampling-off",
    "gpu-sampling-off",
    "host-sampler-not-started",
    "gpu-sampler-not-started",
    "sampler-setup-failed",
    "no-psutil",
    "psutil-cannot-read",
    "no-pynvml",
    "nvml-library-not-found",
    "nvml-driver-not-loaded",
    "nvml-no-permission",
    "nvml-version-mismatch",
    "nvml-init-failed",
    "gpu-discovery-failed",
    "nvml-no-gpu",
    "cuda-hides-gpus",
    "no-gpu-opened",
    "no-gpu-sampled",
    "no-timed-wait-step",
    "no-gpu-reading",
    "no-busy-reading",
    "few-gpu-windows",
    "steps-span",
    "host-not-sampled",
    "no-host-samples",
    "backend-no-fix-trial",
    "calls-no-fix-trial",
    "fix-trial-budget-spent",
    "loop-stopped-first",
    "not-tried",
    "fixed-pipeline-failed",
    "training-out-of-time",
    "not-built",
    "not-built-on-top",
    "training-stopped",
    "no-rewrite-tried",
    "no-rewrite-helped",
    "fell-back",
    "covered-by-cache",
    "too-few-rounds",
    "under-worth-it",
    "slower",
    "interval-reaches-one",
    "bounded-out",
    "one-worker",
    "too-few-timed-workers",
    "none-stands-out",
    "stage-out-of-time",
    "stages-capped",
    "partial-file-cache",
    "cannot-iterate",
    "stage-not-read-alone",
    "too-few-stage-elements",
    "held-above-step-alone",
    "not-run-no-verify",
    "no-whatif-run",
    "graph-unavailable",
    "graph-not-rebuilt",
    "no-dataset-graph",
    "verification-budget-spent",
    "left-to-training",
    "rewritten-failed",
    "cannot-rewrite",
    "check-failed",
    "too-few-batches",
    "stage-not-in-graph",
    "map-or-batch-not-in-graph",
    "map-input-unknown",
    "map-or-shuffle-not-in-graph",
    "generator-not-in-graph",
    "generator-ragged",
    "generator-too-big",
    "generator-too-slow",
    "generator-failed",
    "generator-empty",
    "generator-shapes-differ",
    "python-not-repeatable",
    "infinite-or-unknown-size",
    "count-too-long",
    "cache-size-unknown",
    "cache-too-big",
    "fill-time-unknown",
    "fill-too-long",
    "sample-ragged",
    "no-sample",
    "unsafe-keep-map",
    "fails-on-batch",
    "not-elementwise",
]

# any measurement
AS_WRITTEN: Final = "as-written"  # an older report's words, kept as they were
FAILED: Final = "failed"  # detail: the exception, in one line
ERROR: Final = "error"  # not measured: detail, an exception in one line
TOO_FEW_STEPS: Final = "too-few-steps"

# the pipeline read alone
NO_DATASET: Final = "no-dataset"
PIPELINE_FAILED: Final = "pipeline-failed"
NO_BENCH: Final = "no-bench"
WATCH_NO_BENCH: Final = "watch-no-bench"
BENCH_INTERRUPTED: Final = "bench-interrupted"
NO_PIPELINE_BENCHMARK: Final = "no-pipeline-benchmark"
DISTRIBUTED_FEED: Final = "distributed-feed"  # detail: the stage
NOT_READ_ALONE: Final = "not-read-alone"  # detail: the error reading it
PIPELINE_NOT_READ: Final = "pipeline-not-read"  # because: why
FIT_GIVEN: Final = "fit-given"  # detail: what fit was given instead of a dataset
EMPTY_DATASET: Final = "empty-dataset"
ONE_BATCH: Final = "one-batch"
DEEP_SKIPPED: Final = "deep-skipped"  # value: the input cost; limit: the floor

# the train step alone
NO_BATCH_KEPT: Final = "no-batch-kept"
NO_CACHED_BATCH: Final = "no-cached-batch"  # because: why
NO_COMPILED_TRAIN_FUNCTION: Final = "no-compiled-train-function"
STATEFUL_RANDOM_OP: Final = "stateful-random-op"  # detail: the op
READS_ITERATOR_TO_END: Final = "reads-iterator-to-end"
BACKEND_NO_STEP_ALONE: Final = "backend-no-step-alone"  # detail: the Keras backend
JAX_STATE_PURGED: Final = "jax-state-purged"
ITERATOR_UNREADABLE: Final = "iterator-unreadable"
NOT_PLAIN_TENSORS: Final = "not-plain-tensors"
NO_STEP_IN_BLOCKS: Final = "no-step-in-blocks"
NO_STEP_ALONE: Final = "no-step-alone"
STEP_ALONE_FAILED: Final = "step-alone-failed"
NO_MEASURED_STEP: Final = "no-measured-step"
NO_TRAIN_STEP_TO_RUN: Final = "no-train-step-to-run"
STEP_NOT_RUN_ALONE: Final = "step-not-run-alone"
LOCKSTEP_FIT: Final = "lockstep-fit"
WATCH_NO_STEP_ALONE: Final = "watch-no-step-alone"
MARKED_STEPS: Final = "marked-steps"
LOOP_STEPS_ALL: Final = "loop-steps-all"
LOOP_ENDED_EARLY: Final = "loop-ended-early"

# the model-side trials
NO_VERIFY: Final = "no-verify"
INPUT_COST_HIGH: Final = "input-cost-high"  # value: the cost (None: unknown); limit
MODEL_SIDE_FIT_ONLY: Final = "model-side-fit-only"
NO_STEP_TIME: Final = "no-step-time"
BUDGET_SHARE: Final = "budget-share"  # value: seconds
RUNS_EAGERLY: Final = "runs-eagerly"
ALREADY_XLA: Final = "already-xla"
FUNCTIONS_EAGER: Final = "functions-eager"
NO_PYTHON_FUNCTION: Final = "no-python-function"
NO_JIT_SUPPORT: Final = "no-jit-support"
XLA_OP: Final = "xla-op"  # detail: the op XLA cannot compile
XLA_FAILED: Final = "xla-failed"  # detail: the error
SPE_ALREADY: Final = "spe-already"  # value: the steps per execution already set
SPE_STEP_LONG: Final = "spe-step-long"  # value: the step, in seconds
SPE_MULTI_REPLICA: Final = "spe-multi-replica"
SPE_FIT_SHARE: Final = "spe-fit-share"  # value: fit's own share of its step
NO_BFLOAT16: Final = "no-bfloat16"
SUBCLASSED_MODEL: Final = "subclassed-model"  # detail: the class
NO_GPU_COPY: Final = "no-gpu-copy"
COPY_AT_MOST: Final = "copy-at-most"
LOOP_STOPPED: Final = "loop-stopped"
NO_TRAIN_STEP_FOUND: Final = "no-train-step-found"
STEPS_TOO_FEW_TO_FIND: Final = "steps-too-few-to-find"  # value: the steps counted
FRAMEWORK_STEP: Final = "framework-step"  # detail: the framework's function
NO_FUNCTION: Final = "no-function"
SEVERAL_ONCE: Final = "several-once"  # detail: the functions' names
CALLED_SEVERAL: Final = "called-several"  # detail: the function
NONE_ONCE: Final = "none-once"  # detail: the most called; value: its steps; limit: all

# where the step's time goes
PROFILER_NO_START: Final = "profiler-no-start"  # detail: the error
PROFILER_NOT_STARTED: Final = "profiler-not-started"
NO_HOST_TRACE: Final = "no-host-trace"
NO_OP_EVENTS: Final = "no-op-events"
PROFILE_STOPPED: Final = "profile-stopped"

# scale-out through the tf.data service
SERVICE_ERROR: Final = "service-error"  # detail: the service's or the server's error
NOT_COPIED: Final = "not-copied"  # detail: why the pipeline could not be copied
NO_WORKERS: Final = "no-workers"  # detail: the dispatcher's address
SERVICE_REFUSED: Final = "service-refused"  # detail: the pipeline's error on a worker
TOO_FEW_ELEMENTS: Final = "too-few-elements"
PART_ONLY: Final = "part-only"
NO_TRAIN_STEP_SERVICE: Final = "no-train-step-service"
SERVICE_FIT_ONLY: Final = "service-fit-only"
SERVICE_TF_ONLY: Final = "service-tf-only"  # detail: the Keras backend fit runs on
SERVICE_MULTI_REPLICA: Final = "service-multi-replica"
SERVICE_TRAIN_FAILED: Final = "service-train-failed"  # detail: the error
NOT_CHECKED: Final = "not-checked"
NOTHING_TO_MOVE: Final = "nothing-to-move"
NO_COMPUTE_RATE: Final = "no-compute-rate"
NO_PER_WORKER_RATE: Final = "no-per-worker-rate"

# host and GPU sampling
HOST_SAMPLING_OFF: Final = "host-sampling-off"
GPU_SAMPLING_OFF: Final = "gpu-sampling-off"
HOST_SAMPLER_NOT_STARTED: Final = "host-sampler-not-started"
GPU_SAMPLER_NOT_STARTED: Final = "gpu-sampler-not-started"
SAMPLER_SETUP_FAILED: Final = "sampler-setup-failed"  # detail: the error
NO_PSUTIL: Final = "no-psutil"
PSUTIL_CANNOT_READ: Final = "psutil-cannot-read"  # detail: the error
NO_PYNVML: Final = "no-pynvml"
NVML_LIBRARY_NOT_FOUND: Final = "nvml-library-not-found"
NVML_DRIVER_NOT_LOADED: Final = "nvml-driver-not-loaded"
NVML_NO_PERMISSION: Final = "nvml-no-permission"
NVML_VERSION_MISMATCH: Final = "nvml-version-mismatch"
NVML_INIT_FAILED: Final = "nvml-init-failed"  # detail: NVML's error name
GPU_DISCOVERY_FAILED: Final = "gpu-discovery-failed"  # detail: NVML's error name
NVML_NO_GPU: Final = "nvml-no-gpu"
CUDA_HIDES_GPUS: Final = "cuda-hides-gpus"  # detail: CUDA_VISIBLE_DEVICES's value
NO_GPU_OPENED: Final = "no-gpu-opened"
NO_GPU_SAMPLED: Final = "no-gpu-sampled"  # because: the GPU section's reason (None: unknown)
NO_TIMED_WAIT_STEP: Final = "no-timed-wait-step"
NO_GPU_READING: Final = "no-gpu-reading"  # detail: the GPU section's note on it, if any
NO_BUSY_READING: Final = "no-busy-reading"  # value: the GPU's index; detail: the busy source
FEW_GPU_WINDOWS: Final = "few-gpu-windows"  # value: windows; limit: needed; because: STEPS_SPAN
STEPS_SPAN: Final = "steps-span"  # value: the measured steps' span, in seconds
HOST_NOT_SAMPLED: Final = "host-not-sampled"
NO_HOST_SAMPLES: Final = "no-host-samples"

# fixes tried on training, and the pipeline pipediag would write
BACKEND_NO_FIX_TRIAL: Final = "backend-no-fix-trial"  # detail: the Keras backend
CALLS_NO_FIX_TRIAL: Final = "calls-no-fix-trial"
FIX_TRIAL_BUDGET_SPENT: Final = "fix-trial-budget-spent"
LOOP_STOPPED_FIRST: Final = "loop-stopped-first"
NOT_TRIED: Final = "not-tried"
FIXED_PIPELINE_FAILED: Final = "fixed-pipeline-failed"  # detail: the error
TRAINING_OUT_OF_TIME: Final = "training-out-of-time"
NOT_BUILT: Final = "not-built"  # detail: the error
NOT_BUILT_ON_TOP: Final = "not-built-on-top"  # detail: the error
TRAINING_STOPPED: Final = "training-stopped"
NO_REWRITE_TRIED: Final = "no-rewrite-tried"
NO_REWRITE_HELPED: Final = "no-rewrite-helped"
FELL_BACK: Final = "fell-back"  # detail: the first rewrite, as the report names it
COVERED_BY_CACHE: Final = "covered-by-cache"  # detail: the stage the kept cache follows
TOO_FEW_ROUNDS: Final = "too-few-rounds"
UNDER_WORTH_IT: Final = "under-worth-it"  # limit: the worth-it gain
SLOWER: Final = "slower"  # its whole interval under 1
INTERVAL_REACHES_ONE: Final = "interval-reaches-one"
BOUNDED_OUT: Final = "bounded-out"  # detail: the held stage; value: its gain held

# the fleet of a multi-worker job
ONE_WORKER: Final = "one-worker"
TOO_FEW_TIMED_WORKERS: Final = "too-few-timed-workers"
NONE_STANDS_OUT: Final = "none-stands-out"  # value: the rate tolerance; limit: the wait gap

# stage timing, and stages held on training
STAGE_OUT_OF_TIME: Final = "stage-out-of-time"
STAGES_CAPPED: Final = "stages-capped"  # limit: the stages measured
PARTIAL_FILE_CACHE: Final = "partial-file-cache"
CANNOT_ITERATE: Final = "cannot-iterate"  # detail: the error's type
STAGE_NOT_READ_ALONE: Final = "stage-not-read-alone"  # detail: why it cannot be copied
TOO_FEW_STAGE_ELEMENTS: Final = "too-few-stage-elements"
HELD_ABOVE_STEP_ALONE: Final = "held-above-step-alone"  # value: held rate; limit: step alone

# fixes timed on the pipeline alone: why a rewrite was not verified
NOT_RUN_NO_VERIFY: Final = "not-run-no-verify"
NO_WHATIF_RUN: Final = "no-whatif-run"
GRAPH_UNAVAILABLE: Final = "graph-unavailable"  # detail: the error serialising it
GRAPH_NOT_REBUILT: Final = "graph-not-rebuilt"  # detail: the error
NO_DATASET_GRAPH: Final = "no-dataset-graph"
VERIFICATION_BUDGET_SPENT: Final = "verification-budget-spent"
LEFT_TO_TRAINING: Final = "left-to-training"  # built, not timed: the budget was spent
REWRITTEN_FAILED: Final = "rewritten-failed"  # detail: the error
CANNOT_REWRITE: Final = "cannot-rewrite"  # detail: the error
CHECK_FAILED: Final = "check-failed"  # detail: the error
TOO_FEW_BATCHES: Final = "too-few-batches"
STAGE_NOT_IN_GRAPH: Final = "stage-not-in-graph"
MAP_OR_BATCH_NOT_IN_GRAPH: Final = "map-or-batch-not-in-graph"
MAP_INPUT_UNKNOWN: Final = "map-input-unknown"
MAP_OR_SHUFFLE_NOT_IN_GRAPH: Final = "map-or-shuffle-not-in-graph"
GENERATOR_NOT_IN_GRAPH: Final = "generator-not-in-graph"
GENERATOR_RAGGED: Final = "generator-ragged"
GENERATOR_TOO_BIG: Final = "generator-too-big"
GENERATOR_TOO_SLOW: Final = "generator-too-slow"  # limit: the seconds a read may take
GENERATOR_FAILED: Final = "generator-failed"  # detail: the error
GENERATOR_EMPTY: Final = "generator-empty"
GENERATOR_SHAPES_DIFFER: Final = "generator-shapes-differ"
PYTHON_NOT_REPEATABLE: Final = "python-not-repeatable"  # detail: the stages; value: elements
INFINITE_OR_UNKNOWN_SIZE: Final = "infinite-or-unknown-size"
COUNT_TOO_LONG: Final = "count-too-long"  # limit: the seconds counting may take
CACHE_SIZE_UNKNOWN: Final = "cache-size-unknown"
CACHE_TOO_BIG: Final = "cache-too-big"
FILL_TIME_UNKNOWN: Final = "fill-time-unknown"
FILL_TOO_LONG: Final = "fill-too-long"  # value: the seconds filling takes
SAMPLE_RAGGED: Final = "sample-ragged"
NO_SAMPLE: Final = "no-sample"
UNSAFE_KEEP_MAP: Final = "unsafe-keep-map"  # because: what the function did on a batch
FAILS_ON_BATCH: Final = "fails-on-batch"  # detail: the error
NOT_ELEMENTWISE: Final = "not-elementwise"  # value: elements checked; detail: the difference


@dataclass(frozen=True)
class Reason:
    code: ReasonCode
    detail: str = ""
    value: float | None = None
    limit: float | None = None
    because: Reason | None = None


def error_line(exc: BaseException, limit: int = 200) -> str:
    """An exception in one line: its type and its message's lines joined, cut at `limit`."""
    lines = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return f"{type(exc).__name__}: {lines}"[: len(type(exc).__name__) + 2 + limit]
