"""What a diagnosis measures, and for how long: every knob in one frozen dataclass."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

# ~100 steps give a stable median and p90 while keeping the verdict under a minute.
DEFAULT_MEASURED_STEPS = 100
# Step 1 traces and compiles; the next few fill prefetch buffers and let autotune settle.
DEFAULT_WARMUP_STEPS = 5
# ...or fewer when steps are slow (at least 20): 100 65-ms steps took 7 s on the compute-bound
# example; this keeps the verdict within ~10 s of the first step.
DEFAULT_MEASURED_SECONDS = 3.0
# Each wake of the host sampler's thread takes the interpreter lock from a training thread
# that holds it (an eager step): 2.4% of an eager loop's rate at 20 Hz, none seen at 4 Hz,
# and the CPU figures are read over windows of seconds (docs/design.md, "What pipediag costs
# a step"). NVML's utilization window is 1/6-1 s: polling faster than 10 Hz only repeats values.
DEFAULT_HOST_INTERVAL_S = 0.25
DEFAULT_GPU_INTERVAL_S = 0.1
# Readings a sampler keeps before its resolution halves: a few MB at most, whatever the run.
DEFAULT_MAX_SAMPLES = 4096
# Under `fit`, traces are read every this many steps: the profiler's memory stays bounded.
DEFAULT_TRACE_CHUNK_STEPS = 500
DEFAULT_OUT_DIR = "pipediag-out"
# The pipeline alone: hundreds of batches on typical pipelines, a stable rate, in seconds.
DEFAULT_BENCH_SECONDS = 3.0
DEFAULT_BENCH_BATCHES = 200
# The fixes timed beside the original in interleaved rounds: a few hundred batches a side.
DEFAULT_VERIFY_SECONDS = 8.0
# Shared by stage timing, fixes, holds and rewrites on training (docs/design.md, "The
# pipeline pipediag would write"): ~1.2 s per clear rewrite, so a typical three or four fit.
DEFAULT_DEEP_SECONDS = 15.0
# Watch mode: K windows in a row over the threshold, so one slow window (an epoch boundary, a
# checkpoint) pages no one; with a hook but no share, XProf's "highly input-bound" band.
DEFAULT_ALERT_WINDOWS = 3
DEFAULT_ALERT_INPUT_SHARE = 0.20
# psutil at 20 Hz cost ~0.7% of a core, most of watch mode's 1% budget (docs/design.md,
# "Watching a long run"); NVML's samples since the last read are all fetched anyway.
WATCH_HOST_INTERVAL_S = 0.5
WATCH_GPU_INTERVAL_S = 0.5
# Watch mode's TensorBoard scalars, when no log directory is named: under the report's.
DEFAULT_WATCH_LOGDIR = "tensorboard"


@dataclass(frozen=True)
class WatchConfig:
    """Watch mode: per-window verdicts over a whole run, TensorBoard scalars, alerts (the fields as
    `pipediag.keras.Watch` takes them). `every_steps` None: a window per epoch; `logdir` None: a
    Keras TensorBoard callback's `log_dir`, else `tensorboard/` beside the report."""

    every_steps: int | None = None
    alert_input_share: float | None = None
    alert_windows: int = DEFAULT_ALERT_WINDOWS
    alert_command: str | None = None
    alert_hook: Callable[[Any], object] | None = None
    logdir: str | None = None


@dataclass(frozen=True)
class RunConfig:
    """Settings for one diagnosis.

    Args:
        measured_steps: steps to measure after the warm-up before ending the script;
            None lets the script run to its end.
        warmup_steps: first steps kept out of the verdict.
        measured_seconds: the measured steps also stop once they span this long (with at
            least 20 of them); None to measure exactly `measured_steps`.
        bench: whether to benchmark the pipeline alone (phase 1).
        bench_seconds / bench_batches: the phase-1 budget, whichever ends first.
        stages: measure each pipeline stage alone to find the slow one.
        verify: build the suggested pipeline fixes and measure them beside the original.
        verify_seconds: the most the fix trials may take, within `deep_seconds`.
        deep_seconds: the budget that stage timing and fix trials share.
        deep: time the stages and measure fixes even when input costs too little to matter
            (under 5% of training); by default they run only when it does.
        scale_out_workers: start a tf.data service dispatcher and this many workers on this
            host and read a copy of the pipeline through them (0: off).
        data_service: `grpc://HOST:PORT` of an existing tf.data dispatcher to read a copy of
            the pipeline through (None: off).
        data_service_train: also time the train step fed by `data_service` (Keras fit).
        train_function: the name of the `tf.function` that trains, for a loop whose function
            steps no optimizer with a step counter: each of its calls counts as one step.
        observer_check: also time training with pipediag's samplers paused, in quiet blocks
            of the alternation and of the check's own blocks after it, for what watching
            costs it (`Verdict.observer_effect`).
    """

    measured_steps: int | None = DEFAULT_MEASURED_STEPS
    warmup_steps: int = DEFAULT_WARMUP_STEPS
    measured_seconds: float | None = DEFAULT_MEASURED_SECONDS
    bench: bool = True
    bench_seconds: float = DEFAULT_BENCH_SECONDS
    bench_batches: int = DEFAULT_BENCH_BATCHES
    stages: bool = True
    verify: bool = True
    verify_seconds: float = DEFAULT_VERIFY_SECONDS
    host_interval_s: float = DEFAULT_HOST_INTERVAL_S
    gpu_interval_s: float = DEFAULT_GPU_INTERVAL_S
    trace_chunk_steps: int = DEFAULT_TRACE_CHUNK_STEPS
    sample_host: bool = True
    sample_gpu: bool = True
    deep: bool = False
    deep_seconds: float = DEFAULT_DEEP_SECONDS
    scale_out_workers: int = 0
    data_service: str | None = None
    data_service_train: bool = False
    train_function: str | None = None
    observer_check: bool = False
    # Watch mode (`WatchConfig`, set through `watching()`); None for a diagnosis.
    watch: WatchConfig | None = None


def watching(config: RunConfig, watch: WatchConfig) -> RunConfig:
    """`config` in watch mode: the whole run measured, nothing run beside it, slower samplers."""
    return replace(
        config,
        measured_steps=None,
        measured_seconds=None,
        bench=False,
        stages=False,
        verify=False,
        deep=False,
        host_interval_s=WATCH_HOST_INTERVAL_S,
        gpu_interval_s=WATCH_GPU_INTERVAL_S,
        watch=watch,
    )
