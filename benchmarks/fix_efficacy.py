"""Fix efficacy: apply pipediag's top suggestion, measure the new rate, compare with the best.

For each case of the suite whose measured truth is input-bound (the accuracy benchmark's
truth, taken from its results file or measured here the same way):

1. pipediag's top suggestion is read (`report.suggestions[0]`);
2. when the case declares how to apply that suggestion (`FIXES`: rule prefix -> `--fix`
   name), the case is run with that fix; the hand-tuned variant (`--tuned`) is the best
   known configuration, and the unmodified case the baseline;
3. all three run without pipediag, in rounds (baseline, fixed, tuned, repeated), each
   timing its own steps (`--rate-file`); medians are reported.

Figures: the fixed rate as a fraction of the tuned one, the measured end-to-end speedup
(fixed / baseline), and the error of pipediag's figure for its top fix: its one gain
(`Suggestion.gain`), measured on training where the fix was tried there (the train step fed
by the fixed copy of the pipeline, interleaved with the original: an independent check of
that in-run measurement against whole runs), else its stage held, else on the pipeline
alone; with no gain measured, the estimate that ordered it. The table says which.

    python benchmarks/fix_efficacy.py                                   # diagnoses each case
    python benchmarks/fix_efficacy.py --accuracy benchmarks/results/accuracy.json
    python benchmarks/fix_efficacy.py --quick
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import accuracy
from benchmarks._common import (
    CASES_DIR,
    INPUT_BOUND,
    TIMED_OUT,
    add_raw_option,
    base_parser,
    case_info,
    case_names,
    fix_for,
    fmt,
    format_table,
    load_case,
    median,
    relative_error,
    run_child,
    split_raw,
    spread_summary,
    tail,
    write_results,
)

NAME = "fix_efficacy"
ROUNDS = 3
QUICK_ROUNDS = 1
STEPS = 150
QUICK_STEPS = 40
EPOCHS = 100  # --max-steps ends each run
RUN_TIMEOUT_S = 120  # a run takes under 30 s; a hung one fails sooner
BASELINE, FIXED, TUNED = "baseline", "fixed", "tuned"
# Every run's rate: kept only with --raw; the results keep their spread.
RAW_KEYS = ("rates_steps_per_s",)


def case_rate(case: str, extra: list[str], steps: int) -> float | None:
    """The case's own steps/s (after its warm-up), run plainly, without pipediag."""
    return case_rates(case, extra, steps).get("steps_per_s")


def case_rates(
    case: str, extra: list[str], steps: int, *, seconds: float | None = None
) -> dict[str, float | None]:
    """One plain run's rates: `steps_per_s` (after its warm-up), `steady_steps_per_s` (its
    epoch boundaries left out) and `after_first_epoch_steps_per_s` (from the second epoch's
    start: the first epoch's one-off costs left out); {} where the run failed. It ends
    after `steps` steps, or `seconds` after its warm-up, whichever comes first."""
    with tempfile.TemporaryDirectory(prefix="pipediag-fix-") as tmp:
        rate_file = Path(tmp) / "rate.json"
        cmd = [
            sys.executable,
            str(CASES_DIR / f"{case}.py"),
            *extra,
            "--epochs",
            str(EPOCHS),
            "--max-steps",
            str(steps),
            *(["--max-seconds", str(seconds)] if seconds is not None else []),
            "--rate-file",
            str(rate_file),
        ]
        proc, _ = run_child(cmd, timeout_s=RUN_TIMEOUT_S, done_file=rate_file)
        if proc.returncode == TIMED_OUT and rate_file.is_file():
            # TensorFlow has hung at exit after the run was timed (a `from_generator` case):
            # the rate was written when training ended, so it stands.
            print(f"    {case} {' '.join(extra)} hung after writing its rate: the rate is used")
        elif proc.returncode != 0 or not rate_file.is_file():
            print(
                f"    {case} {' '.join(extra)} failed ({proc.returncode}): {tail(proc.stderr, 5)}"
            )
            return {}
        found = json.loads(rate_file.read_text())
        return {
            key: float(found[key]) if found.get(key) is not None else None
            for key in ("steps_per_s", "steady_steps_per_s", "after_first_epoch_steps_per_s")
        }


# How each basis of the top suggestion's gain is said (`Suggestion.gain.basis`).
GAIN_KINDS = {
    "training": "measured on training, in the run",
    "held": "at most, its stage held on training",
    "input-free": "at most, all input free on training",
    "pipeline-alone": "measured on the pipeline alone",
    "step-alone": "measured on the train step alone",
}


def predicted(result: dict[str, Any]) -> tuple[float | None, str]:
    """pipediag's figure for its top suggestion, and which it is: its one measured gain,
    else the estimate that ordered it."""
    gain, basis = result.get("top_gain"), result.get("top_gain_basis")
    if gain is not None and basis in GAIN_KINDS:
        return float(gain), GAIN_KINDS[basis]
    if result.get("top_estimate") is not None:
        return float(result["top_estimate"]), "estimate (not measured)"
    # an accuracy file recorded before the one gain (report schema 5)
    for key, label in (
        ("top_training_speedup", GAIN_KINDS["training"]),
        ("top_predicted_speedup", "estimate (not measured)"),
        ("top_verified_speedup", GAIN_KINDS["pipeline-alone"]),
        ("top_estimated_speedup", "estimate (not measured)"),
    ):
        if result.get(key) is not None:
            return float(result[key]), label
    return None, "-"


