"""Time to verdict: what a diagnosis costs against the script alone, and how soon it speaks.

Each case runs in fresh processes, as a user would run it, twice per round: plainly
(`python script.py args`, no pipediag) and diagnosed (`python -m pipediag run --quiet
--out TMP script args`), alternating (plain, pipediag, plain, pipediag, ...) so the
machine's drift falls on both alike. Per case, medians over the rounds of:

- plain s, pipediag s: each process's wall time to its end, Python start and TensorFlow
  import included; ratio: pipediag / plain, per round, then the median (goal: <= 1.3x);
- to verdict s: from the script's first train step to the printed verdict line, both on
  the report's time axis (`first_verdict_s` minus the first step's `start_s`; goal: 10 s);
- the phases the report times (`phase_times_s`): pipeline alone, train steps, compute
  alone, deep analysis (stage timing and fix trials, only when input costs >= 5%),
  analysis, the profiler's own start/stop cost under `fit`; "startup+other" is the
  process wall time minus them (interpreter, imports, model building, writing files);
- idle s: seconds of the pipeline-alone and deep-analysis phases in which the process
  used under 10% of one core (from the report's host samples): time spent waiting on
  nothing that a shorter phase could give back.

Cases: the two bundled examples and two suite cases (benchmarks/cases), all `--epochs 2`.

    python benchmarks/time_to_verdict.py                       # 3 rounds per case, medians
    python benchmarks/time_to_verdict.py --quick               # 1 round per case
    python benchmarks/time_to_verdict.py --examples input_bound_fit --quick
    python benchmarks/time_to_verdict.py --cases balanced_fit,no_prefetch_loop
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (
    CASES_DIR,
    EXAMPLES_DIR,
    REPO_ROOT,
    base_parser,
    case_names,
    checked,
    fmt,
    format_table,
    median,
    run_child,
    tail,
    write_results,
)

NAME = "time_to_verdict"
EXAMPLES = ("input_bound_fit", "compute_bound_loop")
SUITE_CASES = ("balanced_fit", "tfrecord_slow_read_fit")
CASE_ARGS = ("--epochs", "2")
RUNS = 3
QUICK_RUNS = 1
RUN_TIMEOUT_S = 300
# Phases named in the report's `phase_times_s`, in the order they happen.
PHASES = (
    "pipeline_benchmark",
    "train",
    "compute_alone",
    "deep_analysis",
    "analysis",
    "profiler_overhead",
)
# Phases in which the diagnosis runs the pipeline itself: dead time there is its own.
IDLE_PHASES = ("pipeline_benchmark", "deep_analysis")
IDLE_CPU_PCT = 10.0  # process CPU under this (per core, as psutil reports it) counts as idle
GOAL_RATIO = 1.3
GOAL_TO_VERDICT_S = 10.0


@dataclass(frozen=True)
class Case:
    """A script to time: its name in the table, its path and its arguments."""

    name: str
    path: Path
    args: tuple[str, ...] = CASE_ARGS

    @property
    def shown(self) -> str:
        return (
            str(self.path.relative_to(REPO_ROOT))
            if self.path.is_relative_to(REPO_ROOT)
            else str(self.path)
        )


def example_case(name: str) -> Case:
    return Case(name, EXAMPLES_DIR / f"{name.removesuffix('.py')}.py")


def suite_case(name: str) -> Case:
    return Case(name, CASES_DIR / f"{name.removesuffix('.py')}.py")


def example_names() -> list[str]:
    return sorted(p.stem for p in EXAMPLES_DIR.glob("*.py") if not p.name.startswith("_"))


def select_cases(examples: str | None, cases: str | None) -> tuple[list[Case], list[str]]:
    """The cases to run, and the names that do not exist.

    With neither option, the default set (both examples and `SUITE_CASES`); with either,
    exactly what was named (`--examples input_bound_fit` alone runs that one example).
    """
    if examples is None and cases is None:
        return [*map(example_case, EXAMPLES), *map(suite_case, SUITE_CASES)], []
    wanted_examples = _names(examples)
    wanted_cases = _names(cases)
    unknown = [f"example {n}" for n in wanted_examples if n not in example_names()]
    unknown += [f"case {n}" for n in wanted_cases if n not in case_names()]
    return [*map(example_case, wanted_examples), *map(suite_case, wanted_cases)], unknown


def _names(option: str | None) -> list[str]:
    return [n.strip().removesuffix(".py") for n in (option or "").split(",") if n.strip()]


# --- reading a report (pure, on the JSON dict) ----------------------------------------------
def first_step_s(report: Mapping[str, Any]) -> float | None:
    """When the script's first train step began, in seconds since the diagnosis started."""
    starts = [s["start_s"] for s in report.get("train", {}).get("steps", []) if "start_s" in s]
    return min(starts) if starts else None


def verdict_after_first_step_s(report: Mapping[str, Any]) -> float | None:
    """Seconds from the first train step to the printed verdict line (same time axis)."""
    verdict_s = report.get("first_verdict_s")
    first = first_step_s(report)
    if verdict_s is None or first is None:
        return None
    return float(verdict_s) - float(first)


