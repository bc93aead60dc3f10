"""The words for every reason a report stores (`report/reasons.py`): the one glossary."""

from __future__ import annotations

from collections.abc import Callable

from pipediag.errors import DESCRIBED_CHARS
from pipediag.renderers.numbers import percent
from pipediag.report.reasons import Reason, ReasonCode

# What the tf.data service refused with where its error said nothing.
NO_BATCH_CAME_BACK = "no batch came back"
# Said in place of `detail` where a reason of these codes stores none (others word what is stored).
_MISSING_DETAIL: dict[ReasonCode, str] = {
    "grpc-status": "no answer",
    "generator-unread": "the generator could not be read",
    "service-refused": NO_BATCH_CAME_BACK,
}
_PULLS_AT = "the loop pulls inside the tf.function {detail}{because_note}, {value:.0f} steps a call"
_PULLS_INSIDE = (
    "each call is timed and its time spread over its steps; input waits inside it are not measured"
)
_MIXED = "(mixing them would count steps twice)"
_UNAVAILABLE_ON_GPU = " unavailable on GPU {value:.0f}: {detail}"
_GPM_UNAVAILABLE = "GPU {value:.0f}: SM activity/occupancy (GPM) unavailable: "
_UNDRIVEN = (
    "is not run on Keras's {detail} backend: pipediag drives the train step of the TensorFlow "
    "and JAX backends only"
)
# How a generator too big, too slow or too odd to hold is written once and read back.
_TFRECORD_ROUTE = (
    "write its elements once to TFRecord files (tf.io.TFRecordWriter) and read them with "
    "tf.data.TFRecordDataset"
)


def _input_cost(reason: Reason) -> str:
    share = "unknown" if reason.value is None else percent(reason.value)
    return (
        f"input costs {share} of training (model-side trials run under {reason.limit:.0%}, "
        "or with --deep)"
    )


def _check_failed(reason: Reason) -> str:
    cause = reason_words(reason.because) or reason.detail
    # cut where `errors.describe_error` cuts a detail, so older reports read the same
    return f"could not be checked: {cause[:DESCRIBED_CHARS]}"


def _one_host(reason: Reason) -> str:
    cores = "None" if reason.limit is None else f"{reason.limit:.0f}"  # os.cpu_count() unknown
    return (
        f"one host: the {reason.value:.0f} workers shared its {cores} cores; this shows the "
        "pipeline runs on workers and what transfer costs, not a cluster's speed"
    )


