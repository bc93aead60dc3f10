"""The words for every reason a report stores (`report/reasons.py`): the one glossary."""

from __future__ import annotations

from collections.abc import Callable

from pipediag.renderers.numbers import percent
from pipediag.report import reasons as r
from pipediag.report.reasons import Reason, ReasonCode


def _input_cost(reason: Reason) -> str:
    share = "unknown" if reason.value is None else percent(reason.value)
    return (
        f"input costs {share} of training (model-side trials run under {reason.limit:.0%}, "
        "or with --deep)"
    )


def _spe_step_long(reason: Reason) -> str:
    return (
        f"not measured: a step of {(reason.value or 0) * 1e3:.0f} ms leaves fit's own time "
        "per step too small a share to matter"
    )


def _not_read(reason: Reason) -> str:
    why = f" ({reason_words(reason.because)})" if reason.because is not None else ""
    return f"the pipeline could not be read alone{why}"


def _refused(reason: Reason) -> str:
    return f"refused: {reason.detail or 'no batch came back'}"


def _no_gpu_sampled(reason: Reason) -> str:
    return f"no GPU was sampled: {reason_words(reason.because) or 'unknown reason'}"


def _no_gpu_reading(reason: Reason) -> str:
    note = f" ({reason.detail})" if reason.detail else ""
    return f"no GPU utilization reading succeeded{note}"


_UNDRIVEN = (
    "is not run on Keras's {detail} backend: pipediag drives the train step of the TensorFlow "
    "and JAX backends only"
)

# How a generator too big, too slow or too odd to hold is written once and read back.
_TFRECORD_ROUTE = (
    "write its elements once to TFRecord files (tf.io.TFRecordWriter) and read them with "
    "tf.data.TFRecordDataset"
)

