"""pfor's trace is quieted on its own thread only: a user's thread logging meanwhile is kept."""

from __future__ import annotations

import logging
import threading

import pytest

from pipediag.bench.vectorized_map import TF_LOGGER, quiet_tensorflow_logger


def test_only_the_tracing_threads_tensorflow_records_are_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger(TF_LOGGER)
    caplog.set_level(logging.INFO, logger=TF_LOGGER)
    with quiet_tensorflow_logger():
        logger.warning("Using a while_loop for converting DecodeRaw")  # the trace's own
        user = threading.Thread(target=logger.warning, args=("the user's own line",))
        user.start()
        user.join()
    logger.warning("after the trace")
    assert [r.getMessage() for r in caplog.records] == ["the user's own line", "after the trace"]
