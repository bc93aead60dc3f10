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
- true cost = 1 - A/T (`truth_cost`); the cost truth (`truth_by_cost`) is input-bound at
  20% or more, balanced from 5%, compute-bound below (XProf's bands, as pipediag's verdict
  applies them to input cost).

Truth and diagnosis in alternation. Each case runs in rounds, `--repeats R` of them: a
truth measurement (one Python process: P, C, then T and A side by side in ABBA order, T A
then A T, each on a fresh model), then a diagnosis (`pipediag.diagnose` on the unmodified
case script, in a process of its own). Truth, diagnosis, truth, diagnosis: the slow drift
of a shared host falls on both sides alike, and every figure of a case has R values. The
case's truth is the median over its rounds (its cost, P/C, A and T, each); pipediag's
figures come from its median run (by input cost; the lower middle one for an even R), and
every run's verdict is scored in the confusion tables. Each process is fresh, so TF state,
threads and caches leak neither between cases nor between the truth and the diagnosis.

pipediag's `input_cost_fraction`, with its 90% interval where the report has one
(`verdict.input_cost_interval`), and its wait share (`input_wait_fraction`, XProf's
figure) are both scored against the true cost: the median absolute error of each over the
suite (a negative true cost, which is noise, counts as 0; goal for the input cost: at most
5 points), with the verdicts against the cost truth and, where pipediag found phases (e.g.
a cache filling in epoch 1), each phase's cost beside the true cost of the same epochs in
the same round.

The added wall time of the alternation: per diagnosis, `report.compute_alone.duration_s`
(the span of the alternation of training and step-alone blocks; in a pipediag from before
the alternation, the one compute-alone run) and how many blocks it ran
(`report.compute_alone.blocks`, where present); the medians are printed.

Run-to-run spread (`--spread-cases a,b,c --spread-runs N`): N diagnoses of each of a few
cases, back to back and without truth. The spread of the reported cost (max - min) is set
against the mean width of the reported intervals (goal: no wider), and each run's label is
checked against the others within their intervals: a run agrees when every other run's
interval overlaps a band (5%, 20%) that its own interval touches (`agreeing_runs`). The
default cases span the bands: one input-bound, one contention case, one compute-bound.

