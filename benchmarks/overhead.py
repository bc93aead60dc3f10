"""Overhead: the same training script with and without pipediag, steps/s measured identically.

Both arms run the same case script in a fresh process, and the script times its own steps
(`--rate-file`: steps/s from the end of step 10 to the last step), so the two numbers come
from the same code on the same clock; pipediag's pipeline-alone benchmark runs before the
first step and its analysis after the last, both outside that window. Under pipediag the
whole run is measured (`--steps all`):

- custom loop: every pull is timed through the iterator hook, and the host (and GPU)
  samplers run: the monitoring cost;
- Keras fit on a tf.data.Dataset: additionally each batch is time-stamped as it leaves the
  pipeline (two pass-through stages), which is how pipediag sees input waits inside `fit`.

Runs are interleaved in pairs, A B then B A (ABBA), so slow drift on a shared machine hits
both arms alike; each pair gives one ratio (with / without). The table shows the median
ratio and its interquartile range. Goal: monitoring costs under 2% of throughput.

    python benchmarks/overhead.py              # 5 pairs per script
    python benchmarks/overhead.py --quick      # 1 pair, short runs (smoke only)
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
    CASES_DIR,
    base_parser,
    fmt,
    format_table,
    run_child,
    spread_summary,
    tail,
    write_results,
)

NAME = "overhead"
# (phase, case script, its arguments): fast steps (a few ms), so a per-step cost shows.
SCRIPTS = (
    ("monitoring (custom loop)", "py_function_decode_loop.py", ["--tuned"]),
    ("monitoring (Keras fit, batch stamps)", "seq_random_map_fit.py", ["--tuned"]),
)
PAIRS = 4
QUICK_PAIRS = 1
STEPS = 1500
QUICK_STEPS = 60
EPOCHS = 100  # more than enough; --max-steps ends the run
# The goal for the monitoring phase.
MAX_MONITORING_OVERHEAD = 0.02
RUN_TIMEOUT_S = 300


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
    without: list[float] = []
    with_: list[float] = []
    ratios: list[float] = []
    for pair in range(pairs):
        order = (False, True) if pair % 2 == 0 else (True, False)
        rates = {}
        for arm in order:
            rates[arm] = one_run(script, args, with_pipediag=arm, steps=steps)
        without.append(rates[False])
        with_.append(rates[True])
        ratios.append(rates[True] / rates[False])
        print(
            f"  {phase}: pair {pair + 1}/{pairs}: without {rates[False]:.1f} steps/s, "
            f"with {rates[True]:.1f} steps/s, ratio {ratios[-1]:.3f}",
            flush=True,
        )
    return {
        "phase": phase,
        "script": f"benchmarks/cases/{script}",
        "args": args,
        "steps": steps,
        "without_steps_per_s": without,
        "with_steps_per_s": with_,
        "ratios": ratios,
        "ratio": spread_summary(ratios),
        "without": spread_summary(without),
        "with": spread_summary(with_),
    }


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(NAME, __doc__)
    parser.add_argument("--pairs", type=int, help=f"A/B pairs per script (default {PAIRS})")
    parser.add_argument("--steps", type=int, help=f"steps per run (default {STEPS})")
    parser.add_argument(
        "--only", choices=["loop", "fit"], help="measure only the custom loop or only Keras fit"
    )
    args = parser.parse_args(argv)
    pairs = args.pairs or (QUICK_PAIRS if args.quick else PAIRS)
    steps = args.steps or (QUICK_STEPS if args.quick else STEPS)

    chosen = [s for s in SCRIPTS if args.only is None or (args.only == "fit") == ("fit" in s[0])]
    results = [measure(ph, sc, a, pairs=pairs, steps=steps) for ph, sc, a in chosen]
    rows = []
    for r in results:
        ratio = r["ratio"]
        overhead = 1 - ratio["median"]
        rows.append(
            [
                r["phase"],
                r["script"].rsplit("/", 1)[-1] + " " + " ".join(r["args"]),
                fmt(r["without"]["median"]),
                fmt(r["with"]["median"]),
                fmt(ratio["median"], ".3f"),
                f"{ratio['q1']:.3f}-{ratio['q3']:.3f}",
                f"{overhead:+.1%}",
                ratio["n"],
            ]
        )
    print()
    headers = [
        "phase",
        "script",
        "without st/s",
        "with st/s",
        "ratio (median)",
        "ratio IQR",
        "cost",
        "pairs",
    ]
    print(format_table(headers, rows))
    monitoring = 1 - results[0]["ratio"]["median"]
    verdict = "met" if monitoring < MAX_MONITORING_OVERHEAD else "NOT met"
    print(
        f"goal: monitoring costs < {MAX_MONITORING_OVERHEAD:.0%} of throughput: {verdict} "
        f"({monitoring:+.1%}; cost = 1 - median ratio, negative = faster with pipediag)"
    )
    write_results(
        args.json,
        NAME,
        {
            "settings": {"pairs": pairs, "steps": steps},
            "goal_max_monitoring_overhead": MAX_MONITORING_OVERHEAD,
            "monitoring_overhead": monitoring,
            "results": results,
        },
        quick=args.quick,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
