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
  - `AT`: both in one process, alternated: blocks of `ds`'s batches and of the held batch
    take turns within each epoch, and each epoch starts on the other kind from the epoch
    before, so the host's drift falls on both alike (see `pattern`). Every epoch still reads
    one whole pass of `ds` (a `cache()` in it fills as in the plain script) and ends on it,
    with held-batch blocks between; where fit is given its steps per epoch, the epoch keeps
    them. Under fit one dataset chooses between the two; a Python loop over a finite `ds`
    (`loop=True`) pulls from two iterators in turn, each ended apart (`_LoopPasses`).
  - `AB`: the plain pipeline and the hand-tuned one in one process, alternated as in `AT`,
    the tuned one (built by the script's `tuned`, a function called with `TUNED` set) in
    the held batch's place. Each epoch reads one whole pass of each, both ended at their
    own end of sequence, so a cache in either fills in the first epoch; an endless pair
    keeps fit's steps per epoch, the kinds in blocks over them. Both pipelines live in one
    process: the one resting refills its buffers during the other's blocks (each block's
    first quarter is left out of the rates for that), and a heavy one takes some CPU from
    the other's blocks, which pulls the speedup towards 1.
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
"port-to-tf-ops"); `benchmarks/corpus_prescription.py` times both variants in alternation
(`AB`).

The stamps go to the JSON file `PIPEDIAG_TRUTH_OUT` names when the process ends:
`{"mode", "epochs": [{"start_s", "ends_s": [...]}]}`, and in `AT` each epoch's `kinds` (0
for `ds`'s batch, 1 for the held one, step by step), a loop's `closing_s` (each iterator's
end of pass and tear-down) and the run's `block`;
`benchmarks/corpus.py` turns them into rates from each epoch's start and within the epoch.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

MODE = os.environ.get("PIPEDIAG_TRUTH", "")
OUT = os.environ.get("PIPEDIAG_TRUTH_OUT", "")
LOSSES = os.environ.get("PIPEDIAG_TRUTH_LOSSES", "")
# The hand-tuned variant of a script (its `TUNED_CHANGE`), for the prescription's truth.
TUNED = os.environ.get("PIPEDIAG_TUNED") == "1"
PLAIN, CACHED, PIPELINE, ALTERNATED, TUNED_ALTERNATED = "A", "T", "P", "AT", "AB"
# A block of `AT` is a quarter of an epoch's passes of `ds`, in whole calls of the loop.
BLOCKS_PER_EPOCH = 4

_epochs: list[dict[str, Any]] = []
_losses: list[float] = []
# `AT`: how each epoch's kinds are laid out, and the counter that places an epoch in them
# (TensorFlow's count of passes, or the steps so far where fit keeps one iterator).
_alternation: dict[str, Any] = {}


def active() -> bool:
    return MODE in (PLAIN, CACHED, PIPELINE, ALTERNATED, TUNED_ALTERNATED)


def _begin_epoch() -> None:
    epoch: dict[str, Any] = {"start_s": time.perf_counter(), "ends_s": []}
    if _alternation and not _alternation.get("by_call"):
        # where the epoch falls: the steps so far, where fit keeps one iterator (its
        # elements are the steps, one each); else TensorFlow's count of passes
        epoch["at"] = (
            sum(len(e["ends_s"]) for e in _epochs)
            if _alternation["endless"]
            else int(_alternation["counter"].numpy())
        )
    _epochs.append(epoch)


def _tick() -> None:
    _epochs[-1]["ends_s"].append(time.perf_counter())


def _write() -> None:
    if not OUT:
        return
    found: dict[str, Any] = {"mode": MODE, "epochs": _epochs}
    if _alternation:
        found["block"] = _alternation["block"]
        if _alternation.get("endless") and not _alternation.get("by_call"):
            # every pull is a step where fit keeps one iterator: the analysis checks it
            found["pulls"] = int(_alternation["counter"].numpy())
        for epoch in _epochs:
            if "at" in epoch and "kinds" not in epoch:
                epoch["kinds"] = _kinds(epoch["at"], len(epoch["ends_s"]))
    with open(OUT, "w") as out:
        json.dump(found, out)


