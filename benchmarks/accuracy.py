"""Accuracy: pipediag's verdict and top suggestion on a labelled suite, against measured truth.

The truth of each case is measured, not read off its name (DS-Analyzer's differential rule):

- P: the case's dataset read alone, over the same window of batches a diagnosis judges
  (after its warm-up, epochs in a row, as training reads them);
- C: the case's own train step (its style and model) on a few cached, repeated batches;
- P/C truth (`truth` in the results): input-bound when P/C < 0.8, compute-bound when
  P/C > 1.25, balanced between (bands and their reasons: `benchmarks/_common.py`). Cases
  within 10% of a band edge are flagged, since either label is defensible there. When the
  pipeline's rate changes between epochs inside the window (a cache filling in epoch 1),
  the rule is applied per epoch and combined by time (`window_truth_ratio`); for a steady
  pipeline that is exactly P/C. It predicts waiting only: it is blind to a pipeline that
  keeps up but takes the step's cores, or costs a fixed overhead per pull.

Input cost, measured the same way without pipediag (`benchmarks/_input_cost.py`):

- A: the case's own training as its script runs it, over the same window;
- T: its train step on ONE held batch with the pipeline idle;
- true cost = 1 - A/T (`truth_cost`), from three side-by-side T/A pairs (ABBA); the cost
  truth (`truth_by_cost`) is input-bound at 20% or more, balanced from 5%, compute-bound
  below (XProf's bands, as pipediag's verdict applies them to input cost).

pipediag's `input_cost_fraction` and its wait share (`input_wait_fraction`, XProf's figure)
are both scored against the true cost: the median absolute error of each is printed (a
negative true cost, which is noise, counts as 0), with the verdicts against the cost truth
and, where pipediag found phases (e.g. a cache filling in epoch 1), each phase's cost
beside the true cost of the same epochs.

Then `pipediag.diagnose` runs the unmodified case script. Each case runs in its own Python
process (TF state, threads and caches do not leak between cases). The script prints one row
per case, a confusion table (truth x pipediag) for each truth, the median errors of the
input cost and the wait share against the true cost, and whether the case's expected top
suggestion (e.g. PD001) came first, when pipediag made suggestions.

    python benchmarks/accuracy.py                 # the whole suite (a few minutes, 2 cores)
    python benchmarks/accuracy.py --quick         # smoke run: short windows
    python benchmarks/accuracy.py --cases balanced_fit,no_prefetch_loop
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (
    UNKNOWN,
    accuracy_of,
    base_parser,
    case_info,
    case_names,
    classify_ratio,
    confusion,
    fmt,
    format_confusion,
    format_table,
    load_case,
    make_run_config,
    measure_compute,
    measure_pipeline,
    near_boundary,
    run_child,
    suggestion_matches,
    tail,
    window_truth_ratio,
    write_results,
)
from benchmarks._input_cost import (
    classify_cost,
    measure_input_cost,
    median_abs_error,
    phase_cost,
)

NAME = "accuracy"
# The diagnosis window: pipediag's default warm-up, and enough measured steps for a stable
# median on every case while a case still takes well under a minute.
WARMUP_STEPS = 5
MEASURED_STEPS = 60
QUICK_MEASURED_STEPS = 20
# Batches cached for C: enough distinct batches that the step sees realistic data.
CACHE_BATCHES = 8
# Epoch cap for reading the data alone; the loop stops once the window is read.
MAX_EPOCHS = 50
# pipediag's pipeline-alone budget (its default is 3 s).
BENCH_SECONDS = 3.0
QUICK_BENCH_SECONDS = 1.0
CASE_TIMEOUT_S = 420
# Side-by-side T/A pairs for the true input cost (T A, A T, T A). On 2 shared cores one
# pair's cost moves by +-15 points (the new cases' docstrings); three pairs in ABBA order
# let drift cancel.
TRUTH_REPEATS = 3


def run_worker(case: str, *, warmup: int, steps: int, bench_seconds: float) -> dict[str, Any]:
    """One case, in this process: truth by measurement, then the diagnosis."""
    import pipediag

    module = load_case(case)
    info = case_info(module)
    pipeline = measure_pipeline(
        module.make_dataset(frozenset()), epochs=MAX_EPOCHS, skip=warmup, count=steps
    )
    compute = measure_compute(module, cache_batches=CACHE_BATCHES, skip=warmup, count=steps)
    p, c = pipeline["batches_per_s"], compute["steps_per_s"]
    ratio = window_truth_ratio(pipeline["segments"], c) if c else None
    cost = measure_input_cost(
        module, skip=warmup, count=steps, repeats=TRUTH_REPEATS, max_epochs=MAX_EPOCHS
    )
    epochs = _epochs_for(pipeline["epoch_batches"], warmup + steps)
    with tempfile.TemporaryDirectory(prefix="pipediag-acc-") as out:
        report = pipediag.diagnose(
            info.path,
            ["--epochs", str(epochs)],
            config=make_run_config(
                measured_steps=steps,
                warmup_steps=warmup,
                bench_seconds=bench_seconds,
                sample_gpu=False,
            ),
            out=out,
            log=None,
        )
    top = report.suggestions[0] if report.suggestions else None
    verdict = report.verdict
    split = getattr(verdict, "cost_split", None)
    return {
        "case": info.name,
        "style": info.style,
        "intended": info.intended,
        "bottleneck": info.bottleneck,
        "truth_pipeline_batches_per_s": p,
        "truth_compute_steps_per_s": c,
        "truth_ratio": ratio,
        "truth": classify_ratio(ratio),
        "truth_segments": pipeline["segments"],
        "truth_epoch_batches": pipeline["epoch_batches"],
        "truth_training_steps_per_s": cost["training_steps_per_s"],
        "truth_compute_alone_steps_per_s": cost["compute_alone_steps_per_s"],
        "truth_cost": cost["cost"],
        "truth_cost_pairs": cost["pair_costs"],
        "truth_by_cost": cost["label"],
        "truth_cost_epochs": cost["epochs"],
        "truth_boundary_s": [r["boundary_s"] for r in cost["training_runs"]],
        "verdict": verdict.label,
        "input_wait_fraction": verdict.input_wait_fraction,
        "input_cost_fraction": getattr(verdict, "input_cost_fraction", None),
        "cost_split": dataclasses.asdict(split) if split is not None else None,
        "phases": [dataclasses.asdict(p) for p in getattr(verdict, "phases", None) or []],
        "pipediag_pipeline_batches_per_s": report.pipeline.batches_per_s,
        "pipediag_compute_alone_steps_per_s": verdict.compute_alone_steps_per_s,
        "pipediag_compute_alone_source": getattr(verdict, "compute_alone_source", None) or None,
        "pipediag_training_steps_per_s": getattr(verdict, "training_steps_per_s", None),
        "pipediag_train_steps_per_s": report.train.steps_per_s,
        "complete": report.complete,
        "stop_reason": report.stop_reason,
        "suggestions": [s.id for s in report.suggestions],
        "top_suggestion": top.id if top else None,
        "expected_suggestion": info.expected_suggestion,
        "top_training_speedup": top.training_speedup if top else None,
        "top_predicted_speedup": top.predicted_speedup if top else None,
        "top_verified_speedup": top.verified_speedup if top else None,
        "top_estimated_speedup": top.estimated_speedup if top else None,
        "diagnose_wall_s": report.wall_time_s,
    }


def _epochs_for(epoch_batches: list[int], needed: int) -> int:
    """Epochs that give the diagnosis its warm-up and measured steps, plus one to spare."""
    full = epoch_batches[:-1] if len(epoch_batches) > 1 else []
    if not full or not full[0]:
        return 2
    return math.ceil((needed + 2) / full[0]) + 1


def run_case(case: str, *, warmup: int, steps: int, bench_seconds: float) -> dict[str, Any]:
    """Run one case in a fresh Python process; a failure becomes a row, not a crash."""
    with tempfile.TemporaryDirectory(prefix="pipediag-acc-") as tmp:
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
            "--bench-seconds",
            str(bench_seconds),
            "--result-file",
            str(result_file),
        ]
        proc, wall = run_child(cmd, timeout_s=CASE_TIMEOUT_S)
        if proc.returncode != 0 or not result_file.is_file():
            return {
                "case": case,
                "error": f"exit {proc.returncode}: {tail(proc.stderr)}",
                "truth": UNKNOWN,
                "truth_by_cost": UNKNOWN,
                "verdict": UNKNOWN,
                "case_wall_s": wall,
            }
        result: dict[str, Any] = json.loads(result_file.read_text())
        result["case_wall_s"] = wall
        return result


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Print the per-case rows, the confusion tables, the cost errors and the suggestion check."""
    rows = []
    for r in results:
        ratio = r.get("truth_ratio")
        flag = " *" if ratio is not None and near_boundary(ratio) else ""
        match = suggestion_matches(r.get("top_suggestion"), r.get("expected_suggestion"))
        rows.append(
            [
                r["case"],
                "fit" if r.get("style") == "keras-fit" else "loop",
                fmt(r.get("truth_pipeline_batches_per_s")),
                fmt(r.get("truth_compute_steps_per_s")),
                fmt(ratio, ".2f") + flag,
                r["truth"],
                r["verdict"],
                fmt(r.get("input_wait_fraction"), ".0%"),
                fmt(r.get("input_cost_fraction"), ".0%"),
                fmt(r.get("truth_cost"), ".0%"),
                "yes" if r["truth"] == r["verdict"] else "NO",
                r.get("top_suggestion") or "-",
                r.get("expected_suggestion") or "-",
                {True: "yes", False: "NO", None: "-"}[match],
            ]
        )
    headers = [
        "case",
        "style",
        "P b/s",
        "C st/s",
        "P/C",
        "P/C truth",
        "pipediag",
        "wait",
        "cost",
        "true cost",
        "right",
        "top suggestion",
        "expected",
        "first",
    ]
    print(format_table(headers, rows))
    print("(* P/C within 10% of a band edge: either neighbouring label is defensible)")
    print("(wait, cost: pipediag's wait share and input cost; true cost: 1 - A/T, below)")
    for r in results:
        if "error" in r:
            print(f"\n{r['case']} failed: {r['error']}")

    matrix = confusion((r["truth"], r["verdict"]) for r in results)
    right, total = accuracy_of(matrix)
    print("\nConfusion (rows: P/C truth, columns: pipediag's verdict)")
    print(format_confusion(matrix))
    print(f"verdicts right against the P/C truth: {right}/{total}")

    cost_summary = summarise_cost(results)

    with_suggestions = [r for r in results if r.get("suggestions")]
    judged = [
        r
        for r in with_suggestions
        if suggestion_matches(r["top_suggestion"], r.get("expected_suggestion")) is not None
    ]
    first = sum(
        bool(suggestion_matches(r["top_suggestion"], r["expected_suggestion"])) for r in judged
    )
    if not with_suggestions:
        print("top suggestion: pipediag made no suggestions in this run (no advisor yet?)")
    else:
        print(f"expected top suggestion first: {first}/{len(judged)} cases that declare one")
    return {
        "confusion": matrix,
        "verdicts_right": right,
        "verdicts_total": total,
        **cost_summary,
        "suggestion_first": first,
        "suggestion_judged": len(judged),
        "cases_with_suggestions": len(with_suggestions),
    }


