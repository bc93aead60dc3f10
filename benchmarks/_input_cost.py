"""Truth for input cost, measured without pipediag: A, T and 1 - A/T for a case.

Input cost is the share of training time that input costs: 1 - A/T, where

- A is the training rate as the script runs it: the case's own `train` (its style, its
  model, its unmodified dataset, epoch after epoch), steps/s over the window of steps a
  diagnosis judges (steps skip+1 .. skip+count), timed by the case's `StepTimer` (the clock
  behind `--rate-file`). Epoch boundaries are left out, as pipediag leaves them out of
  per-step rates (an iterator's tear-down can block for a second: docs/design.md, "Iterator
  tear-down"): the time from
  an epoch's last step end to the next epoch's first step start (end of data, the old
  iterator's tear-down, making the new one, epoch callbacks) is reported on its own
  (`boundary_s`). The first step of each epoch, which waits for its fresh iterator's first
  batch, stays in.
- T is the same train step with input free: ONE batch of the case's data, pulled once,
  held in memory, and trained on again and again with the case's pipeline idle (its
  iterator is gone, so none of its threads run). A custom loop calls its compiled step on
  the held tensors (no `next()` at all); Keras `fit` trains on
  `Dataset.from_tensors(batch).repeat()` (one trivial in-graph pull per step, which fit
  cannot avoid; microseconds).

Both are measured in the same process, in ABBA order (T A, A T for two repeats), each on a
fresh model from the same seed, so slow drift of a shared machine hits both sides alike.
The cost comes from the mean A over the mean T; each side-by-side pair gives its own cost
too (`pair_costs`), whose spread is the measurement's noise. A window the step alone would
finish in under `MIN_WINDOW_S` (a sub-millisecond step) is lengthened to that time for
both sides; such a case is steady, so only the noise changes.

What makes the cost is told apart by three more figures:

- the wait share: the TF profiler's `IteratorGetNextOp` events (XProf's input wait, the
  time the step waited inside the pull), summed over the traced window and divided by its
  span, in a separate traced run (tracing perturbs A, so it never times A);
- for a custom loop, F: the step fed by `next()` on one held batch repeated (the pull's
  own overhead, no pipeline work): `fetch_part` splits the cost into the pull's part
  (A/F - A/T) and the rest (1 - A/F: waiting and contention);
- process CPU: cores kept busy by the whole process during A's window and T's window.

The pure functions are tested in `tests/unit/test_benchmarks.py`; TensorFlow is imported lazily.
"""

from __future__ import annotations

import gc
import math
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks._common import BALANCED, COMPUTE_BOUND, INPUT_BOUND, UNKNOWN, load_case, median

# --- truth bands on input cost --------------------------------------------------------------
# XProf's input-pipeline analyzer words a wait share of 20% or more "HIGHLY input-bound" and
# 5% to 20% "MODERATELY input-bound" (convert/op_stats_to_input_pipeline_analysis.cc);
# pipediag's verdict applies the same bands to input cost (docs/design.md, "Input cost"), so
# the truth does too: input-bound at 20% or more, balanced from 5%, compute-bound below 5%.
COST_INPUT_BOUND_MIN = 0.20
COST_BALANCED_MIN = 0.05
# The TF profiler at host level 1 keeps the GetNext events and little else (pipediag's
# profiler_trace.py: a few percent on a Keras fit).
HOST_TRACER_LEVEL = 1
# The pull of a batch: `IteratorGetNextOp::DoCompute`. Keras fit's compiled pull puts it on
# a `tf_data_iterator_get_next/<id>` line; an eager `next()` in a custom loop on the calling
# thread's line (checked on TF 2.21), so every line of the host plane is read.
GET_NEXT_EVENT_PREFIX = "IteratorGetNextOp"
# The shortest window the truth is timed over. A 60-step window of a sub-millisecond step
# lasts ~50 ms, where one scheduler hiccup on 2 shared cores moves the rate by 20% or more;
# such a case is steady and gives the same rate over a longer window. The suite's cases
# whose input changes by epoch keep the diagnosis's window (the fastest,
# cache_after_first_epoch_loop: 60 steps of a ~130 steps/s step, 0.46 s).
MIN_WINDOW_S = 0.3
HOST_PLANE = "/host:CPU"


