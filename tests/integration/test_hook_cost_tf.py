"""pipediag's hooks add at most a stated CPU cost to each step of a tight loop.

A tight eager loop (`next(it)`, then a tiny `tf.function` step: about half a millisecond of
CPU a step here) runs in this process alone, then as the script `pipediag` diagnoses, in
turn, three times each. Process CPU time per step, not wall time: the hooks' work (the pull
hook, the step timeline, the call wrapper, the host sampler's thread) is CPU, and CPU time
is not bent by a shared host's stalls. The stated bound, `MAX_HOOK_CPU_S`, is several times
what the hooks cost here (about 30 us a step), so only a real regression crosses it.
"""

from __future__ import annotations

import json
import statistics
import sys
import textwrap
from pathlib import Path

import pytest

import pipediag

pytestmark = pytest.mark.tensorflow

# The stated per-step cost of pipediag's hooks on a tight loop, in CPU seconds
# (docs/design.md, "What pipediag costs a step").
MAX_HOOK_CPU_S = 150e-6
ROUNDS = 3

TIGHT_LOOP = """
import time
import tensorflow as tf
import keras

weights = tf.Variable(tf.ones([4, 1]))
optimizer = keras.optimizers.SGD(1e-4)
dataset = tf.data.Dataset.from_tensors(tf.ones([8, 4])).repeat()

def cpu_per_step(steps=800, warm=30):
    # Traced anew each time, so that under pipediag the trace runs under its hooks, as a
    # script's does.
    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.matmul(x, weights) ** 2)
        (grad,) = tape.gradient(loss, [weights])
        optimizer.apply_gradients([(grad, weights)])

    iterator = iter(dataset)
    for _ in range(warm):
        step(next(iterator))
    began = time.process_time()
    for _ in range(steps):
        step(next(iterator))
    return (time.process_time() - began) / steps
"""

SCRIPT = """
import json, sys
from tight_loop import cpu_per_step
json.dump(cpu_per_step(), open(sys.argv[1], "w"))
"""


def test_the_hooks_add_at_most_the_stated_cpu_to_a_tight_loop_s_step(tmp_path: Path) -> None:
    (tmp_path / "tight_loop.py").write_text(textwrap.dedent(TIGHT_LOOP))
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    sys.path.insert(0, str(tmp_path))
    try:
        import tight_loop  # type: ignore[import-not-found]

        config = pipediag.RunConfig(
            measured_steps=1_000_000,  # never reached: every step runs under the hooks
            measured_seconds=None,
            warmup_steps=5,
            bench=False,
            sample_gpu=False,
            stages=False,
            verify=False,
        )
        plain, hooked = [], []
        for number in range(ROUNDS):
            plain.append(tight_loop.cpu_per_step())
            out = tmp_path / f"cpu-{number}.json"
            report = pipediag.diagnose(
                script, [str(out)], config=config, out=tmp_path / f"out-{number}", log=None
            )
            assert report.train.style == "custom-loop", report.verdict
            assert report.train.measured_steps >= 800
            hooked.append(json.loads(out.read_text()))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("tight_loop", None)
    added = statistics.median(hooked) - statistics.median(plain)
    assert added < MAX_HOOK_CPU_S, (plain, hooked)
