"""Model-side trials on real TensorFlow: reported under fit, and training unchanged by them
(docs/design.md, "When the model sets the rate")."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_runner import ENV

import pipediag
from pipediag.report.model_side import HOST_GAP_KINDS
from pipediag.report.reasons import Reason

pytestmark = pytest.mark.tensorflow

# A small compute-bound fit over a cached in-memory pipeline, with dropout (a seed state).
MODEL = """
import json, random, sys
import numpy as np
import tensorflow as tf
import keras

keras.utils.set_random_seed(3)
x = np.random.default_rng(0).normal(size=(1024, 32)).astype("float32")
y = x.sum(axis=1, keepdims=True)
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32).cache().repeat().prefetch(2)
model = keras.Sequential([keras.layers.Input((32,)), keras.layers.Dense(256, activation="relu"),
                          keras.layers.Dropout(0.2), keras.layers.Dense(256, activation="relu"),
                          keras.layers.Dense(1)])
model.compile(keras.optimizers.Adam(1e-3), "mse")
"""

DIAGNOSED = (
    MODEL
    + """
model.fit(ds, epochs=50, steps_per_epoch=40, verbose=0)
"""
)

# The trials run from a callback at batch 10 of fit, then training goes on; the losses,
# weights and random draws after it must be those of a run without them.
WITH_TRIALS = (
    MODEL
    + """
from pipediag.bench.device import TensorFlowPlacement
from pipediag.clock import MONOTONIC
from pipediag.training.model_side import FitFacts, on_fit

batch = next(iter(ds))
found = {}
losses = []

class Trials(keras.callbacks.Callback):
    def on_train_batch_end(self, index, logs=None):
        losses.append(float(logs["loss"]))
        if index == 10 and sys.argv[1] == "trials":
            function = model.train_function
            facts = FitFacts(0.002, 300.0, False, "mixed_bfloat16")
            # the CPU stands in for the GPU: the copy's trial runs on real placed tensors
            side = on_fit(model, batch, facts, clock=MONOTONIC, budget_s=3.0,
                          placement=TensorFlowPlacement("/cpu:0"))
            found["trials"] = [
                (t.change, t.speedup, t.reason and t.reason.code, t.seconds) for t in side.trials
            ]
            found["top_ops"] = len(side.top_ops)
            found["numerics"] = [
                (t.setting, t.float32_layers) for t in side.trials if t.change == "mixed_precision"
            ]
            found["same_function"] = model.train_function is function
            found["settings"] = [bool(model.jit_compile), int(model.steps_per_execution)]
            found["policy"] = keras.mixed_precision.global_policy().name

model.fit(ds, epochs=1, steps_per_epoch=30, verbose=0, callbacks=[Trials()])
weights = [float(w.sum()) for w in model.get_weights()]
draws = [random.random(), float(np.random.random())]
json.dump({"losses": losses, "weights": weights, "draws": draws, "found": found},
          open(sys.argv[2], "w"))
"""
)


def test_fit_reports_the_trials_and_the_step_s_top_ops(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(DIAGNOSED))
    config = pipediag.RunConfig(
        measured_steps=20,
        warmup_steps=3,
        bench_seconds=0.5,
        sample_gpu=False,
        stages=False,  # no pipeline stages or fixes: the model side alone
        deep=True,
        deep_seconds=2.0,
    )
    report = pipediag.diagnose(script, config=config, out=None, log=None)
    alone = report.compute_alone
    assert alone is not None and alone.measured, alone
    changes = {t.change: t for t in alone.trials}
    xla = changes["jit_compile"]
    assert xla.speedup is not None or xla.reason, xla
    assert changes["mixed_precision"].reason  # no GPU, and no bfloat16 on the test hosts' CPUs
    assert changes["device_copy"].reason == Reason("no-gpu-copy")
    assert alone.top_ops, alone.top_ops_reason
    gaps = sum(t.share for t in alone.top_ops if t.kind in HOST_GAP_KINDS)
    for kind in ("op_type", "scope"):
        shares = [t.share for t in alone.top_ops if t.kind == kind]
        assert shares and sum(shares) + gaps <= 1.0 + 1e-9
    assert "model_side" in [p.name for p in report.phases]


def test_the_trials_leave_training_as_it_was(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(WITH_TRIALS))
    # Both runs at once: the losses, weights and draws are the same whatever the load, and
    # nothing here reads a trial's speed, only that it has a result.
    runs = {
        mode: subprocess.Popen(
            [sys.executable, str(script), mode, str(tmp_path / f"{mode}.json")],
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for mode in ("plain", "trials")
    }
    results = {}
    for mode, process in runs.items():
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err[-2000:]
        results[mode] = json.loads((tmp_path / f"{mode}.json").read_text())
    plain, tried = results["plain"], results["trials"]
    found = tried["found"]
    assert found["same_function"] and found["settings"] == [False, 1]
    assert found["policy"] == "float32"
    assert found["top_ops"] > 0
    # the mixed-precision clone ran (the policy was given), and every change has a result
    assert all(speedup is not None or reason for _, speedup, reason, _ in found["trials"])
    assert [t[0] for t in found["trials"]] == [
        "jit_compile",
        "steps_per_execution",
        "mixed_precision",
        "device_copy",
    ]
    # its numerics as facts: the policy, and the output layer kept float32
    ((policy, float32_layers),) = found["numerics"]
    assert policy == "mixed_bfloat16" and len(float32_layers) == 1, found["numerics"]
    copy = found["trials"][3]
    assert copy[1] is not None, copy  # measured: the batch placed on the host and the "device"
    assert tried["losses"] == plain["losses"]
    assert tried["weights"] == plain["weights"]
    assert tried["draws"] == plain["draws"]
