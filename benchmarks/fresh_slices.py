"""What a trial's short slice on a fresh iterator reads, against the epoch it stands for.

A trial on training (docs/design.md, "Fixes tried on training") times each side in slices of
0.1-0.5 s, each on a fresh iterator whose first call is timed apart, as an epoch starts. The
held output's unchanged side is pooled with the alternation's pairs only where it ran within
10% of training's rate (docs/design.md, "The held output"). This measures, in one process,
what such slices read on the time series tutorial's pipeline
(`timeseries_dataset_from_array` with its shuffle, then the window split; generated data of
the tutorial's shape) with its Dense or LSTM model, against a whole pass:

- `epoch`: one pass on a fresh iterator, steps/s from its 10th step to its end;
- `fresh`: a fresh iterator, its first call untimed, then 0.1 s of steps (a trial's slice);
- `fresh-late`: the same slice without its first quarter of steps;
- `fresh-long`: a fresh iterator, 0.3 s of steps;
- `kept`: one iterator kept across slices, 0.1 s of steps with the first 5 left out;
- `held`: the pass held in memory (distinct batches), 0.1 s of steps on a fresh iterator;
- `copy`: `fresh` on the unchanged copy a stage hold trains on (rebuilt from the graph);
- `trial`: the copy read as the trial reads a side (`TrialSide`, fit's train function called
  by the trial's driver, the iterator torn down on a helper thread).

Every side runs once in each of `--rounds` rounds (three slices of each a round), in turn;
the result is each side's median rate over `epoch`'s.

    python benchmarks/fresh_slices.py                # results/fresh_slices.json
    python benchmarks/fresh_slices.py --quick
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import base_parser, median, spread_summary, write_results

NAME = "fresh_slices"
SIDES = ("epoch", "fresh", "fresh-late", "fresh-long", "kept", "held", "copy", "trial")
ROUNDS, QUICK_ROUNDS = 8, 2
SLICES_A_ROUND = 3
SLICE_S, LONG_SLICE_S = 0.1, 0.3
EPOCH_SKIPPED_STEPS = 10
KEPT_SKIPPED_STEPS = 5
ROWS, FEATURES = 6132, 19  # the tutorial's hourly training rows and columns
# (input width, label width, window) per model, as the tutorial's windows.
WINDOWS = {"dense": (1, 1, 2), "lstm": (24, 24, 25)}


def _model_and_pipeline(kind: str) -> tuple[Any, Callable[[], Any]]:
    import keras
    import numpy as np

    keras.utils.set_random_seed(0)
    data = np.random.default_rng(0).standard_normal((ROWS, FEATURES)).astype(np.float32)
    inputs, labels, window = WINDOWS[kind]

    def split(features: Any) -> tuple[Any, Any]:
        x, y = features[:, :inputs, :], features[:, window - labels :, 1:2]
        x.set_shape([None, inputs, None])
        y.set_shape([None, labels, None])
        return x, y

    def make() -> Any:
        windows = keras.utils.timeseries_dataset_from_array(
            data, None, sequence_length=window, shuffle=True, batch_size=32
        )
        return windows.map(split)

    if kind == "lstm":
        layers = [keras.layers.LSTM(32, return_sequences=True), keras.layers.Dense(1)]
    else:
        layers = [
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(1),
        ]
    model = keras.Sequential(layers)
    model.compile(loss="mse", optimizer="adam")
    model.fit(make(), epochs=1, verbose=0)
    return model, make


def _steps(
    train: Callable[[Any], Any], iterator: Iterator[Any], seconds: float | None
) -> list[float]:
    """Each step's seconds until `seconds` have passed (None: the iterator's end)."""
    import tensorflow as tf

    ends = [time.perf_counter()]
    while seconds is None or ends[-1] - ends[0] < seconds:
        try:
            train(iterator)
        except (StopIteration, tf.errors.OutOfRangeError):
            break
        ends.append(time.perf_counter())
    return [b - a for a, b in zip(ends, ends[1:], strict=False)]


def _rate(durations: list[float]) -> float | None:
    return len(durations) / sum(durations) if durations and sum(durations) > 0 else None


def _pipediag_sides(model: Any, dataset: Any) -> tuple[Any, Callable[[float], Any]]:
    """The unchanged copy a stage hold trains on, and a trial's read of one slice of it."""
    from pipediag.bench.hold import HeldCopies
    from pipediag.bench.structure import walk
    from pipediag.bench.teardown import TearDown
    from pipediag.bench.whatif import TrialSide
    from pipediag.clock import MONOTONIC
    from pipediag.training.driver import TrainDriver
    from pipediag.training.training_trial import _FitSteps

    copy = HeldCopies(walk(dataset), None).baseline
    read = _FitSteps(TrainDriver.keras_fit(model), MONOTONIC).read
    return copy, TrialSide(copy, TearDown(), MONOTONIC, read=read).run


def _measure(kind: str, rounds: int) -> dict[str, list[float]]:
    import numpy as np
    import tensorflow as tf

    model, make = _model_and_pipeline(kind)
    train = model.train_function
    batches = list(make())[:-1]  # the last, short batch left out: one shape
    held = tf.data.Dataset.from_tensor_slices(
        tuple(np.stack([b[k].numpy() for b in batches]) for k in range(2))
    )
    kept = iter(make().repeat())
    train(kept)
    copy, trial = _pipediag_sides(model, make())

    def fresh(dataset: Any, seconds: float) -> list[float]:
        iterator = iter(dataset)
        train(iterator)  # the slice's first call, timed apart in a trial
        return _steps(train, iterator, seconds)

    rates: dict[str, list[float]] = {side: [] for side in SIDES}

    def add(side: str, durations: list[float]) -> None:
        if (rate := _rate(durations)) is not None:
            rates[side].append(rate)

    for _ in range(rounds):
        iterator = iter(make())
        train(iterator)
        add("epoch", _steps(train, iterator, None)[EPOCH_SKIPPED_STEPS:])
        del iterator
        for _ in range(SLICES_A_ROUND):
            durations = fresh(make(), SLICE_S)
            add("fresh", durations)
            add("fresh-late", durations[len(durations) // 4 :])
            add("held", fresh(held, SLICE_S))
            add("kept", _steps(train, kept, SLICE_S)[KEPT_SKIPPED_STEPS:])
            add("fresh-long", fresh(make(), LONG_SLICE_S))
            add("copy", fresh(copy, SLICE_S))
            timing = trial(SLICE_S)
            add("trial", timing.latencies_s)
    return rates


def main() -> None:
    parser = base_parser(NAME, __doc__)
    parser.add_argument("--models", default="dense,lstm", help="comma-separated: dense, lstm")
    args = parser.parse_args()
    rounds = QUICK_ROUNDS if args.quick else ROUNDS
    cases = []
    for kind in args.models.split(","):
        rates = _measure(kind, rounds)
        epoch = median(rates["epoch"])
        ratios = {side: median(rates[side]) / epoch for side in SIDES}
        print(kind, "  ".join(f"{side} {ratio:.3f}" for side, ratio in ratios.items()))
        cases.append(
            {
                "model": kind,
                "epoch_steps_per_s": epoch,
                "over_epoch": ratios,
                "spreads": {side: spread_summary(rates[side]) for side in SIDES},
            }
        )
    summary = {c["model"]: c["over_epoch"] for c in cases}
    write_results(
        args.json,
        NAME,
        settings={"rounds": rounds, "slices_a_round": SLICES_A_ROUND, "slice_s": SLICE_S},
        summary=summary,
        cases=cases,
        quick=args.quick,
    )


if __name__ == "__main__":
    main()
