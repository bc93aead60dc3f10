"""Monitoring cost in one process: blocks of the same training loop with pipediag on and off.

Across processes, two runs of the same script on this 2-core VM differ by up to 10% (the
same-arm ratios in `overhead.py` show it), which hides a cost of 2%. Here one process trains
one case with its own custom loop over `dataset.repeat()` and alternates short blocks of
steps: in an "on" block a pipediag session records as in `pipediag run`'s monitoring phase
(the tf.data iterator hook timing every pull into the step timeline, the host and GPU
samplers on their threads); in an "off" block nothing of pipediag is installed. Blocks run
in ABBA order, many of them, so drift hits both arms alike and the median ratio of the
pairs gets a confidence interval narrow enough to test the 2% goal.

Per block it records wall time, the main thread's CPU time and the whole process's CPU time,
each per step. The wall-time ratio (off / on, i.e. throughput on / off) is the result; the
extra CPU per step says where a cost comes from: the main thread runs the hook, the
process total adds the sampler threads. Back-to-back blocks of the same arm give the noise
floor.

    python benchmarks/overhead_blocks.py --json out.json    # run by overhead.py
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import abba_order, load_case, median, ratio_summary, same_arm_ratios

CASE = "py_function_decode_loop"
CASE_FIXES = frozenset({"tuned"})  # the fast variant: short steps make a per-step cost show
PAIRS = 500
STEPS_PER_BLOCK = 128
WARMUP_STEPS = 200
# Steps after a session starts and before its block is timed: a session starts once in a
# real run, so its start-up (sampler threads probing psutil and NVML) is not a per-step cost.
SETTLE_STEPS = 8


def block_costs(run_block: Any) -> dict[str, float]:
    """Run one block; per-step wall, main-thread CPU and process CPU, in seconds."""
    wall0, thread0, process0 = time.perf_counter(), time.thread_time(), time.process_time()
    steps = run_block()
    if steps <= 0:
        raise RuntimeError("a block ran no steps")
    return {
        "wall_s": (time.perf_counter() - wall0) / steps,
        "main_cpu_s": (time.thread_time() - thread0) / steps,
        "process_cpu_s": (time.process_time() - process0) / steps,
    }


def summarize(blocks: list[tuple[bool, dict[str, float]]]) -> dict[str, Any]:
    """Ratios, their confidence interval, noise floor and CPU deltas; `blocks` in time order,
    each with whether it was monitored."""
    off = [costs for monitored, costs in blocks if not monitored]
    on = [costs for monitored, costs in blocks if monitored]
    # Blocks come in ABBA pairs: the k-th "off" and the k-th "on" block are one pair.
    ratios = [a["wall_s"] / b["wall_s"] for a, b in zip(off, on, strict=True)]

    def delta_us(key: str) -> float:
        return median([b[key] - a[key] for a, b in zip(off, on, strict=True)]) * 1e6

    return {
        "pairs": len(ratios),
        "off_step_ms": median([a["wall_s"] for a in off]) * 1e3,
        "off_main_cpu_us": median([a["main_cpu_s"] for a in off]) * 1e6,
        "off_process_cpu_us": median([a["process_cpu_s"] for a in off]) * 1e6,
        "delta_main_cpu_us": delta_us("main_cpu_s"),
        "delta_process_cpu_us": delta_us("process_cpu_s"),
        "throughput_ratio": ratio_summary(ratios),
        "noise_floor_ratio": ratio_summary(
            same_arm_ratios([(monitored, costs["wall_s"]) for monitored, costs in blocks])
        ),
        "ratios": ratios,
        "off": off,
        "on": on,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=PAIRS)
    parser.add_argument("--case", default=CASE, help="a case in benchmarks/cases (tuned variant)")
    parser.add_argument(
        "--monitor",
        choices=["all", "hooks", "samplers"],
        default="all",
        help="what the 'on' blocks run: everything, only the iterator hook, only the samplers",
    )
    parser.add_argument("--steps-per-block", type=int, default=STEPS_PER_BLOCK)
    parser.add_argument("--json", type=Path, required=True, help="write the results here")
    args = parser.parse_args(argv)

    import keras

    from pipediag.config import RunConfig
    from pipediag.report.model import ExitInfo
    from pipediag.session import DiagnosticSession

    case = load_case(args.case)
    from _case import make_loop_step  # on sys.path once a case is loaded

    keras.utils.set_random_seed(0)
    model = case.make_model()
    dataset = case.make_dataset(CASE_FIXES)
    train_step = make_loop_step(model)

    # One iterator for the whole run, as a loop over `dataset.repeat()`: an epoch boundary
    # (a new iterator filling its buffers) inside a block is noise that only blurs the pairs.
    live = {"batches": iter(dataset.repeat())}

    def run_steps(steps: int) -> int:
        for _ in range(steps):
            x, y = next(live["batches"])
            train_step(x, y)
        return steps

    run_steps(WARMUP_STEPS)  # tracing, autotune settling
    # As `pipediag run --steps all` in its monitoring phase: no pipeline benchmark here.
    samplers = args.monitor in ("all", "samplers")
    config = RunConfig(bench=False, measured_steps=None, sample_host=samplers, sample_gpu=samplers)
    hooks = args.monitor in ("all", "hooks")
    blocks: list[tuple[bool, dict[str, float]]] = []
    for pair in range(args.pairs):
        for monitored in abba_order(pair):
            session = None
            if monitored:
                session = DiagnosticSession(args.case, [], config, log=None, install_hooks=hooks)
                session.start()
            try:
                run_steps(SETTLE_STEPS)
                blocks.append((monitored, block_costs(lambda: run_steps(args.steps_per_block))))
            finally:
                if session is not None:
                    session.stop(ExitInfo(), "script-finished")
            if session is not None and hooks and len(session.timeline) == 0:
                raise RuntimeError("the session recorded no steps: the hook is not in force")
    # An iterator left alive until interpreter exit (background threads, a filled cache)
    # once hung TensorFlow's shutdown here, spinning two cores: release it first.
    live.clear()
    results = summarize(blocks)
    results.update(
        case=f"benchmarks/cases/{args.case}.py",
        steps_per_block=args.steps_per_block,
        monitor=args.monitor,
    )
    args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