def summarise_cost(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Input cost: the truth's figures, pipediag's, the errors and the cost-truth verdicts."""
    rows = []
    for r in results:
        if "error" in r:
            continue
        split = r.get("cost_split") or {}
        pairs = r.get("truth_cost_pairs") or []
        truth_label = r.get("truth_by_cost", UNKNOWN)
        rows.append(
            [
                r["case"],
                fmt(r.get("truth_training_steps_per_s")),
                fmt(r.get("truth_compute_alone_steps_per_s")),
                fmt(r.get("truth_cost"), ".0%"),
                " ".join(f"{c:.0%}" for c in pairs) or "-",
                truth_label,
                fmt(r.get("pipediag_training_steps_per_s")),
                fmt(r.get("pipediag_compute_alone_steps_per_s")),
                r.get("pipediag_compute_alone_source") or "-",
                fmt(r.get("input_cost_fraction"), ".0%"),
                fmt(r.get("input_wait_fraction"), ".0%"),
                split.get("dominant") or "-",
                r["verdict"],
                "yes" if truth_label == r["verdict"] else "NO",
            ]
        )
    headers = [
        "case",
        "A st/s",
        "T st/s",
        "true cost",
        "pairs",
        "cost truth",
        "pd A",
        "pd T",
        "pd T from",
        "pd cost",
        "pd wait",
        "dominant",
        "pipediag",
        "right",
    ]
    print("\nInput cost (truth: A = training as the script ran, T = step on one held batch)")
    print(format_table(headers, rows))

    truths = {r["case"]: _cost_floor(r.get("truth_cost")) for r in results}
    cost_error = median_abs_error(
        [(r.get("input_cost_fraction"), truths[r["case"]]) for r in results]
    )
    wait_error = median_abs_error(
        [(r.get("input_wait_fraction"), truths[r["case"]]) for r in results]
    )
    scored_cost = sum(
        r.get("input_cost_fraction") is not None and truths[r["case"]] is not None for r in results
    )
    scored_wait = sum(
        r.get("input_wait_fraction") is not None and truths[r["case"]] is not None for r in results
    )
    print(
        f"median |input cost - true cost|: {fmt(cost_error, '.1%')} over {scored_cost} cases; "
        f"median |wait share - true cost|: {fmt(wait_error, '.1%')} over {scored_wait} cases"
    )

    matrix = confusion((r.get("truth_by_cost", UNKNOWN), r["verdict"]) for r in results)
    right, total = accuracy_of(matrix)
    print("\nConfusion (rows: cost truth, columns: pipediag's verdict)")
    print(format_confusion(matrix))
    print(f"verdicts right against the cost truth: {right}/{total}")

    phase_rows = phase_comparison(results)
    if phase_rows:
        print("\nPhases (pipediag's, against the true cost of the same epochs)")
        print(
            format_table(
                ["case", "phase", "steps", "pd cost", "true cost", "pd label", "cost truth"],
                phase_rows,
            )
        )
    return {
        "cost_median_abs_error": cost_error,
        "wait_median_abs_error_against_cost": wait_error,
        "cost_scored_cases": scored_cost,
        "wait_scored_cases": scored_wait,
        "cost_confusion": matrix,
        "cost_verdicts_right": right,
        "cost_verdicts_total": total,
        "phases": phase_rows,
    }


def _cost_floor(cost: float | None) -> float | None:
    """A true cost below zero is noise (A a little faster than T): scored as zero."""
    return None if cost is None else max(0.0, cost)


def phase_comparison(results: list[dict[str, Any]]) -> list[list[Any]]:
    """One row per pipediag phase: its cost beside the true cost of the same epochs.

    pipediag numbers epochs from 0 (`PhaseVerdict.first_epoch`), the truth from 1.
    """
    rows = []
    for r in results:
        for phase in r.get("phases") or []:
            truth = phase_cost(
                r.get("truth_cost_epochs") or [],
                phase["first_epoch"] + 1,
                phase["last_epoch"] + 1,
                r.get("truth_compute_alone_steps_per_s"),
            )
            rows.append(
                [
                    r["case"],
                    phase["name"],
                    phase["steps"],
                    fmt(phase.get("input_cost_fraction"), ".0%"),
                    fmt(truth, ".0%"),
                    phase.get("label", UNKNOWN),
                    classify_cost(truth),
                ]
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(NAME, __doc__)
    parser.add_argument("--cases", help="comma-separated case names (default: all)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--warmup", type=int, default=WARMUP_STEPS, help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=None, help="measured steps per case")
    parser.add_argument("--bench-seconds", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--result-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    steps = args.steps or (QUICK_MEASURED_STEPS if args.quick else MEASURED_STEPS)
    bench_seconds = args.bench_seconds or (QUICK_BENCH_SECONDS if args.quick else BENCH_SECONDS)

    if args.worker:
        result = run_worker(
            args.worker, warmup=args.warmup, steps=steps, bench_seconds=bench_seconds
        )
        args.result_file.write_text(json.dumps(result))
        return 0

    names = args.cases.split(",") if args.cases else case_names()
    unknown = sorted(set(names) - set(case_names()))
    if unknown:
        parser.error(f"no such case: {', '.join(unknown)}")
    results = []
    for name in names:
        print(f"[{len(results) + 1}/{len(names)}] {name} ...", flush=True)
        results.append(run_case(name, warmup=args.warmup, steps=steps, bench_seconds=bench_seconds))
    print()
    summary = summarise(results)
    settings = {
        "warmup_steps": args.warmup,
        "measured_steps": steps,
        "cache_batches": CACHE_BATCHES,
    }
    write_results(
        args.json, NAME, settings=settings, summary=summary, cases=results, quick=args.quick
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
