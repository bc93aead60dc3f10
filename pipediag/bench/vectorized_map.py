"""The user's per-element function run on whole batches through `tf.vectorized_map`, for
functions that cannot take a batch as written (docs/design.md, "Every applicable rewrite")."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

# TensorFlow's Python logger, where pfor logs each op it loops over or fails to convert.
TF_LOGGER = "tensorflow"


def unpacks_element(element_spec: Any) -> bool:
    """Whether tf.data unpacks this element into a map's arguments (a plain tuple only: TF 2.21)."""
    return type(element_spec) is tuple


def on_whole_batches(func: Callable[..., Any], unpacked: bool) -> Callable[..., Any]:
    """A map function for batches running `func` on each element through `tf.vectorized_map`,
    called as tf.data would (`unpacked`: a tuple element's parts as its arguments)."""

    def per_element(element: Any) -> Any:
        return func(*element) if unpacked else func(element)

    def on_batch(*batch: Any) -> Any:
        import tensorflow as tf

        elements = batch if unpacked else batch[0]
        # warn=False: pfor's own switch for the per-op while_loop warnings.
        return tf.vectorized_map(per_element, elements, fallback_to_while_loop=True, warn=False)

    return on_batch


@contextlib.contextmanager
def quiet_tensorflow_logger() -> Iterator[None]:
    """TensorFlow's Python logger silenced on this thread only (pfor's trace); others still log."""
    logger, thread = logging.getLogger(TF_LOGGER), threading.get_ident()

    def quiet(record: logging.LogRecord) -> bool:
        return record.thread != thread

    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)
