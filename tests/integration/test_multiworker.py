"""Two real workers under MultiWorkerMirroredStrategy on local CPU, then `pipediag merge`.

Each worker is `python -m pipediag run --steps 20 ...` in its own process, with a TF_CONFIG
naming two localhost ports; worker 1's pipeline sleeps 20 ms per batch, so it is the
straggler and worker 0 waits for it inside every step's all-reduce.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_runner import ENV, run_pipediag

pytestmark = pytest.mark.tensorflow

STEPS = 20
LOCKSTEP_BLOCK_STEPS = 16  # min(16, STEPS): pipediag/conclusion.py
WORKER_TIMEOUT_S = 180  # about 25 s each on 2 busy cores; a hang must not outlive the test

SCRIPT = """
import json, os, time
import tensorflow as tf

TASK_INDEX = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
DELAY_S = 0.02 if TASK_INDEX == 1 else 0.0

strategy = tf.distribute.MultiWorkerMirroredStrategy()
with strategy.scope():
    model = tf.keras.Sequential(
        [tf.keras.Input((8,)), tf.keras.layers.Dense(16), tf.keras.layers.Dense(1)]
    )
    optimizer = tf.keras.optimizers.SGD(0.01)

def slow(x):
    time.sleep(DELAY_S)
    return x

def load(x, y):
    # stateful: tf.data's map_parallelization would otherwise run the sleeps in parallel,
    # and worker 1 would keep up (about 100 batches/s on 2 cores) on a busy host
    return tf.numpy_function(slow, [x], tf.float32, stateful=True), y

features = tf.random.stateless_uniform((2048, 8), seed=(1, 2))
labels = tf.random.stateless_uniform((2048, 1), seed=(3, 4))
dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(16).map(load).repeat()
batches = iter(strategy.experimental_distribute_dataset(dataset))

@tf.function
def train_step(batch):
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return strategy.run(step, args=batch)

for _ in range(1000):
    train_step(next(batches))
print("trained to the end", flush=True)
"""


def free_ports(count: int) -> list[int]:
    """Ports free now: bound together, so they differ, then released for the workers."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("localhost", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def run_workers(script: Path, out: Path, cwd: Path) -> list[tuple[int, str]]:
    """Start both workers, wait for both; (exit code, output) each. Never leaves one running."""
    ports = free_ports(2)
    cluster = {"worker": [f"localhost:{port}" for port in ports]}
    processes, logs = [], []
    try:
        for index in range(2):
            config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
            log = (cwd / f"worker-{index}.log").open("w+")
            logs.append(log)
            processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "pipediag", "run", "--steps", str(STEPS)]
                    + ["--bench-seconds", "1", "--quiet", "--out", str(out), str(script)],
                    cwd=cwd,
                    env={**ENV, "TF_CONFIG": config},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        codes = [p.wait(timeout=WORKER_TIMEOUT_S) for p in processes]
        outputs = []
        for log in logs:
            log.seek(0)
            outputs.append(log.read())
        return list(zip(codes, outputs, strict=True))
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for log in logs:
            log.close()


def test_two_workers_then_merge(tmp_path: Path) -> None:
    # GIVEN two MWMS workers run under pipediag with one --out
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    out = tmp_path / "out"
    results = run_workers(script, out, tmp_path)
    # THEN both stop cleanly at the same step budget, each with its own report
    for index, (code, output) in enumerate(results):
        assert code == 0, output[-3000:]
        assert "trained to the end" not in output
        report = json.loads((out / f"worker-{index}" / "report.json").read_text())
        assert report["task"] == {"type": "worker", "index": index, "cluster_size": 2}
        assert report["stop_reason"] == "step-budget" and report["complete"]
        assert report["train"]["measured_steps"] == STEPS
        # the alternation: 3 rounds of blocks of a fixed step count, the same on both
        # workers (each step is a collective both must join)
        alone = report["compute_alone"]
        assert alone["measured"] and alone["block_steps"] == LOCKSTEP_BLOCK_STEPS
        kinds = [block["kind"] for block in alone["blocks"]]
        assert kinds.count("step-alone") == 3 and kinds.count("training") >= 3
        run = [block["steps"] + block["dropped_steps"] for block in alone["blocks"]]
        assert set(run) == {LOCKSTEP_BLOCK_STEPS}
        # tf.distribute's per-device feed is never read alone (it would take their batches)
        assert report["pipeline"]["reason"]["code"] == "distributed-feed"
        assert any(n["code"] == "multi-worker-job" for n in report["notes"])
    # WHEN their reports are merged
    merged = run_pipediag("merge", str(out), cwd=tmp_path, timeout=120)
    assert merged.returncode == 0, merged.stderr
    # THEN one row each, the straggler named with its cause, and a two-process trace
    rows = [line.split()[0] for line in merged.stdout.splitlines() if line.startswith("worker-")]
    assert rows == ["worker-0", "worker-1"]
    assert "Straggler: worker-1 (input):" in merged.stdout, merged.stdout  # whole, if not
    trace = json.loads((out / "fleet_trace.json").read_text())
    events = trace["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert sorted(names) == [1, 2]
    assert names[1].startswith("worker-0") and names[2].startswith("worker-1")
    for pid in names:
        steps = [e for e in events if e["pid"] == pid and e.get("cat") == "step"]
        assert len(steps) == STEPS + 5  # measured + warm-up steps
    assert set(trace["metadata"]["clock_offsets_us"]) == {"worker-0", "worker-1"}
    assert (out / "fleet.png").is_file()
