"""A copy of the user's dataset that pipediag can read without changing the user's run,
rebuilt from its graph with private per-iterator state (docs/design.md, "The private copy")."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipediag.bench.python_chain import wrappers
from pipediag.report.reasons import Reason

if TYPE_CHECKING:
    from pipediag.bench.teardown import TearDown

# Ops whose resource input (a Const) draws seeds per iterator: given a private, fixed one.
SEEDED_OPS = frozenset({"ShuffleDatasetV3", "ShuffleAndRepeatDatasetV2", "RandomDatasetV2"})
CACHE_OP = "CacheDatasetV2"
DT_RESOURCE = 20  # tensorflow.core.framework.types_pb2.DT_RESOURCE
SUFFIX = "/pipediag_private"
# Per-device feeds of a `tf.distribute` dataset: a copy would take its batches from the user's
# multi-device iterator (TF 2.21, MultiWorkerMirroredStrategy: docs/design.md, "Multi-worker jobs").
SHARED_STREAM_DATASETS = frozenset({"_PerDeviceGenerator", "_ReincarnatedPerDeviceGenerator"})


class IsolationError(Exception):
    """The dataset cannot be copied; the message says why in one line."""


def isolated_copy(dataset: Any) -> tuple[Any, list[Reason]]:
    """A copy of `dataset` sharing none of its per-iterator state, and notes on what changed."""
    import tensorflow as tf

    try:
        graph_def = dataset_graph_def(dataset)
    except Exception as exc:
        raise IsolationError(f"its graph cannot be serialised ({type(exc).__name__})") from exc
    notes = isolate_graph_def(graph_def)
    try:
        variant = tf.raw_ops.DatasetFromGraph(graph_def=graph_def.SerializeToString())
        copy = tf.data.experimental.from_variant(variant, dataset.element_spec)
    except Exception as exc:
        raise IsolationError(f"its graph cannot be rebuilt ({type(exc).__name__})") from exc
    return copy, notes


def dataset_graph_def(dataset: Any, *, warn: bool = False) -> Any:
    """The GraphDef TensorFlow would run for `dataset`: the one place a dataset is serialised.
    External state (a Python function, a captured variable) is ignored, or with `warn` logged."""
    import tensorflow as tf

    policy = tf.data.experimental.ExternalStatePolicy
    serialized = dataset._as_serialized_graph(
        external_state_policy=policy.WARN if warn else policy.IGNORE
    )
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(serialized.numpy())
    return graph_def


def shared_stream_stage(dataset: Any, limit: int = 64) -> str | None:
    """The stage of `dataset` that reads another iterator's batches, if any (by class name)."""
    names = (type(node).__name__ for node in dataset_ancestors(dataset, limit))
    shared = next((name for name in names if name in SHARED_STREAM_DATASETS), None)
    return None if shared is None else shared.lstrip("_").removesuffix("Dataset")


def dataset_ancestors(dataset: Any, limit: int = 64) -> list[Any]:
    found: list[Any] = []
    queue, seen = [dataset], set()
    while queue and len(found) < limit:
        node = queue.pop(0)
        if id(node) in seen:
            continue
        seen.add(id(node))
        found.append(node)
        inputs = getattr(node, "_inputs", None)
        try:
            queue.extend(inputs() if callable(inputs) else [])
        except Exception:  # noqa: S112 - a dataset kind without readable inputs
            continue
    return found