# --- pure functions -------------------------------------------------------------------------
def input_cost(
    training_steps_per_s: float | None, compute_alone_steps_per_s: float | None
) -> float | None:
    """1 - A/T, signed: noise can make A a little faster than T (a small negative cost)."""
    if not training_steps_per_s or not compute_alone_steps_per_s:
        return None
    return 1.0 - training_steps_per_s / compute_alone_steps_per_s


def classify_cost(cost: float | None) -> str:
    """The truth label from an input cost (bands above; the lower edge is inclusive)."""
    if cost is None:
        return UNKNOWN
    if cost >= COST_INPUT_BOUND_MIN:
        return INPUT_BOUND
    if cost >= COST_BALANCED_MIN:
        return BALANCED
    return COMPUTE_BOUND


def step_intervals(
    ends_s: Sequence[float],
    epoch_marks: Sequence[tuple[int, float]],
    *,
    skip: int,
    count: int,
) -> list[tuple[int, float, float]]:
    """(epoch, step time, boundary time) of steps skip+1 .. skip+count, epoch boundaries apart.

    Step i (0-based) lasts from the end of step i-1 to its own end. When step i is the first
    of an epoch, the part before the epoch's mark (the end of the previous epoch) is its
    boundary time, not step time. `epoch_marks` are (steps done, time) as `StepTimer` keeps
    them; epochs are numbered from 1.
    """
    marks = dict(epoch_marks)
    epoch_of: list[int] = []
    epoch = 0
    for i in range(len(ends_s)):
        if i in marks:
            epoch += 1
        epoch_of.append(max(epoch, 1))
    last = min(skip + count, len(ends_s) - 1)
    intervals = []
    for i in range(skip + 1, last + 1):
        whole = ends_s[i] - ends_s[i - 1]
        boundary = min(max(marks[i] - ends_s[i - 1], 0.0), whole) if i in marks else 0.0
        intervals.append((epoch_of[i], whole - boundary, boundary))
    return intervals


def window_rate(intervals: Sequence[tuple[int, float, float]]) -> float | None:
    """Steps per second over the intervals' step time (boundaries left out)."""
    busy = sum(step for _, step, _ in intervals)
    return len(intervals) / busy if intervals and busy > 0 else None


def epoch_rates(intervals: Sequence[tuple[int, float, float]]) -> list[dict[str, Any]]:
    """Per epoch of the window: its steps and their rate (boundaries left out)."""
    by_epoch: dict[int, list[tuple[int, float, float]]] = {}
    for interval in intervals:
        by_epoch.setdefault(interval[0], []).append(interval)
    return [
        {"epoch": epoch, "steps": len(part), "steps_per_s": window_rate(part)}
        for epoch, part in sorted(by_epoch.items())
    ]


def fetch_part(
    training: float | None, compute_alone: float | None, pull_alone: float | None
) -> tuple[float, float] | None:
    """(the pull's part, the rest) of 1 - A/T, from A, T and F (step plus a ready pull).

    As shares of training time: a step takes 1/A in training, 1/T alone and 1/F with a
    pull of a batch that costs the pipeline nothing, so the pull's part is A (1/F - 1/T)
    and the rest (waiting, contention) is 1 - A/F. The two add up to 1 - A/T.
    """
    if not training or not compute_alone or not pull_alone:
        return None
    return training * (1 / pull_alone - 1 / compute_alone), 1 - training / pull_alone


def wait_share(events: Sequence[tuple[int, int]]) -> float | None:
    """Share of the traced steps' time spent in GetNext, from (start ns, duration ns) events.

    Cycle k runs from the start of pull k to the start of pull k+1 (its wait, then its
    step), so the share is the waits of all pulls but the last over the span from the first
    pull's start to the last pull's start. Overlapping pulls (several replicas) are merged.
    """
    ordered = sorted(events)
    if len(ordered) < 2:
        return None
    span = ordered[-1][0] - ordered[0][0]
    if span <= 0:
        return None
    waited, reach = 0, ordered[0][0]
    for start, duration in ordered[:-1]:
        lo, hi = max(start, reach), min(start + duration, ordered[-1][0])
        if hi > lo:
            waited += hi - lo
            reach = hi
    return waited / span


def median_abs_error(pairs: Sequence[tuple[float | None, float | None]]) -> float | None:
    """Median |estimate - truth| over the pairs where both are known; None if none are."""
    errors = [abs(e - t) for e, t in pairs if e is not None and t is not None]
    return median(errors) if errors else None


