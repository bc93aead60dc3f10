"""Time to verdict: wall time from `python -m pipediag run` to the written report, by phase.

Each example is diagnosed in a fresh process, as a user would run it, so the wall time
includes starting Python and importing TensorFlow (about 3 s here). The report's own
`phase_times_s` splits the rest: the pipeline-alone benchmark, the measured train steps,
the analysis (and the profiler's own start/stop cost under `fit`); "startup + other" is
the process wall time minus those phases (interpreter, imports, model building, the
script's warm-up steps, writing the report files).

    python benchmarks/time_to_verdict.py            # 3 runs per example, medians
    python benchmarks/time_to_verdict.py --quick    # 1 run per example
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
    EXAMPLES_DIR,
    base_parser,
    fmt,
    format_table,
    median,
    run_child,
    tail,
    write_results,
)

NAME = "time_to_verdict"
EXAMPLES = ("input_bound_fit.py", "compute_bound_loop.py")
EXAMPLE_ARGS = ["--epochs", "2"]
RUNS = 3
QUICK_RUNS = 1
# Phases named in the report's `phase_times_s`, in the order they happen.
PHASES = ("pipeline_benchmark", "train", "analysis", "profiler_overhead")
RUN_TIMEOUT_S = 300


def one_run(example: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pipediag-ttv-") as out:
        cmd = [
            sys.executable,
            "-m",
            "pipediag",
            "run",
            "--quiet",
            "--out",
            out,
            str(EXAMPLES_DIR / example),
            *EXAMPLE_ARGS,
        ]
        proc, wall = run_child(cmd, timeout_s=RUN_TIMEOUT_S)
        report_path = Path(out) / "report.json"
        if proc.returncode != 0 or not report_path.is_file():
            raise RuntimeError(f"{example} failed ({proc.returncode}):\n{tail(proc.stderr)}")
        report = json.loads(report_path.read_text())
    phases = {name: float(report.get("phase_times_s", {}).get(name, 0.0)) for name in PHASES}
    return {
        "wall_s": wall,
        "report_wall_s": report.get("wall_time_s"),
        "phases_s": phases,
        "startup_other_s": wall - sum(phases.values()),
        "verdict": report.get("verdict", {}).get("label"),
        "measured_steps": report.get("train", {}).get("measured_steps"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(NAME, __doc__)
    parser.add_argument("--runs", type=int, help=f"runs per example (default {RUNS})")
    args = parser.parse_args(argv)
    runs = args.runs or (QUICK_RUNS if args.quick else RUNS)

    results = []
    for example in EXAMPLES:
        per_run = []
        for i in range(runs):
            per_run.append(one_run(example))
            print(f"  {example}: run {i + 1}/{runs}: {per_run[-1]['wall_s']:.1f} s", flush=True)
        summary = {
            "wall_s": median([r["wall_s"] for r in per_run]),
            "startup_other_s": median([r["startup_other_s"] for r in per_run]),
            **{f"{name}_s": median([r["phases_s"][name] for r in per_run]) for name in PHASES},
        }
        results.append(
            {
                "example": f"examples/{example}",
                "args": EXAMPLE_ARGS,
                "runs": per_run,
                "median": summary,
                "verdict": per_run[-1]["verdict"],
            }
        )

    rows = [
        [
            r["example"].rsplit("/", 1)[-1],
            r["verdict"],
            fmt(r["median"]["startup_other_s"]),
            fmt(r["median"]["pipeline_benchmark_s"]),
            fmt(r["median"]["train_s"]),
            fmt(r["median"]["analysis_s"], ".2f"),
            fmt(r["median"]["profiler_overhead_s"], ".2f"),
            fmt(r["median"]["wall_s"]),
        ]
        for r in results
    ]
    print()
    headers = [
        "example",
        "verdict",
        "startup+other s",
        "pipeline alone s",
        "train steps s",
        "analysis s",
        "profiler s",
        "wall s",
    ]
    print(format_table(headers, rows))
    print(f"(medians of {runs} run(s); `python -m pipediag run <example> --epochs 2`, 2 cores)")
    write_results(
        args.json, NAME, {"settings": {"runs": runs}, "results": results}, quick=args.quick
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
