"""Compute alone: the user's own train step on one cached batch, with the pipeline idle.

The rate T of DS-Analyzer's differential reading. Step time minus input wait is not T: when
the pipeline's threads take the cores the train step needs, nothing waits and every step is
slower, so the contention hides inside "compute" (docs/design.md, "Input cost"). T is
measured instead, after the measured steps, in one of two ways:

- Keras `fit`: the model's compiled train function, called directly on the cached batch (the
  batch the pipeline-alone benchmark read first). Every variable the step touches (weights,
  optimizer slots and iterations, metrics, seed-generator states) is copied before and
  assigned back after, so training goes on exactly as it would have.
- Custom loops: at the step budget, just before it ends the script, the loop is served the
  last batch it pulled, again and again, instead of pulling from the pipeline
  (`CachedBatchSteps`); nothing runs after the budget, so nothing is saved from those steps.

Both are bounded: about 2 s or 50 steps, whichever comes first, and more steps (up to a
quarter second) for sub-millisecond steps, after a short warm-up.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipediag.analysis.stats import latency_stats
from pipediag.clock import Clock
from pipediag.report.model import ComputeAlone
from pipediag.report.vocabulary import CACHED_BATCH_LOOP, KERAS_TRAIN_FUNCTION, ComputeAloneMethod

# The bound: about 2 s or 50 steps, whichever first.
MAX_SECONDS = 2.0
MIN_STEPS = 50
# Sub-millisecond steps: 50 steps are 30 ms, too short to average the scheduler's noise out,
# so such steps run for at least this long (and at most MAX_STEPS).
MIN_SECONDS = 0.25
MAX_STEPS = 2000
# The first calls are not timed: under fit the first call on a cached batch may retrace the
# train step for its static shapes; in a loop the pipeline's prefetch buffer refills (its
# threads still busy) during the first steps served from the cache.
WARMUP_STEPS = 3
# TensorFlow's stateful random kernels keep hidden state that no variable holds: extra steps
# would change what the rest of training draws. Keras' own layers use SeedGenerator variables
# (restored), not these.
STATEFUL_RANDOM_OPS = frozenset(
    {
        "RandomUniform",
        "RandomUniformInt",
        "RandomStandardNormal",
        "TruncatedNormal",
        "RandomShuffle",
        "Multinomial",
        "RandomGamma",
        "RandomPoisson",
        "RandomPoissonV2",
        "ParameterizedTruncatedNormal",
    }
)


def steps_wanted(step_s: float) -> int:
    """How many timed steps a step of `step_s` seconds gets within the bounds."""
    if step_s <= 0:
        return MAX_STEPS
    by_time = math.ceil(MIN_SECONDS / step_s)
    return max(MIN_STEPS, min(MAX_STEPS, by_time))


@dataclass
class _Timing:
    """Step ends and process CPU over the timed steps, and when the phase began."""

    began: float
    ends: list[float]
    cpu_s: float


def _result(
    method: ComputeAloneMethod,
    timing: _Timing,
    origin: float,
    clock_now: float,
    *,
    restored: int = 0,
) -> ComputeAlone:
    ends = timing.ends
    durations = [b - a for a, b in zip(ends, ends[1:], strict=False)]
    if not durations:
        return ComputeAlone(measured=False, reason="no step finished in the compute-alone time")
    span = ends[-1] - ends[0]
    return ComputeAlone(
        measured=True,
        method=method,
        start_s=timing.began - origin,
        duration_s=clock_now - timing.began,
        warmup_steps=WARMUP_STEPS,
        steps=len(durations),
        steps_per_s=len(durations) / span if span > 0 else None,
        step_time=latency_stats(durations),
        restored_variables=restored,
        cpu_s_per_step=timing.cpu_s / len(durations),
    )


# --- Keras fit -------------------------------------------------------------------------------


def measure_fit_step(
    model: Any, batch: Any, *, clock: Clock, origin: float, step_s_hint: float
) -> ComputeAlone:
    """Time `model.train_function` on `batch`, then put every variable back as it was.

    Args:
        model: the Keras model `fit` trained.
        batch: one element of the training dataset, as `fit` would pull it.
        clock: the session's clock.
        origin: the session's time zero, for `start_s`.
        step_s_hint: the measured train step's median, to size the run.
    """
    train_function = getattr(model, "train_function", None)
    if train_function is None:
        return ComputeAlone(measured=False, reason="the model has no compiled train function yet")
    blocker = stateful_random_op(train_function)
    if blocker is not None:
        return ComputeAlone(
            measured=False,
            reason=f"the train step uses TensorFlow's stateful random op {blocker}, whose "
            "hidden state extra steps would change",
        )
    variables = step_variables(model)
    saved = [(v, v.numpy()) for v in variables]
    per_call = max(1, int(getattr(model, "steps_per_execution", 1) or 1))
    feed = _feeder(model, batch, per_call)
    began = clock.now()
    try:
        timing = _time_steps(
            lambda: train_function(feed()),
            clock=clock,
            step_s_hint=step_s_hint * per_call,
            sync=sync_logs,
        )
    finally:
        for variable, value in saved:
            variable.assign(value)
    timing.began = began
    result = _result(KERAS_TRAIN_FUNCTION, timing, origin, clock.now(), restored=len(saved))
    if per_call > 1 and result.step_time is not None:
        return _per_batch(result, per_call)
    return result


def _feeder(model: Any, batch: Any, per_call: int) -> Callable[[], Any]:
    """What one call of the train function reads: the cached batch, `per_call` times.

    On one replica, the batch itself (Keras then calls its compiled step on it directly).
    Under a strategy with several replicas the global batch must be split among them as fit
    splits it, so it goes through the strategy's own distributed dataset.
    """
    strategy = getattr(model, "distribute_strategy", None)
    if strategy is not None and getattr(strategy, "num_replicas_in_sync", 1) > 1:
        import tensorflow as tf

        cached = tf.data.Dataset.from_tensors(batch).repeat()
        iterator = iter(strategy.experimental_distribute_dataset(cached))
        return lambda: iterator

    def repeat() -> Any:
        for _ in range(per_call):
            yield batch

    return repeat


def _per_batch(result: ComputeAlone, per_call: int) -> ComputeAlone:
    """With steps_per_execution, one call trains `per_call` batches: rates per batch."""
    from dataclasses import replace

    rate = None if result.steps_per_s is None else result.steps_per_s * per_call
    cpu = None if result.cpu_s_per_step is None else result.cpu_s_per_step / per_call
    stats = result.step_time
    assert stats is not None
    scaled = replace(
        stats,
        mean_s=stats.mean_s / per_call,
        median_s=stats.median_s / per_call,
        p90_s=stats.p90_s / per_call,
        min_s=stats.min_s / per_call,
        max_s=stats.max_s / per_call,
    )
    return replace(
        result,
        steps=result.steps * per_call,
        steps_per_s=rate,
        cpu_s_per_step=cpu,
        step_time=scaled,
    )


def sync_logs(logs: Any) -> None:
    """Wait for the step's work: on an accelerator the call returns before the kernels end."""
    if isinstance(logs, dict):
        for value in logs.values():
            if hasattr(value, "numpy"):
                value.numpy()
                return