def combine(trainings: Sequence[dict[str, Any]], computes: Sequence[dict[str, Any]]) -> dict:
    """The truth from repeated side-by-side runs: mean A over mean T, and per-pair costs.

    Phases: each epoch's mean rate over the runs that reached it, against the same T.
    """
    a_values = [r["steps_per_s"] for r in trainings if r.get("steps_per_s")]
    t_values = [r["steps_per_s"] for r in computes if r.get("steps_per_s")]
    a = sum(a_values) / len(a_values) if a_values else None
    t = sum(t_values) / len(t_values) if t_values else None
    pairs = [
        input_cost(tr.get("steps_per_s"), co.get("steps_per_s"))
        for tr, co in zip(trainings, computes, strict=False)
    ]
    phases: dict[int, list[dict[str, Any]]] = {}
    for run in trainings:
        for phase in run.get("epochs", []):
            phases.setdefault(phase["epoch"], []).append(phase)
    epochs = []
    for epoch, runs in sorted(phases.items()):
        rates = [p["steps_per_s"] for p in runs if p["steps_per_s"]]
        rate = sum(rates) / len(rates) if rates else None
        epochs.append(
            {
                "epoch": epoch,
                "steps": max(p["steps"] for p in runs),
                "steps_per_s": rate,
                "cost": input_cost(rate, t),
            }
        )
    cost = input_cost(a, t)
    return {
        "training_steps_per_s": a,
        "compute_alone_steps_per_s": t,
        "cost": cost,
        "label": classify_cost(cost),
        "pair_costs": [c for c in pairs if c is not None],
        "training_runs": list(trainings),
        "compute_runs": list(computes),
        "epochs": epochs,
    }


# --- measuring (TensorFlow imported lazily) -------------------------------------------------
def _window_timer(*, skip: int, count: int, trace: bool = False) -> Any:
    """The case's StepTimer, plus process CPU over the window and, optionally, a trace.

    A subclass of the case's own class (imported from its folder), so both training styles
    tick it exactly as they tick the script's timer. The window is from the end of step
    `skip` to the end of step `skip + count` (0-based).
    """
    helpers = load_case("_case")

    class WindowTimer(helpers.StepTimer):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.cpu_s: dict[int, float] = {}
            self.logdir: Path | None = None
            self.trace_failure: str | None = None

        def tick(self) -> None:
            super().tick()
            done = len(self.ends_s)
            if done in (skip + 1, skip + count + 1):
                self.cpu_s[done - 1] = time.process_time()
            if trace and done == skip + 1:
                self._start_trace()
            elif trace and done == skip + count + 1:
                self._stop_trace()

        def cores_busy(self) -> float | None:
            """Process CPU seconds per wall second over the window: cores kept busy."""
            first, last = skip, skip + count
            if first not in self.cpu_s or last not in self.cpu_s:
                return None
            wall = self.ends_s[last] - self.ends_s[first]
            return (self.cpu_s[last] - self.cpu_s[first]) / wall if wall > 0 else None

        def _start_trace(self) -> None:
            import tensorflow as tf

            self.logdir = Path(tempfile.mkdtemp(prefix="pipediag-truth-trace-"))
            options = tf.profiler.experimental.ProfilerOptions(
                host_tracer_level=HOST_TRACER_LEVEL, python_tracer_level=0, device_tracer_level=0
            )
            try:
                tf.profiler.experimental.start(str(self.logdir), options=options)
            except Exception as exc:  # one profiler session per process
                self.trace_failure = f"{type(exc).__name__}: {exc}"
                shutil.rmtree(self.logdir, ignore_errors=True)
                self.logdir = None

        def _stop_trace(self) -> None:
            import tensorflow as tf

            if self.logdir is not None:
                tf.profiler.experimental.stop()

    return WindowTimer()


