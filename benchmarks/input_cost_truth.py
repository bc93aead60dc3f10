"""Input-cost truth of benchmark cases, measured without pipediag: A, T, 1 - A/T and the wait.

For each case, in a fresh Python process per run (`benchmarks/_input_cost.py` says exactly
what is measured):

- T: the case's train step on one held batch, its pipeline idle;
- A: the case's own training, as its script runs it, over the window pipediag judges;
- cost = 1 - A/T, from `--repeats` side-by-side pairs (ABBA order) in that process;
- wait: the TF profiler's GetNext share in one more (traced) training run;
- pull (custom loops): the part of the cost that is `next()`'s own overhead, from F, the
  step fed by one held batch through `next()` (`fetch_part`);
- P: the case's data read alone over the same window (as `accuracy.py` measures it), and
  the process's cores busy during A and during T (contention shows as A < T with no wait,
  the pipeline's threads as the extra cores).

Use it to check a case's intended behaviour and the figures recorded in its docstring:

    python benchmarks/input_cost_truth.py --cases contention_fit,fetch_loop --runs 3
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (
    base_parser,
    case_names,
    fmt,
    format_table,
    load_case,
    measure_pipeline,
    median,
    run_child,
    spread_summary,
    tail,
    write_results,
)
from benchmarks._input_cost import measure_input_cost

NAME = "input_cost_truth"
# The window accuracy.py gives pipediag: its default warm-up, then 60 measured steps.
WARMUP_STEPS = 5
MEASURED_STEPS = 60
REPEATS = 3  # side-by-side T/A pairs per process (T A, A T, T A)
RUNS = 3  # processes per case
MAX_EPOCHS = 50
CASE_TIMEOUT_S = 600


def run_worker(case: str, *, warmup: int, steps: int, repeats: int) -> dict[str, Any]:
    module = load_case(case)
    pipeline = measure_pipeline(
        module.make_dataset(frozenset()), epochs=MAX_EPOCHS, skip=warmup, count=steps
    )
    truth = measure_input_cost(
        module, skip=warmup, count=steps, repeats=repeats, trace_waits=True, pull_alone=True
    )
    return {
        "case": case,
        "pipeline_batches_per_s": pipeline["batches_per_s"],
        "pipeline_epoch_batches": pipeline["epoch_batches"],
        **truth,
    }


def run_case(case: str, *, warmup: int, steps: int, repeats: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pipediag-truth-") as tmp:
        result_file = Path(tmp) / "result.json"
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            case,
            "--warmup",
            str(warmup),
            "--steps",
            str(steps),
            "--repeats",
            str(repeats),
            "--result-file",
            str(result_file),
        ]
        proc, wall = run_child(cmd, timeout_s=CASE_TIMEOUT_S)
        if proc.returncode != 0 or not result_file.is_file():
            return {"case": case, "error": f"exit {proc.returncode}: {tail(proc.stderr)}"}
        result: dict[str, Any] = json.loads(result_file.read_text())
        result["wall_s"] = wall
        return result


def _cores(run: list[dict[str, Any]]) -> float | None:
    values = [r["cores_busy"] for r in run if r.get("cores_busy") is not None]
    return sum(values) / len(values) if values else None


def _row(r: dict[str, Any]) -> list[Any]:
    pairs = r.get("pair_costs") or []
    epochs = " ".join(
        f"{e['epoch']}:{fmt(e['cost'], '.0%')}/{e['steps']}"
        for e in r.get("epochs", [])
        if e["steps"]
    )
    return [
        r["case"],
        fmt(r.get("pipeline_batches_per_s")),
        fmt(r.get("training_steps_per_s")),
        fmt(r.get("compute_alone_steps_per_s")),
        fmt(r.get("cost"), ".1%"),
        " ".join(f"{c:.0%}" for c in pairs) or "-",
        fmt(r.get("wait_share"), ".1%"),
        fmt(r.get("fetch_cost"), ".1%"),
        fmt(_cores(r.get("training_runs", [])), ".2f"),
        fmt(_cores(r.get("compute_runs", [])), ".2f"),
        epochs or "-",
        r.get("label", "-"),
    ]


def _span(runs: list[dict[str, Any]], key: str, spec: str) -> str:
    """ "median [min, max]" of one figure across runs."""
    values = [r[key] for r in runs if r.get(key) is not None]
    if not values:
        return "-"
    return f"{median(values):{spec}} [{min(values):{spec}}, {max(values):{spec}}]"


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    headers = [
        "case",
        "P b/s",
        "A st/s",
        "T st/s",
        "cost",
        "pairs",
        "wait",
        "pull",
        "cores A",
        "cores T",
        "cost by epoch/steps",
        "truth",
    ]
    print(format_table(headers, [_row(r) for r in results if "error" not in r]))
    for r in results:
        if "error" in r:
            print(f"\n{r['case']} failed: {r['error']}")
    spreads: dict[str, Any] = {}
    for case in dict.fromkeys(r["case"] for r in results):
        runs = [r for r in results if r["case"] == case and "error" not in r]
        spreads[case] = {
            key: spread_summary([r[key] for r in runs if r.get(key) is not None])
            for key in (
                "training_steps_per_s",
                "compute_alone_steps_per_s",
                "cost",
                "wait_share",
                "fetch_cost",
                "pipeline_batches_per_s",
                "pull_alone_steps_per_s",
            )
        }
    print("\nAcross runs: median [min, max]")
    rows = []
    for case in spreads:
        runs = [r for r in results if r["case"] == case and "error" not in r]
        rows.append(
            [
                case,
                len(runs),
                _span(runs, "training_steps_per_s", ".1f"),
                _span(runs, "compute_alone_steps_per_s", ".1f"),
                _span(runs, "cost", ".1%"),
                _span(runs, "wait_share", ".1%"),
                _span(runs, "fetch_cost", ".1%"),
                _span(runs, "pipeline_batches_per_s", ".0f"),
            ]
        )
    headers = ["case", "runs", "A st/s", "T st/s", "cost", "wait", "pull", "P b/s"]
    print(format_table(headers, rows))
    return spreads


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(NAME, __doc__)
    parser.add_argument("--cases", help="comma-separated case names (required)")
    parser.add_argument("--runs", type=int, default=RUNS, help="processes per case")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="T/A pairs per process")
    parser.add_argument("--warmup", type=int, default=WARMUP_STEPS)
    parser.add_argument("--steps", type=int, default=MEASURED_STEPS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--result-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.repeats = 1, 1

    if args.worker:
        result = run_worker(args.worker, warmup=args.warmup, steps=args.steps, repeats=args.repeats)
        args.result_file.write_text(json.dumps(result))
        return 0

    if not args.cases:
        parser.error("--cases is required")
    names = args.cases.split(",")
    unknown = sorted(set(names) - set(case_names()))
    if unknown:
        parser.error(f"no such case: {', '.join(unknown)}")
    results = []
    # Runs interleave the cases (A B A B ...), so a busy spell on the machine is shared.
    for run in range(args.runs):
        for name in names:
            print(f"[run {run + 1}/{args.runs}] {name} ...", flush=True)
            results.append(
                run_case(name, warmup=args.warmup, steps=args.steps, repeats=args.repeats)
            )
    print()
    spreads = summarise(results)
    settings = {
        "warmup_steps": args.warmup,
        "measured_steps": args.steps,
        "repeats": args.repeats,
        "runs": args.runs,
    }
    write_results(
        args.json, NAME, settings=settings, summary=spreads, cases=results, quick=args.quick
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