def evaluate(diagnosis: dict[str, Any], *, rounds: int, steps: int) -> dict[str, Any]:
    info = case_info(load_case(diagnosis["case"]))
    top = diagnosis.get("top_suggestion")
    fix = fix_for(info, top)
    variants = {BASELINE: [], TUNED: ["--tuned"]}
    if fix is not None:
        variants[FIXED] = ["--fix", fix]
    rates: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, extra in variants.items():
            rate = case_rate(info.name, extra, steps)
            if rate is not None:
                rates[name].append(rate)
    med = {name: median(values) if values else None for name, values in rates.items()}
    base, fixed, tuned = med.get(BASELINE), med.get(FIXED), med.get(TUNED)
    measured = fixed / base if fixed and base else None
    prediction, kind = predicted(diagnosis)
    return {
        "case": info.name,
        "top_suggestion": top,
        "fix_applied": fix,
        "rates_steps_per_s": rates,
        "rate_spread_steps_per_s": {name: spread_summary(values) for name, values in rates.items()},
        "median_steps_per_s": med,
        "tuned_speedup": tuned / base if tuned and base else None,
        "fixed_speedup": measured,
        "fixed_fraction_of_tuned": fixed / tuned if fixed and tuned else None,
        "predicted_speedup": prediction,
        "predicted_kind": kind,
        "prediction_error": relative_error(prediction, measured)
        if prediction and measured
        else None,
    }


def load_diagnoses(
    path: Path | None, *, quick: bool, wanted: set[str] | None
) -> list[dict[str, Any]]:
    """The accuracy benchmark's per-case rows: from its results file, or measured now."""
    if path is not None:
        document = json.loads(path.read_text())
        print(f"truth and suggestions from {path}")
        return [c for c in document["cases"] if wanted is None or c["case"] in wanted]
    steps = accuracy.QUICK_MEASURED_STEPS if quick else accuracy.MEASURED_STEPS
    bench = accuracy.QUICK_BENCH_SECONDS if quick else accuracy.BENCH_SECONDS
    candidates = [
        n
        for n in case_names()
        if (wanted is None and case_info(load_case(n)).intended == INPUT_BOUND)
        or (wanted is not None and n in wanted)
    ]
    rows = []
    for name in candidates:
        print(f"  diagnosing {name} (truth and top suggestion) ...", flush=True)
        rows.append(
            accuracy.run_case(name, warmup=accuracy.WARMUP_STEPS, steps=steps, bench_seconds=bench)
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(NAME, __doc__)
    parser.add_argument("--accuracy", type=Path, help="reuse an accuracy.py results file")
    parser.add_argument("--cases", help="comma-separated case names (default: input-bound ones)")
    add_raw_option(parser, "every run's steps/s")
    args = parser.parse_args(argv)
    rounds = QUICK_ROUNDS if args.quick else ROUNDS
    steps = QUICK_STEPS if args.quick else STEPS

    wanted = set(args.cases.split(",")) if args.cases else None
    diagnoses = load_diagnoses(args.accuracy, quick=args.quick, wanted=wanted)
    chosen = [d for d in diagnoses if d.get("truth") == INPUT_BOUND]
    skipped = [d["case"] for d in diagnoses if d.get("truth") != INPUT_BOUND]
    if skipped:
        print(f"not input-bound by measurement, skipped: {', '.join(skipped)}")
    if not any(d.get("suggestions") for d in chosen):
        print(
            "pipediag made NO suggestions on these cases (no advisor in this build?): "
            "only the baseline and the hand-tuned variant are measured"
        )

    results = []
    for diagnosis in chosen:
        print(f"  measuring {diagnosis['case']} ...", flush=True)
        results.append(evaluate(diagnosis, rounds=rounds, steps=steps))

    rows = [
        [
            r["case"],
            r["top_suggestion"] or "(none)",
            r["fix_applied"] or "-",
            fmt(r["median_steps_per_s"].get(BASELINE)),
            fmt(r["median_steps_per_s"].get(FIXED)),
            fmt(r["median_steps_per_s"].get(TUNED)),
            fmt(r["tuned_speedup"], ".2f", "x"),
            fmt(r["fixed_fraction_of_tuned"], ".0%"),
            fmt(r["fixed_speedup"], ".2f", "x"),
            fmt(r["predicted_speedup"], ".2f", "x"),
            r["predicted_kind"],
            fmt(r["prediction_error"], "+.0%"),
        ]
        for r in results
    ]
    print()
    headers = [
        "case",
        "top suggestion",
        "fix",
        "base st/s",
        "fixed st/s",
        "tuned st/s",
        "tuned/base",
        "fixed/tuned",
        "measured",
        "predicted",
        "prediction",
        "error",
    ]
    print(format_table(headers, rows))
    errors = [abs(r["prediction_error"]) for r in results if r["prediction_error"] is not None]
    fractions = [r["fixed_fraction_of_tuned"] for r in results if r["fixed_fraction_of_tuned"]]
    summary = {
        "cases": len(results),
        "fixes_applied": sum(r["fix_applied"] is not None for r in results),
        "median_fraction_of_tuned": median(fractions) if fractions else None,
        "median_abs_prediction_error": median(errors) if errors else None,
    }
    print(
        f"fixes applied {summary['fixes_applied']}/{summary['cases']}; median fixed/tuned "
        f"{fmt(summary['median_fraction_of_tuned'], '.0%')}; median |prediction error| "
        f"{fmt(summary['median_abs_prediction_error'], '.0%')}"
    )
    cases, raw = split_raw(results, RAW_KEYS, ["case"])
    write_results(
        args.json,
        NAME,
        settings={"rounds": rounds, "steps": steps},
        summary=summary,
        cases=cases,
        quick=args.quick,
        raw=raw,
        raw_to=args.raw,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
