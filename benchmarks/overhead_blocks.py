"""Monitoring cost in one process: blocks of the same training loop with pipediag on and off.

Across processes, two runs of the same script on this 2-core VM differ by up to 10% (the
same-arm ratios in `overhead.py` show it), which hides a cost of 2%. Here one process trains
one case over `dataset.repeat()` and alternates short blocks of steps: in an "on" block a
pipediag session records as in `pipediag run`'s monitoring phase (the host and GPU samplers
on their threads, and the hook of the training style), in an "off" block nothing of pipediag
is installed. Two training styles:

- `--style loop` (default): the case's own custom loop pulls from one iterator; pipediag's
  tf.data iterator hook times every pull into the step timeline.
- `--style fit`: each block is one `model.fit(..., steps_per_epoch=...)` call; pipediag's
  fit hook time-stamps every batch as it leaves the pipeline (a `numpy_function` per batch)
  and a callback closes every step. A callback times the block from the end of its settle
  steps to its last step, so `fit`'s own start-up (a new iterator each call) is left out
  of both arms alike. Blocks run
in ABBA order, many of them, so drift hits both arms alike and the median ratio of the
pairs gets a confidence interval narrow enough to test the 2% goal.

Per block it records wall time, the main thread's CPU time and the whole process's CPU time,
each per step. The wall-time ratio (off / on, i.e. throughput on / off) is the result; the
extra CPU per step says where a cost comes from: the main thread runs the hook, the
process total adds the sampler threads. Back-to-back blocks of the same arm give the noise
floor.

    python benchmarks/overhead_blocks.py                    # results/overhead_blocks.json
    python benchmarks/overhead_blocks.py --style fit --json out.json  # as overhead.py runs it
    python benchmarks/overhead_blocks.py --raw blocks.json.gz         # also every block's times
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (
    abba_order,
    add_raw_option,
    base_parser,
    load_case,
    median,
    ratio_summary,
    same_arm_ratios,
    spread_summary,
    write_results,
)
from pipediag.config import DEFAULT_HOST_INTERVAL_S

NAME = "overhead_blocks"

CASE = "py_function_decode_loop"
FIT_CASE = "seq_random_map_fit"
CASE_FIXES = frozenset({"tuned"})  # the fast variant: short steps make a per-step cost show
PAIRS = 500
QUICK_PAIRS = 6
STEPS_PER_BLOCK = 128
WARMUP_STEPS = 200
# Steps after a session starts and before its block is timed: a session starts once in a
# real run, so its start-up (sampler threads probing psutil and NVML) is not a per-step cost.
SETTLE_STEPS = 8


Marks = tuple[float, float, float]  # perf_counter, thread_time, process_time


def marks() -> Marks:
    return time.perf_counter(), time.thread_time(), time.process_time()


def costs_between(first: Marks, last: Marks, steps: int) -> dict[str, float]:
    """Per-step wall, main-thread CPU and process CPU, in seconds, between two marks."""
    if steps <= 0:
        raise RuntimeError("a block ran no steps")
    wall, thread, process = (b - a for a, b in zip(first, last, strict=True))
    return {"wall_s": wall / steps, "main_cpu_s": thread / steps, "process_cpu_s": process / steps}


class LoopTrainer:
    """The case's custom train step over one iterator of `dataset.repeat()`.

    One iterator for the whole run: an epoch boundary (a new iterator filling its buffers)
    inside a block is noise that only blurs the pairs.
    """

    def __init__(self, case: Any, model: Any, fixes: frozenset[str], eager: bool) -> None:
        from _case import make_loop_step  # on sys.path once a case is loaded

        self._step = make_loop_step(model, eager=eager)
        self._batches: Any = iter(case.make_dataset(fixes).repeat())

    def _run(self, steps: int) -> None:
        for _ in range(steps):
            x, y = next(self._batches)
            self._step(x, y)

    def warm_up(self) -> None:
        self._run(WARMUP_STEPS)  # tracing, autotune settling

    def run_steps(self, steps: int) -> None:
        """Train `steps` steps, untimed."""
        self._run(steps)

    def block(self, settle: int, steps: int) -> dict[str, float]:
        self._run(settle)
        first = marks()
        self._run(steps)
        return costs_between(first, marks(), steps)

    def close(self) -> None:
        # An iterator left alive until interpreter exit (background threads, a filled
        # cache) once hung TensorFlow's shutdown here, spinning two cores: release it.
        self._batches = None


def _repeated(dataset: Any) -> Any:
    """`dataset` repeated, its final prefetch (if it has one) kept last, as in the usual
    `ds.repeat().prefetch()`; pipediag stamps batches before a final prefetch."""
    from pipediag.hooks.batch_stamps import split_final_prefetch

    inner, restore_prefetch = split_final_prefetch(dataset)
    return restore_prefetch(inner.repeat())


class FitTrainer:
    """`model.fit` over `dataset.repeat()`, one call per block, timed by a callback."""

    def __init__(self, case: Any, model: Any, fixes: frozenset[str]) -> None:
        import keras

        self._model = model
        self._dataset: Any = _repeated(case.make_dataset(fixes))
        window: dict[int, Marks | None] = {}
        self._window = window

        class _Window(keras.callbacks.Callback):  # type: ignore[misc]
            """Marks at the end of chosen batches, on the thread that runs the steps."""

            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                if batch in window:
                    window[batch] = marks()

        self._callback = _Window()

    def _fit(self, steps: int) -> None:
        self._model.fit(
            self._dataset, epochs=1, steps_per_epoch=steps, verbose=0, callbacks=[self._callback]
        )

    def warm_up(self) -> None:
        self._fit(WARMUP_STEPS)  # tracing the train function, autotune settling

    def run_steps(self, steps: int) -> None:
        """Train `steps` steps in one `fit` call, untimed."""
        self._fit(steps)

    def block(self, settle: int, steps: int) -> dict[str, float]:
        first_batch, last_batch = settle - 1, settle + steps - 1
        self._window.clear()
        self._window.update({first_batch: None, last_batch: None})
        self._fit(settle + steps)
        first, last = self._window[first_batch], self._window[last_batch]
        if first is None or last is None:
            raise RuntimeError("fit ended before the block's last step")
        return costs_between(first, last, steps)

    def sample_batch(self) -> Any:
        """One batch of the training data, as `fit` reads it."""
        return next(iter(self._dataset))

    def close(self) -> None:
        self._dataset = None


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
    }


def arm_summaries(blocks: list[tuple[bool, dict[str, float]]]) -> list[dict[str, Any]]:
    """Per arm ("off", "on"): the spread of its blocks' per-step wall and CPU times."""
    arms = []
    for monitored in (False, True):
        costs = [c for m, c in blocks if m == monitored]
        arms.append(
            {
                "arm": "on" if monitored else "off",
                "blocks": len(costs),
                "wall_ms": spread_summary([c["wall_s"] * 1e3 for c in costs]),
                "main_cpu_us": spread_summary([c["main_cpu_s"] * 1e6 for c in costs]),
                "process_cpu_us": spread_summary([c["process_cpu_s"] * 1e6 for c in costs]),
            }
        )
    return arms


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(NAME, __doc__)
    parser.add_argument("--pairs", type=int, help=f"ABBA pairs of blocks (default {PAIRS})")
    parser.add_argument("--style", choices=["loop", "fit"], default="loop")
    parser.add_argument(
        "--case",
        help=f"a case in benchmarks/cases, tuned variant (default {CASE}; {FIT_CASE} for fit)",
    )
    parser.add_argument(
        "--monitor",
        choices=["all", "hooks", "samplers"],
        default="all",
        help="what the 'on' blocks run: everything, only the pipediag hooks, only the samplers",
    )
    parser.add_argument(
        "--plain",
        action="store_true",
        help="the case as written, not its tuned variant (a pipeline that fills the cores)",
    )
    parser.add_argument(
        "--host-interval",
        type=float,
        default=DEFAULT_HOST_INTERVAL_S,
        help=f"seconds between host readings (default {DEFAULT_HOST_INTERVAL_S:g})",
    )
    parser.add_argument(
        "--eager",
        action="store_true",
        help="loop style: the train step eager, not a tf.function (the interpreter lock held)",
    )
    parser.add_argument("--steps-per-block", type=int, default=STEPS_PER_BLOCK)
    add_raw_option(parser, "every block's wall and CPU times")
    args = parser.parse_args(argv)
    pairs = args.pairs or (QUICK_PAIRS if args.quick else PAIRS)

    import keras

    from pipediag.config import RunConfig
    from pipediag.report.model import ExitInfo
    from pipediag.session import DiagnosticSession

    case_name = args.case or (FIT_CASE if args.style == "fit" else CASE)
    case = load_case(case_name)
    keras.utils.set_random_seed(0)
    model = case.make_model()
    fixes = frozenset() if args.plain else CASE_FIXES
    if args.style == "fit":
        trainer: FitTrainer | LoopTrainer = FitTrainer(case, model, fixes)
    else:
        trainer = LoopTrainer(case, model, fixes, args.eager)
    trainer.warm_up()
    # As `pipediag run --steps all` in its monitoring phase: no pipeline benchmark here.
    samplers = args.monitor in ("all", "samplers")
    config = RunConfig(
        bench=False, measured_steps=None, sample_host=samplers, sample_gpu=samplers,
        host_interval_s=args.host_interval,
    )  # fmt: skip
    hooks = args.monitor in ("all", "hooks")
    blocks: list[tuple[bool, dict[str, float]]] = []
    for pair in range(pairs):
        for monitored in abba_order(pair):
            session = None
            if monitored:
                session = DiagnosticSession(case_name, [], config, log=None, install_hooks=hooks)
                session.start()
            try:
                blocks.append((monitored, trainer.block(SETTLE_STEPS, args.steps_per_block)))
            finally:
                if session is not None:
                    session.stop(ExitInfo(), "script-finished")
            if session is not None and hooks and len(session.timeline) == 0:
                raise RuntimeError("the session recorded no steps: the hook is not in force")
    trainer.close()
    settings = {
        "case": f"benchmarks/cases/{case_name}.py",
        "variant": "plain" if args.plain else "tuned",
        "host_interval_s": args.host_interval,
        "style": args.style,
        "eager": args.eager,
        "steps_per_block": args.steps_per_block,
        "monitor": args.monitor,
        "pairs": pairs,
    }
    write_results(
        args.json,
        NAME,
        settings=settings,
        summary=summarize(blocks),
        cases=arm_summaries(blocks),
        quick=args.quick,
        raw={"blocks": [{"monitored": monitored, **costs} for monitored, costs in blocks]},
        raw_to=args.raw,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