def measure_training(
    module: ModuleType, *, skip: int, count: int, max_epochs: int = 50, trace: bool = False
) -> dict[str, Any]:
    """A: the case's own training, as its script runs it, over steps skip+1 .. skip+count.

    With `trace`, the TF profiler records that window and `wait_share` is read from it
    (the rate of a traced run is kept as `steps_per_s`, but it is not used as A).
    """
    import keras

    helpers = load_case("_case")
    keras.utils.set_random_seed(0)
    timer = _window_timer(skip=skip, count=count, trace=trace)
    helpers.train(
        module.make_model(),
        module.make_dataset(frozenset()),
        style=module.STYLE,
        epochs=max_epochs,
        max_steps=skip + count + 1,
        timer=timer,
    )
    gc.collect()
    intervals = step_intervals(timer.ends_s, timer.epoch_marks, skip=skip, count=count)
    result: dict[str, Any] = {
        "steps": len(intervals),
        "steps_per_s": window_rate(intervals),
        "boundary_s": sum(b for _, _, b in intervals),
        "epochs": epoch_rates(intervals),
        "cores_busy": timer.cores_busy(),
    }
    if trace:
        events = read_get_next_events(timer.logdir) if timer.logdir else []
        if timer.logdir is not None:
            shutil.rmtree(timer.logdir, ignore_errors=True)
        result["wait_share"] = wait_share(events)
        result["get_next_events"] = len(events)
        result["trace_failure"] = timer.trace_failure
    return result


def measure_compute_alone(module: ModuleType, *, skip: int, count: int) -> dict[str, Any]:
    """T: the case's own train step (style, model) on ONE held batch, its pipeline idle."""
    import keras
    import tensorflow as tf

    helpers = load_case("_case")
    keras.utils.set_random_seed(0)
    iterator = iter(module.make_dataset(frozenset()))
    x, y = next(iterator)
    del iterator  # the pipeline's threads stop with its iterator
    gc.collect()
    model = module.make_model()
    timer = _window_timer(skip=skip, count=count)
    steps = skip + count + 1
    if module.STYLE == helpers.FIT:
        held = tf.data.Dataset.from_tensors((x, y)).repeat()
        helpers.train(model, held, style=module.STYLE, epochs=1, steps_per_epoch=steps, timer=timer)
    else:
        train_step = helpers.make_loop_step(model)
        for _ in range(steps):
            train_step(x, y)
            timer.tick()
    gc.collect()
    return {
        "steps": count,
        "steps_per_s": timer.rate(skip),
        "cores_busy": timer.cores_busy(),
    }


def measure_pull_alone(module: ModuleType, *, skip: int, count: int) -> dict[str, Any]:
    """F (custom loops): the train step fed by `next()` on ONE held batch, repeated.

    The same batch as T's, served by `Dataset.from_tensors(batch).repeat()` through the
    loop's own `for ... in dataset`: every step pays a pull of a ready batch and nothing
    else of a pipeline.
    """
    import keras
    import tensorflow as tf

    helpers = load_case("_case")
    keras.utils.set_random_seed(0)
    iterator = iter(module.make_dataset(frozenset()))
    x, y = next(iterator)
    del iterator
    gc.collect()
    held = tf.data.Dataset.from_tensors((x, y)).repeat()
    timer = _window_timer(skip=skip, count=count)
    helpers.train(
        module.make_model(),
        held,
        style=helpers.LOOP,
        epochs=1,
        max_steps=skip + count + 1,
        timer=timer,
    )
    gc.collect()
    return {"steps": count, "steps_per_s": timer.rate(skip), "cores_busy": timer.cores_busy()}