def _time_steps(
    step: Callable[[], Any],
    *,
    clock: Clock,
    step_s_hint: float,
    sync: Callable[[Any], None],
) -> _Timing:
    for _ in range(WARMUP_STEPS):
        sync(step())
    wanted = steps_wanted(step_s_hint)
    cpu_from = time.process_time()
    start = clock.now()
    ends = [start]
    deadline = start + MAX_SECONDS
    while len(ends) <= wanted and ends[-1] < deadline:
        sync(step())
        ends.append(clock.now())
    return _Timing(start, ends, time.process_time() - cpu_from)


def step_variables(model: Any) -> list[Any]:
    """Every variable a train step writes: weights (seed-generator states among the
    non-trainable ones), the optimizer's, the metrics'. Each once."""
    groups = [
        getattr(model, "trainable_variables", []),
        getattr(model, "non_trainable_variables", []),
        getattr(getattr(model, "optimizer", None), "variables", []) or [],
        getattr(model, "metrics_variables", []),
    ]
    found: dict[int, Any] = {}
    for group in groups:
        for variable in group:
            found.setdefault(id(variable), variable)
    return list(found.values())


def stateful_random_op(train_function: Any) -> str | None:
    """The first stateful random op in the traced train step, if any can be found."""
    for graph_def in _traced_graphs(train_function):
        ops = {node.op for node in graph_def.node}
        for function in graph_def.library.function:
            ops.update(node.op for node in function.node_def)
        hit = sorted(ops & STATEFUL_RANDOM_OPS)
        if hit:
            return str(hit[0])
    return None


def _traced_graphs(train_function: Any) -> list[Any]:
    """The GraphDefs of the tf.functions the train function closes over (Keras builds it as
    a closure over its compiled one-step function)."""
    graphs: list[Any] = []
    for cell in getattr(train_function, "__closure__", None) or ():
        try:
            target = cell.cell_contents
        except ValueError:
            continue
        for inner in (target, *(c.cell_contents for c in _cells(target))):
            lister = getattr(inner, "_list_all_concrete_functions", None)
            if lister is None:
                continue
            try:
                graphs.extend(f.graph.as_graph_def() for f in lister())
            except Exception:  # noqa: S112 - a function that cannot be listed hides nothing new
                continue
    return graphs


def _cells(function: Any) -> list[Any]:
    cells = []
    for cell in getattr(function, "__closure__", None) or ():
        try:
            cell.cell_contents  # noqa: B018 - an empty cell raises
        except ValueError:
            continue
        cells.append(cell)
    return cells


# --- custom loops ----------------------------------------------------------------------------


class CachedBatchSteps:
    """Serves a custom loop its last batch, step after step, and times the steps.

    The loop's iterator hook calls `next_step()` on each pull instead of fetching from the
    pipeline; it returns the cached batch while more steps are wanted, and None when the
    phase is over (the hook then ends the script at the step budget). `fixed_steps` runs
    exactly that many timed steps, with no time bound: in a multi-worker job each step is a
    collective, and every worker must run as many (docs/design.md, "Multi-worker jobs").
    """

    def __init__(
        self, batch: Any, *, clock: Clock, step_s_hint: float, fixed_steps: int | None = None
    ) -> None:
        self.batch = batch
        self._clock = clock
        self._wanted = steps_wanted(step_s_hint) if fixed_steps is None else fixed_steps
        self._timed = fixed_steps is None
        self._served = 0
        self.began = clock.now()
        self._ends: list[float] = []
        self._cpu_from: float | None = None
        self._deadline: float | None = None

    def next_step(self) -> Any | None:
        now = self._clock.now()
        self._served += 1
        if self._served > WARMUP_STEPS:
            if self._cpu_from is None:
                self._cpu_from = time.process_time()
                self._deadline = now + MAX_SECONDS
            self._ends.append(now)
            assert self._deadline is not None
            if len(self._ends) > self._wanted or (self._timed and now >= self._deadline):
                return None
        return self.batch

    def result(self, origin: float) -> ComputeAlone:
        cpu = 0.0 if self._cpu_from is None else time.process_time() - self._cpu_from
        timing = _Timing(self.began, self._ends, cpu)
        return _result(CACHED_BATCH_LOOP, timing, origin, self._clock.now())
