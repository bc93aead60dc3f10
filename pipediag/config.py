"""What a diagnosis measures, and for how long: every knob in one frozen dataclass."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

# About 100 steps give a stable median and p90 in seconds on typical models, which keeps
# the time to a verdict under a minute (the mission) while averaging out jitter.
DEFAULT_MEASURED_STEPS = 100
# Step 1 traces and compiles the train function; the next few fill prefetch buffers and
# let autotune settle. Five steps cover both on the examples and test pipelines.
DEFAULT_WARMUP_STEPS = 5
# ...or fewer when the steps are slow: the measured steps stop once they span this long (at
# least 20 of them), so the verdict comes within ~10 s of the first step even for
# 65-ms steps (100 of them took 7 s on the compute-bound example), and a 10-15 s script is
# not measured for longer than it trains.
DEFAULT_MEASURED_SECONDS = 3.0
# psutil at 20 Hz is the floor: fine enough to see per-step CPU patterns of steps of
# 50 ms and longer, cheap enough (a few /proc reads per tick: measured 17 ms of CPU per 2 s,
# under 1% of a core). NVML's utilization window is 1/6 s to 1 s, so sampling it faster than
# 10 Hz only repeats values; at 10 Hz no driver sample is missed, and a handful of NVML calls
# per device per tick costs little.
DEFAULT_HOST_INTERVAL_S = 0.05
DEFAULT_GPU_INTERVAL_S = 0.1
# Readings each sampler keeps (per device for the GPU) before its resolution halves: 4096
# readings of a few numbers plus per-core lists are a few MB at most, whatever the run length.
DEFAULT_MAX_SAMPLES = 4096
# Profiler traces under `fit` are stopped and read every this many steps, bounding the
# profiler's memory on long runs.
DEFAULT_TRACE_CHUNK_STEPS = 500
DEFAULT_OUT_DIR = "pipediag-out"
# The pipeline alone: a few seconds give hundreds of batches on typical pipelines, enough
# for a stable rate, while keeping the time to a verdict well under a minute.
DEFAULT_BENCH_SECONDS = 3.0
DEFAULT_BENCH_BATCHES = 200
# Each candidate fix is timed beside the original in interleaved rounds; 8 s in all keeps
# phase 1 short while giving each side a few hundred batches on typical pipelines.
DEFAULT_VERIFY_SECONDS = 8.0
# Stage timing, the fixes timed alone, the stage holds and the rewrites tried on training
# share this budget, and run only when input matters, after the verdict (docs/design.md,
# "The pipeline pipediag would write"). Every rewrite that applies is tried on training,
# about 1.2 s each when clear, so 15 s holds a typical pipeline's three or four.
DEFAULT_DEEP_SECONDS = 15.0
# Watch mode (`--watch`, `pipediag.keras.Watch`): an alert needs this many windows in a row
# over the threshold, so one slow window (an epoch boundary, a checkpoint) does not page
# anyone. With no threshold given but an alert hook, XProf's "highly input-bound" band.
DEFAULT_ALERT_WINDOWS = 3
DEFAULT_ALERT_INPUT_SHARE = 0.20
# Watch mode samples the host and GPU for the whole run, so slower: its windows span
# seconds to minutes, and psutil at 20 Hz costs ~0.7% of a core (docs/design.md, "Watching a
# long run"), most of watch mode's 1% budget. NVML's driver samples since the last read are
# all fetched, so a slower poll loses none of them where the driver keeps them.
WATCH_HOST_INTERVAL_S = 0.5
WATCH_GPU_INTERVAL_S = 0.5
# Watch mode's TensorBoard scalars, when no log directory is named: under the report's.
DEFAULT_WATCH_LOGDIR = "tensorboard"


@dataclass(frozen=True)
class WatchConfig:
    """Watch mode: per-window verdicts over a whole run, TensorBoard scalars, alerts.

    Args:
        every_steps: a window per this many steps; None for one per epoch.
        alert_input_share: alert when a window's input wait share is at least this, for
            `alert_windows` windows in a row; None for no alert.
        alert_windows: K, the windows in a row an alert needs.
        alert_command: a shell command run on each alert (figures in `PIPEDIAG_*`
            environment variables and as JSON on its stdin); it is not waited for.
        alert_hook: a Python callable given each alert (`report.model.WatchAlert`), on
            pipediag's watch thread; what it raises is reported once, never re-raised.
        logdir: TensorBoard's log directory; pipediag's scalars go to its `pipediag` run.
            None: the `log_dir` of a `keras.callbacks.TensorBoard` given to `fit`, else
            `tensorboard/` beside the report.
    """

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
            of the alternation, for what watching costs it (`Verdict.observer_effect`).
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
    # Watch mode (`WatchConfig`); None for a diagnosis. Set through `watching()`.
    watch: WatchConfig | None = None


def watching(config: RunConfig, watch: WatchConfig) -> RunConfig:
    """`config` turned into watch mode: the whole run is measured (no step budget), with no
    pipeline-alone phase, no compute-alone run and no fix trials, and slower samplers."""
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