The script prints one row per case, a confusion table (truth x pipediag) for each truth,
the median errors of the input cost and the wait share against the true cost, whether the
case's expected top suggestion (e.g. PD001) came first, when pipediag made suggestions,
the alternation's wall time and the spread.

    python benchmarks/accuracy.py                 # the whole suite, 3 rounds, spread of 3 x 5
    python benchmarks/accuracy.py --quick         # smoke run: short windows, 1 round, no spread
    python benchmarks/accuracy.py --cases balanced_fit,no_prefetch_loop --repeats 5
    python benchmarks/accuracy.py --quick --cases fetch_loop --spread-cases fetch_loop
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import tempfile
from collections.abc import Sequence
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
    median,
    near_boundary,
    run_child,
    spread_summary,
    suggestion_matches,
    tail,
    window_truth_ratio,
    write_results,
)
from benchmarks._input_cost import (
    agreeing_runs,
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
# Rounds of (truth, diagnosis) per case. Three give a median that one drifted round cannot
# move, for about three times the time of one (the whole suite: see benchmarks/README.md).
REPEATS = 3
QUICK_REPEATS = 1
# Side-by-side T/A pairs inside one truth measurement: T A, then A T (ABBA), so drift that
# is linear over the measurement cancels. On 2 shared cores one pair's cost moves by +-15
# points (the cases' docstrings); the rounds add more pairs, in alternation with pipediag.
TRUTH_PAIRS = 2
# Run-to-run spread: the default cases span the bands (input-bound by waiting, input cost
# by contention near the middle, compute-bound), all Keras fit.
SPREAD_CASES = ("seq_random_map_fit", "contention_fit", "heavy_model_cached_fit")
SPREAD_RUNS = 5
QUICK_SPREAD_RUNS = 2
# Goal for the median |input cost - true cost| over the suite (docs/design.md, "Rates in
# alternation").
COST_ERROR_GOAL = 0.05
# Training steps a diagnosis may run past its measured ones: the alternation's training
# blocks (up to 6 rounds of up to 200 steps: pipediag/training/alternation.py) and a custom
# loop's fix trials. The script is given epochs enough for these; pipediag's step budget
# ends it when it is done, so spare epochs cost nothing (heavy_model_cached_fit, 20
# measured steps: 18.3 s of wall time with --epochs 3, 20.3 s with --epochs 60, both ended
# by the budget).
ALTERNATION_ALLOWANCE_STEPS = 1500
# An epoch of unknown cardinality is counted by reading it; this caps the count.
MAX_COUNTED_BATCHES = 100_000
TRUTH, PIPEDIAG = "truth", "pipediag"
# A diagnosis's fields that differ run to run: the case row's headline takes them from
# its median run.
RUN_KEYS = (
    "verdict",
    "input_wait_fraction",
    "input_cost_fraction",
    "input_cost_interval",
    "cost_split",
    "phases",
    "pipediag_pipeline_batches_per_s",
    "pipediag_compute_alone_steps_per_s",
    "pipediag_compute_alone_source",
    "pipediag_training_steps_per_s",
    "pipediag_train_steps_per_s",
    "compute_alone_method",
    "compute_alone_duration_s",
    "alternation_blocks",
    "complete",
    "stop_reason",
    "suggestions",
    "top_suggestion",
    "top_gain",
    "top_gain_basis",
    "top_estimate",
    "diagnose_wall_s",
)
# What a spread run keeps of its diagnosis.
SPREAD_KEYS = (
    "verdict",
    "input_cost_fraction",
    "input_cost_interval",
    "input_wait_fraction",
    "top_suggestion",
    "compute_alone_duration_s",
    "alternation_blocks",
    "diagnose_wall_s",
)


# --- the two kinds of worker, each in a process of its own ---------------------------------
def case_meta(case: str) -> dict[str, Any]:
    """The case's declared metadata, as each row carries it."""
    info = case_info(load_case(case))
    return {
        "case": info.name,
        "style": info.style,
        "intended": info.intended,
        "bottleneck": info.bottleneck,
        "expected_suggestion": info.expected_suggestion,
    }


def truth_worker(case: str, *, warmup: int, steps: int, pairs: int) -> dict[str, Any]:
    """One truth measurement of a case, in this process, without pipediag: P, C, T and A."""
    module = load_case(case)
    pipeline = measure_pipeline(
        module.make_dataset(frozenset()), epochs=MAX_EPOCHS, skip=warmup, count=steps
    )
    compute = measure_compute(module, cache_batches=CACHE_BATCHES, skip=warmup, count=steps)
    p, c = pipeline["batches_per_s"], compute["steps_per_s"]
    cost = measure_input_cost(
        module, skip=warmup, count=steps, repeats=pairs, max_epochs=MAX_EPOCHS
    )
    return {
        **case_meta(case),
        "pipeline_batches_per_s": p,
        "compute_steps_per_s": c,
        "ratio": window_truth_ratio(pipeline["segments"], c) if c else None,
        "segments": pipeline["segments"],
        "epoch_batches": pipeline["epoch_batches"],
        "training_steps_per_s": cost["training_steps_per_s"],
        "compute_alone_steps_per_s": cost["compute_alone_steps_per_s"],
        "cost": cost["cost"],
        "pair_costs": cost["pair_costs"],
        "label": cost["label"],
        "epochs": cost["epochs"],
        "window_steps": cost["window_steps"],
        "boundary_s": [r["boundary_s"] for r in cost["training_runs"]],
    }


def pipediag_worker(
    case: str, *, warmup: int, steps: int, bench_seconds: float, epoch_length: int | None
) -> dict[str, Any]:
    """One diagnosis of the unmodified case script, in this process."""
    import pipediag
    from pipediag.renderers.verdict_words import phase_name

    module = load_case(case)
    if epoch_length is None:
        epoch_length = count_epoch(module)
    epochs = epochs_for(epoch_length, warmup + steps + ALTERNATION_ALLOWANCE_STEPS)
    with tempfile.TemporaryDirectory(prefix="pipediag-acc-") as out:
        report = pipediag.diagnose(
            str(case_info(module).path),
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
    interval = getattr(verdict, "input_cost_interval", None)
    alone = getattr(report, "compute_alone", None)
    blocks = getattr(alone, "blocks", None) if alone is not None else None
    return {
        **case_meta(case),
        "epochs_given": epochs,
        "verdict": verdict.label,
        "input_wait_fraction": verdict.input_wait_fraction,
        "input_cost_fraction": getattr(verdict, "input_cost_fraction", None),
        "input_cost_interval": list(interval) if interval is not None else None,
        "cost_split": dataclasses.asdict(split) if split is not None else None,
        "phases": [
            dict(dataclasses.asdict(p), name=phase_name(p))
            for p in getattr(verdict, "phases", None) or []
        ],
        "pipediag_pipeline_batches_per_s": report.pipeline.batches_per_s,
        "pipediag_compute_alone_steps_per_s": verdict.compute_alone_steps_per_s,
        "pipediag_compute_alone_source": getattr(verdict, "compute_alone_source", None) or None,
        "pipediag_training_steps_per_s": getattr(verdict, "training_steps_per_s", None),
        "pipediag_train_steps_per_s": report.train.steps_per_s,
        "compute_alone_method": getattr(alone, "method", None) or None,
        "compute_alone_duration_s": getattr(alone, "duration_s", None),
        "alternation_blocks": len(blocks) if blocks is not None else None,
        "complete": report.complete,
        "stop_reason": report.stop_reason,
        "suggestions": [s.id for s in report.suggestions],
        "top_suggestion": top.id if top else None,
        "top_gain": top.gain.speedup if top else None,
        "top_gain_basis": top.gain.basis if top else None,
        "top_estimate": top.estimate if top else None,
        "diagnose_wall_s": report.wall_time_s,
    }


def count_epoch(module: Any) -> int | None:
    """Batches in one epoch of the case's data: its cardinality, else counted by reading."""
    dataset = module.make_dataset(frozenset())
    known = int(dataset.cardinality())
    if known >= 0:
        return known
    count = 0
    for _ in dataset.take(MAX_COUNTED_BATCHES):
        count += 1
    return count or None


def epoch_length_of(epoch_batches: Sequence[int] | None) -> int | None:
    """A full epoch's batches from a truth's reading of the data (its last epoch is cut off
    once the window is read); None when the window ended inside the first epoch."""
    if not epoch_batches or len(epoch_batches) < 2 or not epoch_batches[0]:
        return None
    return int(epoch_batches[0])


def epochs_for(epoch_length: int | None, needed: int) -> int:
    """Epochs that give the diagnosis `needed` steps, plus one to spare."""
    if not epoch_length:
        return 2
    return math.ceil((needed + 2) / epoch_length) + 1


# --- rounds in alternation, from the parent ------------------------------------------------
def run_worker_child(
    case: str,
    role: str,
    *,
    warmup: int,
    steps: int,
    bench_seconds: float,
    pairs: int = TRUTH_PAIRS,
    epoch_length: int | None = None,
) -> dict[str, Any]:
    """One worker (`role`: truth or pipediag) in a fresh Python process; a failure becomes
    a row with `error`, not a crash."""
    with tempfile.TemporaryDirectory(prefix="pipediag-acc-") as tmp:
        result_file = Path(tmp) / "result.json"
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            case,
            "--role",
            role,
            "--warmup",
            str(warmup),
            "--steps",
            str(steps),
            "--bench-seconds",
            str(bench_seconds),
            "--truth-pairs",
            str(pairs),
            "--result-file",
            str(result_file),
        ]
        if epoch_length:
            cmd += ["--epoch-length", str(epoch_length)]
        proc, wall = run_child(cmd, timeout_s=CASE_TIMEOUT_S)
        if proc.returncode != 0 or not result_file.is_file():
            return {"error": f"exit {proc.returncode}: {tail(proc.stderr)}", "wall_s": wall}
        result: dict[str, Any] = json.loads(result_file.read_text())
        result["wall_s"] = wall
        return result


def run_case(
    case: str,
    *,
    warmup: int,
    steps: int,
    bench_seconds: float,
    repeats: int = 1,
    pairs: int = TRUTH_PAIRS,
) -> dict[str, Any]:
    """A case's rounds in alternation: truth, diagnosis, truth, diagnosis, ...; one row."""
    truths: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    for index in range(repeats):
        truth = run_worker_child(
            case, TRUTH, warmup=warmup, steps=steps, bench_seconds=bench_seconds, pairs=pairs
        )
        truths.append({"round": index + 1, **truth})
        run = run_worker_child(
            case,
            PIPEDIAG,
            warmup=warmup,
            steps=steps,
            bench_seconds=bench_seconds,
            epoch_length=epoch_length_of(truth.get("epoch_batches")),
        )
        runs.append({"round": index + 1, **run})
        print(f"    round {index + 1}/{repeats}: {describe_round(truth, run)}", flush=True)
    return combine_rounds(case, truths, runs)


def describe_round(truth: dict[str, Any], run: dict[str, Any]) -> str:
    """One progress line: the round's true cost and pipediag's."""
    said = "truth failed" if "error" in truth else f"true cost {fmt(truth.get('cost'), '.0%')}"
    if "error" in run:
        return f"{said}; pipediag failed"
    return (
        f"{said}; pipediag {fmt(run.get('input_cost_fraction'), '.0%')} "
        f"{format_interval(run.get('input_cost_interval'))} {run.get('verdict')}"
    )


def median_of(rows: Sequence[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return median(values) if values else None


def median_run(runs: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The run whose input cost is the median (the lower middle one for an even count);
    without costs, the first run that finished."""
    done = [r for r in runs if "error" not in r]
    costed = sorted(
        (r for r in done if r.get("input_cost_fraction") is not None),
        key=lambda r: r["input_cost_fraction"],
    )
    if costed:
        return costed[(len(costed) - 1) // 2]
    return done[0] if done else None


def combine_rounds(
    case: str, truths: Sequence[dict[str, Any]], runs: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """The case's row: the truth's medians over its rounds, the median run's diagnosis."""
    measured = [t for t in truths if "error" not in t]
    done = [r for r in runs if "error" not in r]
    meta = next(iter(measured + done), None)
    row: dict[str, Any] = {"case": case}
    if meta is not None:
        row.update({k: meta[k] for k in case_meta_keys() if k in meta})
    ratio = median_of(measured, "ratio")
    cost = median_of(measured, "cost")
    row.update(
        {
            "rounds": len(truths),
            "truth_pipeline_batches_per_s": median_of(measured, "pipeline_batches_per_s"),
            "truth_compute_steps_per_s": median_of(measured, "compute_steps_per_s"),
            "truth_ratio": ratio,
            "truth": classify_ratio(ratio),
            "truth_training_steps_per_s": median_of(measured, "training_steps_per_s"),
            "truth_compute_alone_steps_per_s": median_of(measured, "compute_alone_steps_per_s"),
            "truth_cost": cost,
            "truth_round_costs": [t.get("cost") for t in measured],
            "truth_pair_cost_spread": spread_summary(
                [c for t in measured for c in t.get("pair_costs") or []]
            ),
            "truth_by_cost": classify_cost(cost),
        }
    )
    chosen = median_run(runs)
    if chosen is None:
        row.update(
            {
                "verdict": UNKNOWN,
                "truth_rounds": [_without_meta(t) for t in truths],
                "runs": [_without_meta(r) for r in runs],
            }
        )
        row["error"] = "; ".join(f"round {r['round']}: {r['error']}" for r in runs) or "no run"
        return row
    row.update({k: chosen.get(k) for k in RUN_KEYS})
    row["median_round"] = chosen.get("round")
    row["pipediag_costs"] = [r.get("input_cost_fraction") for r in done]
    row["truth_rounds"] = [_without_meta(t) for t in truths]
    row["runs"] = [_without_meta(r) for r in runs]
    failed = [f"round {r['round']} {kind}: {r['error']}" for kind, rows in
              ((TRUTH, truths), (PIPEDIAG, runs)) for r in rows if "error" in r]  # fmt: skip
    if failed:
        row["round_errors"] = failed
    return row


def case_meta_keys() -> tuple[str, ...]:
    return ("style", "intended", "bottleneck", "expected_suggestion")


def _without_meta(round_row: dict[str, Any]) -> dict[str, Any]:
    """A round's figures without the case's metadata, which the case row carries once."""
    return {k: v for k, v in round_row.items() if k != "case" and k not in case_meta_keys()}


# --- run-to-run spread ---------------------------------------------------------------------
def run_spread(
    case: str,
    *,
    runs: int,
    warmup: int,
    steps: int,
    bench_seconds: float,
    epoch_length: int | None,
) -> dict[str, Any]:
    """`runs` diagnoses of one case, back to back, and their spread."""
    done = []
    for index in range(runs):
        run = run_worker_child(
            case,
            PIPEDIAG,
            warmup=warmup,
            steps=steps,
            bench_seconds=bench_seconds,
            epoch_length=epoch_length,
        )
        kept = {"run": index + 1, **{k: run.get(k) for k in SPREAD_KEYS}}
        if "error" in run:
            kept = {"run": index + 1, "error": run["error"]}
        done.append(kept)
        print(f"    run {index + 1}/{runs}: {describe_run(kept)}", flush=True)
    return spread_of(case, done)


def describe_run(run: dict[str, Any]) -> str:
    if "error" in run:
        return "failed"
    return (
        f"{fmt(run.get('input_cost_fraction'), '.0%')} "
        f"{format_interval(run.get('input_cost_interval'))} {run.get('verdict')}"
    )


def spread_of(case: str, runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Spread of the reported cost against the intervals' width, and label agreement.

    A run without an interval counts as the point [cost, cost] for agreement and adds no
    width; with no interval in any run, the spread goal is not judged (None).
    """
    costed = [r for r in runs if "error" not in r and r.get("input_cost_fraction") is not None]
    costs = [r["input_cost_fraction"] for r in costed]
    widths = [
        r["input_cost_interval"][1] - r["input_cost_interval"][0]
        for r in costed
        if r.get("input_cost_interval")
    ]
    spread = max(costs) - min(costs) if costs else None
    width = sum(widths) / len(widths) if widths else None
    bounds = [
        tuple(r["input_cost_interval"])
        if r.get("input_cost_interval")
        else (r["input_cost_fraction"], r["input_cost_fraction"])
        for r in costed
    ]
    agrees = agreeing_runs(bounds) if len(bounds) > 1 else []
    labels = [r.get("verdict") for r in runs if "error" not in r]
    return {
        "case": case,
        "runs": list(runs),
        "cost_spread": spread,
        "mean_interval_width": width,
        "intervals": len(widths),
        "spread_within_interval": None if spread is None or width is None else spread <= width,
        "labels": labels,
        "labels_same": len(set(labels)) == 1 if labels else None,
        "runs_agreeing": sum(agrees),
        "runs_judged": len(agrees),
        "labels_agree": all(agrees) if agrees else None,
    }


# --- summaries -----------------------------------------------------------------------------
def format_interval(interval: Sequence[float] | None) -> str:
    """[low,high] in percent, without spaces (table cells stay one word)."""
    if not interval:
        return "-"
    return f"[{interval[0]:.0%},{interval[1]:.0%}]"


def judged_runs(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The diagnoses a row stands for: its finished runs, or the row itself without runs."""
    runs = [r for r in result.get("runs") or [] if "error" not in r]
    return runs or [result]


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
    print("(truth: medians over a case's rounds; pipediag: its median run by input cost)")
    print("(wait, cost: pipediag's wait share and input cost; true cost: 1 - A/T, below)")
    for r in results:
        if "error" in r:
            print(f"\n{r['case']} failed: {r['error']}")
        for error in r.get("round_errors") or []:
            print(f"\n{r['case']} {error}")

    matrix = confusion((r["truth"], run["verdict"]) for r in results for run in judged_runs(r))
    right, total = accuracy_of(matrix)
    print("\nConfusion (rows: P/C truth, columns: pipediag's verdict; one count per diagnosis)")
    print(format_confusion(matrix))
    print(f"verdicts right against the P/C truth: {right}/{total} diagnoses")

    cost_summary = summarise_cost(results)
    alternation = summarise_alternation(results)

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
        print(
            f"expected top suggestion first: {first}/{len(judged)} cases that declare one "
            "(each case's median run)"
        )
    return {
        "confusion": matrix,
        "verdicts_right": right,
        "verdicts_total": total,
        **cost_summary,
        **alternation,
        "suggestion_first": first,
        "suggestion_judged": len(judged),
        "cases_with_suggestions": len(with_suggestions),
    }


def summarise_cost(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Input cost: the truth's figures, pipediag's with its interval, the errors against the
    goal, and the cost-truth verdicts."""
    truths = {r["case"]: _cost_floor(r.get("truth_cost")) for r in results}
    rows = []
    for r in results:
        if "error" in r:
            continue
        split = r.get("cost_split") or {}
        rounds = r.get("truth_round_costs") or r.get("truth_cost_pairs") or []
        runs = [run for run in r.get("runs") or [] if "error" not in run]
        truth_label = r.get("truth_by_cost", UNKNOWN)
        error = _abs_error(r.get("input_cost_fraction"), truths[r["case"]])
        rows.append(
            [
                r["case"],
                fmt(r.get("truth_training_steps_per_s")),
                fmt(r.get("truth_compute_alone_steps_per_s")),
                fmt(r.get("truth_cost"), ".0%"),
                " ".join(fmt(c, ".0%") for c in rounds) or "-",
                truth_label,
                fmt(r.get("pipediag_training_steps_per_s")),
                fmt(r.get("pipediag_compute_alone_steps_per_s")),
                r.get("pipediag_compute_alone_source") or "-",
                fmt(r.get("input_cost_fraction"), ".0%"),
                format_interval(r.get("input_cost_interval")),
                fmt(error, ".1%"),
                " ".join(fmt(run.get("input_cost_fraction"), ".0%") for run in runs) or "-",
                fmt(r.get("input_wait_fraction"), ".0%"),
                fmt(median_of(runs, "compute_alone_duration_s"), ".1f"),
                fmt(median_of(runs, "alternation_blocks"), ".0f"),
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
        "rounds",
        "cost truth",
        "pd A",
        "pd T",
        "pd T from",
        "pd cost",
        "90% interval",
        "|err|",
        "pd runs",
        "pd wait",
        "alt s",
        "blocks",
        "dominant",
        "pipediag",
        "right",
    ]
    print("\nInput cost (truth: A = training as the script ran, T = step on one held batch)")
    print(format_table(headers, rows))
    print(
        "(rounds: each truth measurement's cost, median = true cost; pd cost, interval: the"
        " median run's; pd runs: every run's cost; alt s, blocks: compute_alone.duration_s"
        " and its blocks, medians over the runs)"
    )

    cost_error = median_abs_error(
        [(r.get("input_cost_fraction"), truths[r["case"]]) for r in results]
    )
    wait_error = median_abs_error(
        [(r.get("input_wait_fraction"), truths[r["case"]]) for r in results]
    )
    run_error = median_abs_error(
        [
            (run.get("input_cost_fraction"), truths[r["case"]])
            for r in results
            for run in judged_runs(r)
        ]
    )
    scored_cost = sum(
        r.get("input_cost_fraction") is not None and truths[r["case"]] is not None for r in results
    )
    scored_wait = sum(
        r.get("input_wait_fraction") is not None and truths[r["case"]] is not None for r in results
    )
    goal = None if cost_error is None else cost_error <= COST_ERROR_GOAL
    print(
        f"median |input cost - true cost|: {fmt(cost_error, '.1%')} over {scored_cost} cases "
        f"(goal <= {COST_ERROR_GOAL:.0%}: {_pass(goal)}); over every diagnosis: "
        f"{fmt(run_error, '.1%')}; median |wait share - true cost|: {fmt(wait_error, '.1%')} "
        f"over {scored_wait} cases"
    )

    matrix = confusion(
        (r.get("truth_by_cost", UNKNOWN), run["verdict"]) for r in results for run in judged_runs(r)
    )
    right, total = accuracy_of(matrix)
    print("\nConfusion (rows: cost truth, columns: pipediag's verdict; one count per diagnosis)")
    print(format_confusion(matrix))
    print(f"verdicts right against the cost truth: {right}/{total} diagnoses")

    phase_rows = phase_comparison(results)
    if phase_rows:
        print("\nPhases (pipediag's, against the true cost of the same epochs, same round)")
        print(
            format_table(
                [
                    "case",
                    "phase",
                    "steps",
                    "pd cost",
                    "true cost",
                    "pd label",
                    "cost truth",
                    "round",
                ],
                phase_rows,
            )
        )
    return {
        "cost_median_abs_error": cost_error,
        "cost_error_goal": COST_ERROR_GOAL,
        "cost_error_goal_met": goal,
        "cost_median_abs_error_runs": run_error,
        "wait_median_abs_error_against_cost": wait_error,
        "cost_scored_cases": scored_cost,
        "wait_scored_cases": scored_wait,
        "cost_confusion": matrix,
        "cost_verdicts_right": right,
        "cost_verdicts_total": total,
        "phases": phase_rows,
    }


def summarise_alternation(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The wall time the alternation adds to a diagnosis, over every run of the suite."""
    runs = [run for r in results for run in r.get("runs") or [] if "error" not in run]
    spans = [r["compute_alone_duration_s"] for r in runs if r.get("compute_alone_duration_s")]
    blocks = [r["alternation_blocks"] for r in runs if r.get("alternation_blocks")]
    shares = [
        r["compute_alone_duration_s"] / r["diagnose_wall_s"]
        for r in runs
        if r.get("compute_alone_duration_s") and r.get("diagnose_wall_s")
    ]
    span = median(spans) if spans else None
    print(
        f"\nalternation (report.compute_alone.duration_s): median {fmt(span, '.1f', ' s')} over "
        f"{len(spans)} diagnoses, {fmt(median(shares) if shares else None, '.0%')} of a "
        "diagnosis's wall time; "
        + (
            f"blocks: median {median(blocks):.0f} ({min(blocks)}-{max(blocks)})"
            if blocks
            else "no blocks in any report (the step alone ran in one piece)"
        )
    )
    return {
        "alternation_duration_s": spread_summary(spans),
        "alternation_share_of_wall": spread_summary(shares),
        "alternation_blocks": spread_summary(blocks),
    }


def summarise_spread(spreads: list[dict[str, Any]]) -> dict[str, Any]:
    """Print the run-to-run spread of each spread case against its intervals."""
    rows = [
        [
            s["case"],
            len(s["runs"]),
            " ".join(fmt(r.get("input_cost_fraction"), ".0%") for r in s["runs"]),
            " ".join(format_interval(r.get("input_cost_interval")) for r in s["runs"]),
            fmt(s["cost_spread"], ".1%"),
            fmt(s["mean_interval_width"], ".1%"),
            _pass(s["spread_within_interval"]),
            " ".join(s["labels"]) or "-",
            f"{s['runs_agreeing']}/{s['runs_judged']}",
            _pass(s["labels_agree"]),
        ]
        for s in spreads
    ]
    headers = [
        "case",
        "runs",
        "costs",
        "90% intervals",
        "spread",
        "mean width",
        "spread <= width",
        "labels",
        "agreeing",
        "agree",
    ]
    print("\nRun-to-run spread (diagnoses back to back; spread = max - min of the cost)")
    print(format_table(headers, rows))
    within = [
        s["spread_within_interval"] for s in spreads if s["spread_within_interval"] is not None
    ]
    agree = [s["labels_agree"] for s in spreads if s["labels_agree"] is not None]
    print(
        f"spread no wider than the mean interval: {sum(within)}/{len(within)} cases"
        + ("" if within else " (no intervals reported: not judged)")
        + f"; labels agree within their intervals: {sum(agree)}/{len(agree)} cases"
        " (a run agrees when every other run's interval overlaps a band, 5%/20%, its own"
        " interval touches)"
    )
    return {
        "spread_cases": [s["case"] for s in spreads],
        "spread_within_interval": sum(within),
        "spread_judged": len(within),
        "labels_agree": sum(agree),
        "labels_judged": len(agree),
    }


def _pass(met: bool | None) -> str:
    return {True: "PASS", False: "MISS", None: "-"}[met]


def _abs_error(estimate: float | None, truth: float | None) -> float | None:
    return None if estimate is None or truth is None else abs(estimate - truth)


def _cost_floor(cost: float | None) -> float | None:
    """A true cost below zero is noise (A a little faster than T): scored as zero."""
    return None if cost is None else max(0.0, cost)


def phase_comparison(results: list[dict[str, Any]]) -> list[list[Any]]:
    """One row per pipediag phase: its cost beside the true cost of the same epochs.

    Each run's phases are held against the truth of its own round (a row without rounds:
    against its own figures). pipediag numbers epochs from 0 (`PhaseVerdict.first_epoch`),
    the truth from 1.
    """
    rows = []
    for r in results:
        truths = {t.get("round"): t for t in r.get("truth_rounds") or [] if "error" not in t}
        pairs = [
            (run, truths.get(run.get("round"), {}))
            for run in r.get("runs") or []
            if "error" not in run
        ]
        if not r.get("runs"):
            pairs = [
                (
                    r,
                    {
                        "epochs": r.get("truth_cost_epochs"),
                        "compute_alone_steps_per_s": r.get("truth_compute_alone_steps_per_s"),
                    },
                )
            ]
        for run, truth in pairs:
            for phase in run.get("phases") or []:
                cost = phase_cost(
                    truth.get("epochs") or [],
                    phase["first_epoch"] + 1,
                    phase["last_epoch"] + 1,
                    truth.get("compute_alone_steps_per_s"),
                )
                rows.append(
                    [
                        r["case"],
                        phase["name"],
                        phase["steps"],
                        fmt(phase.get("input_cost_fraction"), ".0%"),
                        fmt(cost, ".0%"),
                        phase.get("label", UNKNOWN),
                        classify_cost(cost),
                        run.get("round") or "-",
                    ]
                )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(NAME, __doc__)
    parser.add_argument("--cases", help="comma-separated case names (default: all)")
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help=f"rounds of (truth, diagnosis) per case (default: {REPEATS}; --quick: "
        f"{QUICK_REPEATS})",
    )
    parser.add_argument(
        "--spread-cases",
        help="comma-separated cases diagnosed --spread-runs times back to back (default: "
        f"{','.join(SPREAD_CASES)}; --quick: none unless given)",
    )
    parser.add_argument(
        "--spread-runs",
        type=int,
        default=None,
        help=f"diagnoses per spread case (default: {SPREAD_RUNS}; --quick: {QUICK_SPREAD_RUNS}; "
        "0: no spread)",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--role", choices=(TRUTH, PIPEDIAG), help=argparse.SUPPRESS)
    parser.add_argument("--epoch-length", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--truth-pairs", type=int, default=TRUTH_PAIRS, help=argparse.SUPPRESS)
    parser.add_argument("--warmup", type=int, default=WARMUP_STEPS, help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=None, help="measured steps per case")
    parser.add_argument("--bench-seconds", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--result-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    steps = args.steps or (QUICK_MEASURED_STEPS if args.quick else MEASURED_STEPS)
    bench_seconds = args.bench_seconds or (QUICK_BENCH_SECONDS if args.quick else BENCH_SECONDS)

    if args.worker:
        if args.role == TRUTH:
            result = truth_worker(
                args.worker, warmup=args.warmup, steps=steps, pairs=args.truth_pairs
            )
        else:
            result = pipediag_worker(
                args.worker,
                warmup=args.warmup,
                steps=steps,
                bench_seconds=bench_seconds,
                epoch_length=args.epoch_length,
            )
        args.result_file.write_text(json.dumps(result))
        return 0

    repeats = args.repeats or (QUICK_REPEATS if args.quick else REPEATS)
    names = args.cases.split(",") if args.cases else case_names()
    if args.spread_cases:
        spread_names = args.spread_cases.split(",")
    else:
        spread_names = [] if args.quick else list(SPREAD_CASES)
    spread_runs = args.spread_runs
    if spread_runs is None:
        spread_runs = QUICK_SPREAD_RUNS if args.quick else SPREAD_RUNS
    if spread_runs < 2:
        spread_names = []
    unknown = sorted(set(names + spread_names) - set(case_names()))
    if unknown:
        parser.error(f"no such case: {', '.join(unknown)}")
    if repeats < 1:
        parser.error("--repeats must be at least 1")
    results = []
    for name in names:
        print(f"[{len(results) + 1}/{len(names)}] {name}, {repeats} round(s) ...", flush=True)
        results.append(
            run_case(
                name,
                warmup=args.warmup,
                steps=steps,
                bench_seconds=bench_seconds,
                repeats=repeats,
            )
        )
    epoch_lengths = {
        r["case"]: epoch_length_of(t.get("epoch_batches"))
        for r in results
        for t in r.get("truth_rounds") or []
        if "error" not in t
    }
    spreads = []
    for index, name in enumerate(spread_names):
        print(
            f"[spread {index + 1}/{len(spread_names)}] {name}, {spread_runs} runs ...", flush=True
        )
        spreads.append(
            run_spread(
                name,
                runs=spread_runs,
                warmup=args.warmup,
                steps=steps,
                bench_seconds=bench_seconds,
                epoch_length=epoch_lengths.get(name),
            )
        )
    print()
    summary = summarise(results)
    if spreads:
        # The spread cases' rows live in the summary, so `cases` stays one row per case
        # with its truth (fix_efficacy.py reads them).
        summary.update(summarise_spread(spreads), spread=spreads)
    settings = {
        "warmup_steps": args.warmup,
        "measured_steps": steps,
        "cache_batches": CACHE_BATCHES,
        "bench_seconds": bench_seconds,
        "repeats": repeats,
        "truth_pairs": TRUTH_PAIRS,
        "spread_cases": spread_names,
        "spread_runs": spread_runs if spread_names else 0,
    }
    write_results(
        args.json, NAME, settings=settings, summary=summary, cases=results, quick=args.quick
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
