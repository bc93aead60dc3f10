"""Whether a pipeline gives the same elements when read twice, before a cache over a
`py_function` tf.data cannot see into (docs/design.md, "Every applicable rewrite")."""

from __future__ import annotations

import time
from typing import Any

from pipediag.bench.isolate import kept_random_states

# Elements read in each pass: enough for a random augmentation to show (a coin flip leaving
# one alone is caught by the seven others), few enough for a decode of tens of ms.
CHECK_ELEMENTS = 8
# Both passes stop past this long: the check is not to hold up the trials.
CHECK_MAX_S = 3.0


def same_elements_twice(dataset: Any, elements: int = CHECK_ELEMENTS) -> bool | None:
    """Whether two passes over the first elements agree; None where unreadable in time."""
    began = time.perf_counter()
    try:
        with kept_random_states():
            first = _read(dataset, elements, began)
            second = _read(dataset, elements, began) if first is not None else None
    except Exception:  # a check that cannot run says nothing: the caller keeps its default
        return None
    if first is None or second is None or len(first) != len(second):
        return None
    return all(_equal(a, b) for a, b in zip(first, second, strict=True))


def _read(dataset: Any, elements: int, began: float) -> list[Any] | None:
    """The values of the first `elements` elements, flattened; None past `CHECK_MAX_S`."""
    import tensorflow as tf

    values: list[Any] = []
    for element in dataset.take(elements):
        values.extend(
            v.numpy() if hasattr(v, "numpy") else v
            for v in tf.nest.flatten(element, expand_composites=True)
        )
        if time.perf_counter() - began > CHECK_MAX_S:
            return None
    return values


def _equal(a: Any, b: Any) -> bool:
    import numpy as np

    left, right = np.asarray(a), np.asarray(b)
    if left.shape != right.shape or left.dtype != right.dtype:
        return False
    # NaN equals NaN only where a NaN can be: np.array_equal refuses it on other types.
    return bool(np.array_equal(left, right, equal_nan=left.dtype.kind in "fc"))
