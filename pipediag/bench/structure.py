"""Read a `tf.data.Dataset`'s stages, source first, without running it: its Python dataset
objects and its GraphDef walked in step (docs/design.md, "Reading and rewriting a pipeline")."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pipediag.bench.graph_edit import PipelineGraph
from pipediag.bench.isolate import dataset_graph_def
from pipediag.bench.python_chain import (
    MAX_STAGES,
    call_site,
    defined_in_tensorflow,
    describe_callable,
    generator_function,
    python_function_names,
    python_inputs,
    skip_passthrough,
    unwrap,
    user_function,
)
from pipediag.errors import describe_error
from pipediag.report.model import PipelineOptions
from pipediag.report.reasons import Reason
from pipediag.report.stages import StageSettings, StageStats
from pipediag.report.vocabulary import AutoParallelBlocker, StageKind

# Ops that call back into Python: they hold the GIL, so parallelism barely helps.
PY_FUNCTION_OPS = frozenset({"EagerPyFunc", "PyFunc", "PyFuncStateless"})
# Stateful by registration, yet TF's map_parallelization lets them through.
HARMLESS_STATEFUL_OPS = frozenset({"Assert"})
# Stateful random ops that do not contain "Random" in their name.
EXTRA_RANDOM_OPS = frozenset({"Multinomial", "TruncatedNormal", "ParameterizedTruncatedNormal"})

# Dataset ops whose stage kind is not their name less any V2, V3... suffix, in kebab case.
_OP_KINDS: dict[str, StageKind] = {
    "LegacyParallelInterleaveDataset": "parallel-interleave",
    "ParallelBatchDataset": "batch",
    "MaxIntraOpParallelismDataset": "options",
    "PrivateThreadPoolDataset": "options",
    "DirectedInterleaveDataset": "choose",
    "DenseToSparseBatchDataset": "sparse-batch",
}

# Settings read from an op's non-dataset inputs: (setting, position). Negative positions count
# from the end: ops with a function put its captured tensors before their own scalars.
_PARALLEL_INTERLEAVE = (("cycle_length", -3), ("block_length", -2), ("num_parallel_calls", -1))
_SEEDED_SHUFFLE = (("buffer_size", 0), ("seed", 1), ("seed2", 2))
_OP_INPUT_SETTINGS: dict[str, tuple[tuple[str, int], ...]] = {
    "RangeDataset": (("start", 0), ("stop", 1), ("step", 2)),
    "ParallelMapDataset": (("num_parallel_calls", -1),),
    "ParallelMapDatasetV2": (("num_parallel_calls", -1),),
    "ParallelFilterDataset": (("num_parallel_calls", -1),),
    "InterleaveDataset": (("cycle_length", -2), ("block_length", -1)),
    "ParallelInterleaveDatasetV2": _PARALLEL_INTERLEAVE,
    "ParallelInterleaveDatasetV3": _PARALLEL_INTERLEAVE,
    "LegacyParallelInterleaveDatasetV2": (
        ("cycle_length", -4),
        ("block_length", -3),
        ("buffer_output_elements", -2),
        ("prefetch_input_elements", -1),
    ),
    "ParallelInterleaveDatasetV4": (
        ("cycle_length", -5),
        ("block_length", -4),
        ("buffer_output_elements", -3),
        ("prefetch_input_elements", -2),
        ("num_parallel_calls", -1),
    ),
    "BatchDataset": (("batch_size", 0),),
    "BatchDatasetV2": (("batch_size", 0), ("drop_remainder", 1)),
    "ParallelBatchDataset": (("batch_size", 0), ("num_parallel_calls", 1), ("drop_remainder", 2)),
    "PaddedBatchDataset": (("batch_size", 0),),
    "PaddedBatchDatasetV2": (("batch_size", 0), ("drop_remainder", -1)),
    "MapAndBatchDataset": (("batch_size", -3), ("num_parallel_calls", -2), ("drop_remainder", -1)),
    # ShuffleDatasetV2 takes a seed generator, not seeds.
    "ShuffleDataset": _SEEDED_SHUFFLE,
    "ShuffleDatasetV2": (("buffer_size", 0),),
    "ShuffleDatasetV3": _SEEDED_SHUFFLE,
    "ShuffleAndRepeatDataset": _SEEDED_SHUFFLE,
    "ShuffleAndRepeatDatasetV2": _SEEDED_SHUFFLE,
    "CacheDataset": (("filename", 0),),
    "CacheDatasetV2": (("filename", 0),),
    "PrefetchDataset": (("buffer_size", 0),),
    "RepeatDataset": (("count", 0),),
    "TakeDataset": (("count", 0),),
    "SkipDataset": (("count", 0),),
    "ShardDataset": (("num_shards", 0), ("index", 1)),
}
# Attributes copied as settings (the op's attribute name is the setting name).
_ATTR_SETTINGS = ("deterministic", "reshuffle_each_iteration")
# The settings of each type (`StageSettings`' fields); every other one is a whole number.
_BOOL_SETTINGS = frozenset({"drop_remainder", "reshuffle_each_iteration", "deterministic"})
_TEXT_SETTINGS = frozenset({"filename"})
# Attributes that hold the stage's user function, in order of preference.
_FUNCTION_ATTRS = ("f", "predicate", "scan_func", "key_func", "reduce_func")


@dataclass
class Stage:
    """A stage as found: its report row plus the live dataset object (a prefix to read)."""

    stats: StageStats
    dataset: Any
    batch_size: int | None = None


@dataclass(frozen=True)
class WalkedPipeline:
    """The training pipeline walked once for every reader. `graph` is never edited in place;
    `nodes` maps stage index to graph node; `options` is None where unreadable."""

    dataset: Any
    stages: list[Stage]
    graph: Any = None
    graph_error: Reason | None = None
    nodes: dict[int, str] = field(default_factory=dict)
    options: PipelineOptions | None = None

    @functools.cached_property
    def isolated(self) -> tuple[PipelineGraph, list[Reason]]:
        """`graph` sharing no per-iterator state with the user's dataset, and what isolating it
        changed: made once per walk (a failure raises, and is tried again on the next read).
        Each reader rebuilds its own baseline from it, so its caches start empty."""
        copy = PipelineGraph.copy_of(self.graph)
        return copy, copy.isolate()


def walk(dataset: Any, options: PipelineOptions | None = None) -> WalkedPipeline:
    """Walk `dataset` once; `options`, where the caller read them already, are not re-read."""
    graph, graph_error = None, None
    try:
        graph = dataset_graph_def(dataset, warn=True)
    except Exception as exc:  # any failure only costs the graph facts
        graph_error = Reason("graph-unavailable", detail=describe_error(exc))
    if options is None:
        with contextlib.suppress(Exception):  # unreadable: say nothing rather than guess
            options = effective_options(dataset)
    builder = _Builder(graph)
    builder.visit(unwrap(dataset), builder.root())
    stages = builder.stages
    if options is not None:
        _mark_auto_parallel(stages, options)
    if graph_error is not None and stages:
        stages[-1].stats = dataclasses.replace(stages[-1].stats, graph_error=graph_error.detail)
    return WalkedPipeline(dataset, stages, graph, graph_error, builder.stage_nodes, options)


def effective_options(dataset: Any) -> PipelineOptions:
    """The `tf.data.Options` in force that change what runs, with TF 2.21's defaults filled in
    (an option left None is TF's default, not False: `data/ops/options.py`)."""
    options = dataset.options()
    optimization = options.experimental_optimization
    defaults_on = optimization.apply_default_optimizations is not False

    def optimisation(value: bool | None) -> bool:
        return defaults_on if value is None else bool(value)

    return PipelineOptions(
        autotune=options.autotune.enabled is not False,
        apply_default_optimizations=defaults_on,
        inject_prefetch=optimisation(optimization.inject_prefetch),
        map_parallelization=optimisation(optimization.map_parallelization),
        map_and_batch_fusion=optimisation(optimization.map_and_batch_fusion),
        parallel_batch=optimisation(optimization.parallel_batch),
        map_fusion=optimization.map_fusion is True,  # not a default optimisation
        # Unset or 0: sized from the cores at run time (docs/design.md, "tf.data behaviours").
        private_threadpool_size=options.threading.private_threadpool_size or None,
        max_intra_op_parallelism=options.threading.max_intra_op_parallelism,
        deterministic=options.deterministic is not False,
        cpu_count=_cpu_count(),
    )


def _mark_auto_parallel(stages: list[Stage], options: PipelineOptions) -> None:
    """Whether tf.data's `map_parallelization` runs each sequential map in parallel anyway (not
    with autotune off, read from TF's C++ source, nor for stateful functions)."""
    for stage in stages:
        if stage.stats.kind != "map":
            continue
        blocker: AutoParallelBlocker | None = None
        if not options.map_parallelization:
            blocker = "option off"
        elif not options.autotune:
            blocker = "autotune off"
        elif stage.stats.stateful:
            blocker = "stateful function"
        stage.stats = dataclasses.replace(
            stage.stats, auto_parallel=blocker is None, auto_parallel_blocker=blocker
        )


class _Builder:
    """Post-order walk of the Python datasets and the graph together; sources come first."""

    def __init__(self, graph: Any | None) -> None:
        self.nodes = {} if graph is None else {node.name: node for node in graph.node}
        library = [] if graph is None else graph.library.function
        self.functions = {f.signature.name: f for f in library}
        self.stages: list[Stage] = []
        self.stage_nodes: dict[int, str] = {}
        self._seen: dict[int, int] = {}

    def visit(self, ds: Any, node: Any | None) -> int | None:
        ds = skip_passthrough(ds)
        if id(ds) in self._seen:
            return self._seen[id(ds)]
        if len(self.stages) >= MAX_STAGES:
            return None
        if (generator := generator_function(ds)) is not None:
            added = self._add(ds, node, [], generator=generator)
            return self._matched(added, node, "FlatMapDataset")
        inputs = [skip_passthrough(unwrap(i)) for i in python_inputs(ds)]
        given = node  # matched by op even where the inputs below disagree
        graph_inputs = self._graph_inputs(node)
        if node is not None and (graph_inputs is None or len(graph_inputs) != len(inputs)):
            node, graph_inputs = None, None  # the walks disagree: trust no node below here
        below = graph_inputs or [None] * len(inputs)
        visited = [self.visit(child, graph) for child, graph in zip(inputs, below, strict=True)]
        added = self._add(ds, node, [index for index in visited if index is not None])
        return self._matched(added, given, self.stages[added].stats.name)

    def root(self) -> Any | None:
        """The dataset node the graph returns (its `_Retval`'s input)."""
        for node in self.nodes.values():
            if node.op == "_Retval" and node.input:
                return self.nodes.get(node.input[0].split(":")[0])
        return None

    def _matched(self, index: int, node: Any | None, op: str) -> int:
        """The stage is the node where their ops agree (`from_generator` is the flat_map it
        builds): the node its rewrites edit. An unmatched stage is estimated, not rewritten."""
        if node is not None and node.op == op:
            self.stage_nodes[index] = node.name
        return index

    def _graph_inputs(self, node: Any | None) -> list[Any] | None:
        inputs = None if node is None else _input_nodes(node, self.nodes)
        if inputs is None or any(child is None for child in inputs):
            return None
        return [child for child in inputs if "Dataset" in child.op]

    def _add(
        self,
        ds: Any,
        node: Any | None,
        inputs: list[int],
        *,
        generator: Callable[..., Any] | None = None,
    ) -> int:
        index, settings = len(self.stages), StageSettings()
        if generator is not None:
            kind, name = "source", "from_generator"
            func: Any = generator
        else:
            kind, name = kind_and_name(ds, node, has_inputs=bool(inputs))
            func = user_function(ds)
            if node is not None:
                settings = _node_settings(node, self.nodes)
        function_name, source = describe_callable(func) if func is not None else (None, None)
        ops, stateful_ops = self._function_ops(ds, node)
        created_at, made_by = call_site(ds)
        stats = StageStats(
            index=index,
            kind=kind,
            name=name,
            settings=settings,
            function=function_name,
            source=source,
            inputs=inputs,
            uses_py_function=bool(ops & PY_FUNCTION_OPS) or generator is not None,
            stateful=bool(stateful_ops),
            # A function TF adds itself (unbatch's `normalize`): advice must not point at it.
            tf_internal=func is not None and defined_in_tensorflow(func),
            random=any(_is_random_op(op) for op in ops),
            stateful_ops=sorted(stateful_ops),
            created_at=created_at,
            made_by=made_by,
        )
        self.stages.append(Stage(stats, ds, batch_size=settings.batch_size))
        self._seen[id(ds)] = index
        return index

    def _function_ops(self, ds: Any, node: Any | None) -> tuple[set[str], set[str]]:
        """All ops in the stage's functions, following nested calls; and the stateful ones."""
        attrs = {} if node is None else node.attr
        roots = [
            attrs[a].func.name
            for a in attrs
            if attrs[a].func.name and a in (*_FUNCTION_ATTRS, "next_func", "init_func")
        ]
        if not roots:
            roots = python_function_names(ds)
        return _collect_ops(roots, self.functions)


def _collect_ops(roots: Iterable[str], functions: dict[str, Any]) -> tuple[set[str], set[str]]:
    """Ops reachable from the named library functions (through func attributes and calls)."""
    ops: set[str] = set()
    stateful: set[str] = set()
    pending = list(roots)
    visited: set[str] = set()
    while pending:
        if (name := pending.pop()) in visited or name not in functions:
            continue
        visited.add(name)
        for node_def in functions[name].node_def:
            ops.add(node_def.op)
            if node_def.op in functions:
                pending.append(node_def.op)
            elif _op_is_stateful(node_def.op) and node_def.op not in HARMLESS_STATEFUL_OPS:
                stateful.add(node_def.op)
            for attr in node_def.attr.values():
                if attr.func.name:
                    pending.append(attr.func.name)
                pending.extend(f.name for f in attr.list.func)
    # Dataset ops (in an interleave's function) are registered stateful: not the state meant.
    return ops, {op for op in stateful if "Dataset" not in op}


def _op_is_stateful(op: str) -> bool:
    try:
        from tensorflow.python.framework import op_def_registry
    except ImportError:  # pragma: no cover - moved in a future TF
        return False
    op_def = op_def_registry.get(op)
    return bool(op_def is not None and op_def.is_stateful)


def _is_random_op(op: str) -> bool:
    if op.startswith("Stateless"):
        return False
    return "Random" in op or op in EXTRA_RANDOM_OPS or op.startswith("StatefulUniform")


def _input_nodes(node: Any, nodes: dict[str, Any]) -> list[Any]:
    """The nodes of `node`'s data inputs, in order (None: not in the graph)."""
    return [nodes.get(name.split(":")[0]) for name in node.input if not name.startswith("^")]


def _node_settings(node: Any, nodes: dict[str, Any]) -> StageSettings:
    settings: dict[str, Any] = {}
    scalar_inputs = [i for i in _input_nodes(node, nodes) if i is None or "Dataset" not in i.op]
    for setting, position in _OP_INPUT_SETTINGS.get(node.op, ()):
        if not -len(scalar_inputs) <= position < len(scalar_inputs):
            continue
        value = _const_value(scalar_inputs[position])
        if value is not None and _setting_type(setting) is type(value):
            settings[setting] = value
    for attr in _ATTR_SETTINGS:
        if attr in node.attr:
            value = node.attr[attr]
            kind = value.WhichOneof("value")
            # A string attribute's "default" (follow the pipeline's option) stays unset.
            if kind == "s" and value.s in (b"true", b"false"):
                settings[attr] = value.s == b"true"
            elif kind == "b":
                settings[attr] = bool(value.b)
    return StageSettings(**settings)


def _setting_type(setting: str) -> type:
    if setting in _BOOL_SETTINGS:
        return bool
    return str if setting in _TEXT_SETTINGS else int


def _const_value(node: Any | None) -> int | bool | str | None:
    """A scalar `Const`'s value; None for anything else (a tensor computed at run time)."""
    if node is None or node.op != "Const" or "value" not in node.attr:
        return None
    tensor = node.attr["value"].tensor
    if tensor.tensor_shape.dim:
        return None
    typed = ((tensor.int64_val, int), (tensor.int_val, int), (tensor.bool_val, bool))
    for values, convert in typed:
        if len(values):
            return convert(values[0])
    return str(tensor.string_val[0].decode(errors="replace")) if len(tensor.string_val) else None


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def kind_and_name(ds: Any, node: Any | None, *, has_inputs: bool) -> tuple[str, str]:
    name = node.op if node is not None else type(ds).__name__.lstrip("_")
    if not has_inputs:
        return "source", name
    base = re.sub(r"V\d+$", "", name)
    return _OP_KINDS.get(base, kebab(base.removesuffix("Dataset"))), name


def kebab(camel: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", camel).lower() or "unknown"
