"""A `from_generator` source read once into arrays, for the rewrite that holds it in memory
(`FIX_MATERIALISE`): bounded in time and size, the user's random states put back."""

from __future__ import annotations

import time
from typing import Any

from pipediag.bench import cache_sizing
from pipediag.bench.isolate import kept_random_states
from pipediag.report.reasons import Reason

# Reading a generator's epoch stops past the phase-1 benchmark's length.
GENERATOR_READ_MAX_S = 3.0
# And past this size: the elements become constants of a GraphDef, a protobuf capped at 2 GiB.
GENERATOR_MAX_BYTES = 1 << 30


def read_generator(generator: Any, spec: Any) -> tuple[list[Any] | None, Reason | None]:
    """One epoch as one stacked array per component, or why not; random states put back."""
    import numpy as np
    import tensorflow as tf

    components = tf.nest.flatten(spec)
    if not all(isinstance(c, tf.TensorSpec) for c in components):
        return None, Reason("generator-ragged")
    available, limit = cache_sizing.available_memory_bytes(), GENERATOR_MAX_BYTES
    if available is not None:
        limit = min(limit, int(cache_sizing.CACHE_MAX_MEMORY_SHARE * available))
    columns: list[list[Any]] = [[] for _ in components]
    used, began = 0, time.perf_counter()
    try:
        with kept_random_states():
            for element in generator():
                values = [np.asarray(v) for v in tf.nest.flatten(element)]
                used += sum(v.nbytes for v in values)
                if used > limit:
                    return None, Reason("generator-too-big")
                if time.perf_counter() - began > GENERATOR_READ_MAX_S:
                    return None, Reason("generator-too-slow", limit=GENERATOR_READ_MAX_S)
                for column, value, component in zip(columns, values, components, strict=True):
                    column.append(value.astype(component.dtype.as_numpy_dtype, copy=False))
    except Exception as exc:
        return None, Reason("generator-failed", detail=f"{type(exc).__name__}: {exc}")
    if not columns or not columns[0]:
        return None, Reason("generator-empty")
    try:
        return [np.stack(column) for column in columns], None
    except ValueError:
        return None, Reason("generator-shapes-differ")