def phase_seconds(report: Mapping[str, Any]) -> dict[str, float]:
    times = report.get("phase_times_s") or {}
    return {name: float(times.get(name, 0.0)) for name in PHASES}


def idle_seconds(
    report: Mapping[str, Any],
    phases: Sequence[str] = IDLE_PHASES,
    threshold_pct: float = IDLE_CPU_PCT,
) -> float | None:
    """Seconds inside the named phases' spans in which the process used < `threshold_pct`.

    A host sample's CPU share covers the time since the sample before it (psutil's
    `cpu_percent` between calls); the first sample covers one sampling interval. None
    when the report has no host samples.
    """
    host = report.get("host") or {}
    samples = sorted(host.get("samples") or [], key=lambda s: s["t_s"])
    if not samples:
        return None
    spans = [
        (float(p["start_s"]), float(p["start_s"]) + float(p["duration_s"]))
        for p in report.get("phases") or []
        if p.get("name") in phases
    ]
    interval_s = float(host.get("interval_s") or 0.0)
    idle = 0.0
    previous_t = float(samples[0]["t_s"]) - interval_s
    for sample in samples:
        t = float(sample["t_s"])
        if float(sample["process_cpu_pct"]) < threshold_pct:
            idle += sum(max(0.0, min(t, end) - max(previous_t, start)) for start, end in spans)
        previous_t = t
    return idle


# --- running ----------------------------------------------------------------------------------
def plain_run(case: Case) -> dict[str, Any]:
    """The script alone, no pipediag: its wall time to its end."""
    proc, wall = run_child([sys.executable, str(case.path), *case.args], timeout_s=RUN_TIMEOUT_S)
    if proc.returncode != 0:
        return {"wall_s": None, "error": f"exit {proc.returncode}: {tail(proc.stderr, 5)}"}
    return {"wall_s": wall}


def pipediag_run(case: Case) -> dict[str, Any]:
    """The script under `pipediag run`: wall time, and what its report says about it."""
    with tempfile.TemporaryDirectory(prefix="pipediag-ttv-") as out:
        cmd = [
            sys.executable,
            "-m",
            "pipediag",
            "run",
            "--quiet",
            "--out",
            out,
            str(case.path),
            *case.args,
        ]
        proc, wall = run_child(cmd, timeout_s=RUN_TIMEOUT_S)
        report_path = Path(out) / "report.json"
        if proc.returncode != 0 or not report_path.is_file():
            return {"wall_s": None, "error": f"exit {proc.returncode}: {tail(proc.stderr, 5)}"}
        report = json.loads(checked(report_path).read_text())
    phases = phase_seconds(report)
    return {
        "wall_s": wall,
        "report_wall_s": report.get("wall_time_s"),
        "first_verdict_s": report.get("first_verdict_s"),
        "first_step_s": first_step_s(report),
        "to_verdict_s": verdict_after_first_step_s(report),
        "phases_s": phases,
        "startup_other_s": wall - sum(phases.values()),
        "idle_s": idle_seconds(report),
        "verdict": report.get("verdict", {}).get("label"),
        "input_cost_fraction": report.get("verdict", {}).get("input_cost_fraction"),
        "measured_steps": report.get("train", {}).get("measured_steps"),
    }