def measure_input_cost(
    module: ModuleType,
    *,
    skip: int,
    count: int,
    repeats: int = 2,
    max_epochs: int = 50,
    trace_waits: bool = False,
    pull_alone: bool = False,
    min_window_s: float = MIN_WINDOW_S,
) -> dict[str, Any]:
    """Truth for one case: T and A side by side in ABBA order, then (optionally) the waits.

    `repeats` pairs are run as T A, A T, T A, ...; see the module docstring for what
    exactly A and T are. The window is steps skip+1 .. skip+count, the one a diagnosis
    judges, unless the step alone would finish it in under `min_window_s`: then it is
    lengthened to that time at T's rate, for both sides (`window_steps` says how long it
    was). With `trace_waits`, one more training run is traced for the wait share (XProf's
    figure); with `pull_alone` (custom loops only), F is measured after each T and the
    cost is split by `fetch_part`.
    """
    pulls: list[dict[str, Any]] = []
    with_pulls = pull_alone and module.STYLE == load_case("_case").LOOP
    first = measure_compute_alone(module, skip=skip, count=count)
    window = window_steps(count, first["steps_per_s"], min_window_s)
    trainings: list[dict[str, Any]] = []
    computes: list[dict[str, Any]] = [first] if window == count else []
    for pair in range(repeats):
        order = ("T", "A") if pair % 2 == 0 else ("A", "T")
        for side in order:
            if side == "T" and pair == 0 and computes:
                if with_pulls:  # the first T, already measured over this window
                    pulls.append(measure_pull_alone(module, skip=skip, count=window))
                continue
            if side == "T":
                computes.append(measure_compute_alone(module, skip=skip, count=window))
                if with_pulls:
                    pulls.append(measure_pull_alone(module, skip=skip, count=window))
            else:
                trainings.append(
                    measure_training(module, skip=skip, count=window, max_epochs=max_epochs)
                )
    truth = combine(trainings, computes)
    truth["window_steps"] = window
    f_values = [r["steps_per_s"] for r in pulls if r.get("steps_per_s")]
    truth["pull_alone_steps_per_s"] = sum(f_values) / len(f_values) if f_values else None
    truth["pull_runs"] = pulls
    parts = fetch_part(
        truth["training_steps_per_s"],
        truth["compute_alone_steps_per_s"],
        truth["pull_alone_steps_per_s"],
    )
    truth["fetch_cost"], truth["other_cost"] = parts if parts else (None, None)
    truth["wait_share"] = None
    if trace_waits:
        traced = measure_training(
            module, skip=skip, count=window, max_epochs=max_epochs, trace=True
        )
        truth["wait_share"] = traced.get("wait_share")
        truth["traced_run"] = traced
    return truth


def window_steps(count: int, compute_alone: float | None, min_window_s: float) -> int:
    """`count`, or more steps where the step alone would run them in under `min_window_s`."""
    if not compute_alone or count / compute_alone >= min_window_s:
        return count
    return math.ceil(min_window_s * compute_alone)


def read_get_next_events(logdir: Path) -> list[tuple[int, int]]:
    """(start ns, duration ns) of the GetNext events in the traces under `logdir`, any line.

    Times are relative to each line's timestamp base, which is shared within one trace:
    enough for shares, not for placing events on another clock.
    """
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    found: list[tuple[int, int]] = []
    for path in sorted(logdir.glob("plugins/profile/*/*.xplane.pb")):
        space = xplane_pb2.XSpace()
        space.ParseFromString(path.read_bytes())
        for plane in space.planes:
            if plane.name != HOST_PLANE:
                continue
            names = {key: meta.name for key, meta in plane.event_metadata.items()}
            for line in plane.lines:
                found.extend(
                    (line.timestamp_ns + event.offset_ps // 1000, event.duration_ps // 1000)
                    for event in line.events
                    if names.get(event.metadata_id, "").startswith(GET_NEXT_EVENT_PREFIX)
                )
    return found


def phase_cost(
    epochs: Sequence[dict[str, Any]], first: int, last: int, compute_alone: float | None
) -> float | None:
    """Truth cost over epochs first..last (numbered from 1), weighted by their time."""
    part = [e for e in epochs if first <= e["epoch"] <= last and e["steps"] and e["steps_per_s"]]
    if not part:
        return None
    seconds = sum(e["steps"] / e["steps_per_s"] for e in part)
    return input_cost(sum(e["steps"] for e in part) / seconds, compute_alone)


# --- agreement of reported costs, within their intervals -----------------------------------
def cost_band(cost: float) -> int:
    """The band a cost falls in: 0 compute-bound, 1 balanced, 2 input-bound (edges inclusive
    below, as `classify_cost`)."""
    if cost >= COST_INPUT_BOUND_MIN:
        return 2
    if cost >= COST_BALANCED_MIN:
        return 1
    return 0


def bands_touched(low: float, high: float) -> set[int]:
    """The bands an interval [low, high] reaches (a point gives its own band)."""
    low, high = min(low, high), max(low, high)
    return set(range(cost_band(low), cost_band(high) + 1))


def agreeing_runs(intervals: Sequence[tuple[float, float]]) -> list[bool]:
    """Per run, whether its label agrees with every other run's, within their intervals.

    Run i agrees when each other run's interval overlaps a band that run i's interval
    touches: two runs whose intervals reach a common band could have reported the same
    label. A run without an interval is given its cost as a point ([cost, cost]), so it
    agrees only with runs whose intervals reach its own band.
    """
    touched = [bands_touched(low, high) for low, high in intervals]
    return [
        all(touched[i] & other for j, other in enumerate(touched) if j != i)
        for i in range(len(touched))
    ]