def pattern(
    passes: int, block: int, first: int, *, endless: bool = False, both_whole: bool = False
) -> list[int]:
    """One `AT` epoch's kinds, step by step: blocks of `block` steps, 0 (`ds`) and 1 (the
    held batch) in turn from `first`. An epoch of a finite `ds` reads one whole pass of it
    (so a cache in it fills) with one held block fewer than its own, and ends on it, so the
    pass's end falls on its own step as in the plain script; both starts give the same
    length, which fit is told. With `both_whole` (`AB`), the epoch reads one whole pass of
    each kind, block for block. An epoch of an endless `ds` has `passes` steps, fit's steps
    per epoch."""
    if endless:
        kinds: list[int] = []
        while len(kinds) < passes:
            kinds += [first if len(kinds) // block % 2 == 0 else 1 - first] * block
        return kinds[:passes]
    sizes = [block] * (passes // block) + ([passes % block] if passes % block else [])
    if both_whole:
        return [kind for size in sizes for kind in [first] * size + [1 - first] * size]
    blocks = [[0] * size for size in sizes]
    held = [[1] * block for _ in blocks[1:]]
    # A T A ... T A, or T A T ... A A: the last two real blocks run together
    order: list[list[int]] = []
    for i, real in enumerate(blocks):
        other = held[i] if i < len(held) else []
        order += [real, other] if first == 0 else [other, real]
    return [kind for run in order for kind in run]


def _kinds(at: int, steps: int) -> list[int]:
    """The kinds of an epoch's `steps` steps, from the counter read as it started."""
    a = _alternation
    if a["endless"]:
        cycle = a["cycles"][0] + a["cycles"][1]  # two epochs, each starting on the other kind
        return [cycle[(at + i) % len(cycle)] for i in range(steps)]
    return a["cycles"][at % 2][:steps]


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


def training_dataset(
    ds: Any,
    *,
    epochs: int = 1,
    steps_per_epoch: int | None = None,
    steps_per_call: int = 1,
    loop: bool = False,
    tuned: Callable[[], Any] | None = None,
) -> Any:
    """`ds` as the truth's mode wants it; see the module's docstring. A loop that runs
    `steps_per_call` steps in each call gives its `AT` blocks whole calls; a Python loop over
    a finite `ds` (`loop`, its passes through `epoch()`) gets its `AT` passes from
    `_LoopPasses`. `tuned` builds the hand-tuned variant's training dataset, for `AB`."""
    twin = None
    if MODE == TUNED_ALTERNATED:
        if tuned is None:
            raise SystemExit("AB needs the script's hand-tuned variant: training_dataset(tuned=)")
        twin = _built_tuned(tuned)
    if MODE in (ALTERNATED, TUNED_ALTERNATED) and loop and steps_per_epoch is None:
        return _LoopPasses(ds, twin)
    if MODE in (ALTERNATED, TUNED_ALTERNATED):
        return _alternated(ds, steps_per_epoch, steps_per_call, twin)
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


def _built_tuned(build: Callable[[], Any]) -> Any:
    """The hand-tuned variant's training dataset, built as `PIPEDIAG_TUNED=1` would."""
    global TUNED
    was, TUNED = TUNED, True
    try:
        return build()
    finally:
        TUNED = was


def _same_passes(twin: Any, passes: int) -> None:
    if steps_in(twin) != passes:
        raise SystemExit("AB needs the tuned variant to give as many batches a pass as the plain")


def _alternated(ds: Any, steps_per_epoch: int | None, steps_per_call: int, twin: Any = None) -> Any:
    """`ds` and its held batch in alternating blocks (`AT`), or `ds` and the tuned
    variant's dataset `twin` (`AB`)."""
    import tensorflow as tf

    endless = steps_per_epoch is not None
    passes = steps_per_epoch if endless else steps_in(ds)
    if passes is None:
        raise SystemExit("AT needs the steps per epoch of an endless dataset")
    both_whole = twin is not None and not endless
    if both_whole:
        _same_passes(twin, passes)
    elif twin is not None and int(twin.cardinality()) != int(tf.data.INFINITE_CARDINALITY):
        raise SystemExit("AB needs the tuned variant endless where the plain one is")
    block = steps_per_call * max(1, passes // BLOCKS_PER_EPOCH // steps_per_call)
    cycles = [
        pattern(passes, block, first, endless=endless, both_whole=both_whole) for first in (0, 1)
    ]
    if not _alternation:
        _alternation["counter"] = tf.Variable(0, dtype=tf.int64, trainable=False)
    counter = _alternation["counter"]
    _alternation.update(block=block, endless=endless, cycles=cycles)

    if endless and steps_per_call > 1:
        if twin is not None:
            raise SystemExit("AB does not alternate calls of several steps")
        # a loop whose calls run several steps in a tf.function: each call runs one kind,
        # set before it from Python (`steps_done`)
        kind_var = tf.Variable(0, dtype=tf.int64, trainable=False)
        _alternation.update(by_call=True, kind=0, kind_var=kind_var, done=0)
        picks = (
            tf.data.Dataset.from_tensors(tf.constant(0, tf.int64))
            .repeat()
            .map(lambda _: kind_var.read_value())
        )
    elif endless:
        # fit keeps one iterator across epochs: the counter counts pulls, and the kinds
        # run through two epochs' patterns; each element is one step
        cycle = tf.constant(cycles[0] + cycles[1], dtype=tf.int64)
        picks = (
            tf.data.Dataset.from_tensors(tf.constant(0, tf.int64))
            .repeat()
            .map(lambda _: tf.gather(cycle, (counter.assign_add(1) - 1) % (2 * passes)))
        )
    else:
        # a fresh iterator each epoch: the counter counts passes, its parity picks the pattern
        # and one pick more of `ds` (of each, in `AB`), which it cannot give: the pass ends
        # at its own end of sequence, as in the plain script, not torn down with work in
        # flight
        ends = [0, 1] if both_whole else [0]
        by_parity = tf.constant([cycle + ends for cycle in cycles], dtype=tf.int64)
        picks = (
            tf.data.Dataset.from_tensors(tf.constant(0, tf.int64))
            .map(lambda _: counter.assign_add(1) - 1)
            .flat_map(lambda n: tf.data.Dataset.from_tensor_slices(by_parity[n % 2]))
        )
    other = twin if twin is not None else ds.take(1).cache().repeat()
    # `AB` reads past both ends: the first to end must not end the epoch
    chosen = tf.data.Dataset.choose_from_datasets(
        [_as_run_alone(ds), _as_run_alone(other)], picks, stop_on_empty_dataset=not both_whole
    )
    if not endless:
        # fit is told each epoch's steps, as it knows the plain dataset's
        chosen = chosen.apply(tf.data.experimental.assert_cardinality(len(cycles[0])))
    # no prefetch after the choice, which would read the next block's batches during the
    # block before: each side has the one it would have alone
    options = tf.data.Options()
    options.experimental_optimization.inject_prefetch = False
    return chosen.with_options(options)


# The transformations that already run ahead of their consumer: TensorFlow injects no
# prefetch after a pipeline that ends with one of them (`inject_prefetch`).
_ASYNC = (
    "_PrefetchDataset",
    "_ParallelMapDataset",
    "_ParallelInterleaveDataset",
    "_ParallelBatchDataset",
    "_MapAndBatchDataset",
)


def _as_run_alone(ds: Any) -> Any:
    """`ds` with the prefetch TensorFlow would inject after it were it the whole pipeline,
    as in the plain script and in whole runs of `T` (a generator with no prefetch of its own
    read 52% without it in `AT`, against 36% over whole runs)."""
    import tensorflow as tf

    last = ds
    while type(last).__name__ == "_OptionsDataset":
        last = last._input_dataset
    return ds if type(last).__name__ in _ASYNC else ds.prefetch(tf.data.AUTOTUNE)


class _LoopPasses:
    """`AT` for a Python loop over a finite `ds`: each pass pulls from two iterators in
    turn, one over `ds` and one over its held batch, so that each ends on its own as the
    plain loop's and the held batch's do in whole runs. A pass reads `ds` to its end of
    sequence; then each iterator is let go and its tear-down timed apart (the epoch's
    `closing_s`, real then held): TensorFlow's autotuning can make it wait a second or more,
    for either. In `AB` the tuned variant's dataset takes the held batch's place, and its
    pass too is read whole and to its end."""

    def __init__(self, ds: Any, twin: Any = None) -> None:
        passes = steps_in(ds)
        if not passes:
            raise SystemExit("AT needs a finite dataset with batches in a loop's pass")
        if twin is not None:
            _same_passes(twin, passes)
        block = max(1, passes // BLOCKS_PER_EPOCH)
        self.ds = ds
        self.held = twin if twin is not None else ds.take(1).cache().repeat()
        self.both_whole = twin is not None
        self.cycles = [
            pattern(passes, block, first, both_whole=self.both_whole) for first in (0, 1)
        ]
        # a script may build its dataset anew each epoch: the passes count on
        _alternation.update(block=block, endless=False, cycles=self.cycles)
        _alternation.setdefault("passes", 0)

    def __iter__(self) -> Iterator[Any]:
        return self._pass(numpy=False)

    def as_numpy_iterator(self) -> Iterator[Any]:
        return self._pass(numpy=True)

    def _pass(self, *, numpy: bool) -> Iterator[Any]:
        at = _alternation["passes"]
        _alternation["passes"] = at + 1
        _epochs.append({"start_s": time.perf_counter(), "ends_s": [], "at": at})
        made = [
            dataset.as_numpy_iterator() if numpy else iter(dataset)
            for dataset in (self.ds, self.held)
        ]
        for i, kind in enumerate(self.cycles[at % 2]):
            if i:
                _tick()  # the loop asks for the next batch: its step is done
            yield next(made[kind])  # a step's time holds its own pull
        _tick()
        closing = [0.0, 0.0]
        # `AB`: the kind whose pass ended first closes first, so each kind closes first in
        # every other epoch
        order = (at % 2, 1 - at % 2) if self.both_whole else (0, 1)
        for kind in order:
            began = time.perf_counter()
            if kind == 0 or self.both_whole:
                for _ in made[kind]:  # the pass's end of sequence, as the plain loop's
                    pass
            made[kind] = None  # let go: its tear-down
            closing[kind] = time.perf_counter() - began
        _epochs[-1]["closing_s"] = closing


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
    _epochs[-1].setdefault("calls", []).append(steps)  # `AT` checks no call mixes kinds
    now = time.perf_counter()
    last = ends[-1] if ends else _epochs[-1]["start_s"]
    ends.extend(last + (now - last) * k / steps for k in range(1, steps + 1))
    if _alternation.get("by_call"):
        _next_call(steps)


def _next_call(steps: int) -> None:
    """`AT` by call: the call that returned ran its kind; the next runs the kind the pattern
    gives its first step (the calls' sizes vary: a script may run a call of one step)."""
    a = _alternation
    _epochs[-1].setdefault("kinds", []).extend([a["kind"]] * steps)
    a["done"] += steps
    cycle = a["cycles"][0] + a["cycles"][1]
    kind = cycle[a["done"] % len(cycle)]
    if kind != a["kind"]:
        a["kind"] = kind
        a["kind_var"].assign(kind)


def epoch(ds: Iterable[Any]) -> Iterable[Any]:
    """A custom loop's pass over `ds`, each pull after the first closing the step before it
    (a pass of `_LoopPasses` stamps its own)."""
    if not active() or isinstance(ds, _LoopPasses) or _alternation.get("passes") is not None:
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
