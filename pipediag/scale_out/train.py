"""The user's train step fed by a tf.data service (`--data-service-train`): on a cluster, what
training would gain is best measured, not predicted. Batches are taken with a timeout, so a
stalled service never holds the model."""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator
from typing import Any

from pipediag.bench.teardown import owned
from pipediag.clock import MONOTONIC, Clock
from pipediag.report.reasons import Reason
from pipediag.scale_out.service import ServiceError, distributed, tf_error_text

# Timed steps after a short warm-up, about as long as compute alone runs.
TRAIN_WARMUP_STEPS = 3
TRAIN_MAX_SECONDS = 2.0
TRAIN_READ_AHEAD = 8  # batches held ahead of the train step (a prefetch buffer)
TRAIN_BATCH_TIMEOUT_S = 20.0  # the longest the train step waits for one batch


def train_through(
    model: Any, style: str, dataset: Any, target: str, *, clock: Clock = MONOTONIC
) -> tuple[float | None, Reason | None]:
    """(steps/s, None) or (None, why not): fit's compiled train function on `dataset` read through
    `target`, its variables put back after (as `training/compute_alone.py`)."""
    if style != "keras-fit" or model is None:
        return None, Reason("service-fit-only")
    from pipediag.training.fit_backend import BACKEND_NAMES, keras_backend

    if (backend := keras_backend(model)) not in (None, "tensorflow"):
        return None, Reason("service-tf-only", detail=BACKEND_NAMES.get(backend, backend))
    from pipediag.training.compute_alone import sync_logs
    from pipediag.training.driver import TrainDriver, stateful_random_op

    train_function = getattr(model, "train_function", None)
    strategy = getattr(model, "distribute_strategy", None)
    if train_function is None:
        return None, Reason("no-compiled-train-function")
    if strategy is not None and getattr(strategy, "num_replicas_in_sync", 1) > 1:
        return None, Reason("service-multi-replica")
    if (blocker := stateful_random_op(train_function)) is not None:
        return None, Reason("stateful-random-op", detail=blocker)
    reader = _ServiceReader(dataset, target)
    try:
        driver = TrainDriver.keras_fit(model)
        per_call = driver.batches_per_call
        with driver.restoring():
            for _ in range(TRAIN_WARMUP_STEPS):
                sync_logs(driver.train(reader.take(per_call)))
            start, steps = clock.now(), 0
            while clock.now() - start < TRAIN_MAX_SECONDS:
                sync_logs(driver.train(reader.take(per_call)))
                steps += per_call
            elapsed = clock.now() - start
    except ServiceError as exc:
        return None, Reason("service-error", because=exc.reason)
    except Exception as exc:
        return None, Reason("service-train-failed", detail=tf_error_text(exc))
    finally:
        reader.close()
    return (steps / elapsed if elapsed > 0 else None), None


class _ServiceReader:
    """Pulls batches from the service on a helper thread, a few ahead of the train step."""

    _END = object()

    def __init__(self, dataset: Any, target: str) -> None:
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=TRAIN_READ_AHEAD)
        self._stop = threading.Event()
        self._iterator = iter(distributed(dataset, target))
        self._thread = threading.Thread(
            target=self._pull, name="pipediag-service-train-read", daemon=True
        )
        self._thread.start()

    def _pull(self) -> None:
        try:
            for batch in self._iterator:
                if not self._offer(batch):
                    return
        except Exception as exc:
            self._offer(exc)
            return
        self._offer(self._END)

    def _offer(self, item: Any) -> bool:
        """Queue `item` unless told to stop first; False when stopped."""
        while not self._stop.is_set():
            with contextlib.suppress(queue.Full):  # the wait is the point: check stop, retry
                self._queue.put(item, timeout=0.1)
                return True
        return False

    def take(self, count: int) -> Iterator[Any]:
        for _ in range(count):
            try:
                item = self._queue.get(timeout=TRAIN_BATCH_TIMEOUT_S)
            except queue.Empty:
                raise ServiceError("no-batch-within", limit=TRAIN_BATCH_TIMEOUT_S) from None
            if item is self._END:
                raise ServiceError("service-dataset-ended")
            if isinstance(item, Exception):
                raise item
            yield item

    def close(self) -> None:
        self._stop.set()
        self._thread.join(TRAIN_BATCH_TIMEOUT_S)
        if not self._thread.is_alive():
            with owned(None) as releaser:
                releaser.discard(self._iterator)
