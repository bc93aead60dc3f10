"""The truth's switch in every corpus script: inert unless `PIPEDIAG_TRUTH` names a mode.

FastFlow's method, in whole processes with no pipediag code loaded (this module imports
nothing from the repository). A corpus script calls two things:

- `training_dataset(ds)` on its final training dataset, where it hands it to training:
  - unset, or `A`: `ds` itself (the plain script);
  - `T`: `ds.take(1).cache().repeat(n)`, one batch held in memory, the same `n` steps per
    epoch (the dataset's cardinality, counted once before training where TF cannot tell;
    endless where the script gives fit its steps per epoch);
  - `P`: the dataset read alone for the same epochs, its pulls stamped, then the process
    ends before any training.
- `callbacks()` added to `fit`'s callbacks, or `epoch(ds)` around a custom loop's
  dataset, so every step's end is stamped on one clock (both are inert when unset); a loop
  that pulls inside a tf.function calls `begin_epoch()` and, after each call,
  `steps_done(n)`.

`PIPEDIAG_TRUTH_SEED=N` seeds Python, NumPy and TensorFlow and makes TF's ops
deterministic at import, and `PIPEDIAG_TRUTH_LOSSES=FILE` has `callbacks()` record fit's
loss after every step into FILE (a JSON list) when the process ends, in any mode or none:
`benchmarks/corpus_no_change.py` compares them with and without pipediag that way.

`PIPEDIAG_TUNED=1` selects a script's hand-tuned variant, where it has one: its constants
`TUNED_CHANGE` (the change, in words) and `TUNED_FIX` (the pipediag fix it is, or
"port-to-tf-ops"); `benchmarks/corpus_prescription.py` times both variants in whole runs.

The stamps go to the JSON file `PIPEDIAG_TRUTH_OUT` names when the process ends:
`{"mode", "epochs": [{"start_s", "ends_s": [...]}]}`; `benchmarks/tutorials/truth.py`
turns them into rates from each epoch's start and within the epoch.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any

MODE = os.environ.get("PIPEDIAG_TRUTH", "")
OUT = os.environ.get("PIPEDIAG_TRUTH_OUT", "")
LOSSES = os.environ.get("PIPEDIAG_TRUTH_LOSSES", "")
# The hand-tuned variant of a script (its `TUNED_CHANGE`), for the prescription's truth.
TUNED = os.environ.get("PIPEDIAG_TUNED") == "1"
PLAIN, CACHED, PIPELINE = "A", "T", "P"

_epochs: list[dict[str, Any]] = []
_losses: list[float] = []


def active() -> bool:
    return MODE in (PLAIN, CACHED, PIPELINE)


def _begin_epoch() -> None:
    _epochs.append({"start_s": time.perf_counter(), "ends_s": []})


def _tick() -> None:
    _epochs[-1]["ends_s"].append(time.perf_counter())


def _write() -> None:
    if OUT:
        with open(OUT, "w") as out:
            json.dump({"mode": MODE, "epochs": _epochs}, out)


def _write_losses() -> None:
    with open(LOSSES, "w") as out:
        json.dump(_losses, out)


if active():
    atexit.register(_write)
if LOSSES:
    atexit.register(_write_losses)

if os.environ.get("PIPEDIAG_TRUTH_SEED"):
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(int(os.environ["PIPEDIAG_TRUTH_SEED"]))
    tf.config.experimental.enable_op_determinism()


def steps_in(ds: Any) -> int | None:
    """Batches in one pass of `ds`: TF's cardinality, counted by a pass where it is unknown;
    None for an infinite dataset (the script then sets its steps per epoch)."""
    import tensorflow as tf

    cardinality = int(ds.cardinality())
    if cardinality == int(tf.data.INFINITE_CARDINALITY):
        return None
    if cardinality >= 0:
        return cardinality
    return sum(1 for _ in ds)


def training_dataset(ds: Any, *, epochs: int = 1, steps_per_epoch: int | None = None) -> Any:
    """`ds` as the truth's mode wants it; see the module's docstring."""
    if MODE == CACHED:
        held = ds.take(1).cache()
        if steps_per_epoch is not None:
            # fit keeps one iterator across epochs where it is given steps per epoch: a
            # finite copy would run dry in epoch 2
            return held.repeat()
        steps = steps_in(ds)
        return held.repeat() if steps is None else held.repeat(steps)
    if MODE == PIPELINE:
        steps = steps_per_epoch or steps_in(ds)
        iterator = None
        for _ in range(epochs):
            _begin_epoch()
            if iterator is None or steps_per_epoch is None:
                iterator = iter(ds)  # a fresh pass per epoch, as fit makes one
            for _ in range(steps if steps is not None else 0):
                try:
                    next(iterator)
                except StopIteration:
                    break
                _tick()
        _write()
        sys.stdout.flush()
        os._exit(0)  # no training: P is the pipeline alone
    return ds


def callbacks() -> list[Any]:
    """A Keras callback that stamps each epoch's start and each step's end, and one that
    records each step's loss (none if neither is asked for)."""
    if not active() and not LOSSES:
        return []
    import keras

    found: list[Any] = []
    if active():

        class _Stamps(keras.callbacks.Callback):  # type: ignore[misc]
            def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
                _begin_epoch()

            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                _tick()

        found.append(_Stamps())
    if LOSSES:

        class _Losses(keras.callbacks.Callback):  # type: ignore[misc]
            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                _losses.append(float((logs or {})["loss"]))

        found.append(_Losses())
    return found


def begin_epoch() -> None:
    """A loop that pulls inside a tf.function: an epoch starts (inert when unset)."""
    if active():
        _begin_epoch()


def steps_done(steps: int) -> None:
    """A loop that pulls inside a tf.function: a call that ran `steps` steps has returned;
    its time is spread evenly over them (inert when unset)."""
    if not active() or not _epochs:
        return
    ends = _epochs[-1]["ends_s"]
    now = time.perf_counter()
    last = ends[-1] if ends else _epochs[-1]["start_s"]
    ends.extend(last + (now - last) * k / steps for k in range(1, steps + 1))


def epoch(ds: Iterable[Any]) -> Iterable[Any]:
    """A custom loop's pass over `ds`, each pull after the first closing the step before it."""
    if not active():
        return ds
    return _stamped(ds)


def _stamped(ds: Iterable[Any]) -> Iterator[Any]:
    _begin_epoch()
    first = True
    for element in ds:
        if not first:
            _tick()
        first = False
        yield element
    if not first:
        _tick()
