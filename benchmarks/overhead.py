"""Overhead: what monitoring costs a training run, measured two ways.

1. **Monitoring, in one process** (`overhead_blocks.py`, run as a child for each training
   style): a custom loop with 1.5 ms steps, 500 ABBA pairs of blocks with a pipediag session
   on and off; and Keras `fit` with 5 ms steps, 150 pairs. The goal is judged here, for each
   style, on the 95% confidence interval of the median throughput ratio: met when even its
   low end costs less than 2%.
2. **Whole runs, across processes**: the same case script with and without `pipediag run
   --steps all`, each in a fresh process; the script times its own steps (`--rate-file`:
   steps/s from the end of step 10 to the last), so both numbers come from the same code on
   the same clock. pipediag's pipeline-alone benchmark runs before the first step and its
   analysis after the last, both outside that window; any effect they leave behind counts.
   - custom loop: every pull is timed through the iterator hook; the host (and GPU)
     samplers run;
   - Keras fit on a tf.data.Dataset: each batch is also time-stamped as it leaves the
     pipeline (two pass-through stages), which is how pipediag sees input waits inside fit.
   Runs go in ABBA pairs; each pair gives one ratio (with / without). Runs of one arm that
   end up side by side (B A | A B) give the same-arm ratios: the noise floor of a single
   pair on this machine, about +-10% on 2 shared cores, which is why (1) exists.

    python benchmarks/overhead.py              # both (about 15 minutes on 2 cores)
    python benchmarks/overhead.py --only blocks
    python benchmarks/overhead.py --quick      # smoke only: figures are noise
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (
    BENCH_DIR,
    CASES_DIR,
    abba_order,
    add_raw_option,
    base_parser,
    fmt,
    format_table,
    ratio_summary,
    run_child,
    same_arm_ratios,
    split_raw,
    spread_summary,
    tail,
    write_results,
)

NAME = "overhead"
# (what runs, case script, its arguments): fast steps (a few ms), so a per-step cost shows.
SCRIPTS = (
    ("custom loop: iterator timing, samplers", "py_function_decode_loop.py", ["--tuned"]),
    ("Keras fit: batch stamps, samplers", "seq_random_map_fit.py", ["--tuned"]),
)
PAIRS = 4
QUICK_PAIRS = 1
STEPS = 1500
QUICK_STEPS = 60
EPOCHS = 100  # more than enough; --max-steps ends the run
# In-process blocks per training style: (style, default pairs). A fit block is slower (5 ms
# steps and a `fit` call's start-up), so it gets fewer pairs in about the same time.
BLOCK_STYLES = (("loop", 500), ("fit", 150))
QUICK_BLOCK_PAIRS = 6
# The goal for the monitoring phase.
MAX_MONITORING_OVERHEAD = 0.02
RUN_TIMEOUT_S = 300
BLOCKS_TIMEOUT_S = 900
# Every whole run's steps/s and every pair's ratio: kept only with --raw; the results keep
# their spreads. (Per-block times stay in the child: `overhead_blocks.py --raw`.)
RAW_KEYS = ("without_steps_per_s", "with_steps_per_s", "ratios")


def run_blocks(style: str, pairs: int) -> dict[str, Any]:
    """The in-process measurement (`overhead_blocks.py`) in a fresh process: its settings,
    its summary and its per-arm spreads (`arms`), from the results file it writes."""
    with tempfile.TemporaryDirectory(prefix="pipediag-overhead-") as tmp:
        out = Path(tmp) / "blocks.json"
        cmd = [sys.executable, str(BENCH_DIR / "overhead_blocks.py"), "--style", style]
        cmd += ["--pairs", str(pairs)]
        proc, _ = run_child([*cmd, "--json", str(out)], timeout_s=BLOCKS_TIMEOUT_S)
        if proc.returncode != 0 or not out.is_file():
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{tail(proc.stderr)}")
        document = json.loads(out.read_text())
    return {**document["settings"], **document["summary"], "arms": document["cases"]}


def goal_verdict(ratio: dict[str, Any]) -> tuple[str, float | None]:
    """Whether the 2% goal holds, from a ratio summary with its 95% interval; and the cost
    at the interval's low end (the most it can cost, at 95% confidence)."""
    if ratio.get("ci95") is None:
        return "not resolved (too few pairs for an interval)", None
    worst = 1 - ratio["ci95"][0]
    if worst < MAX_MONITORING_OVERHEAD:
        return "met", worst
    if 1 - ratio["median"] < MAX_MONITORING_OVERHEAD:
        return "not resolved (the interval reaches past 2%)", worst
    return "NOT met", worst


