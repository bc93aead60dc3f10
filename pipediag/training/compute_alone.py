"""Compute alone (T): the user's own train step on one cached batch, the pipeline idle, every
variable it writes put back; under fit the compiled train function is called directly.
Method: (docs/design.md, "Input cost"), (docs/design.md, "Rates in alternation")."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any, Protocol

from pipediag.analysis.stats import latency_stats
from pipediag.clock import Clock, run_block
from pipediag.report.model import ComputeAlone
from pipediag.report.reasons import Reason, ReasonCode
from pipediag.report.vocabulary import ComputeAloneMethod
from pipediag.training.fit_backend import on_jax, undriven
from pipediag.training.jax_fit import JaxStepAlone, trainable

MAX_SECONDS = 2.0
MIN_STEPS = 50
# Sub-millisecond steps: 50 of them are too short to average the scheduler's noise out.
MIN_SECONDS = 0.25
MAX_STEPS = 2000
# Untimed first calls: under fit the cached batch's static shapes may retrace the step; in a
# loop the pipeline's prefetch buffer refills during the first steps served from the cache.
WARMUP_STEPS = 3
# Hidden state no variable holds: extra steps would change what training draws later. Keras'
# own layers use SeedGenerator variables (restored), not these.
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


def steps_lasting(seconds: float, step_s: float, *, fewest: int, most: int) -> int:
    """The steps of `step_s` that last about `seconds`, within `fewest` and `most` (`most`
    where the step is not known)."""
    if step_s <= 0:
        return most
    return max(fewest, min(most, math.ceil(seconds / step_s)))


class FitStepAlone:
    """fit's compiled train function on the cached batch, variables put back after a block."""

    method: ComputeAloneMethod = "keras-train-function"

    def __init__(self, model: Any, batch: Any) -> None:
        self._train_function = model.train_function
        self._variables = step_variables(model)
        self.per_call = max(1, int(getattr(model, "steps_per_execution", 1) or 1))
        self._feed = cached_batch_feed(model, batch)

    @property
    def restored_variables(self) -> int:
        return len(self._variables)

    def block(self, step_ended: Callable[[float], bool], *, clock: Clock, warmup: int) -> None:
        with variables_put_back(self._variables):
            run_block(
                lambda: sync_logs(self._train_function(self._feed())), step_ended, clock, warmup
            )


class StepAlone(Protocol):
    """What runs fit's train step alone, whatever the backend."""

    per_call: int
    method: ComputeAloneMethod

    @property
    def restored_variables(self) -> int: ...

    def block(self, step_ended: Callable[[float], bool], *, clock: Clock, warmup: int) -> None: ...


def fit_step_alone(model: Any, batch: Any) -> StepAlone | Reason:
    blocker = fit_step_blocker(model, "backend-no-step-alone")
    if blocker is not None:
        return blocker
    return JaxStepAlone(model, batch) if on_jax(model) else FitStepAlone(model, batch)


def fit_step_blocker(model: Any, undriven_code: ReasonCode) -> Reason | None:
    """Why fit's train step cannot run apart from fit, or None; `undriven_code` where
    pipediag does not drive the model's backend."""
    backend = undriven(model)
    if backend is not None:
        return Reason(undriven_code, detail=backend)
    if on_jax(model):
        return trainable(model)
    train_function = compiled_train_function(model)
    return train_function if isinstance(train_function, Reason) else None


def compiled_train_function(model: Any) -> Any:
    """fit's compiled train function, or why it cannot run apart from fit."""
    train_function = getattr(model, "train_function", None)
    if train_function is None:
        return Reason("no-compiled-train-function")
    blocker = stateful_random_op(train_function)
    if blocker is not None:
        return Reason("stateful-random-op", detail=blocker)
    return train_function


