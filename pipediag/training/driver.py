"""The user's train function as pipediag drives it outside the user's own training: whether
it can, the call, the batches one call trains, how fit hands it a dataset, and every variable
a call writes, put back by `restoring` and nowhere else (docs/design.md, "The paired engine")."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pipediag.bench.python_chain import closed_over
from pipediag.report.reasons import Reason, ReasonCode
from pipediag.training.fit_backend import fit_batches_per_call, on_jax, undriven
from pipediag.training.jax_fit import JaxFitSteps, trainable, variable_groups

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


def as_is(dataset: Any) -> Any:
    return dataset


@dataclass(frozen=True)
class TrainDriver:
    """`train`: one call of the user's train function (on an iterator, or a loop's held batch)."""

    train: Callable[..., Any]
    batches_per_call: int
    variables: Sequence[Any] = ()
    distribute: Callable[[Any], Any] = as_is

    @classmethod
    def keras_fit(cls, model: Any) -> TrainDriver:
        """fit's compiled train function on the TensorFlow backend."""
        per_call = fit_batches_per_call(model)
        return cls(model.train_function, per_call, step_variables(model), fit_distributor(model))

    def restoring(self) -> contextlib.AbstractContextManager[None]:
        """Within, the calls train; after, every variable holds what it held before."""
        return variables_put_back(self.variables)


def fit_driver(model: Any, undriven_code: ReasonCode) -> TrainDriver | Reason:
    """fit's train function as a trial drives it (TF or JAX), or why it cannot run apart."""
    if (blocker := fit_step_blocker(model, undriven_code)) is not None:
        return blocker
    if on_jax(model):  # the JAX step on a copy of fit's state: none of fit's arrays is written
        return TrainDriver(JaxFitSteps(model).call, fit_batches_per_call(model))
    return TrainDriver.keras_fit(model)


def fit_step_blocker(model: Any, undriven_code: ReasonCode) -> Reason | None:
    """Why fit's train step cannot run apart from fit (`undriven_code`: a backend not driven)."""
    if (backend := undriven(model)) is not None:
        return Reason(undriven_code, detail=backend)
    if on_jax(model):
        return trainable(model)
    train_function = getattr(model, "train_function", None)
    if train_function is None:
        return Reason("no-compiled-train-function")
    blocker = stateful_random_op(train_function)
    return None if blocker is None else Reason("stateful-random-op", detail=blocker)


@contextlib.contextmanager
def variables_put_back(variables: Iterable[Any]) -> Iterator[None]:
    saved = [(v, v.numpy()) for v in variables]
    try:
        yield
    finally:
        for variable, value in saved:
            variable.assign(value)


def fit_distributor(model: Any) -> Callable[[Any], Any]:
    """How fit hands a dataset to its train function: through a multi-replica strategy."""
    strategy = getattr(model, "distribute_strategy", None)
    if strategy is None or getattr(strategy, "num_replicas_in_sync", 1) <= 1:
        return as_is
    distribute: Callable[[Any], Any] = strategy.experimental_distribute_dataset
    return distribute


def step_variables(model: Any) -> list[Any]:
    """Every variable a train step writes (seed-generator states among them), each once."""
    return each_once(variable for group in variable_groups(model) for variable in group)


def captured_variables(function: Any) -> list[Any]:
    """Every variable the traced step captures (random generators' states too), each once."""
    concretes = function._list_all_concrete_functions()
    return each_once(variable for concrete in concretes for variable in concrete.variables)


def each_once(variables: Iterable[Any]) -> list[Any]:
    """The variables in order, each once (by identity)."""
    return list({id(variable): variable for variable in variables}.values())


def stateful_random_op_in(graphs: Iterable[Any]) -> str | None:
    for graph_def in graphs:
        if hit := sorted(ops_in(graph_def) & STATEFUL_RANDOM_OPS):
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


def stateful_random_op(train_function: Any) -> str | None:
    """The first stateful random op in the tf.functions Keras' train function closes over."""
    graphs: list[Any] = []
    for target in closed_over(train_function):
        for inner in (target, *closed_over(target)):
            if hasattr(inner, "_list_all_concrete_functions"):
                # a function that cannot be listed hides nothing new
                with contextlib.suppress(Exception):
                    graphs.extend(graph_defs(inner))
    return stateful_random_op_in(graphs)
