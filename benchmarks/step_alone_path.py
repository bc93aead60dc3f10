"""The train step alone under fit: which path it takes decides how fast T reads.

Keras's compiled train function accepts a dataset iterator (fit's own path: an outer
tf.function pulls each batch, then runs the step) or any Python iterable of batches (a
shorter path: the inner step function on each batch). pipediag's step alone must take fit's
path, as FastFlow's T does: the script fed `ds.take(1).cache().repeat()` (docs/design.md,
"Rates in alternation"). One process, one model, three sides in alternating rounds:

- `iterable`: the train function handed a Python iterable of the cached batch;
- `pipediag`: pipediag's step alone (`FitStepAlone`), an iterator over the cached batch;
- `fastflow`: `model.fit` on `take(1).cache().repeat()`, timed from a callback between steps.

Each is read as steps/s over a block of calls after a warm-up; the ratios to `fastflow` are
the result. A small MLP makes about 1 ms steps, where the two paths differ most.

    python benchmarks/step_alone_path.py            # results/step_alone_path.json
    python benchmarks/step_alone_path.py --quick
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import base_parser, median, spread_summary, write_results

SIDES = ("iterable", "pipediag", "fastflow")


def _model_and_data(width: int) -> tuple[Any, Any, Any]:
    import keras
    import numpy as np
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    x = np.random.default_rng(0).random((4096, 64), dtype=np.float32)
    y = np.random.default_rng(1).integers(0, 10, 4096)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32).prefetch(2)
    model = keras.Sequential(
        [
            keras.layers.Input((64,)),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile("adam", loss)
    model.fit(ds, epochs=1, verbose=0)
    return model, ds, next(iter(ds))


def _sides(model: Any, ds: Any, batch: Any) -> dict[str, Callable[[int], float]]:
    """Each side as a function of the steps to time, returning steps/s."""
    import keras

    from pipediag.clock import MONOTONIC
    from pipediag.training.compute_alone import FitStepAlone, sync_logs

    train_function = model.train_function
    alone = FitStepAlone(model, batch)
    cached = ds.take(1).cache().repeat()

    def iterable(steps: int) -> float:
        for _ in range(3):
            sync_logs(train_function(iter((batch,))))
        began = time.perf_counter()
        for _ in range(steps):
            logs = train_function(iter((batch,)))
        sync_logs(logs)
        return steps / (time.perf_counter() - began)

    def pipediag(steps: int) -> float:
        ends: list[float] = []

        def ended(at: float) -> bool:
            ends.append(at)
            return len(ends) > steps

        alone.block(ended, clock=MONOTONIC, warmup=3)
        return steps / (ends[-1] - ends[0])

    def fastflow(steps: int) -> float:
        ends: list[float] = []

        class Stamp(keras.callbacks.Callback):  # type: ignore[misc]
            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                ends.append(time.perf_counter())

        settle = 3
        model.fit(cached, steps_per_epoch=steps + settle, epochs=1, verbose=0, callbacks=[Stamp()])
        return steps / (ends[-1] - ends[settle - 1])

    return {"iterable": iterable, "pipediag": pipediag, "fastflow": fastflow}


def measure(rounds: int, steps: int, width: int) -> dict[str, list[float]]:
    """Steps/s of each side, `rounds` times, the order reversed every other round."""
    model, ds, batch = _model_and_data(width)
    sides = _sides(model, ds, batch)
    for side in SIDES:
        sides[side](20)  # traces
    rates: dict[str, list[float]] = {side: [] for side in SIDES}
    for number in range(rounds):
        order: Sequence[str] = SIDES if number % 2 == 0 else tuple(reversed(SIDES))
        for side in order:
            rates[side].append(sides[side](steps))
    return rates


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser("step_alone_path", __doc__)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--width", type=int, default=256, help="the MLP's hidden width")
    args = parser.parse_args(argv)
    rounds, steps = (2, 50) if args.quick else (args.rounds, args.steps)
    rates = measure(rounds, steps, args.width)
    fastflow = median(rates["fastflow"])
    summary: dict[str, Any] = {"fastflow_steps_per_s": fastflow}
    for side in SIDES:
        rate = median(rates[side])
        summary[f"{side}_steps_per_s"] = rate
        summary[f"{side}_over_fastflow"] = rate / fastflow if fastflow else None
        print(f"{side:>9}: {rate:8.1f} steps/s  ({rate / fastflow:.2f}x FastFlow's T)")
    write_results(
        args.json,
        "step_alone_path",
        settings={"rounds": rounds, "steps": steps, "width": args.width},
        summary=summary,
        cases=[{"side": side, "steps_per_s": spread_summary(rates[side])} for side in SIDES],
        quick=args.quick,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