def ratio_text(ratio: dict[str, Any]) -> str:
    ci = ratio.get("ci95")
    interval = f" [{ci[0]:.3f}-{ci[1]:.3f}]" if ci else ""
    return f"{ratio['median']:.3f}{interval}"


def one_run(script: str, args: list[str], *, with_pipediag: bool, steps: int) -> float:
    """Run the case once; returns its own steps/s."""
    with tempfile.TemporaryDirectory(prefix="pipediag-overhead-") as tmp:
        rate_file = Path(tmp) / "rate.json"
        script_cmd = [
            str(CASES_DIR / script),
            *args,
            "--epochs",
            str(EPOCHS),
            "--max-steps",
            str(steps),
            "--rate-file",
            str(rate_file),
        ]
        if with_pipediag:
            prefix = [sys.executable, "-m", "pipediag", "run", "--steps", "all", "--quiet"]
            cmd = [*prefix, "--out", str(Path(tmp) / "out"), *script_cmd]
        else:
            cmd = [sys.executable, *script_cmd]
        proc, _ = run_child(cmd, timeout_s=RUN_TIMEOUT_S)
        if proc.returncode != 0 or not rate_file.is_file():
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{tail(proc.stderr)}")
        rate = json.loads(rate_file.read_text())["steps_per_s"]
        if rate is None:
            raise RuntimeError(f"{script}: too few steps for a rate")
        return float(rate)


def measure(phase: str, script: str, args: list[str], *, pairs: int, steps: int) -> dict[str, Any]:
    """Whole runs in ABBA pairs; rates in time order give the same-arm noise floor too."""
    runs: list[tuple[bool, float]] = []
    ratios: list[float] = []
    for pair in range(pairs):
        rates = {}
        for arm in abba_order(pair):
            rates[arm] = one_run(script, args, with_pipediag=arm, steps=steps)
            runs.append((arm, rates[arm]))
        ratios.append(rates[True] / rates[False])
        print(
            f"  {phase}: pair {pair + 1}/{pairs}: without {rates[False]:.1f} steps/s, "
            f"with {rates[True]:.1f} steps/s, ratio {ratios[-1]:.3f}",
            flush=True,
        )
    without = [rate for arm, rate in runs if not arm]
    with_ = [rate for arm, rate in runs if arm]
    return {
        "phase": phase,
        "script": f"benchmarks/cases/{script}",
        "args": args,
        "steps": steps,
        "without_steps_per_s": without,
        "with_steps_per_s": with_,
        "ratios": ratios,
        "ratio": ratio_summary(ratios),
        "same_arm_ratio": ratio_summary(same_arm_ratios(runs)),
        "without": spread_summary(without),
        "with": spread_summary(with_),
    }


