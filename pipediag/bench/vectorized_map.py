"""The user's per-element function run on whole batches through `tf.vectorized_map`.

Part of `bench/`: many per-element functions cannot take a batch as written, but
`tf.vectorized_map(fn, batch, fallback_to_while_loop=True)` runs them once per batch with the
same result for each element. This module wraps the function so; the vectorise check
(`bench/vectorize_check.py`) traces and checks it like the plain form. Imports TensorFlow
only inside its functions (docs/design.md, "Every applicable rewrite").
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

# TensorFlow's Python logger: pfor logs each op it loops over ("Using a while_loop for
# converting ...") and every op it fails to convert, with the op's whole NodeDef, there.
TF_LOGGER = "tensorflow"


def unpacks_element(element_spec: Any) -> bool:
    """Whether tf.data passes this element to a map's function as several arguments: a
    plain tuple is unpacked, any other structure (a dict, a namedtuple) is passed whole
    (TF 2.21 `structured_function._should_unpack`)."""
    return type(element_spec) is tuple


def on_whole_batches(func: Callable[..., Any], unpacked: bool) -> Callable[..., Any]:
    """A map function for batches that runs `func` on each element through
    `tf.vectorized_map`, calling it as tf.data would have (`unpacked`: a tuple element's
    parts as its arguments)."""

    def per_element(element: Any) -> Any:
        return func(*element) if unpacked else func(element)

    def on_batch(*batch: Any) -> Any:
        import tensorflow as tf

        elements = batch if unpacked else batch[0]
        # warn=False: pfor's own switch for the per-op while_loop warnings.
        return tf.vectorized_map(per_element, elements, fallback_to_while_loop=True, warn=False)

    return on_batch


class _ThisThreadOnly(logging.Filter):
    """Drops the records logged on one thread; every other thread's pass."""

    def __init__(self) -> None:
        super().__init__()
        self._thread = threading.get_ident()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread != self._thread


@contextlib.contextmanager
def quiet_tensorflow_logger() -> Iterator[None]:
    """TensorFlow's Python logger silenced on this thread for the duration (a pfor trace,
    which runs on the tracing thread): what pfor says about the user's ops is not
    pipediag's output, and what the user's own threads log meanwhile still appears."""
    logger = logging.getLogger(TF_LOGGER)
    quiet = _ThisThreadOnly()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)