# A template over the reason's fields (`because` worded first; `cause`: `because` or, where none,
# `detail`: an error not pipediag's own, or a report written before the error was typed;
# `because_note`, `cause_note`: " (<because>)" where one is stored, " (<cause>)" where there is
# one, else ""), or a function of the reason.
WORDS: dict[ReasonCode, str | Callable[[Reason], str]] = {
    # why a fix cannot be applied to a dataset's graph
    "no-graph-node": "no node {detail!r}",
    "no-output-node": "the graph has no output node",
    "op-has-no-input": "{detail} has no input {value:.0f}",
    "not-a-known-map": "{detail} is not a map this rewrite knows",
    "not-a-known-interleave": "{detail} is not an interleave this rewrite knows",
    "not-a-known-shuffle": "{detail} is not a shuffle this rewrite knows",
    "not-a-plain-batch": "{detail} is not a plain batch: the map cannot move after it",
    "map-read-elsewhere": "the map's output is read by more than its batch",
    "batch-not-after-map": "the batch does not read the map",
    "map-not-after-shuffle": "the map does not read the shuffle",
    "shuffle-read-elsewhere": "the shuffle's output is read by more than the map",
    "captures-differ-on-batch": "the function captures other values when traced on a batch",
    "already-kept": "{detail} is already kept",
    "no-rewrite-kept": "{detail} cannot be applied again: no rewrite kept with it",
    "walked-graph-not-kept": "the dataset graph is unavailable: no fix kept the walked graph",
    "no-rewrite-for-fix": "no rewrite for this fix",
    "generator-unread": "{detail}",
    # why the tf.data service could not be started, reached or read
    "no-grpcio": "grpcio is not installed: cannot reach a dispatcher",
    "not-a-dispatcher": "{detail} answers gRPC but is not a tf.data dispatcher",
    "no-dispatcher-answer": (
        "no tf.data dispatcher answered at {detail} within {limit:g} s ({because})"
    ),
    "servers-not-started": "the local tf.data servers did not start within {limit:g} s",
    "server-failed-to-start": "the local tf.data {detail} failed to start: {because}",
    "workers-not-registered": "only {value:.0f} of {limit:.0f} local workers registered {because}",
    "service-stalled": "the service delivered nothing more within {limit:.0f} s",
    "no-batch-within": "the service delivered no batch within {limit:.0f} s",
    "service-dataset-ended": "the service's dataset ended during the training read",
    # any measurement
    "as-written": "{detail}",
    "failed": "failed: {detail}",
    "error": "not measured: {detail}",
    "too-few-steps": "too few steps to time",
    # notes on the run
    "multi-worker-job": (
        "multi-worker job ({detail}, {value:.0f} tasks): every worker must run the same train "
        "steps, so the step budget counts steps only, compute alone runs a fixed number of "
        "steps, and no fix is tried on training"
    ),
    "defined-at": "{detail}",
    "exception": "{detail}",
    "own-error": "{detail}: {because}",
    # a function of the script: its name, and where it is defined where known
    "named-function-uncountable": (
        "the script called {detail}{because_note} is named by --train-function, but iterates "
        "a dataset of unknown length: its steps a call cannot be counted: its steps could not "
        "be counted"
    ),
    "function-without-step-counter": (
        "the script called {detail}{because_note} takes the data it trains on, but steps no "
        "optimizer with a step counter (Keras' `iterations`); if it trains, run with "
        "--train-function {detail} to count its steps by its calls: its steps could not be counted"
    ),
    "iterators-still-releasing": (
        "some of pipediag's own iterators were still being released at the end"
    ),
    "late-analysis-failed": "the analysis after the measured steps failed ({detail})",
    "gpu-analysis-failed": "the GPU analysis failed ({detail}); it is left out",
    "scale-out-prediction-failed": "the scale-out prediction failed ({detail}); it is left out",
    "prescription-figures-failed": "the prescription's figures failed ({detail}); it is left out",
    "advisor-failed": "the advisor failed ({detail}); it is left out",
    "stage-analysis-failed": "the per-stage analysis failed ({cause})",
    "stage-holds-failed": "holding the stages in memory on training failed ({cause})",
    "fix-trials-failed": "trying the fixes on training failed ({cause})",
    "service-check-failed": "the tf.data service check failed ({cause})",
    "model-side-failed": "the model-side trials failed ({cause})",
    "nested-step": "a step() inside another step() was ignored",
    "iterate-ignored": "steps are marked with explicit marks; iterate() were ignored " + _MIXED,
    "marks-ignored": "steps are marked with iterate(); explicit marks were ignored " + _MIXED,
    "step-budget-reached": (
        "step budget reached ({value:.0f} warm-up + {limit:.0f} measured steps): the rest of "
        "the run was not recorded"
    ),
    "loop-before-fit": (
        "the script trained in a custom loop ({value:.0f} steps) before calling fit: fit's "
        "training is diagnosed"
    ),
    "two-train-styles": "the script trains both with {detail} and {because}",
    "train-style": "{detail}",
    "steps-merged": (
        "{value:.0f} steps were kept as {limit:.0f} records: older steps were merged in pairs "
        "to bound memory (totals are exact)"
    ),
    "cache-epoch-outlasted": (
        "the pipeline caches, but its first epoch outlasted the measuring bound: the verdict "
        "describes epoch 1 only (--steps N measures more)"
    ),
    "stamps-not-attached": (
        "the training dataset could not be time-stamped ({detail}): input wait under fit was "
        "not measured"
    ),
    "fit-profiler-no-start": (
        "the TF profiler could not be started ({detail}): input wait under fit was not measured"
    ),
    "stamps-unread": (
        "batch stamps could not be read ({detail}): some steps under fit have no input wait"
    ),
    "loop-pulls-inside": _PULLS_AT + ": " + _PULLS_INSIDE,
    "loop-pulls-inside-named": (
        _PULLS_AT + " (named by --train-function: it steps no optimizer with a step counter, so "
        "a call counts one step, or its dataset's length): " + _PULLS_INSIDE
    ),
    "watch-thread-busy": (
        "the watch thread was still busy at the end (a slow alert hook?): the last windows may "
        "be missing"
    ),
    "scalars-not-written": (
        "TensorBoard scalars could not be written to {detail} ({because}): the windows are in "
        "the report only"
    ),
    "watch-failed": "watch mode failed ({detail}): some windows may be missing",
    "alert-hook-raised": (
        "the alert hook raised {detail} (said once; training goes on, and later alerts still "
        "call it)"
    ),
    "alert-command-no-start": "the alert command could not start: {detail}",
    "alert-command-exit": "the alert command exited with code {value:.0f}: {detail} (said once)",
    "alert-command-running": "the alert command was still running at the end: {detail}",
    "data-service-failed": "--data-service: {because}",
    "no-dataset": "no tf.data training dataset was seen",
    "pipeline-failed": "the pipeline failed when read alone: {detail}",
    "no-bench": "skipped (--no-bench)",
    "watch-no-bench": "watch mode: no pipeline-alone phase",
    "bench-interrupted": "interrupted before the pipeline benchmark finished",
    "no-pipeline-benchmark": (
        "the framework-neutral API does not read the loader on its own: no pipeline-alone benchmark"
    ),
    "distributed-feed": (
        "not read alone: its {detail} stage is tf.distribute's per-device feed, which reads "
        "the batches your training reads"
    ),
    "not-read-alone": (
        "not read alone: {detail}, and reading it directly would change your shuffle order or cache"
    ),
    "pipeline-not-read": "the pipeline could not be read alone{because_note}",
    "fit-given": "fit was given a {detail}, not a tf.data.Dataset: nothing to benchmark alone",
    "empty-dataset": "the dataset is empty",
    "one-batch": "the dataset has only one batch: nothing to time after warm-up",
    "deep-skipped": (
        "input costs {value:.0%} of training (under {limit:.0%}): no pipeline fix can gain "
        "more; --deep measures stages and fixes anyway"
    ),
    "no-batch-kept": "no batch of the training dataset was kept",
    "no-cached-batch": "no cached batch: {because}",
    "no-compiled-train-function": "the model has no compiled train function yet",
    "stateful-random-op": (
        "the train step uses TensorFlow's stateful random op {detail}, whose hidden state "
        "extra steps would change"
    ),
    "backend-no-step-alone": "the train step alone " + _UNDRIVEN,
    "reads-iterator-to-end": (
        "the training function reads its iterator to the end each call (`for x in iterator`):"
        " on a held batch that repeats, a call would not end"
    ),
    "jax-state-purged": "fit's training state could not be read (its variables were purged)",
    "iterator-unreadable": "the training iterator's dataset cannot be read",
    "not-plain-tensors": "the training batches are not plain tensors (ragged or sparse)",
    "no-step-in-blocks": "no step finished in the step-alone blocks",
    "no-step-alone": "no step finished in the compute-alone time",
    "step-alone-failed": "the train step failed on a cached batch: {detail}",
    "no-measured-step": "no measured step to compare with",
    "no-train-step-to-run": "no train step to run alone",
    "step-not-run-alone": "the train step was not run alone",
    "lockstep-fit": (
        "a multi-worker fit: its train step is a collective every worker must join at once, "
        "so it is not run alone"
    ),
    "watch-no-step-alone": "watch mode runs no train step alone",
    "marked-steps": (
        "steps marked through pipediag.monitor() cannot be run on their own: compute alone "
        "is estimated"
    ),
    "loop-steps-all": (
        "--steps all: a custom loop has no safe point to run extra steps on a cached batch "
        "(they would change what it trains on)"
    ),
    "loop-ended-early": (
        "the script ended before the step budget, where a custom loop is served a cached batch"
    ),
    "no-verify": "not measured: --no-verify",
    "input-cost-high": _input_cost,
    "model-side-fit-only": (
        "model-side trials run under Keras fit, and on a custom TF loop at its step budget"
    ),
    "no-step-time": "no step-alone time to size trials",
    "budget-share": "not measured: its share of the budget is {value:.1f} s",
    "runs-eagerly": (
        "not measured: the model runs eagerly (run_eagerly=True): XLA needs a compiled step"
    ),
    "already-xla": "not measured: the train step already compiles with XLA (jit_compile=True)",
    "functions-eager": (
        "not measured: tf.functions run eagerly (tf.config.run_functions_eagerly(True))"
    ),
    "no-python-function": "not measured: the train step's Python function cannot be read",
    "no-jit-support": "not measured: Keras says this model does not support jit_compile",
    "xla-op": "XLA cannot compile the op {detail}",
    "xla-failed": "XLA failed to compile the train step: {detail}",
    "spe-already": "not measured: the model already runs steps_per_execution={value:.0f}",
    "spe-step-long": lambda reason: (
        f"not measured: a step of {(reason.value or 0) * 1e3:.0f} ms leaves fit's own time "
        "per step too small a share to matter"
    ),
    "spe-multi-replica": "not measured: a multi-replica strategy (its iterator is the strategy's)",
    "spe-fit-share": "fit's own time is {value:.0%} of its step: the gain is the call's",
    "no-bfloat16": "not measured: this CPU has no bfloat16 instructions (no GPU)",
    "subclassed-model": (
        "not measured: a subclassed model ({detail}) cannot be rebuilt under another dtype "
        "policy by keras.models.clone_model"
    ),
    "no-gpu-copy": "not measured: no GPU (the batch is already where the step runs)",
    "copy-at-most": (
        "at most: prefetch_to_device overlaps the copy with the step; it is tried on "
        "training with the pipeline's rewrites"
    ),
    "loop-stopped": "the loop stopped before the rounds were over",
    "no-train-step-found": "not measured: no train step found",
    "steps-too-few-to-find": (
        "not measured: {value:.0f} steps counted, too few to find the train step"
    ),
    "framework-step": (
        "not measured: the tf.function the loop calls each step is the framework's own "
        "({detail}); XLA for it is the model's setting: model.compile(..., jit_compile=True)"
    ),
    "no-function": (
        "not measured: the loop calls no tf.function between pulls; its step runs eagerly "
        "(decorate the train step with @tf.function to make it a graph XLA can compile)"
    ),
    "several-once": (
        "not measured: the loop calls several tf.functions once between pulls ({detail}); "
        "which one is the train step is not known"
    ),
    "called-several": (
        "not measured: the loop calls {detail} several times between pulls (a step over "
        "several calls, or several steps a pull)"
    ),
    "none-once": (
        "not measured: no tf.function is called once in every step (the most often, "
        "{detail}, in {value:.0f} of {limit:.0f})"
    ),
    "profiler-no-start": "not measured: the TF profiler could not start ({detail})",
    "profiler-not-started": "not measured: the TF profiler did not start",
    "no-host-trace": "not measured: the profiler wrote no host trace",
    "no-op-events": "not measured: the trace held no op events",
    "profile-stopped": "not measured: the loop stopped before the profiled steps were over",
    "service-error": "{cause}",
    "grpc-status": "{detail}",
    "start-timeout": "within {limit:g} s",
    "no-error-output": "no error output",
    "not-copied": "not copied: {detail}",
    "no-workers": "the dispatcher at {detail} has no workers registered",
    "service-refused": "refused: {detail}",
    "too-few-elements": "the service returned too few elements to time",
    "part-only": "only part of the pipeline can move: training is not measured",
    "no-train-step-service": "no train step to feed from the service",
    "service-fit-only": "training through the service is measured under Keras fit only",
    "service-tf-only": (
        "training through the service is measured under fit on the TensorFlow backend only "
        "(this fit runs on {detail})"
    ),
    "service-multi-replica": (
        "a multi-replica strategy: training through the service is not measured"
    ),
    "service-train-failed": "the train step failed on the service's batches: {detail}",
    "not-checked": "not checked",
    "nothing-to-move": "nothing worth moving can run on a worker (see the blockers)",
    "no-compute-rate": "no compute-alone rate to feed",
    "no-per-worker-rate": "no per-worker rate measured",
    # host and GPU sampling
    "host-sampling-off": "host sampling was turned off",
    "gpu-sampling-off": "GPU sampling was turned off",
    "host-sampler-not-started": "host sampler was not started",
    "gpu-sampler-not-started": "GPU sampler was not started",
    "sampler-setup-failed": "sampler setup failed: {detail}",
    "no-psutil": "psutil is not installed: pip install psutil",
    "psutil-cannot-read": "psutil cannot read this process: {detail}",
    "no-pynvml": "nvidia-ml-py (pynvml) is not installed: pip install nvidia-ml-py",
    "nvml-library-not-found": "NVML library not found (no NVIDIA driver): no GPU on this machine",
    "nvml-driver-not-loaded": "NVIDIA driver not loaded (NVMLError_DriverNotLoaded): no usable GPU",
    "nvml-no-permission": "no permission to query the GPU through NVML (NVMLError_NoPermission)",
    "nvml-version-mismatch": (
        "NVML library and kernel driver versions differ (NVMLError_LibRmVersionMismatch): "
        "reload the driver or reboot"
    ),
    "nvml-init-failed": "NVML failed to initialise: {detail}",
    "gpu-discovery-failed": "GPU discovery through NVML failed: {detail}",
    "nvml-no-gpu": "NVML found no GPU",
    "cuda-hides-gpus": "CUDA_VISIBLE_DEVICES={detail!r} hides every GPU from this process",
    "no-gpu-opened": "no visible GPU could be opened through NVML",
    "no-gpu-sampled": lambda reason: (
        f"no GPU was sampled: {reason_words(reason.because) or 'unknown reason'}"
    ),
    "no-timed-wait-step": (
        "no measured step with a timed input wait to compare the GPU's activity with"
    ),
    "no-gpu-reading": "no GPU utilization reading succeeded{cause_note}",
    "no-busy-reading": "GPU {value:.0f} reported no {detail} reading",
    "few-gpu-windows": (
        "only {value:.0f} NVML window(s) fell inside the measured steps ({because}; need "
        "{limit:.0f}): NVML averages over 1/6 s to 1 s, so run more steps for a GPU view"
    ),
    "steps-span": "{value:.2f} s of steps",
    "host-not-sampled": "host was not sampled",
    "no-host-samples": "no host CPU samples",
    # fixes tried on training, and the pipeline pipediag would write
    "backend-no-fix-trial": "a fix on training " + _UNDRIVEN,
    "calls-no-fix-trial": (
        "the training function closes over its data, iterates a dataset each call, or splits"
        " each batch among replicas: fixes are tried on training only where it is given a"
        " tf.data iterator or a one-replica tf.distribute one"
    ),
    "fix-trial-budget-spent": "training trial budget spent",
    "loop-stopped-first": "the loop stopped first",
    "not-tried": "not tried",
    "fixed-pipeline-failed": "the train step failed on the fixed pipeline: {detail}",
    "training-out-of-time": "the time for trials on training ran out first",
    "not-built": "could not be built: {cause}",
    "not-built-on-top": "could not be built on top of the kept rewrites: {cause}",
    "training-stopped": "the training stopped before this trial ended",
    "no-rewrite-tried": "no rewrite was tried on training",
    "no-rewrite-helped": "no rewrite helped training clearly",
    "fell-back": (
        "kept on its own trial, but the kept rewrites together gained training less than the "
        "first ({detail}) alone: the pipeline is that one alone"
    ),
    "covered-by-cache": (
        "the kept cache after {detail} serves it from memory after the first epoch: this "
        "would change only the first"
    ),
    "too-few-rounds": "too few rounds to tell",
    "under-worth-it": "under the worth-it {limit:.2f}x",
    "slower": "slower",
    "interval-reaches-one": "its interval reaches 1",
    "bounded-out": (
        "holding {detail} in memory gained training only {value:.2f}x: no rewrite up to it "
        "can gain more"
    ),
    # the fleet of a multi-worker job
    "one-worker": "one worker only: nothing to compare it with",
    "too-few-timed-workers": "fewer than two workers measured training steps",
    "none-stands-out": (
        "none stands out: the workers trained at the same rate (within {value:.0%}), waited "
        "alike for input (within {limit:.0%} of step time), and their hosts and GPUs were "
        "alike busy"
    ),
    # stage timing, and stages held on training
    "stage-out-of-time": "the time budget ran out before this stage was read",
    "stages-capped": "only the first {limit:.0f} stages are measured",
    "partial-file-cache": "reads through a file cache that is not complete on disk",
    "cannot-iterate": "cannot iterate: {detail}",
    "stage-not-read-alone": "not read alone: {detail}",
    "too-few-stage-elements": "too few elements to time",
    "held-above-step-alone": (
        "the held pipeline fed training at {value:.1f} steps/s, faster than the train step "
        "alone ran ({limit:.1f} with its noise): the trial was disturbed, so its gain is not "
        "used"
    ),
    # fixes timed on the pipeline alone: why a rewrite was not verified
    "not-run-no-verify": "not run (--no-verify)",
    "no-whatif-run": "no what-if run",
    "graph-unavailable": "the dataset graph is unavailable: {detail}",
    "graph-not-rebuilt": "the dataset graph cannot be rebuilt: {detail}",
    "no-dataset-graph": "no dataset graph",
    "verification-budget-spent": "not measured: verification budget spent",
    "left-to-training": "not measured: verification budget spent; left to the trials on training",
    "rewritten-failed": "the rewritten pipeline failed: {detail}",
    "cannot-rewrite": "cannot rewrite: {cause}",
    "check-failed": _check_failed,
    "too-few-batches": "too few batches to time",
    "stage-not-in-graph": "the stage was not found in the dataset graph",
    "map-or-batch-not-in-graph": "the map or its batch was not found in the dataset graph",
    "map-input-unknown": "the map's input dataset is unknown",
    "map-or-shuffle-not-in-graph": "the map or its shuffle was not found in the dataset graph",
    "generator-not-in-graph": "the generator was not found in the dataset graph",
    "generator-ragged": "its elements are ragged or sparse: " + _TFRECORD_ROUTE,
    "generator-too-big": "one epoch does not fit in memory: " + _TFRECORD_ROUTE,
    "generator-too-slow": (
        "one epoch takes over {limit:.0f} s to read, or never ends: not held here; "
        + _TFRECORD_ROUTE
    ),
    "generator-failed": "the generator failed when read ({detail})",
    "generator-empty": "the generator yielded nothing",
    "generator-shapes-differ": "its elements differ in shape: " + _TFRECORD_ROUTE,
    "python-not-repeatable": (
        "{detail} gave other values for the same {value:.0f} elements read twice: its Python "
        "draws random numbers or reads changing state, so a cache would replay the first "
        "epoch's"
    ),
    "infinite-or-unknown-size": (
        "the dataset is infinite or of unknown size at this point: no cache"
    ),
    "count-too-long": (
        "the dataset's length is unknown here, and counting it took over {limit:g} s: no cache"
    ),
    "cache-size-unknown": "the cache size is unknown",
    "cache-too-big": "the cache would not fit comfortably in memory",
    "fill-time-unknown": "cannot tell how long filling the cache takes: estimated only",
    "fill-too-long": "filling the cache takes about {value:.0f} s (one epoch): estimated only",
    "sample-ragged": "not checked: the map's input has ragged or sparse parts; estimated only",
    "no-sample": "not checked: no sample of the map's input could be read; estimated only",
    "unsafe-keep-map": "unsafe: {because}; keep the map before the batch",
    "fails-on-batch": "the function fails on a batch ({detail})",
    "not-elementwise": (
        "on {value:.0f} of your elements the function gives other results on a batch "
        "({detail}): it is not elementwise"
    ),
    # notes on sampling, the pipeline, scale-out and the fleet
    "repeated-failure": "{because} ({value:.0f} times)",
    "sampler-stuck": "sampler thread did not stop within {limit:g} s",
    "cleanup-failed": "cleanup failed: {detail}",
    "reading-failed": "reading failed: {detail}",
    "sampler-thread-died": "sampler thread died: {detail}",
    "gpm-free-failed": "GPM sample free failed: {detail}",
    "nvml-shutdown-failed": "nvmlShutdown failed: {detail}",
    "gpu-memory-unavailable": "memory readings" + _UNAVAILABLE_ON_GPU,
    "gpu-power-unavailable": "power readings" + _UNAVAILABLE_ON_GPU,
    "gpu-clock-unavailable": "SM clock readings" + _UNAVAILABLE_ON_GPU,
    "gpu-pcie-rx-unavailable": "PCIe RX readings" + _UNAVAILABLE_ON_GPU,
    "gpu-pcie-tx-unavailable": "PCIe TX readings" + _UNAVAILABLE_ON_GPU,
    "gpu-util-samples-unavailable": "driver utilization samples" + _UNAVAILABLE_ON_GPU,
    "gpu-util-unavailable": "GPU utilization" + _UNAVAILABLE_ON_GPU,
    "gpu-gpm-unavailable": "SM activity/occupancy (GPM) readings" + _UNAVAILABLE_ON_GPU,
    "driver-version-unavailable": "driver version unavailable: {detail}",
    "gpu-skipped": "GPU {value:.0f} skipped: {detail}",
    "cuda-entry-unmatched": (
        "CUDA_VISIBLE_DEVICES entry {detail!r} matches no single GPU; CUDA ignores it and every "
        "entry after it"
    ),
    "cuda-order-unsure": (
        "CUDA_VISIBLE_DEVICES indices were read in NVML (PCI bus) order; CUDA's default order "
        "can differ on mixed GPUs: set CUDA_DEVICE_ORDER=PCI_BUS_ID to be sure"
    ),
    "gpu-name-unavailable": "GPU {value:.0f} name unavailable: {detail}",
    "gpu-memory-size-unavailable": "GPU {value:.0f} memory size unavailable: {detail}",
    "gpu-mig-enabled": (
        "GPU {value:.0f} has MIG enabled: NVML gives no per-MIG utilization, so readings are "
        "the whole GPU's (every MIG instance together)"
    ),
    "gpu-driver-samples-setup-failed": (
        "GPU {value:.0f}: driver utilization samples unavailable ({detail}); using "
        "nvmlDeviceGetUtilizationRates"
    ),
    "gpu-gpm-setup-failed": _GPM_UNAVAILABLE + "{detail}",
    "gpu-not-gpm-device": _GPM_UNAVAILABLE + "not a GPM device (needs Hopper or newer)",
    "no-util-reading-on-gpu": "no GPU utilization reading succeeded on GPU {value:.0f}",
    "busiest-gpu-analysed": (
        "GPU {value:.0f} analysed, the busiest of the {limit:.0f} GPUs sampled; data-parallel "
        "GPUs idle together when input-bound"
    ),
    "untimed-readings": (
        "no driver timestamps: utilization readings were placed at the sampler's ticks and "
        "merged into windows of at least {limit:g} s"
    ),
    "low-window-coverage": (
        "GPU windows cover only {value:.0%} of the measured step time (readings missing or "
        "failing during the run)"
    ),
    "steady-run": (
        "GPU idle or input wait did not vary across windows: their correlation is undefined "
        "(a steady run); the idle attribution still holds"
    ),
    "few-correlation-windows": (
        "{value:.0f} windows are too few for a correlation (need {limit:.0f})"
    ),
    "file-cache-bypassed": (
        "the file cache {detail!r} is not complete yet: pipediag read the pipeline without "
        "it, so it never writes your cache files"
    ),
    "too-little-moves": (
        "only the stages up to {detail} could move, {value:.0%} of the pipeline's work: not "
        "worth the transfer; {because}"
    ),
    "port-to-tf": "port {detail} to TF ops, then the whole pipeline can move",
    "nothing-sent": (
        "nothing was sent through the service: no part worth moving can run on a worker"
    ),
    "distribute-before-batch": (
        "the distribute point is before the batch: elements would cross to this host one by "
        "one; batch before distribute if the stages after it allow"
    ),
    "one-host": _one_host,
    "different-scripts": "the workers ran different scripts: {detail}",
    "cluster-partly-merged": "the cluster has {value:.0f} tasks; {limit:.0f} reports were merged",
    "incomplete-runs": "incomplete runs (the script ended early or failed): {detail}",
}


def reason_words(reason: Reason | None) -> str:
    """'' for none; a code this pipediag does not know shows as stored."""
    if reason is None:
        return ""
    if (words := WORDS.get(reason.code)) is None:
        return reason.detail or reason.code
    if callable(words):
        return words(reason)
    because = reason_words(reason.because)
    cause = because or reason.detail
    return words.format(
        detail=reason.detail or _MISSING_DETAIL.get(reason.code, reason.detail),
        value=reason.value,
        limit=reason.limit,
        because=because,
        cause=cause,
        because_note=f" ({because})" if reason.because is not None else "",
        cause_note=f" ({cause})" if cause else "",
    )