def median_of(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return median(present) if present else None


def summarise(
    plain: Sequence[dict[str, Any]], diagnosed: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """Medians over the rounds; the ratio is taken per round (adjacent runs), then the median."""
    ratios = [
        d["wall_s"] / p["wall_s"]
        for p, d in zip(plain, diagnosed, strict=True)
        if p["wall_s"] and d["wall_s"]
    ]
    ok = [d for d in diagnosed if d["wall_s"] is not None]
    return {
        "plain_wall_s": median_of([p["wall_s"] for p in plain]),
        "pipediag_wall_s": median_of([d["wall_s"] for d in diagnosed]),
        "ratio": median(ratios) if ratios else None,
        "to_verdict_s": median_of([d["to_verdict_s"] for d in ok]),
        "first_verdict_s": median_of([d["first_verdict_s"] for d in ok]),
        "startup_other_s": median_of([d["startup_other_s"] for d in ok]),
        "idle_s": median_of([d["idle_s"] for d in ok]),
        **{f"{name}_s": median_of([d["phases_s"][name] for d in ok]) for name in PHASES},
    }


def run_case(case: Case, runs: int) -> dict[str, Any]:
    plain: list[dict[str, Any]] = []
    diagnosed: list[dict[str, Any]] = []
    for i in range(runs):
        plain.append(plain_run(case))
        diagnosed.append(pipediag_run(case))
        p, d = plain[-1], diagnosed[-1]
        print(
            f"  {case.name}: round {i + 1}/{runs}: plain {fmt(p['wall_s'])} s, "
            f"pipediag {fmt(d['wall_s'])} s, verdict {fmt(d.get('to_verdict_s'))} s "
            "after the first step",
            flush=True,
        )
        for run in (p, d):
            if "error" in run:
                print(f"    failed: {run['error']}", flush=True)
    verdicts = [d["verdict"] for d in diagnosed if d.get("verdict")]
    return {
        "case": case.name,
        "script": case.shown,
        "args": list(case.args),
        "plain_runs": plain,
        "pipediag_runs": diagnosed,
        "median": summarise(plain, diagnosed),
        "verdict": verdicts[-1] if verdicts else None,
    }


def goals_summary(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The goals over all cases: how many met each, and the worst case of each."""
    ratios = [r["median"]["ratio"] for r in results if r["median"]["ratio"] is not None]
    to_verdict = [
        r["median"]["to_verdict_s"] for r in results if r["median"]["to_verdict_s"] is not None
    ]
    return {
        "cases": len(results),
        "goals_met": sum(not goal_misses(r) for r in results),
        "ratio_goal_met": sum(ratio <= GOAL_RATIO for ratio in ratios),
        "to_verdict_goal_met": sum(s <= GOAL_TO_VERDICT_S for s in to_verdict),
        "worst_ratio": max(ratios) if ratios else None,
        "worst_to_verdict_s": max(to_verdict) if to_verdict else None,
    }


# --- output -----------------------------------------------------------------------------------
def goal_misses(result: Mapping[str, Any]) -> list[str]:
    m = result["median"]
    misses = []
    if m["ratio"] is not None and m["ratio"] > GOAL_RATIO:
        misses.append(f"ratio {m['ratio']:.2f}x > {GOAL_RATIO}x")
    if m["to_verdict_s"] is not None and m["to_verdict_s"] > GOAL_TO_VERDICT_S:
        misses.append(f"verdict {m['to_verdict_s']:.1f} s > {GOAL_TO_VERDICT_S:g} s")
    return misses


def print_tables(results: Sequence[Mapping[str, Any]], runs: int) -> None:
    summary_rows = [
        [
            r["case"],
            r["verdict"],
            fmt(r["median"]["plain_wall_s"]),
            fmt(r["median"]["pipediag_wall_s"]),
            fmt(r["median"]["ratio"], ".2f", "x"),
            fmt(r["median"]["to_verdict_s"]),
            fmt(r["median"]["idle_s"]),
            "; ".join(goal_misses(r)) or "met",
        ]
        for r in results
    ]
    print()
    print(
        format_table(
            [
                "case",
                "verdict",
                "plain s",
                "pipediag s",
                "ratio",
                "to verdict s",
                "idle s",
                "goals",
            ],
            summary_rows,
        )
    )
    phase_rows = [
        [
            r["case"],
            fmt(r["median"]["startup_other_s"]),
            fmt(r["median"]["pipeline_benchmark_s"]),
            fmt(r["median"]["train_s"]),
            fmt(r["median"]["compute_alone_s"]),
            fmt(r["median"]["deep_analysis_s"]),
            fmt(r["median"]["analysis_s"], ".2f"),
            fmt(r["median"]["profiler_overhead_s"], ".2f"),
            fmt(r["median"]["pipediag_wall_s"]),
        ]
        for r in results
    ]
    print()
    headers = [
        "case",
        "startup+other s",
        "pipeline alone s",
        "train s",
        "compute alone s",
        "deep analysis s",
        "analysis s",
        "profiler s",
        "wall s",
    ]
    print(format_table(headers, phase_rows))
    print(
        f"(medians of {runs} round(s), plain and pipediag alternating; `{' '.join(CASE_ARGS)}`; "
        f"goals: ratio <= {GOAL_RATIO}x, verdict within {GOAL_TO_VERDICT_S:g} s of the first "
        f"step; idle s: pipeline-alone and deep-analysis time under {IDLE_CPU_PCT:g}% of a core)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(NAME, __doc__)
    parser.add_argument("--runs", type=int, help=f"rounds per case (default {RUNS})")
    parser.add_argument(
        "--examples",
        help="comma-separated examples/ scripts to run; with --examples or --cases, only those "
        f"named run (default, with neither: {', '.join(EXAMPLES + SUITE_CASES)})",
    )
    parser.add_argument(
        "--cases",
        help="comma-separated benchmarks/cases scripts to run (see --examples)",
    )
    args = parser.parse_args(argv)
    runs = args.runs or (QUICK_RUNS if args.quick else RUNS)
    cases, unknown = select_cases(args.examples, args.cases)
    if unknown:
        parser.error(f"no such {', '.join(unknown)}")
    if not cases:
        parser.error("nothing to run")

    results = [run_case(case, runs) for case in cases]
    print_tables(results, runs)
    settings = {
        "runs": runs,
        "args": list(CASE_ARGS),
        "cases": [c.shown for c in cases],
        "goal_ratio": GOAL_RATIO,
        "goal_to_verdict_s": GOAL_TO_VERDICT_S,
        "idle_cpu_pct": IDLE_CPU_PCT,
    }
    write_results(
        args.json,
        NAME,
        settings=settings,
        summary=goals_summary(results),
        cases=results,
        quick=args.quick,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
