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
    # any measurement
    "as-written",
    "failed",
    "error",
    "too-few-steps",
    # the pipeline read alone
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
    # the train step alone
    "no-batch-kept",
    "no-cached-batch",
    "no-compiled-train-function",
    "stateful-random-op",
    "backend-no-step-alone",
    "jax-state-purged",
    "iterator-unreadable",
    "not-plain-tensors",
    "no-step-in-blocks",
    "no-step-alone",
    "step-alone-failed",
    "no-measured-step",
    "no-train-step",
    "step-not-run-alone",
    "lockstep-fit",
    "watch-no-step-alone",
    "marked-steps",
    "loop-steps-all",
    "loop-ended-early",
    # the model-side trials
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
    # where the step's time goes
    "profiler-no-start",
    "profiler-not-started",
    "no-host-trace",
    "no-op-events",
    "profile-stopped",
]

AS_WRITTEN: Final = "as-written"  # an older report's words, kept as they were
FAILED: Final = "failed"  # detail: the exception, in one line
ERROR: Final = "error"  # not measured: detail, an exception in one line
TOO_FEW_STEPS: Final = "too-few-steps"

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

NO_BATCH_KEPT: Final = "no-batch-kept"
NO_CACHED_BATCH: Final = "no-cached-batch"  # because: why
NO_COMPILED_TRAIN_FUNCTION: Final = "no-compiled-train-function"
STATEFUL_RANDOM_OP: Final = "stateful-random-op"  # detail: the op
BACKEND_NO_STEP_ALONE: Final = "backend-no-step-alone"  # detail: the Keras backend
JAX_STATE_PURGED: Final = "jax-state-purged"
ITERATOR_UNREADABLE: Final = "iterator-unreadable"
NOT_PLAIN_TENSORS: Final = "not-plain-tensors"
NO_STEP_IN_BLOCKS: Final = "no-step-in-blocks"
NO_STEP_ALONE: Final = "no-step-alone"
STEP_ALONE_FAILED: Final = "step-alone-failed"
NO_MEASURED_STEP: Final = "no-measured-step"
NO_TRAIN_STEP: Final = "no-train-step"
STEP_NOT_RUN_ALONE: Final = "step-not-run-alone"
LOCKSTEP_FIT: Final = "lockstep-fit"
WATCH_NO_STEP_ALONE: Final = "watch-no-step-alone"
MARKED_STEPS: Final = "marked-steps"
LOOP_STEPS_ALL: Final = "loop-steps-all"
LOOP_ENDED_EARLY: Final = "loop-ended-early"

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

PROFILER_NO_START: Final = "profiler-no-start"  # detail: the error
PROFILER_NOT_STARTED: Final = "profiler-not-started"
NO_HOST_TRACE: Final = "no-host-trace"
NO_OP_EVENTS: Final = "no-op-events"
PROFILE_STOPPED: Final = "profile-stopped"


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
