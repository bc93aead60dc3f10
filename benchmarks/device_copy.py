"""The host-to-device copy's trial on a real device: what share of fit's step the copy takes.

Run where TensorFlow sees a GPU::

    PYTHONPATH=. python benchmarks/device_copy.py
    PYTHONPATH=. python benchmarks/device_copy.py --cpu    # the CPU standing in for the GPU

Two Keras fit models, each trained a few steps, then the copy's trial
(`training/device_copy.py`) on a cached batch: `large-input`, a batch of 64 images of
96x96x3 float32 (7 MB to copy) into a small model, where the copy should be a clear share
of the step; `small-input`, a batch of 64x32 floats into the same width of model, where it
should be none. With `--cpu`, nothing is copied and both should read about 1.00x with an
interval reaching 1 (docs/design.md, "The host-to-device copy"). With $OUT set,
`device_copy.json` is written under it through the benchmarks' shared writer.

Exit status: 0 when it ran, 2 when there is no GPU and `--cpu` was not given.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common

NAME = "device_copy"
EXIT_OK = 0
EXIT_CANNOT_RUN = 2
CASES = {"large-input": (96, 96, 3), "small-input": (32,)}
BATCH = 64
SHARE_S = 4.0


def _case(shape: tuple[int, ...], placement: Any) -> dict[str, Any]:
    import keras
    import numpy as np
    import tensorflow as tf

    from pipediag.clock import MONOTONIC
    from pipediag.training.compute_alone import sync_logs
    from pipediag.training.device_copy import device_copy_trial
    from pipediag.training.step_rounds import FitFacts

    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCH, *shape)).astype("float32")
    y = rng.normal(size=(BATCH, 1)).astype("float32")
    model = keras.Sequential(
        [
            keras.layers.Input(shape),
            keras.layers.Flatten(),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    model.compile("adam", "mse")
    model.fit(tf.data.Dataset.from_tensors((x, y)).repeat(), steps_per_epoch=5, verbose=0)

    def step(fed: Any) -> None:
        sync_logs(model.train_function(iter((fed,))))

    batch = (tf.constant(x), tf.constant(y))
    facts = FitFacts(0.01, None, True, "mixed_float16")
    trial = device_copy_trial(step, batch, placement, facts, clock=MONOTONIC, share_s=SHARE_S)
    return {
        "host_steps_per_s": trial.baseline_steps_per_s,
        "device_steps_per_s": trial.variant_steps_per_s,
        "speedup": trial.speedup,
        "interval": trial.interval,
        "share": trial.share,
        "rounds": trial.rounds,
        "stopped": trial.stopped,
        "batch_bytes": int(x.nbytes + y.nbytes),
    }


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    parser = argparse.ArgumentParser(prog=f"benchmarks/{NAME}.py", description=__doc__)
    parser.add_argument("--cpu", action="store_true", help="the CPU standing in for the GPU")
    args = parser.parse_args(argv)
    from pipediag.bench.device import TensorFlowPlacement, gpu_placement

    placement = TensorFlowPlacement("/cpu:0") if args.cpu else gpu_placement()
    if placement is None:
        print("TensorFlow sees no GPU: not measured (--cpu runs the CPU stand-in)")
        return EXIT_CANNOT_RUN
    cases = [{"case": name, **_case(shape, placement)} for name, shape in CASES.items()]
    rows = [
        [
            c["case"],
            _common.fmt(c["host_steps_per_s"]),
            _common.fmt(c["device_steps_per_s"]),
            _common.fmt(c["speedup"], ".2f", "x"),
            "-".join(f"{v:.2f}" for v in c["interval"] or []),
            _common.fmt(None if c["share"] is None else 100 * c["share"], ".0f", "%"),
        ]
        for c in cases
    ]
    headers = ["case", "host steps/s", "device steps/s", "gain", "90% interval", "copy share"]
    print(f"device: {placement.name}")
    print(_common.format_table(headers, rows))
    out = os.environ.get("OUT")
    if out:
        _common.write_results(
            Path(out) / f"{NAME}.json",
            NAME,
            settings={"device": placement.name, "batch": BATCH, "share_s": SHARE_S},
            summary={c["case"]: c["share"] for c in cases},
            cases=cases,
            quick=False,
        )
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
