"""Watch mode's cost over a whole run: blocks of training with `--watch` on and with nothing.

Watch mode keeps the per-step wait and the samplers on for the whole run, so its cost is
paid on every step; the goal is under 1% of throughput. Whole runs across processes differ
by several percent on this shared 2-core VM, which hides 1% (docs/design.md, "Watching a
long run"), so, as `overhead_blocks.py` does for a diagnosis's monitoring phase, one
process trains a case over `dataset.repeat()` and alternates blocks of steps in ABBA order:
in a "watch" block a pipediag session in watch mode records (the training style's hook, the
host and GPU samplers at watch mode's 2 Hz, the watcher thread closing windows, writing
TensorBoard scalars and judging the alert rule), in an "off" block nothing of pipediag is
installed.

Each watch block starts a session of its own; its start-up (the samplers' first readings,
the first window's TensorBoard file) is done in untimed steps before the block, and
reported apart, since a run pays it once. The off arm trains as many untimed steps first.

The figures per style:
- the pieces watch mode adds per step, measured during the same blocks
  (`watch_components.py`): the hook on the training thread, pipediag's threads, and under
  `fit` the batch stamps; their sum with a 95% interval, as a share of the off blocks'
  process CPU per step and of their step time (an upper bound on the throughput cost);
- as the cross-check, the whole-block ratios, watch / off, each a median over the pairs
  with its 95% interval: throughput (the user's own clock, steps/s) and process CPU per
  step. On 2 shared cores these intervals are about +-2% wide, too wide to show 1% alone.

Windows are closed far more often than in a real run (a window per 256 steps: 0.7 s of
the custom loop, 2 s of fit, against an epoch or thousands of steps), so the watcher's
per-window work weighs more here than it would.

    python benchmarks/watch_overhead.py                  # both styles, ~20 minutes on 2 cores
    python benchmarks/watch_overhead.py --style loop --pairs 200
    python benchmarks/watch_overhead.py --quick          # smoke only: figures are noise
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (
    abba_order,
    base_parser,
    fmt,
    format_table,
    load_case,
    ratio_summary,
    spread_summary,
    write_results,
)
from benchmarks.overhead_blocks import (
    CASE,
    FIT_CASE,
    SETTLE_STEPS,
    FitTrainer,
    LoopTrainer,
    arm_summaries,
    summarize,
)
from benchmarks.watch_components import (
    HookClock,
    mean_ci95,
    share_of,
    stamp_stage_cost,
    thread_cpu_ns,
    threads_spent_ns,
    timed_hooks,
    timed_next,
    timer_cost_s,
    widened,
)

NAME = "watch_overhead"
# (style, case, ABBA pairs): a fit block is slower (5 ms steps and a fit call's start-up).
STYLES = (("loop", CASE, 80), ("fit", FIT_CASE, 30))
QUICK_PAIRS = 4
STEPS_PER_BLOCK = 512  # longer than the watcher's 0.5 s poll in both styles
WINDOW_STEPS = 256
ALERT_SHARE = 0.2
SETTLE_CHUNK_STEPS = 32
MAX_SETTLE_STEPS = 50 * WINDOW_STEPS
MAX_WATCH_OVERHEAD = 0.01  # the goal for watch mode, over a whole run


def watch_session(case_name: str, logdir: str) -> Any:
    from pipediag.config import RunConfig, WatchConfig, watching
    from pipediag.session import DiagnosticSession

    watch = WatchConfig(every_steps=WINDOW_STEPS, alert_input_share=ALERT_SHARE, logdir=logdir)
    config = watching(RunConfig(), watch)
    return DiagnosticSession(case_name, [], config, log=None)


class TimedLoopTrainer(LoopTrainer):
    """The custom loop with every pull timed around `next()` (`watch_components.py`)."""

    def __init__(self, case: Any, model: Any, clock: HookClock) -> None:
        super().__init__(case, model)
        self._clock = clock

    def _run(self, steps: int) -> None:
        for _ in range(steps):
            x, y = timed_next(self._batches, self._clock)
            self._step(x, y)


def settle_session(trainer: Any, session: Any) -> int:
    """Train until a new watch session has delivered its first window; the steps it took.

    A session starts once in a real run: its threads' start-up (psutil's first readings,
    NVML's probe) and the first window's TensorBoard writer (TensorFlow's summary file made
    on the watcher's thread) are paid once, not per step. The blocks here start a session
    each, so that once-only work is done before the block is timed, and reported apart.
    """
    watcher = session.watcher
    steps = 0
    while not watcher.section().windows:
        if steps >= MAX_SETTLE_STEPS:
            raise RuntimeError(f"no watch window was delivered in {steps} steps")
        trainer.run_steps(SETTLE_CHUNK_STEPS)
        steps += SETTLE_CHUNK_STEPS
    return steps


def measure_style(style: str, case_name: str, pairs: int) -> dict[str, Any]:
    import keras

    from pipediag.report.model import ExitInfo

    case = load_case(case_name)
    keras.utils.set_random_seed(0)
    model = case.make_model()
    clock = HookClock()
    per_call_timer_s = timer_cost_s()
    steps = STEPS_PER_BLOCK
    blocks: list[tuple[bool, dict[str, float]]] = []
    # Per pair: the CPU seconds per step each piece of watch mode added (watch_components).
    hook_s: list[float] = []
    threads_s: list[float] = []
    pending: dict[bool, dict[str, float]] = {}
    settle_steps: list[int] = []  # per watch block, the steps its session's start-up took
    start_up_ms: list[float] = []  # per watch block, pipediag's threads' CPU then
    windows = 0
    with timed_hooks(clock), tempfile.TemporaryDirectory(prefix="pipediag-watch-") as logdir:
        trainer: Any = (
            FitTrainer(case, model) if style == "fit" else TimedLoopTrainer(case, model, clock)
        )
        trainer.warm_up()
        for pair in range(pairs):
            for watched in abba_order(pair):
                session = watch_session(case_name, logdir) if watched else None
                if session is not None:
                    start_cpu = thread_cpu_ns() or {}
                    session.start()
                    settle_steps.append(settle_session(trainer, session))
                    start_up_ms.append(threads_spent_ns(start_cpu, thread_cpu_ns() or {}) / 1e6)
                else:
                    # As many untimed steps as the last watch block's start-up took, so
                    # both arms come to their block from the same stretch of training.
                    trainer.run_steps(settle_steps[-1] if settle_steps else SETTLE_CHUNK_STEPS)
                try:
                    clock.take()
                    before = thread_cpu_ns() or {}
                    costs = trainer.block(SETTLE_STEPS, steps)
                    after = thread_cpu_ns() or {}
                    timed = clock.take()
                finally:
                    if session is not None:
                        report = session.stop(ExitInfo(), "script-finished")
                        if report.watch is None or not report.watch.windows:
                            raise RuntimeError("a watch block closed no window")
                        windows += len(report.watch.windows)
                blocks.append((watched, costs))
                timed["threads_s"] = threads_spent_ns(before, after) / 1e9
                pending[watched] = timed
            off, on = pending.pop(False), pending.pop(True)
            # The timers cover the settle steps too: every figure is per timed step.
            timed_steps = SETTLE_STEPS + steps
            if style == "fit":
                callback = on["callback_s"] - on["callback_calls"] * per_call_timer_s
                hook_s.append(callback / timed_steps)
            else:
                around = (on["outer_s"] - on["inner_s"]) - (off["outer_s"] - off["inner_s"])
                hook_s.append(around / timed_steps)
            threads_s.append(on["threads_s"] / timed_steps)
        stamps = stamp_stage_cost(trainer.sample_batch()) if style == "fit" else None
        trainer.close()
    summary = summarize(blocks)
    off_costs = [costs for watched, costs in blocks if not watched]
    on_costs = [costs for watched, costs in blocks if watched]
    cpu_ratios = [
        b["process_cpu_s"] / a["process_cpu_s"] for a, b in zip(off_costs, on_costs, strict=True)
    ]
    summary["process_cpu_ratio"] = ratio_summary(cpu_ratios)
    summary["windows_per_block"] = windows / max(1, len(on_costs))
    totals_us = [(h + t) * 1e6 for h, t in zip(hook_s, threads_s, strict=True)]
    # The stamps were measured apart: their mean is added, and their interval's half-width
    # combined with the pairs' in quadrature.
    total = widened(mean_ci95(totals_us), None if stamps is None else stamps.delta_cpu_us)
    summary["session_start_up"] = {
        "settle_steps": spread_summary(settle_steps),
        "pipediag_threads_cpu_ms": spread_summary(start_up_ms),
    }
    summary["components"] = {
        "timer_cost_us": per_call_timer_s * 1e6,
        "hook_us": mean_ci95([h * 1e6 for h in hook_s]),
        "pipediag_threads_us": mean_ci95([t * 1e6 for t in threads_s]),
        "stamp_stages_us": None if stamps is None else stamps.delta_cpu_us,
        "stamp_plain_batch_us": None if stamps is None else stamps.plain_cpu_us,
        "total_us": total,
        "of_process_cpu": share_of(total, summary["off_process_cpu_us"]),
        "of_step_time": share_of(total, summary["off_step_ms"] * 1e3),
    }
    return {
        "style": style,
        "case": f"benchmarks/cases/{case_name}.py",
        **summary,
        "arms": arm_summaries(blocks),
    }


def goal(share: dict[str, Any]) -> str:
    """Whether the summed pieces stay under 1% at 95% confidence, from a share's interval."""
    ci = share.get("ci95")
    if ci is None:
        return "not resolved (too few pairs)"
    if ci[1] < MAX_WATCH_OVERHEAD:
        return "met"
    if share["mean"] < MAX_WATCH_OVERHEAD:
        return "not resolved (the interval reaches past 1%)"
    return "NOT met"


def cross_check(ratio: dict[str, Any], share: dict[str, Any], *, higher_is_worse: bool) -> str:
    """Whether the whole-block ratio's interval holds the cost the pieces add up to."""
    ci = ratio.get("ci95")
    if ci is None:
        return "-"
    expected = 1 + share["mean"] if higher_is_worse else 1 / (1 + share["mean"])
    return "agrees" if ci[0] <= expected <= ci[1] else "DISAGREES"


def share_text(share: dict[str, Any]) -> str:
    ci = share.get("ci95")
    return f"{share['mean']:.2%}" + (f" [{ci[0]:.2%}-{ci[1]:.2%}]" if ci else "")


def us_text(figure: dict[str, Any] | None) -> str:
    if figure is None:
        return "-"
    ci = figure.get("ci95")
    return f"{figure['mean']:.1f}" + (f" [{ci[0]:.1f}-{ci[1]:.1f}]" if ci else "") + " us"


def interval(ratio: dict[str, Any]) -> str:
    ci = ratio.get("ci95")
    return f"{ratio['median']:.3f}" + (f" [{ci[0]:.3f}-{ci[1]:.3f}]" if ci else "")


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(NAME, __doc__)
    parser.add_argument("--style", choices=["loop", "fit", "both"], default="both")
    parser.add_argument("--pairs", type=int, help="ABBA pairs of blocks per style")
    args = parser.parse_args(argv)
    results = []
    for style, case_name, default_pairs in STYLES:
        if args.style not in (style, "both"):
            continue
        pairs = args.pairs or (QUICK_PAIRS if args.quick else default_pairs)
        print(f"{style}: {pairs} ABBA pairs of {STEPS_PER_BLOCK}-step blocks", flush=True)
        results.append(measure_style(style, case_name, pairs))
    parts = [
        [
            r["style"],
            r["pairs"],
            fmt(r["off_step_ms"], ".2f", " ms"),
            fmt(r["off_process_cpu_us"], ".0f", " us"),
            us_text(r["components"]["hook_us"]),
            us_text(r["components"]["pipediag_threads_us"]),
            us_text(r["components"]["stamp_stages_us"]),
            us_text(r["components"]["total_us"]),
        ]
        for r in results
    ]
    print("\nWhat watch mode adds per step, piece by piece (CPU time, mean [95% CI]):")
    print(
        format_table(
            [
                "style",
                "pairs",
                "step (off)",
                "process CPU/step (off)",
                "hook, training thread",
                "pipediag threads",
                "batch stamps",
                "total",
            ],
            parts,
        )
    )
    shares = [
        [
            r["style"],
            share_text(r["components"]["of_process_cpu"]),
            share_text(r["components"]["of_step_time"]),
            interval(r["process_cpu_ratio"]),
            interval(r["throughput_ratio"]),
            interval(r["noise_floor_ratio"]),
        ]
        for r in results
    ]
    print("\nAs a share of the off blocks, and the whole-block ratios (the cross-check):")
    print(
        format_table(
            [
                "style",
                "total / process CPU",
                "total / step time (bound)",
                "whole blocks: CPU watch/off",
                "whole blocks: throughput watch/off",
                "same arm",
            ],
            shares,
        )
    )
    for r in results:
        start_up = r["session_start_up"]
        print(
            f"{r['style']}: once per run, a session's start-up and first TensorBoard window "
            f"took {start_up['pipediag_threads_cpu_ms']['median']:.1f} ms of pipediag's "
            f"threads' CPU (median; settled in {start_up['settle_steps']['median']:.0f} steps)"
        )
    goals = {}
    for r in results:
        parts_ = r["components"]
        goals[r["style"]] = {
            "cpu_per_step": goal(parts_["of_process_cpu"]),
            "throughput": goal(parts_["of_step_time"]),
            "whole_blocks_cpu": cross_check(
                r["process_cpu_ratio"], parts_["of_process_cpu"], higher_is_worse=True
            ),
            "whole_blocks_throughput": cross_check(
                r["throughput_ratio"], parts_["of_step_time"], higher_is_worse=False
            ),
        }
        g = goals[r["style"]]
        print(
            f"goal, {r['style']}: watch mode costs < {MAX_WATCH_OVERHEAD:.0%}: CPU per step "
            f"{g['cpu_per_step']}, throughput {g['throughput']}; whole blocks "
            f"{g['whole_blocks_cpu']} (CPU), {g['whole_blocks_throughput']} (throughput)"
        )
    write_results(
        args.json,
        NAME,
        settings={
            "steps_per_block": STEPS_PER_BLOCK,
            "window_steps": WINDOW_STEPS,
            "alert_input_share": ALERT_SHARE,
            "styles": [r["style"] for r in results],
        },
        summary={
            "goal_max_watch_overhead": MAX_WATCH_OVERHEAD,
            "goals": goals,
            "cost_share_of_process_cpu": {
                r["style"]: r["components"]["of_process_cpu"] for r in results
            },
            "cost_share_of_step_time": {
                r["style"]: r["components"]["of_step_time"] for r in results
            },
            "throughput_ratio_median": {
                r["style"]: r["throughput_ratio"]["median"] for r in results
            },
            "process_cpu_ratio_median": {
                r["style"]: r["process_cpu_ratio"]["median"] for r in results
            },
        },
        cases=results,
        quick=args.quick,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
