"""Compute alone: the user's own train step on one cached batch, with the pipeline idle.

Part of `training/`: the rate T, measured because step time minus input wait is not T. Under
Keras `fit`, the model's compiled train function is called directly on the batch the
pipeline-alone benchmark read first, every variable it touches copied before and assigned
back after; the blocks alternate with training (`training/alternation.py`), or run in one
piece (`measure_step_alone`) where fit has returned first. A custom loop runs them itself
(`training/budget.py`). Method: (docs/design.md, "Input cost"), (docs/design.md, "Rates in
alternation").
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from pipediag.analysis.stats import latency_stats
from pipediag.clock import Clock
from pipediag.report.model import ComputeAlone
from pipediag.report.reasons import (
    BACKEND_NO_STEP_ALONE,
    NO_COMPILED_TRAIN_FUNCTION,
    NO_STEP_ALONE,
    STATEFUL_RANDOM_OP,
    Reason,
)
from pipediag.report.vocabulary import KERAS_TRAIN_FUNCTION, ComputeAloneMethod

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
        return ComputeAlone(measured=False, reason=Reason(NO_STEP_ALONE))
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


class FitStepAlone:
    """The model's compiled train function on the cached batch, a block of calls at a time;
    every variable a step writes is copied before each block and assigned back after it, so
    training goes on exactly as it would have.

    Made by `fit_step_alone`, which says instead why the step cannot run alone.
    """

    method: ComputeAloneMethod = KERAS_TRAIN_FUNCTION

    def __init__(self, model: Any, batch: Any) -> None:
        self._train_function = model.train_function
        self._variables = step_variables(model)
        self.per_call = max(1, int(getattr(model, "steps_per_execution", 1) or 1))
        self._feed = cached_batch_feed(model, batch)

    @property
    def restored_variables(self) -> int:
        return len(self._variables)

    def block(self, step_ended: Callable[[float], bool], *, clock: Clock, warmup: int) -> None:
        """`warmup` untimed calls, then calls until `step_ended(clock.now())` says the block
        is complete; the variables are put back however it ends."""
        with variables_put_back(self._variables):
            for _ in range(warmup):
                sync_logs(self._train_function(self._feed()))
            done = False
            while not done:
                sync_logs(self._train_function(self._feed()))
                done = step_ended(clock.now())


class StepAlone(Protocol):
    """What runs fit's train step alone, whatever the backend (`FitStepAlone`;
    `training/jax_fit.py`'s `JaxStepAlone`)."""

    per_call: int
    method: ComputeAloneMethod

    @property
    def restored_variables(self) -> int: ...

    def block(self, step_ended: Callable[[float], bool], *, clock: Clock, warmup: int) -> None: ...


def fit_step_alone(model: Any, batch: Any) -> StepAlone | Reason:
    """What runs fit's train step alone on `batch`, or why it cannot run: chosen by the
    model's Keras backend (docs/design.md, "JAX")."""
    from pipediag.training.fit_backend import on_jax, undriven

    backend = undriven(model)
    if backend is not None:
        return Reason(BACKEND_NO_STEP_ALONE, detail=backend)
    if on_jax(model):
        from pipediag.training.jax_fit import jax_step_alone

        return jax_step_alone(model, batch)
    train_function = compiled_train_function(model)
    if isinstance(train_function, Reason):
        return train_function
    return FitStepAlone(model, batch)


def compiled_train_function(model: Any) -> Any:
    """fit's compiled train function, or the Reason it cannot be run apart from fit: none
    compiled yet, or one with a stateful random op (`STATEFUL_RANDOM_OPS`)."""
    train_function = getattr(model, "train_function", None)
    if train_function is None:
        return Reason(NO_COMPILED_TRAIN_FUNCTION)
    blocker = stateful_random_op(train_function)
    if blocker is not None:
        return Reason(STATEFUL_RANDOM_OP, detail=blocker)
    return train_function


def measure_step_alone(
    runner: StepAlone, *, clock: Clock, origin: float, step_s_hint: float
) -> ComputeAlone:
    """Time the train step alone in one run (after training has ended, where none is left
    to alternate with); the runner puts every variable back as it was.

    Args:
        runner: what runs the step alone (`fit_step_alone`; a loop's `TrainCalls`).
        clock: the session's clock.
        origin: the session's time zero, for `start_s`.
        step_s_hint: the measured train step's median, to size the run.
    """
    per_call = runner.per_call
    wanted = steps_wanted(step_s_hint * per_call)
    began = clock.now()
    ends: list[float] = []  # the first is where the first timed step starts
    cpu_from = 0.0

    def step_ended(at: float) -> bool:
        nonlocal cpu_from
        if not ends:
            cpu_from = time.process_time()
        ends.append(at)
        return len(ends) > wanted or at >= ends[0] + MAX_SECONDS

    runner.block(step_ended, clock=clock, warmup=WARMUP_STEPS)
    timing = _Timing(began, ends, time.process_time() - cpu_from)
    result = _result(runner.method, timing, origin, clock.now(), restored=runner.restored_variables)
    if per_call > 1 and result.step_time is not None:
        return _per_batch(result, per_call)
    return result


def cached_batch_feed(model: Any, batch: Any) -> Callable[[], Any]:
    """What one call of the train function reads: an iterator over the cached batch,
    repeated, as FastFlow's T feeds fit (`ds.take(1).cache().repeat()`).

    The train function takes its batches (`steps_per_execution` a call) from the iterator
    inside its own tf.function, the path fit's steps take. Handed a Python iterable instead,
    Keras calls its inner step function on each batch, a shorter path: on 1 ms steps that
    ran 45% faster than the same function on a dataset iterator, so T stood far above
    FastFlow's (docs/design.md, "Rates in alternation"). Under a strategy with several
    replicas the global batch is split among them as fit splits it, through the strategy's
    own distributed dataset.
    """
    import tensorflow as tf

    # No autotuning: its thread would take CPU beside the step, and freeing an autotuned
    # iterator waits out its sleep (docs/design.md, "Iterator tear-down").
    options = tf.data.Options()
    options.autotune.enabled = False
    cached = tf.data.Dataset.from_tensors(batch).repeat().with_options(options)
    strategy = getattr(model, "distribute_strategy", None)
    if strategy is not None and getattr(strategy, "num_replicas_in_sync", 1) > 1:
        iterator = iter(strategy.experimental_distribute_dataset(cached))
    else:
        iterator = iter(cached)
    return lambda: iterator


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


@contextlib.contextmanager
def variables_put_back(variables: Iterable[Any]) -> Iterator[None]:
    """Copy every variable now and assign each its copy on leaving, however it is left: extra
    steps pipediag runs leave training exactly as it was."""
    saved = [(v, v.numpy()) for v in variables]
    try:
        yield
    finally:
        for variable, value in saved:
            variable.assign(value)


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
    return stateful_random_op_in(_traced_graphs(train_function))


def stateful_random_op_in(graph_defs: Iterable[Any]) -> str | None:
    """The first of TensorFlow's stateful random ops in these GraphDefs, their library
    functions included; None where there is none."""
    for graph_def in graph_defs:
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