def isolate_graph_def(graph_def: Any) -> list[Reason]:
    """Give every per-iterator resource in `graph_def` a private replacement, in place."""
    nodes = {node.name: node for node in graph_def.node}
    notes: list[Reason] = []
    for node in list(graph_def.node):
        if node.op in SEEDED_OPS:
            _replace_resource_inputs(graph_def, nodes, node, "DummySeedGenerator")
            if "reshuffle_each_iteration" in node.attr:
                node.attr["reshuffle_each_iteration"].b = False
        elif node.op == CACHE_OP:
            if not (filename := _string_const(nodes.get(_source(node.input[1])))):
                _replace_resource_inputs(graph_def, nodes, node, "DummyMemoryCache")
            elif not Path(f"{filename}.index").exists():
                for other in graph_def.node:  # every consumer reads the cache's input instead
                    for position, name in enumerate(other.input):
                        if _source(name) == node.name:
                            other.input[position] = node.input[0]
                notes.append(Reason("file-cache-bypassed", detail=filename))
    return notes


def _replace_resource_inputs(graph_def: Any, nodes: dict[str, Any], node: Any, op: str) -> None:
    for position, name in enumerate(node.input):
        source = nodes.get(_source(name))
        if source is None or source.op != "Const" or source.attr["dtype"].type != DT_RESOURCE:
            continue
        private = graph_def.node.add()
        private.name = f"{node.name}{SUFFIX}_{position}"
        private.op = op
        node.input[position] = private.name


def _source(input_name: str) -> str:
    return input_name.lstrip("^").split(":")[0]


def _string_const(node: Any) -> str:
    if node is None or node.op != "Const":
        return ""
    values = node.attr["value"].tensor.string_val
    return values[0].decode() if values else ""


@contextlib.contextmanager
def kept_random_states() -> Iterator[None]:
    """Python's and NumPy's global random states put back after pipediag's calls of the user's
    code, so the script's own epochs draw the numbers they would have drawn."""
    import random

    import numpy as np

    python_state, numpy_state = random.getstate(), np.random.get_state()
    try:
        yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)


@contextlib.contextmanager
def preserved_variables(
    dataset: Any, teardown: TearDown | None = None, *, copies: bool = True, graph_def: Any = None
) -> Iterator[None]:
    """Put back the captured variables (a `tf.random.Generator`) a read shares, after `teardown`'s
    iterators; `copies`: only those a copy still shares, as `graph_def` (None: `dataset`
    serialised again) says (docs/design.md, "The private copy")."""
    import tensorflow as tf

    captured = _captured_variables(dataset)
    if copies and captured and not _copies_share_variables(dataset, graph_def):
        captured = []
    saved = [(handle, tf.identity(value)) for handle, value in captured]
    try:
        yield
    finally:
        if saved and teardown is not None:
            teardown.drain()
        for handle, value in saved:
            tf.raw_ops.AssignVariableOp(resource=handle, value=value)


def _copies_share_variables(dataset: Any, graph_def: Any = None) -> bool:
    """Whether the graph holds a live variable handle a copy would share (True: unreadable)."""
    try:
        graph_def = dataset_graph_def(dataset) if graph_def is None else graph_def
    except Exception:
        return True
    for node in [*graph_def.node, *(n for f in graph_def.library.function for n in f.node_def)]:
        if node.op != "Const" or node.attr["dtype"].type != DT_RESOURCE:
            continue
        for handle in node.attr["value"].tensor.resource_handle_val:
            if "Var" in handle.maybe_type_name:
                return True
    return False


def _captured_variables(dataset: Any) -> list[tuple[Any, Any]]:
    import tensorflow as tf
    from tensorflow.python.ops import resource_variable_ops

    found: list[tuple[Any, Any]] = []
    for node in dataset_ancestors(dataset, limit=sys.maxsize):  # every stage, however many
        for wrapper in wrappers(node):
            for captured in getattr(wrapper.function, "captured_inputs", []):
                if captured.dtype != tf.resource:
                    continue
                try:
                    data = resource_variable_ops.get_eager_safe_handle_data(captured)
                    dtype = data.shape_and_type[0].dtype
                    value = tf.raw_ops.ReadVariableOp(resource=captured, dtype=dtype)
                    found.append((captured, value))
                except Exception:  # noqa: S112 - not a variable (a table, an iterator): skip
                    continue
    return found
