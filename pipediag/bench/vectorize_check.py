"""Is a map safe to move after its batch? The user's function run both ways on a sample of
their elements; a difference or an error refuses the fix (equal results: evidence, not proof)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipediag.bench import python_chain
from pipediag.bench.graph_edit import BatchedFunction, PipelineGraph, RewriteError
from pipediag.bench.teardown import TearDown, released_after
from pipediag.bench.vectorized_map import on_whole_batches, quiet_tensorflow_logger, unpacks_element
from pipediag.errors import tf_error_text
from pipediag.report.reasons import Reason

# Elements a vectorised function is checked on (two batches at most), and their memory cap.
VECTORIZE_SAMPLE_MAX_ELEMENTS = 512
VECTORIZE_SAMPLE_MAX_BYTES = 64 * 2**20
# A vectorised float result may differ from the per-element one by rounding, not more.
VECTORIZE_RTOL = 1e-5
VECTORIZE_ATOL = 1e-6


@dataclass
class CheckSample:
    """A sample of the map's input and the map's per-element results on it, each computed once."""

    graph_def: Any
    map_node: str
    input_spec: Any
    sample: list[Any]
    teardown: TearDown | None
    expected: list[list[Any]] | None = None

    @classmethod
    def read(
        cls,
        graph_def: Any,
        map_node: str,
        input_spec: Any,
        sample_size: int,
        teardown: TearDown | None,
    ) -> CheckSample | Reason:
        """The sample, or why none was read (the check is then not made)."""
        import tensorflow as tf

        if not all(isinstance(c, tf.TensorSpec) for c in tf.nest.flatten(input_spec)):
            return Reason("sample-ragged")
        sample_graph = PipelineGraph.copy_of(graph_def)
        map_def = sample_graph.node(map_node)
        sample_graph.set_output(sample_graph.data_inputs(map_def)[0].split(":")[0])
        sample_graph.isolate()
        sample = _read_sample(sample_graph.rebuild(input_spec), input_spec, sample_size, teardown)
        if sample is None:
            return Reason("no-sample")
        return cls(graph_def, map_node, input_spec, sample, teardown)

    def check(
        self,
        batch_node: str,
        batch_spec: Any,
        batched: Callable[[], BatchedFunction | None] | None = None,
    ) -> tuple[Reason | None, bool]:
        """(why not, whether unsafe rather than unchecked) for the function `batched` traces
        (None: the graph's own) run on whole batches of the sample, against the map run per
        element; (None, False) if equal. A trace that fails is the function failing."""
        if self.expected is None:
            self.expected = self._batches(batch_node, batch_spec, None, vectorized=False)
        try:
            actual = self._batches(batch_node, batch_spec, batched, vectorized=True)
        except RewriteError:
            raise  # the graph, not the function: not checked
        except Exception as exc:
            failed = Reason("fails-on-batch", detail=tf_error_text(exc))
            return Reason("unsafe-keep-map", because=failed), True
        if (difference := _first_difference(self.expected, actual)) is not None:
            differs = Reason("not-elementwise", detail=difference, value=len(self.sample[0]))
            return Reason("unsafe-keep-map", because=differs), True
        return None, False

    def _batches(
        self,
        batch_node: str,
        batch_spec: Any,
        batched: Callable[[], BatchedFunction | None] | None,
        *,
        vectorized: bool,
    ) -> list[list[Any]]:
        check_graph = PipelineGraph.copy_of(self.graph_def)
        source = check_graph.tensor_slices(self.sample, self.input_spec)
        check_graph.node(self.map_node).input[0] = source
        if vectorized:
            check_graph.vectorize(self.map_node, batch_node, None if batched is None else batched())
        check_graph.set_output(self.map_node if vectorized else batch_node)
        import tensorflow as tf

        batches = released_after(iter(check_graph.rebuild(batch_spec)), self.teardown)
        return [[t.numpy() for t in tf.nest.flatten(batch)] for batch in batches]


@dataclass
class VectorizeForms:
    """The user's function on batches as written (`plain`), then, where that is unsafe, through
    `tf.vectorized_map` (`per_element`); `chosen` is the one the variant runs."""

    plain: Callable[[], BatchedFunction | None]
    per_element: Callable[[], BatchedFunction | None]
    through_vectorized_map: bool = False
    # Why the plain form was refused, where the vectorized_map form passed.
    plain_refusal: Reason | None = None

    def chosen(self) -> BatchedFunction | None:
        return self.per_element() if self.through_vectorized_map else self.plain()

    def check(
        self, sample: CheckSample | Reason, batch_node: str, batch_spec: Any
    ) -> tuple[Reason | None, bool]:
        """`CheckSample.check`: plain form, then vectorized_map if unsafe; refusals are plain's."""
        if isinstance(sample, Reason):
            return sample, False
        refusal, unsafe = sample.check(batch_node, batch_spec, self.plain)
        if not unsafe:
            return refusal, unsafe
        try:
            traced = self.per_element()
            if traced is None:  # the function is unknown: no form of it to check
                return refusal, unsafe
            again, _ = sample.check(batch_node, batch_spec, lambda: traced)
        except Exception:  # pfor could not convert it, or the graph would not take it
            return refusal, unsafe
        if again is not None:
            return refusal, unsafe
        self.through_vectorized_map = True
        self.plain_refusal = refusal.because if refusal is not None else None
        return None, False


def trace_on_batches(
    map_dataset: Any, batch_size: int, drop_remainder: bool, *, vectorized_map: bool = False
) -> BatchedFunction | None:
    """The map's Python function traced on its input batched as the pipeline does; None: unknown."""
    func = python_chain.user_function(map_dataset)
    inputs = python_chain.python_inputs(python_chain.unwrap(map_dataset))
    if func is None or len(inputs) != 1:
        return None
    batched_input = inputs[0].batch(batch_size, drop_remainder=drop_remainder)
    # Building a dataset runs nothing: only the function is traced.
    if not vectorized_map:
        return _batched_function(batched_input.map(func))
    wrapped = on_whole_batches(func, unpacks_element(inputs[0].element_spec))
    with quiet_tensorflow_logger():
        return _batched_function(batched_input.map(wrapped))


def _batched_function(batched_map: Any) -> BatchedFunction | None:
    """The map function of `batched_map` (a map over batches), ready for a graph copy."""
    concrete = batched_map._map_func.function
    import tensorflow as tf

    outputs = tf.nest.flatten(batched_map.element_spec)
    if not all(isinstance(c, tf.TensorSpec) for c in outputs):
        return None  # ragged or sparse outputs: their graph shapes are not their specs'
    return BatchedFunction(
        name=concrete.function_def.signature.name,
        library=(concrete.function_def, *concrete.graph.as_graph_def().library.function),
        output_shapes=tuple(component.shape.as_proto() for component in outputs),
        argument_types=tuple(t.dtype.as_datatype_enum for t in concrete.captured_inputs),
    )


def _read_sample(
    dataset: Any, spec: Any, size: int, teardown: TearDown | None = None
) -> list[Any] | None:
    """Up to `size` elements, one stacked NumPy array per component (memory-capped)."""
    import tensorflow as tf

    columns: list[list[Any]] = [[] for _ in tf.nest.flatten(spec)]
    used = 0
    for element in released_after(iter(dataset.take(size)), teardown):
        values = [t.numpy() for t in tf.nest.flatten(element)]
        used += sum(getattr(v, "nbytes", 0) for v in values)
        if used > VECTORIZE_SAMPLE_MAX_BYTES:
            break
        for column, value in zip(columns, values, strict=True):
            column.append(value)
    if not columns or not columns[0]:
        return None
    import numpy as np

    # Strings stay Python bytes: NumPy's fixed-width bytes drop trailing NULs, which end a
    # serialized `tf.train.Example` whose last field is a zero.
    return [np.array(c, dtype=object) if isinstance(c[0], bytes) else np.stack(c) for c in columns]


def _first_difference(expected: list[list[Any]], actual: list[list[Any]]) -> str | None:
    """Where two lists of batches differ, in words; None when equal (floats to rounding)."""
    import numpy as np

    if len(expected) != len(actual):
        return f"{len(actual)} batches instead of {len(expected)}"
    for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
        for part, (a, b) in enumerate(zip(want, got, strict=True)):
            where = f"batch {index}, output {part}"
            if a.shape != b.shape:
                return f"{where}: shape {b.shape} instead of {a.shape}"
            if np.issubdtype(a.dtype, np.inexact):
                if not np.allclose(a, b, rtol=VECTORIZE_RTOL, atol=VECTORIZE_ATOL, equal_nan=True):
                    return f"{where}: values differ by up to {float(np.max(np.abs(a - b))):.3g}"
            elif not np.array_equal(a, b):
                return f"{where}: values differ"
    return None
