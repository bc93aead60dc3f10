"""XLA on a custom loop's own train step: pipediag's claim against the loop written by hand
with `@tf.function(jit_compile=True)`.

One MLP custom loop (three Dense(512) layers, batches of 64 from memory):

1. the claim: `pipediag run --deep` on the unmodified loop; the `jit_compile` trial in
   `compute_alone.trials` (`training/loop_xla.py`: the loop's calls of its train step
   alternate with the XLA twin's, on the cached batch);
2. the truth: the same loop in one process, with the step as written and with
   `jit_compile=True`, in alternating blocks of `BLOCK_STEPS` steps over the pipeline
   (each block's first steps untimed); the median of the per-round rate ratios.

The figure is |claim/truth - 1| (docs/design.md, "When the model sets the rate").

    python benchmarks/loop_xla.py            # about two minutes on 2 busy cores
    python benchmarks/loop_xla.py --quick    # fewer rounds
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import base_parser, checked, child_env, fmt, write_results
from pipediag.renderers.reason_words import reason_words
from pipediag.report.io import load_report

NAME = "loop_xla"
ROUNDS = 6
QUICK_ROUNDS = 3
BLOCK_STEPS = 300
DEEP_SECONDS = 8.0

SCRIPT = """
import json, sys, time
import tensorflow as tf
import keras

keras.utils.set_random_seed(1)
x = tf.random.stateless_normal((4096, 64), seed=[1, 2])
y = tf.cast(tf.reduce_sum(x, axis=1) > 0, tf.int32)
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(64).repeat().prefetch(4)
model = keras.Sequential([keras.layers.Input((64,))]
                         + [keras.layers.Dense(512, activation="relu") for _ in range(3)]
                         + [keras.layers.Dense(2)])
opt = keras.optimizers.Adam(1e-3)
lossf = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

def step(a, b):
    with tf.GradientTape() as tape:
        loss = lossf(b, model(a, training=True))
    opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                            model.trainable_variables))
    return loss

train_step = tf.function(step)

if sys.argv[1] == "diagnose":
    for a, b in ds.take(4000):
        train_step(a, b)
else:
    rounds, block = int(sys.argv[2]), int(sys.argv[3])
    sides = {"plain": train_step, "xla": tf.function(step, jit_compile=True)}
    iterator = iter(ds)
    def rate(function):
        for _ in range(10):
            function(*next(iterator))
        began = time.perf_counter()
        for _ in range(block):
            function(*next(iterator))
        return block / (time.perf_counter() - began)
    ratios = []
    for r in range(rounds):
        order = ["plain", "xla"] if r % 2 == 0 else ["xla", "plain"]
        rates = {name: rate(sides[name]) for name in order}
        ratios.append(rates["xla"] / rates["plain"])
    print(json.dumps(ratios))
"""


def claim(script: Path, out: Path) -> dict[str, Any]:
    """pipediag's jit_compile trial on the unmodified loop."""
    args = ["run", "--deep", "--deep-seconds", str(DEEP_SECONDS), "--out", str(out)]
    subprocess.run(
        [sys.executable, "-m", "pipediag", *args, str(script), "diagnose"],
        env=child_env(),
        check=True,
        capture_output=True,
        timeout=300,
    )
    alone = load_report(checked(out / "report.json")).compute_alone
    trial = next((t for t in alone.trials if t.change == "jit_compile"), None) if alone else None
    reason = trial.reason if trial is not None else alone and alone.model_side_reason
    found = dataclasses.asdict(trial) if trial is not None else {"speedup": None}
    return {**found, "reason": reason_words(reason) if reason else None}


def truth(script: Path, rounds: int) -> list[float]:
    """The loop's rate with `jit_compile=True` over its rate as written, per round."""
    done = subprocess.run(
        [sys.executable, str(script), "truth", str(rounds), str(BLOCK_STEPS)],
        env=child_env(),
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return [float(r) for r in json.loads(done.stdout.strip().splitlines()[-1])]


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(NAME, __doc__)
    args = parser.parse_args(argv)
    rounds = QUICK_ROUNDS if args.quick else ROUNDS
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "train.py"
        script.write_text(textwrap.dedent(SCRIPT))
        found = claim(script, Path(tmp) / "out")
        ratios = truth(script, rounds)
    real = statistics.median(ratios)
    speedup = found.get("speedup")
    error = abs(speedup / real - 1) if speedup else None
    print(
        f"claim {fmt(speedup, '.2f', 'x')} (interval {found.get('interval')}, "
        f"{found.get('rounds', 0)} rounds, {fmt(found.get('seconds'), '.1f', ' s')}); "
        f"truth {real:.2f}x (rounds {', '.join(f'{r:.2f}' for r in ratios)}); "
        f"|claim/truth - 1| = {fmt(error, '.2f')}  {found.get('reason') or ''}"
    )
    write_results(
        args.json,
        NAME,
        settings={"rounds": rounds, "block_steps": BLOCK_STEPS, "deep_seconds": DEEP_SECONDS},
        summary={"claim": speedup, "truth": real, "error": error},
        cases=[{"trial": found, "truth_ratios": ratios, "cpus": os.cpu_count()}],
        quick=args.quick,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
