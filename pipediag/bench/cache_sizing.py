"""How big one epoch of a dataset is, and whether it fits in memory: shared by every rewrite
that holds data in memory, so they judge "fits" alike."""

from __future__ import annotations

import time
from typing import Any

from pipediag.bench.teardown import released_after

# A cache must fit in half the memory available now: the rest of the training needs room too.
CACHE_MAX_MEMORY_SHARE = 0.5
# Elements read to estimate the size of elements whose shapes are not static.
CACHE_SIZE_SAMPLE = 8
UNKNOWN = -2
# Counting a dataset whose length tf.data does not know: in batches of this many, at most this long.
COUNT_BATCH = 1024
COUNT_MAX_S = 2.0


def counted_elements(dataset: Any, teardown: Any = None) -> int | None:
    """One pass's elements, counted by reading it in batches; None past `COUNT_MAX_S`."""
    import tensorflow as tf

    counted = dataset.map(lambda *_: tf.zeros([], tf.int8)).batch(COUNT_BATCH)
    batches = released_after(iter(counted), teardown)
    deadline, count = time.monotonic() + COUNT_MAX_S, 0
    for batch in batches:
        count += int(batch.shape[0])
        if time.monotonic() > deadline:
            return None
    return count


def cardinality(dataset: Any) -> int | None:
    """Elements in one epoch; -1 infinite, -2 unknown (tf.data's constants), None on error."""
    try:
        return int(dataset.cardinality().numpy())
    except Exception:
        return None


def dataset_bytes(dataset: Any, elements: int, spec: Any) -> int | None:
    """Memory of one epoch: from `spec`'s static shapes, else from a few elements sampled."""
    if (static := static_element_bytes(spec)) is not None:
        return static * elements
    sampled = _sampled_element_bytes(dataset)
    return None if sampled is None else int(sampled * elements)


def static_element_bytes(spec: Any) -> int | None:
    import tensorflow as tf

    total = 0
    for component in tf.nest.flatten(spec):
        shape, dtype = getattr(component, "shape", None), getattr(component, "dtype", None)
        if shape is None or dtype is None or not shape.is_fully_defined() or dtype == tf.string:
            return None
        total += shape.num_elements() * dtype.size
    return total


def fits_in_memory(size: int | None, available: int | None) -> bool:
    return size is not None and available is not None and size <= CACHE_MAX_MEMORY_SHARE * available


def available_memory_bytes() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:
        return None


def _sampled_element_bytes(dataset: Any) -> float | None:
    """Mean size of the first elements, read on a fresh iterator (the prefix has no cache)."""
    import tensorflow as tf

    sizes: list[int] = []
    try:
        for element in dataset.take(CACHE_SIZE_SAMPLE):
            values = [tensor.numpy() for tensor in tf.nest.flatten(element)]
            # A string tensor is an object array: its size is its values' lengths.
            sizes.append(
                sum(sum(map(len, v.ravel())) if v.dtype == object else v.nbytes for v in values)
            )
    except Exception:
        return None
    return sum(sizes) / len(sizes) if sizes else None
