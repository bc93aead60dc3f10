"""The GraphDef editor behind the what-if trials: a copy of a dataset's graph, edited op by op
and rebuilt with `DatasetFromGraph` (docs/design.md, "Reading and rewriting a pipeline")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipediag.bench.isolate import isolate_graph_def
from pipediag.report.reasons import Reason, ReasonedError, RewriteFailure
from pipediag.report.stages import AUTOTUNE

# Batching ops a map can move behind (padding or sparse batching would change what it sees).
_BATCH_OPS = frozenset({"BatchDatasetV2", "ParallelBatchDataset"})
_MAP_OPS = frozenset({"MapDataset", "ParallelMapDatasetV2"})

# DataType enum values (tensorflow/core/framework/types.proto).
_DT_STRING = 7
_DT_INT64 = 9

_PASS_THROUGH_OPS = frozenset({"OptionsDataset"})
_SHUFFLE_OPS = frozenset({"ShuffleDataset", "ShuffleDatasetV2", "ShuffleDatasetV3"})


class RewriteError(ReasonedError):
    """A fix that cannot be applied to this graph."""

    def __init__(
        self, code: RewriteFailure, *, detail: str = "", value: float | None = None
    ) -> None:
        super().__init__(Reason(code, detail=detail, value=value))


@dataclass(frozen=True)
class BatchedFunction:
    """A map's Python function traced again on whole batches: the per-element trace keeps shape
    logic resolved for one element (docs/design.md, "Every applicable rewrite")."""

    name: str
    library: tuple[Any, ...]  # FunctionDefs: the function and every function it calls
    output_shapes: tuple[Any, ...]  # TensorShapeProto per output component, batched
    argument_types: tuple[int, ...]  # DataType enums of its captured inputs


class PipelineGraph:
    """A GraphDef being edited: adds nodes with unique names and rewires their consumers."""

    def __init__(self, graph_def: Any) -> None:
        self.graph_def = graph_def
        self._added = 0

    @classmethod
    def copy_of(cls, graph_def: Any) -> PipelineGraph:
        import tensorflow as tf

        copy = tf.compat.v1.GraphDef()
        copy.CopyFrom(graph_def)
        return cls(copy)

    def rebuild(self, element_spec: Any) -> Any:
        import tensorflow as tf

        variant = tf.raw_ops.DatasetFromGraph(graph_def=self.graph_def.SerializeToString())
        return tf.data.experimental.from_variant(variant, element_spec)

    def node(self, name: str) -> Any:
        for node in self.graph_def.node:
            if node.name == name:
                return node
        raise RewriteError("no-graph-node", detail=name)

    def data_inputs(self, node: Any) -> list[str]:
        return [name for name in node.input if not name.startswith("^")]

    def retval(self) -> Any:
        """The `_Retval` node: its input is the dataset the graph returns."""
        for node in self.graph_def.node:
            if node.op == "_Retval" and node.input:
                return node
        raise RewriteError("no-output-node")

    def root(self) -> Any:
        """The dataset op below the trailing options: where an end stage goes."""
        current = self.node(self.retval().input[0].split(":")[0])
        while current.op in _PASS_THROUGH_OPS and current.input:
            current = self.node(current.input[0].split(":")[0])
        return current

    def consumers(self, name: str) -> list[Any]:
        """Nodes that read `name`'s output as data (its `_Retval` included)."""
        return [
            node
            for node in self.graph_def.node
            if any(i in (name, f"{name}:0") for i in self.data_inputs(node))
        ]

    def set_output(self, name: str) -> None:
        self.retval().input[0] = name

    def redirect(self, old: str, new: str) -> None:
        for other in self.graph_def.node:
            for position, name in enumerate(other.input):
                if name in (old, f"{old}:0") and other.name != new:
                    other.input[position] = new

    def tensor_slices(self, columns: list[Any], spec: Any) -> str:
        """A `TensorSliceDataset` of the given stacked arrays; its node name."""
        import tensorflow as tf

        components = []
        for column in columns:
            const, proto = self._add("Const"), tf.make_tensor_proto(column)
            const.attr["dtype"].type = proto.dtype
            const.attr["value"].tensor.CopyFrom(proto)
            components.append(str(const.name))
        node = self._add("TensorSliceDataset")
        node.input.extend(components)
        for component in tf.nest.flatten(spec):
            node.attr["Toutput_types"].list.type.append(component.dtype.as_datatype_enum)
            node.attr["output_shapes"].list.shape.add().CopyFrom(component.shape.as_proto())
        node.attr["is_files"].b = False
        node.attr["metadata"].s = b""
        node.attr["replicate_on_split"].b = False
        return str(node.name)

    def const(self, value: int | str) -> str:
        node = self._add("Const")
        dtype = _DT_STRING if isinstance(value, str) else _DT_INT64
        node.attr["dtype"].type = dtype
        tensor = node.attr["value"].tensor
        tensor.dtype = dtype
        if isinstance(value, str):
            tensor.string_val.append(value.encode())
        else:
            tensor.int64_val.append(value)
        return str(node.name)

    def insert_after(self, target: Any, op: str, extra_inputs: list[str]) -> Any:
        """A new unary dataset op reading `target`; every consumer of `target` reads it."""
        node = self._add(op)
        node.input.extend([target.name, *extra_inputs])
        node.attr["output_types"].CopyFrom(_output_types(target))
        node.attr["output_shapes"].CopyFrom(target.attr["output_shapes"])
        self.redirect(target.name, node.name)
        return node

    def set_input(self, node: Any, position: int, value: int) -> None:
        """Point a scalar input (negative: from the last data input) at a new Const of its own."""
        data = self.data_inputs(node)
        index = position if position >= 0 else len(data) + position
        if not 0 <= index < len(data):
            raise RewriteError("op-has-no-input", detail=node.op, value=position)
        node.input[index] = self.const(value)

    def parallelize_map(self, name: str) -> None:
        node = self.node(name)
        if node.op == "ParallelMapDatasetV2":
            self.set_input(node, -1, AUTOTUNE)
            return
        if node.op != "MapDataset":
            raise RewriteError("not-a-known-map", detail=node.op)
        # ParallelMapDatasetV2(input, other_arguments..., num_parallel_calls), then controls.
        node.op = "ParallelMapDatasetV2"
        node.input.insert(len(self.data_inputs(node)), self.const(AUTOTUNE))
        if "force_synchronous" in node.attr:  # a MapDataset attribute ParallelMapDatasetV2 lacks
            del node.attr["force_synchronous"]
        node.attr["deterministic"].s = b"default"
        node.attr["use_unbounded_threadpool"].b = False

    def parallelize_interleave(self, name: str, cycle_length: int) -> None:
        node = self.node(name)
        cycle = {"ParallelInterleaveDatasetV4": -5, "ParallelInterleaveDatasetV3": -3}.get(node.op)
        if cycle is not None:
            self.set_input(node, cycle, cycle_length)
            self.set_input(node, -1, AUTOTUNE)
            return
        data, controls = self.data_inputs(node), [n for n in node.input if n.startswith("^")]
        if node.op == "InterleaveDataset":
            head, block = data[:-2], data[-1]  # (input, other_arguments...), block_length
        elif node.op == "FlatMapDataset":
            head, block = data, self.const(1)
        else:
            raise RewriteError("not-a-known-interleave", detail=node.op)
        # ParallelInterleaveDatasetV4(input, other_arguments..., cycle_length, block_length,
        # buffer_output_elements, prefetch_input_elements, num_parallel_calls): the last 3 AUTOTUNE.
        tail = [self.const(cycle_length), block, *(self.const(AUTOTUNE) for _ in range(3))]
        del node.input[:]
        node.input.extend([*head, *tail, *controls])
        node.op = "ParallelInterleaveDatasetV4"
        node.attr["deterministic"].s = b"default"

    def vectorize(
        self, map_name: str, batch_name: str, batched: BatchedFunction | None = None
    ) -> None:
        """`X -> map(f) -> batch(n)` becomes `X -> batch(n) -> map(f, AUTOTUNE)` running `batched`
        (None: the per-element trace, right without rank-dependent shapes); names kept."""
        mapped, batch = self.node(map_name), self.node(batch_name)
        if mapped.op not in _MAP_OPS:
            raise RewriteError("not-a-known-map", detail=mapped.op)
        if batch.op not in _BATCH_OPS:
            raise RewriteError("not-a-plain-batch", detail=batch.op)
        if [n.name for n in self.consumers(map_name)] != [batch_name]:
            raise RewriteError("map-read-elsewhere")
        if self.data_inputs(batch)[0].split(":")[0] != map_name:
            raise RewriteError("batch-not-after-map")
        source, lead = self.node(self.data_inputs(mapped)[0].split(":")[0]), _leading_dim(batch)
        self.redirect(batch_name, map_name)  # the batch's readers now read the map
        batch.input[0] = source.name
        mapped.input[0] = batch.name
        batch.attr["output_types"].CopyFrom(_output_types(source))
        _set_batched_shapes(batch, source.attr["output_shapes"], lead)
        if batched is None:
            _set_batched_shapes(mapped, mapped.attr["output_shapes"], lead)
        else:
            self.use_function(mapped, batched)
        self.parallelize_map(map_name)

    def use_function(self, mapped: Any, function: BatchedFunction) -> None:
        """`mapped` runs `function` (added to the library) on the same captured inputs."""
        if tuple(mapped.attr["Targuments"].list.type) != function.argument_types:
            raise RewriteError("captures-differ-on-batch")
        known = {f.signature.name for f in self.graph_def.library.function}
        for function_def in function.library:
            if function_def.signature.name not in known:
                self.graph_def.library.function.add().CopyFrom(function_def)
                known.add(function_def.signature.name)
        mapped.attr["f"].func.name = function.name
        del mapped.attr["output_shapes"].list.shape[:]
        mapped.attr["output_shapes"].list.shape.extend(function.output_shapes)

    def prefetch_at_end(self) -> None:
        root = self.root()
        if root.op == "PrefetchDataset":
            self.set_input(root, 1, AUTOTUNE)
            return
        prefetch = self.insert_after(root, "PrefetchDataset", [self.const(AUTOTUNE)])
        prefetch.attr["slack_period"].i = 0
        prefetch.attr["legacy_autotune"].b = True
        prefetch.attr["buffer_size_min"].i = 0

    def cache_after(self, name: str, *, repeat: bool) -> None:
        """An in-memory cache after `name`; with `repeat`, read again from memory forever."""
        cache = self.insert_after(self.node(name), "CacheDataset", [self.const("")])
        if repeat:
            self.insert_after(cache, "RepeatDataset", [self.const(-1)])

    def hoist_above_shuffle(self, map_name: str, shuffle_name: str, *, repeat: bool = True) -> None:
        """`X -> shuffle -> map(f)` becomes `X -> map(f) -> cache -> shuffle` (`repeat`: as
        `cache_after`). The map and shuffle keep their names."""
        mapped, shuffle = self.node(map_name), self.node(shuffle_name)
        if mapped.op not in _MAP_OPS:
            raise RewriteError("not-a-known-map", detail=mapped.op)
        if shuffle.op not in _SHUFFLE_OPS:
            raise RewriteError("not-a-known-shuffle", detail=shuffle.op)
        if self.data_inputs(mapped)[0].split(":")[0] != shuffle_name:
            raise RewriteError("map-not-after-shuffle")
        if [n.name for n in self.consumers(shuffle_name)] != [map_name]:
            raise RewriteError("shuffle-read-elsewhere")
        source = self.data_inputs(shuffle)[0]
        self.redirect(map_name, shuffle_name)  # the map's readers now read the shuffle
        mapped.input[0] = source
        shuffle.input[0] = map_name
        shuffle.attr["output_types"].CopyFrom(mapped.attr["output_types"])
        shuffle.attr["output_shapes"].CopyFrom(mapped.attr["output_shapes"])
        self.cache_after(map_name, repeat=repeat)

    def replace_source(self, name: str, columns: list[Any], spec: Any) -> None:
        """The source `name` becomes a `TensorSliceDataset` of `columns` under the same name."""
        self.graph_def.node.remove(self.node(name))
        self.node(self.tensor_slices(columns, spec)).name = name

    def hold_after(self, name: str, count: int) -> None:
        """`name`'s first `count` elements held in memory and repeated forever."""
        take = self.insert_after(self.node(name), "TakeDataset", [self.const(count)])
        self.cache_after(str(take.name), repeat=True)

    def isolate(self) -> list[Reason]:
        """Share no per-iterator state with the user's dataset (`bench.isolate`)."""
        return isolate_graph_def(self.graph_def)

    def _add(self, op: str) -> Any:
        self._added += 1
        node = self.graph_def.node.add()
        node.name = f"pipediag_whatif/{op}_{self._added}"
        node.op = op
        return node


def _output_types(node: Any) -> Any:
    """Its types attribute (a TensorSliceDataset's `Toutput_types`), without adding a key."""
    return node.attr["output_types" if "output_types" in node.attr else "Toutput_types"]


def _leading_dim(batch: Any) -> int:
    """The batch dimension a batch node declares (-1 when the last batch may be short)."""
    shapes = batch.attr["output_shapes"].list.shape
    if shapes and not shapes[0].unknown_rank and shapes[0].dim:
        return int(shapes[0].dim[0].size)
    return -1


def _set_batched_shapes(node: Any, element_shapes: Any, lead: int) -> None:
    """`node`'s output shapes: each of `element_shapes` with a leading batch dimension."""
    import tensorflow as tf

    dim = lead if lead >= 0 else None
    batched = [
        tf.TensorShape(None if shape.unknown_rank else [dim, *tf.TensorShape(shape)]).as_proto()
        for shape in element_shapes.list.shape
    ]
    del node.attr["output_shapes"].list.shape[:]
    node.attr["output_shapes"].list.shape.extend(batched)