# A template over the reason's fields (`because` worded first), or a function of the reason.
WORDS: dict[ReasonCode, str | Callable[[Reason], str]] = {
    r.AS_WRITTEN: "{detail}",
    r.FAILED: "failed: {detail}",
    r.ERROR: "not measured: {detail}",
    r.TOO_FEW_STEPS: "too few steps to time",
    r.NO_DATASET: "no tf.data training dataset was seen",
    r.PIPELINE_FAILED: "the pipeline failed when read alone: {detail}",
    r.NO_BENCH: "skipped (--no-bench)",
    r.WATCH_NO_BENCH: "watch mode: no pipeline-alone phase",
    r.BENCH_INTERRUPTED: "interrupted before the pipeline benchmark finished",
    r.NO_PIPELINE_BENCHMARK: (
        "the framework-neutral API does not read the loader on its own: no pipeline-alone benchmark"
    ),
    r.DISTRIBUTED_FEED: (
        "not read alone: its {detail} stage is tf.distribute's per-device feed, which reads "
        "the batches your training reads"
    ),
    r.NOT_READ_ALONE: (
        "not read alone: {detail}, and reading it directly would change your shuffle order or cache"
    ),
    r.PIPELINE_NOT_READ: _not_read,
    r.FIT_GIVEN: "fit was given a {detail}, not a tf.data.Dataset: nothing to benchmark alone",
    r.EMPTY_DATASET: "the dataset is empty",
    r.ONE_BATCH: "the dataset has only one batch: nothing to time after warm-up",
    r.DEEP_SKIPPED: (
        "input costs {value:.0%} of training (under {limit:.0%}): no pipeline fix can gain "
        "more; --deep measures stages and fixes anyway"
    ),
    r.NO_BATCH_KEPT: "no batch of the training dataset was kept",
    r.NO_CACHED_BATCH: "no cached batch: {because}",
    r.NO_COMPILED_TRAIN_FUNCTION: "the model has no compiled train function yet",
    r.STATEFUL_RANDOM_OP: (
        "the train step uses TensorFlow's stateful random op {detail}, whose hidden state "
        "extra steps would change"
    ),
    r.BACKEND_NO_STEP_ALONE: "the train step alone " + _UNDRIVEN,
    r.READS_ITERATOR_TO_END: (
        "the training function reads its iterator to the end each call (`for x in iterator`):"
        " on a held batch that repeats, a call would not end"
    ),
    r.JAX_STATE_PURGED: "fit's training state could not be read (its variables were purged)",
    r.ITERATOR_UNREADABLE: "the training iterator's dataset cannot be read",
    r.NOT_PLAIN_TENSORS: "the training batches are not plain tensors (ragged or sparse)",
    r.NO_STEP_IN_BLOCKS: "no step finished in the step-alone blocks",
    r.NO_STEP_ALONE: "no step finished in the compute-alone time",
    r.STEP_ALONE_FAILED: "the train step failed on a cached batch: {detail}",
    r.NO_MEASURED_STEP: "no measured step to compare with",
    r.NO_TRAIN_STEP_TO_RUN: "no train step to run alone",
    r.STEP_NOT_RUN_ALONE: "the train step was not run alone",
    r.LOCKSTEP_FIT: (
        "a multi-worker fit: its train step is a collective every worker must join at once, "
        "so it is not run alone"
    ),
    r.WATCH_NO_STEP_ALONE: "watch mode runs no train step alone",
    r.MARKED_STEPS: (
        "steps marked through pipediag.monitor() cannot be run on their own: compute alone "
        "is estimated"
    ),
    r.LOOP_STEPS_ALL: (
        "--steps all: a custom loop has no safe point to run extra steps on a cached batch "
        "(they would change what it trains on)"
    ),
    r.LOOP_ENDED_EARLY: (
        "the script ended before the step budget, where a custom loop is served a cached batch"
    ),
    r.NO_VERIFY: "not measured: --no-verify",
    r.INPUT_COST_HIGH: _input_cost,
    r.MODEL_SIDE_FIT_ONLY: (
        "model-side trials run under Keras fit, and on a custom TF loop at its step budget"
    ),
    r.NO_STEP_TIME: "no step-alone time to size trials",
    r.BUDGET_SHARE: "not measured: its share of the budget is {value:.1f} s",
    r.RUNS_EAGERLY: (
        "not measured: the model runs eagerly (run_eagerly=True): XLA needs a compiled step"
    ),
    r.ALREADY_XLA: "not measured: the train step already compiles with XLA (jit_compile=True)",
    r.FUNCTIONS_EAGER: (
        "not measured: tf.functions run eagerly (tf.config.run_functions_eagerly(True))"
    ),
    r.NO_PYTHON_FUNCTION: "not measured: the train step's Python function cannot be read",
    r.NO_JIT_SUPPORT: "not measured: Keras says this model does not support jit_compile",
    r.XLA_OP: "XLA cannot compile the op {detail}",
    r.XLA_FAILED: "XLA failed to compile the train step: {detail}",
    r.SPE_ALREADY: "not measured: the model already runs steps_per_execution={value:.0f}",
    r.SPE_STEP_LONG: _spe_step_long,
    r.SPE_MULTI_REPLICA: (
        "not measured: a multi-replica strategy (its iterator is the strategy's)"
    ),
    r.SPE_FIT_SHARE: "fit's own time is {value:.0%} of its step: the gain is the call's",
    r.NO_BFLOAT16: "not measured: this CPU has no bfloat16 instructions (no GPU)",
    r.SUBCLASSED_MODEL: (
        "not measured: a subclassed model ({detail}) cannot be rebuilt under another dtype "
        "policy by keras.models.clone_model"
    ),
    r.NO_GPU_COPY: "not measured: no GPU (the batch is already where the step runs)",
    r.COPY_AT_MOST: (
        "at most: prefetch_to_device overlaps the copy with the step; it is tried on "
        "training with the pipeline's rewrites"
    ),
    r.LOOP_STOPPED: "the loop stopped before the rounds were over",
    r.NO_TRAIN_STEP_FOUND: "not measured: no train step found",
    r.STEPS_TOO_FEW_TO_FIND: (
        "not measured: {value:.0f} steps counted, too few to find the train step"
    ),
    r.FRAMEWORK_STEP: (
        "not measured: the tf.function the loop calls each step is the framework's own "
        "({detail}); XLA for it is the model's setting: model.compile(..., jit_compile=True)"
    ),
    r.NO_FUNCTION: (
        "not measured: the loop calls no tf.function between pulls; its step runs eagerly "
        "(decorate the train step with @tf.function to make it a graph XLA can compile)"
    ),
    r.SEVERAL_ONCE: (
        "not measured: the loop calls several tf.functions once between pulls ({detail}); "
        "which one is the train step is not known"
    ),
    r.CALLED_SEVERAL: (
        "not measured: the loop calls {detail} several times between pulls (a step over "
        "several calls, or several steps a pull)"
    ),
    r.NONE_ONCE: (
        "not measured: no tf.function is called once in every step (the most often, "
        "{detail}, in {value:.0f} of {limit:.0f})"
    ),
    r.PROFILER_NO_START: "not measured: the TF profiler could not start ({detail})",
    r.PROFILER_NOT_STARTED: "not measured: the TF profiler did not start",
    r.NO_HOST_TRACE: "not measured: the profiler wrote no host trace",
    r.NO_OP_EVENTS: "not measured: the trace held no op events",
    r.PROFILE_STOPPED: "not measured: the loop stopped before the profiled steps were over",
    r.SERVICE_ERROR: "{detail}",
    r.NOT_COPIED: "not copied: {detail}",
    r.NO_WORKERS: "the dispatcher at {detail} has no workers registered",
    r.SERVICE_REFUSED: _refused,
    r.TOO_FEW_ELEMENTS: "the service returned too few elements to time",
    r.PART_ONLY: "only part of the pipeline can move: training is not measured",
    r.NO_TRAIN_STEP_SERVICE: "no train step to feed from the service",
    r.SERVICE_FIT_ONLY: "training through the service is measured under Keras fit only",
    r.SERVICE_TF_ONLY: (
        "training through the service is measured under fit on the TensorFlow backend only "
        "(this fit runs on {detail})"
    ),
    r.SERVICE_MULTI_REPLICA: (
        "a multi-replica strategy: training through the service is not measured"
    ),
    r.SERVICE_TRAIN_FAILED: "the train step failed on the service's batches: {detail}",
    r.NOT_CHECKED: "not checked",
    r.NOTHING_TO_MOVE: "nothing worth moving can run on a worker (see the blockers)",
    r.NO_COMPUTE_RATE: "no compute-alone rate to feed",
    r.NO_PER_WORKER_RATE: "no per-worker rate measured",
    # host and GPU sampling
    r.HOST_SAMPLING_OFF: "host sampling was turned off",
    r.GPU_SAMPLING_OFF: "GPU sampling was turned off",
    r.HOST_SAMPLER_NOT_STARTED: "host sampler was not started",
    r.GPU_SAMPLER_NOT_STARTED: "GPU sampler was not started",
    r.SAMPLER_SETUP_FAILED: "sampler setup failed: {detail}",
    r.NO_PSUTIL: "psutil is not installed: pip install psutil",
    r.PSUTIL_CANNOT_READ: "psutil cannot read this process: {detail}",
    r.NO_PYNVML: "nvidia-ml-py (pynvml) is not installed: pip install nvidia-ml-py",
    r.NVML_LIBRARY_NOT_FOUND: "NVML library not found (no NVIDIA driver): no GPU on this machine",
    r.NVML_DRIVER_NOT_LOADED: (
        "NVIDIA driver not loaded (NVMLError_DriverNotLoaded): no usable GPU"
    ),
    r.NVML_NO_PERMISSION: "no permission to query the GPU through NVML (NVMLError_NoPermission)",
    r.NVML_VERSION_MISMATCH: (
        "NVML library and kernel driver versions differ (NVMLError_LibRmVersionMismatch): "
        "reload the driver or reboot"
    ),
    r.NVML_INIT_FAILED: "NVML failed to initialise: {detail}",
    r.GPU_DISCOVERY_FAILED: "GPU discovery through NVML failed: {detail}",
    r.NVML_NO_GPU: "NVML found no GPU",
    r.CUDA_HIDES_GPUS: "CUDA_VISIBLE_DEVICES={detail!r} hides every GPU from this process",
    r.NO_GPU_OPENED: "no visible GPU could be opened through NVML",
    r.NO_GPU_SAMPLED: _no_gpu_sampled,
    r.NO_TIMED_WAIT_STEP: (
        "no measured step with a timed input wait to compare the GPU's activity with"
    ),
    r.NO_GPU_READING: _no_gpu_reading,
    r.NO_BUSY_READING: "GPU {value:.0f} reported no {detail} reading",
    r.FEW_GPU_WINDOWS: (
        "only {value:.0f} NVML window(s) fell inside the measured steps ({because}; need "
        "{limit:.0f}): NVML averages over 1/6 s to 1 s, so run more steps for a GPU view"
    ),
    r.STEPS_SPAN: "{value:.2f} s of steps",
    r.HOST_NOT_SAMPLED: "host was not sampled",
    r.NO_HOST_SAMPLES: "no host CPU samples",
    # fixes tried on training, and the pipeline pipediag would write
    r.BACKEND_NO_FIX_TRIAL: "a fix on training " + _UNDRIVEN,
    r.CALLS_NO_FIX_TRIAL: (
        "the training function closes over its data, iterates a dataset each call, or splits"
        " each batch among replicas: fixes are tried on training only where it is given a"
        " tf.data iterator or a one-replica tf.distribute one"
    ),
    r.FIX_TRIAL_BUDGET_SPENT: "training trial budget spent",
    r.LOOP_STOPPED_FIRST: "the loop stopped first",
    r.NOT_TRIED: "not tried",
    r.FIXED_PIPELINE_FAILED: "the train step failed on the fixed pipeline: {detail}",
    r.TRAINING_OUT_OF_TIME: "the time for trials on training ran out first",
    r.NOT_BUILT: "could not be built: {detail}",
    r.NOT_BUILT_ON_TOP: "could not be built on top of the kept rewrites: {detail}",
    r.TRAINING_STOPPED: "the training stopped before this trial ended",
    r.NO_REWRITE_TRIED: "no rewrite was tried on training",
    r.NO_REWRITE_HELPED: "no rewrite helped training clearly",
    r.FELL_BACK: (
        "kept on its own trial, but the kept rewrites together gained training less than the "
        "first ({detail}) alone: the pipeline is that one alone"
    ),
    r.COVERED_BY_CACHE: (
        "the kept cache after {detail} serves it from memory after the first epoch: this "
        "would change only the first"
    ),
    r.TOO_FEW_ROUNDS: "too few rounds to tell",
    r.UNDER_WORTH_IT: "under the worth-it {limit:.2f}x",
    r.SLOWER: "slower",
    r.INTERVAL_REACHES_ONE: "its interval reaches 1",
    r.BOUNDED_OUT: (
        "holding {detail} in memory gained training only {value:.2f}x: no rewrite up to it "
        "can gain more"
    ),
    # the fleet of a multi-worker job
    r.ONE_WORKER: "one worker only: nothing to compare it with",
    r.TOO_FEW_TIMED_WORKERS: "fewer than two workers measured training steps",
    r.NONE_STANDS_OUT: (
        "none stands out: the workers trained at the same rate (within {value:.0%}), waited "
        "alike for input (within {limit:.0%} of step time), and their hosts and GPUs were "
        "alike busy"
    ),
    # stage timing, and stages held on training
    r.STAGE_OUT_OF_TIME: "the time budget ran out before this stage was read",
    r.STAGES_CAPPED: "only the first {limit:.0f} stages are measured",
    r.PARTIAL_FILE_CACHE: "reads through a file cache that is not complete on disk",
    r.CANNOT_ITERATE: "cannot iterate: {detail}",
    r.STAGE_NOT_READ_ALONE: "not read alone: {detail}",
    r.TOO_FEW_STAGE_ELEMENTS: "too few elements to time",
    r.HELD_ABOVE_STEP_ALONE: (
        "the held pipeline fed training at {value:.1f} steps/s, faster than the train step "
        "alone ran ({limit:.1f} with its noise): the trial was disturbed, so its gain is not "
        "used"
    ),
    # fixes timed on the pipeline alone: why a rewrite was not verified
    r.NOT_RUN_NO_VERIFY: "not run (--no-verify)",
    r.NO_WHATIF_RUN: "no what-if run",
    r.GRAPH_UNAVAILABLE: "the dataset graph is unavailable: {detail}",
    r.GRAPH_NOT_REBUILT: "the dataset graph cannot be rebuilt: {detail}",
    r.NO_DATASET_GRAPH: "no dataset graph",
    r.VERIFICATION_BUDGET_SPENT: "not measured: verification budget spent",
    r.LEFT_TO_TRAINING: ("not measured: verification budget spent; left to the trials on training"),
    r.REWRITTEN_FAILED: "the rewritten pipeline failed: {detail}",
    r.CANNOT_REWRITE: "cannot rewrite: {detail}",
    r.CHECK_FAILED: "could not be checked: {detail}",
    r.TOO_FEW_BATCHES: "too few batches to time",
    r.STAGE_NOT_IN_GRAPH: "the stage was not found in the dataset graph",
    r.MAP_OR_BATCH_NOT_IN_GRAPH: "the map or its batch was not found in the dataset graph",
    r.MAP_INPUT_UNKNOWN: "the map's input dataset is unknown",
    r.MAP_OR_SHUFFLE_NOT_IN_GRAPH: "the map or its shuffle was not found in the dataset graph",
    r.GENERATOR_NOT_IN_GRAPH: "the generator was not found in the dataset graph",
    r.GENERATOR_RAGGED: "its elements are ragged or sparse: " + _TFRECORD_ROUTE,
    r.GENERATOR_TOO_BIG: "one epoch does not fit in memory: " + _TFRECORD_ROUTE,
    r.GENERATOR_TOO_SLOW: (
        "one epoch takes over {limit:.0f} s to read, or never ends: not held here; "
        + _TFRECORD_ROUTE
    ),
    r.GENERATOR_FAILED: "the generator failed when read ({detail})",
    r.GENERATOR_EMPTY: "the generator yielded nothing",
    r.GENERATOR_SHAPES_DIFFER: "its elements differ in shape: " + _TFRECORD_ROUTE,
    r.PYTHON_NOT_REPEATABLE: (
        "{detail} gave other values for the same {value:.0f} elements read twice: its Python "
        "draws random numbers or reads changing state, so a cache would replay the first "
        "epoch's"
    ),
    r.INFINITE_OR_UNKNOWN_SIZE: (
        "the dataset is infinite or of unknown size at this point: no cache"
    ),
    r.COUNT_TOO_LONG: (
        "the dataset's length is unknown here, and counting it took over {limit:g} s: no cache"
    ),
    r.CACHE_SIZE_UNKNOWN: "the cache size is unknown",
    r.CACHE_TOO_BIG: "the cache would not fit comfortably in memory",
    r.FILL_TIME_UNKNOWN: "cannot tell how long filling the cache takes: estimated only",
    r.FILL_TOO_LONG: "filling the cache takes about {value:.0f} s (one epoch): estimated only",
    r.SAMPLE_RAGGED: ("not checked: the map's input has ragged or sparse parts; estimated only"),
    r.NO_SAMPLE: "not checked: no sample of the map's input could be read; estimated only",
    r.UNSAFE_KEEP_MAP: "unsafe: {because}; keep the map before the batch",
    r.FAILS_ON_BATCH: "the function fails on a batch ({detail})",
    r.NOT_ELEMENTWISE: (
        "on {value:.0f} of your elements the function gives other results on a batch "
        "({detail}): it is not elementwise"
    ),
}


def reason_words(reason: Reason | None) -> str:
    """'' for none; a code this pipediag does not know shows as stored."""
    if reason is None:
        return ""
    words = WORDS.get(reason.code)
    if words is None:
        return reason.detail or reason.code
    if callable(words):
        return words(reason)
    because = reason_words(reason.because)
    return words.format(
        detail=reason.detail, value=reason.value, limit=reason.limit, because=because
    )