def measure_step_alone(
    runner: StepAlone, *, clock: Clock, origin: float, step_s_hint: float
) -> ComputeAlone:
    """The train step alone in one run, where training ended with no steps to alternate."""
    per_call = runner.per_call
    wanted = steps_lasting(MIN_SECONDS, step_s_hint * per_call, fewest=MIN_STEPS, most=MAX_STEPS)
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
    cpu_s = time.process_time() - cpu_from
    now = clock.now()
    durations = [b - a for a, b in zip(ends, ends[1:], strict=False)]
    if not durations:
        return ComputeAlone(measured=False, reason=Reason("no-step-alone"))
    span = ends[-1] - ends[0]
    result = ComputeAlone(
        measured=True,
        method=runner.method,
        start_s=began - origin,
        duration_s=now - began,
        warmup_steps=WARMUP_STEPS,
        steps=len(durations),
        steps_per_s=len(durations) / span if span > 0 else None,
        step_time=latency_stats(durations),
        restored_variables=runner.restored_variables,
        cpu_s_per_step=cpu_s / len(durations),
    )
    if per_call > 1 and result.step_time is not None:
        return _per_batch(result, per_call)
    return result


def cached_batch_feed(model: Any, batch: Any) -> Callable[[], Any]:
    """The cached batch repeated, as FastFlow's T feeds fit: a dataset iterator, as Keras
    takes a shorter path on a Python iterable (docs/design.md, "Rates in alternation")."""
    import tensorflow as tf

    # No autotuning: its thread takes CPU beside the step (docs/design.md, "Iterator tear-down").
    options = tf.data.Options()
    options.autotune.enabled = False
    cached = tf.data.Dataset.from_tensors(batch).repeat().with_options(options)
    iterator = iter(fit_distributor(model)(cached))
    return lambda: iterator


def as_is(dataset: Any) -> Any:
    return dataset


def fit_distributor(model: Any) -> Callable[[Any], Any]:
    """How fit hands a dataset to its train function: through a multi-replica strategy."""
    strategy = getattr(model, "distribute_strategy", None)
    if strategy is None or getattr(strategy, "num_replicas_in_sync", 1) <= 1:
        return as_is
    distribute: Callable[[Any], Any] = strategy.experimental_distribute_dataset
    return distribute


def _per_batch(result: ComputeAlone, per_call: int) -> ComputeAlone:
    """With steps_per_execution, one call trains `per_call` batches: rates per batch."""
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
    saved = [(v, v.numpy()) for v in variables]
    try:
        yield
    finally:
        for variable, value in saved:
            variable.assign(value)


def step_variables(model: Any) -> list[Any]:
    """Every variable a train step writes (seed-generator states among them), each once."""
    groups = [
        getattr(model, "trainable_variables", []),
        getattr(model, "non_trainable_variables", []),
        getattr(getattr(model, "optimizer", None), "variables", []) or [],
        getattr(model, "metrics_variables", []),
    ]
    return each_once(variable for group in groups for variable in group)


def each_once(variables: Iterable[Any]) -> list[Any]:
    """The variables in order, each once (by identity)."""
    found: dict[int, Any] = {}
    for variable in variables:
        found.setdefault(id(variable), variable)
    return list(found.values())


def stateful_random_op(train_function: Any) -> str | None:
    return stateful_random_op_in(_traced_graphs(train_function))


def stateful_random_op_in(graphs: Iterable[Any]) -> str | None:
    for graph_def in graphs:
        hit = sorted(ops_in(graph_def) & STATEFUL_RANDOM_OPS)
        if hit:
            return str(hit[0])
    return None


def ops_in(graph_def: Any) -> set[str]:
    """The op types of a GraphDef, its library functions' included."""
    ops = {node.op for node in graph_def.node}
    for function in graph_def.library.function:
        ops.update(node.op for node in function.node_def)
    return ops


def graph_defs(function: Any) -> Iterator[Any]:
    return (concrete.graph.as_graph_def() for concrete in function._list_all_concrete_functions())


def _traced_graphs(train_function: Any) -> list[Any]:
    """The GraphDefs of the tf.functions Keras' train function closes over."""
    graphs: list[Any] = []
    for target in closed_over(train_function):
        for inner in (target, *closed_over(target)):
            if hasattr(inner, "_list_all_concrete_functions"):
                # a function that cannot be listed hides nothing new
                with contextlib.suppress(Exception):
                    graphs.extend(graph_defs(inner))
    return graphs


def closed_over(function: Any) -> list[Any]:
    values = []
    for cell in getattr(function, "__closure__", None) or ():
        with contextlib.suppress(ValueError):  # an empty cell raises
            values.append(cell.cell_contents)
    return values
