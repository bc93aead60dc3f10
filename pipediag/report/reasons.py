"""Why something was not measured, or what limits a reading: a code with its parameters,
`ReasonCode` the one list of codes (docs/design.md, "Architecture")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

# Why a fix cannot be applied to a dataset's graph (`bench.graph_edit.RewriteError`).
RewriteFailure = Literal[
    "no-graph-node",  # detail: the node's name
    "no-output-node",
    "op-has-no-input",  # detail: the op; value: the input's position
    "not-a-known-map",  # detail: the op
    "not-a-known-interleave",  # detail: the op
    "not-a-known-shuffle",  # detail: the op
    "not-a-plain-batch",  # detail: the op
    "map-read-elsewhere",
    "batch-not-after-map",
    "map-not-after-shuffle",
    "shuffle-read-elsewhere",
    "captures-differ-on-batch",
    "already-kept",  # detail: the fix
    "no-rewrite-kept",  # detail: the fix
    "walked-graph-not-kept",
    "no-rewrite-for-fix",
    "generator-unread",  # detail: the generator's error ("": unknown)
]

# Why the tf.data service could not be started, reached or read (`scale_out.service.ServiceError`).
ServiceFailure = Literal[
    "no-grpcio",
    "not-a-dispatcher",  # detail: the address
    "no-dispatcher-answer",  # detail: the address; limit: seconds; because: "grpc-status"
    "servers-not-started",  # limit: the seconds they were given
    "server-failed-to-start",  # detail: its role; because: its error output ("exception")
    "workers-not-registered",  # value: registered; limit: started; because: "start-timeout"
    "service-stalled",  # limit: the seconds waited
    "no-batch-within",  # limit: the seconds waited
    "service-dataset-ended",
]

ReasonCode = Literal[
    RewriteFailure,
    ServiceFailure,
    # any measurement
    "as-written",  # an older report's words, kept as they were
    "failed",  # detail: the exception, in one line
    "error",  # not measured: detail, an exception in one line
    "too-few-steps",
    # notes on the run
    "multi-worker-job",  # detail: this task; value: the job's tasks
    "defined-at",  # detail: file.py:line where the script defines a function
    "exception",  # detail: an exception in one line, inside another reason's words
    "own-error",  # a `ReasonedError` in one line: detail: its class; because: its failure
    "named-function-uncountable",  # detail: the function; because: "defined-at"
    "function-without-step-counter",  # detail: the function; because: "defined-at"
    "iterators-still-releasing",
    "late-analysis-failed",  # detail: the error
    "gpu-analysis-failed",  # detail: the error
    "scale-out-prediction-failed",  # detail: the error
    "prescription-figures-failed",  # detail: the error
    "advisor-failed",  # detail: the error
    # a part of a phase that failed (`phases.py`); because: "own-error"; or detail: the error
    "stage-analysis-failed",
    "stage-holds-failed",
    "fix-trials-failed",
    "service-check-failed",
    "model-side-failed",
    "nested-step",
    "iterate-ignored",  # steps were marked first by explicit marks
    "marks-ignored",  # steps were marked first by iterate()
    "step-budget-reached",  # value: the warm-up steps; limit: the measured steps
    "loop-before-fit",  # value: the loop's steps
    "two-train-styles",  # detail: the style diagnosed; because: the other ("train-style")
    "train-style",  # detail: a `TrainStyle`
    "steps-merged",  # value: the steps; limit: the records kept
    "cache-epoch-outlasted",
    "stamps-not-attached",  # detail: the error
    "fit-profiler-no-start",  # detail: the error
    "stamps-unread",  # detail: the error
    "loop-pulls-inside",  # detail: the function; value: steps a call; because: "defined-at"
    "loop-pulls-inside-named",  # as "loop-pulls-inside": no step counter, named by the user
    "watch-thread-busy",
    "scalars-not-written",  # detail: the directory; because: "exception"
    "watch-failed",  # detail: the error
    "alert-hook-raised",  # detail: the error
    "alert-command-no-start",  # detail: the error
    "alert-command-exit",  # value: its exit code; detail: the command
    "alert-command-running",  # detail: the command
    "data-service-failed",  # because: the service's error (`service-error`)
    # the pipeline read alone
    "no-dataset",
    "pipeline-failed",
    "no-bench",
    "watch-no-bench",
    "bench-interrupted",
    "no-pipeline-benchmark",
    "distributed-feed",  # detail: the stage
    "not-read-alone",  # detail: the error reading it
    "pipeline-not-read",  # because: why
    "fit-given",  # detail: what fit was given instead of a dataset
    "empty-dataset",
    "one-batch",
    "deep-skipped",  # value: the input cost; limit: the floor
    # the train step alone
    "no-batch-kept",
    "no-cached-batch",  # because: why
    "no-compiled-train-function",
    "stateful-random-op",  # detail: the op
    "reads-iterator-to-end",
    "backend-no-step-alone",  # detail: the Keras backend
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
    # the model-side trials
    "no-verify",
    "input-cost-high",  # value: the cost (None: unknown); limit
    "model-side-fit-only",
    "no-step-time",
    "budget-share",  # value: seconds
    "runs-eagerly",
    "already-xla",
    "functions-eager",
    "no-python-function",
    "no-jit-support",
    "xla-op",  # detail: the op XLA cannot compile
    "xla-failed",  # detail: the error
    "spe-already",  # value: the steps per execution already set
    "spe-step-long",  # value: the step, in seconds
    "spe-multi-replica",
    "spe-fit-share",  # value: fit's own share of its step
    "no-bfloat16",
    "subclassed-model",  # detail: the class
    "no-gpu-copy",
    "copy-at-most",
    "loop-stopped",
    "no-train-step-found",
    "steps-too-few-to-find",  # value: the steps counted
    "framework-step",  # detail: the framework's function
    "no-function",
    "several-once",  # detail: the functions' names
    "called-several",  # detail: the function
    "none-once",  # detail: the most called; value: its steps; limit: all
    # where the step's time goes
    "profiler-no-start",  # detail: the error
    "profiler-not-started",
    "no-host-trace",
    "no-op-events",
    "profile-stopped",
    # scale-out through the tf.data service
    "service-error",  # because: a `ServiceFailure`; or detail: an OS or address error
    # word fragments, parameters of a `ServiceFailure`'s words (its `because`), not causes:
    "grpc-status",  # detail: gRPC's status code name ("": no answer)
    "start-timeout",  # limit: the seconds the local servers were given
    "no-error-output",  # a server failed with nothing on stderr (else "exception")
    "not-copied",  # detail: why the pipeline could not be copied
    "no-workers",  # detail: the dispatcher's address
    "service-refused",  # detail: the pipeline's error on a worker
    "too-few-elements",
    "part-only",
    "no-train-step-service",
    "service-fit-only",
    "service-tf-only",  # detail: the Keras backend fit runs on
    "service-multi-replica",
    "service-train-failed",  # detail: the error
    "not-checked",
    "nothing-to-move",
    "no-compute-rate",
    "no-per-worker-rate",
    # host and GPU sampling
    "host-sampling-off",
    "gpu-sampling-off",
    "host-sampler-not-started",
    "gpu-sampler-not-started",
    "sampler-setup-failed",  # detail: the error
    "no-psutil",
    "psutil-cannot-read",  # detail: the error
    "no-pynvml",
    "nvml-library-not-found",
    "nvml-driver-not-loaded",
    "nvml-no-permission",
    "nvml-version-mismatch",
    "nvml-init-failed",  # detail: NVML's error name
    "gpu-discovery-failed",  # detail: NVML's error name
    "nvml-no-gpu",
    "cuda-hides-gpus",  # detail: CUDA_VISIBLE_DEVICES's value
    "no-gpu-opened",
    "no-gpu-sampled",  # because: the GPU section's reason (None: unknown)
    "no-timed-wait-step",
    "no-gpu-reading",  # because: the GPU section's note on it, if any (older: detail)
    "no-busy-reading",  # value: the GPU's index; detail: the busy source
    "few-gpu-windows",  # value: windows; limit: needed; because: "steps-span"
    "steps-span",  # value: the measured steps' span, in seconds
    "host-not-sampled",
    "no-host-samples",
    # fixes tried on training, and the pipeline pipediag would write
    "backend-no-fix-trial",  # detail: the Keras backend
    "calls-no-fix-trial",
    "fix-trial-budget-spent",
    "loop-stopped-first",
    "not-tried",
    "fixed-pipeline-failed",  # detail: the error
    "training-out-of-time",
    "not-built",  # because: "own-error"; or detail: the error
    "not-built-on-top",  # because: "own-error"; or detail: the error
    "training-stopped",
    "no-rewrite-tried",
    "no-rewrite-helped",
    "fell-back",  # detail: the first rewrite, as the report names it
    "covered-by-cache",  # detail: the stage the kept cache follows
    "too-few-rounds",
    "under-worth-it",  # limit: the worth-it gain
    "slower",  # its whole interval under 1
    "interval-reaches-one",
    "bounded-out",  # detail: the held stage; value: its gain held
    # the fleet of a multi-worker job
    "one-worker",
    "too-few-timed-workers",
    "none-stands-out",  # value: the rate tolerance; limit: the wait gap
    # stage timing, and stages held on training
    "stage-out-of-time",
    "stages-capped",  # limit: the stages measured
    "partial-file-cache",
    "cannot-iterate",  # detail: the error's type
    "stage-not-read-alone",  # detail: why it cannot be copied
    "too-few-stage-elements",
    "held-above-step-alone",  # value: held rate; limit: step alone
    # fixes timed on the pipeline alone: why a rewrite was not verified
    "not-run-no-verify",
    "no-whatif-run",
    "graph-unavailable",  # detail: the error serialising it
    "graph-not-rebuilt",  # detail: the error
    "no-dataset-graph",
    "verification-budget-spent",
    "left-to-training",  # built, not timed: the budget was spent
    "rewritten-failed",  # detail: the error
    "cannot-rewrite",  # because: a `RewriteFailure`; or detail: the error
    "check-failed",  # because: "own-error"; or detail: the error
    "too-few-batches",
    "stage-not-in-graph",
    "map-or-batch-not-in-graph",
    "map-input-unknown",
    "map-or-shuffle-not-in-graph",
    "generator-not-in-graph",
    "generator-ragged",
    "generator-too-big",
    "generator-too-slow",  # limit: the seconds a read may take
    "generator-failed",  # detail: the error
    "generator-empty",
    "generator-shapes-differ",
    "python-not-repeatable",  # detail: the stages; value: elements
    "infinite-or-unknown-size",
    "count-too-long",  # limit: the seconds counting may take
    "cache-size-unknown",
    "cache-too-big",
    "fill-time-unknown",
    "fill-too-long",  # value: the seconds filling takes
    "sample-ragged",
    "no-sample",
    "unsafe-keep-map",  # because: what the function did on a batch
    "fails-on-batch",  # detail: the error
    "not-elementwise",  # value: elements checked; detail: the difference
    # notes on sampling, the pipeline, scale-out and the fleet ("NVML's error name": or, for
    # an error that is not NVML's, its type and message in one line)
    "repeated-failure",  # value: how many times; because: the first
    "sampler-stuck",  # limit: the seconds it was given to stop
    "cleanup-failed",  # detail: the error
    "reading-failed",  # detail: the error
    "sampler-thread-died",  # detail: the error
    "gpm-free-failed",  # detail: NVML's error name
    "nvml-shutdown-failed",  # detail: NVML's error name
    "gpu-memory-unavailable",  # value: the GPU; detail: NVML's error name
    "gpu-power-unavailable",  # value: the GPU; detail: NVML's error name
    "gpu-clock-unavailable",  # value: the GPU; detail: NVML's error name
    "gpu-pcie-rx-unavailable",  # value: the GPU; detail: NVML's error name
    "gpu-pcie-tx-unavailable",  # value: the GPU; detail: NVML's error name
    "gpu-util-samples-unavailable",  # value: the GPU; detail: NVML's error name
    "gpu-util-unavailable",  # value: the GPU; detail: NVML's error name
    "gpu-gpm-unavailable",  # value: the GPU; detail: NVML's error name
    "driver-version-unavailable",  # detail: NVML's error name
    "gpu-skipped",  # value: the GPU; detail: NVML's error name
    "cuda-entry-unmatched",  # detail: the CUDA_VISIBLE_DEVICES entry
    "cuda-order-unsure",
    "gpu-name-unavailable",  # value: the GPU; detail: NVML's error name
    "gpu-memory-size-unavailable",  # value: the GPU; detail: NVML's error name
    "gpu-mig-enabled",  # value: the GPU
    "gpu-driver-samples-setup-failed",  # value: the GPU; detail: NVML's error name
    "gpu-gpm-setup-failed",  # value: the GPU; detail: NVML's error name
    "gpu-not-gpm-device",  # value: the GPU
    "no-util-reading-on-gpu",  # value: the GPU
    "busiest-gpu-analysed",  # value: the GPU; limit: the GPUs sampled
    "untimed-readings",  # limit: the shortest window, in seconds
    "low-window-coverage",  # value: the share of step time covered
    "steady-run",
    "few-correlation-windows",  # value: the windows; limit: those needed
    "file-cache-bypassed",  # detail: the cache's file name
    "too-little-moves",  # detail: the last stage that can move; value: the share of the
    # pipeline's work up to it; because: "port-to-tf"
    "port-to-tf",  # detail: the stages held to Python
    "nothing-sent",
    "distribute-before-batch",
    "one-host",  # value: the workers; limit: the host's cores (None: unknown)
    "different-scripts",  # detail: the scripts
    "cluster-partly-merged",  # value: the cluster's tasks; limit: the reports merged
    "incomplete-runs",  # detail: the workers
]


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


class ReasonedError(Exception):
    """An error of pipediag's own whose why is a reason the renderers word, not a sentence
    (`RewriteError`, `ServiceError`); its `str()` is the reason's fields, for tests and logs."""

    def __init__(self, reason: Reason) -> None:
        self.reason = reason
        super().__init__(reason)

    def one_line_reason(self) -> Reason:
        """This error as a handler of any error puts it: its type, then why."""
        return Reason("own-error", detail=type(self).__name__, because=self.reason)


def _type_and_message(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def error_reason(
    code: ReasonCode,
    exc: BaseException,
    describe: Callable[[BaseException], str] = _type_and_message,
) -> Reason:
    """`code` for any error: a `ReasonedError` as its reason, any other as `describe` words it."""
    if isinstance(exc, ReasonedError):
        return Reason(code, because=exc.one_line_reason())
    return Reason(code, detail=describe(exc))