def overhead_cases(
    blocks: list[dict[str, Any]], whole_runs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One case per measurement: the in-process blocks of each style, then the whole runs."""
    return [{"kind": "blocks", **b} for b in blocks] + [
        {"kind": "whole-runs", **r} for r in whole_runs
    ]


def print_blocks(blocks: list[dict[str, Any]]) -> None:
    rows = [
        [
            f"{b['style']}: {b['case'].rsplit('/', 1)[-1]}",
            fmt(b["off_step_ms"], ".2f", " ms"),
            fmt(b["delta_main_cpu_us"], ".1f", " us"),
            fmt(b["delta_process_cpu_us"], ".1f", " us"),
            ratio_text(b["throughput_ratio"]),
            ratio_text(b["noise_floor_ratio"]),
            b["pairs"],
        ]
        for b in blocks
    ]
    headers = [
        "in one process",
        "step (off)",
        "extra CPU/step: main thread",
        "all threads",
        "throughput on/off [95% CI]",
        "same arm [95% CI]",
        "pairs",
    ]
    print(format_table(headers, rows))


def print_runs(results: list[dict[str, Any]]) -> None:
    rows = []
    for r in results:
        ratio, floor = r["ratio"], r["same_arm_ratio"]
        rows.append(
            [
                r["phase"],
                r["script"].rsplit("/", 1)[-1] + " " + " ".join(r["args"]),
                fmt(r["without"]["median"]),
                fmt(r["with"]["median"]),
                f"{ratio['median']:.3f} ({ratio['q1']:.3f}-{ratio['q3']:.3f})",
                "-"
                if floor["median"] is None
                else f"{floor['median']:.3f} ({floor['q1']:.3f}-{floor['q3']:.3f})",
                ratio["n"],
            ]
        )
    headers = [
        "whole runs",
        "script",
        "without st/s",
        "with st/s",
        "ratio, median (IQR)",
        "same arm (IQR)",
        "pairs",
    ]
    print(format_table(headers, rows))


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(NAME, __doc__)
    parser.add_argument("--pairs", type=int, help=f"whole-run pairs per script (default {PAIRS})")
    parser.add_argument("--steps", type=int, help=f"steps per whole run (default {STEPS})")
    parser.add_argument(
        "--block-pairs",
        type=int,
        help="in-process block pairs per style (default "
        + ", ".join(f"{style} {n}" for style, n in BLOCK_STYLES)
        + ")",
    )
    parser.add_argument(
        "--only",
        choices=["blocks", "loop", "fit"],
        help="only the in-process blocks, or only the whole runs of the custom loop or of fit",
    )
    add_raw_option(parser, "every whole run's steps/s and every pair's ratio")
    args = parser.parse_args(argv)
    pairs = args.pairs or (QUICK_PAIRS if args.quick else PAIRS)
    steps = args.steps or (QUICK_STEPS if args.quick else STEPS)

    blocks: list[dict[str, Any]] = []
    if args.only in (None, "blocks"):
        for style, default_pairs in BLOCK_STYLES:
            n = args.block_pairs or (QUICK_BLOCK_PAIRS if args.quick else default_pairs)
            print(f"in one process, {style}: {n} ABBA pairs of blocks", flush=True)
            blocks.append(run_blocks(style, n))
    chosen = [
        s for s in SCRIPTS if args.only is None or args.only == ("fit" if "fit" in s[0] else "loop")
    ]
    results = [measure(ph, sc, a, pairs=pairs, steps=steps) for ph, sc, a in chosen]

    print()
    goals: dict[str, dict[str, Any]] = {}
    if blocks:
        print_blocks(blocks)
        for b in blocks:
            verdict, worst = goal_verdict(b["throughput_ratio"])
            goals[b["style"]] = {"goal": verdict, "monitoring_cost_at_most": worst}
            cost = 1 - b["throughput_ratio"]["median"]
            most = "" if worst is None else f", at most {worst:+.1%} at 95% confidence"
            print(
                f"goal, {b['style']}: monitoring costs < {MAX_MONITORING_OVERHEAD:.0%} of "
                f"throughput: {verdict} (cost {cost:+.1%}{most}; negative = faster with pipediag)"
            )
        print()
    if results:
        print_runs(results)
    whole_runs, raw = split_raw(results, RAW_KEYS, ["phase"])
    write_results(
        args.json,
        NAME,
        settings={"pairs": pairs, "steps": steps, "block_pairs": args.block_pairs},
        summary={"goal_max_monitoring_overhead": MAX_MONITORING_OVERHEAD, "goals": goals},
        cases=overhead_cases(blocks, whole_runs),
        quick=args.quick,
        raw=raw,
        raw_to=args.raw,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
