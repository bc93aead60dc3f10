"""Run-to-run spread of the verdict: the same case diagnosed again and again, now and before.

Each case of the suite (`benchmarks/cases`) is diagnosed `--runs` times by this checkout
and, with `--before PATH`, as many times by another checkout of pipediag (an older commit),
alternating (after, before, after, before, ...) so the host's drift falls on both alike.
Per case and checkout it prints the reported input costs, their spread (max - min), the
labels, and for reports that carry one (schema 4), the mean width of the cost's 90%
interval and whether every run's label agrees with the others within their intervals
(`benchmarks/_input_cost.agreeing_runs`). It also prints each run's time in the
step-alone phase (`compute_alone.duration_s`: the alternation's span where it ran).

    python benchmarks/cost_spread.py --runs 5 --before /path/to/old/checkout
    python benchmarks/cost_spread.py --cases balanced_fit --runs 2          # smoke run
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (
    CASES_DIR,
    REPO_ROOT,
    base_parser,
    checked,
    child_env,
    fmt,
    format_table,
    median,
    tail,
    write_results,
)

NAME = "cost_spread"
# An input-bound case, one where contention decides, and a compute-bound one: the kinds
# whose labels flipped between runs before the rates were taken in turn.
DEFAULT_CASES = ("seq_random_map_fit", "contention_fit", "heavy_model_cached_fit")
EPOCHS = 3
TIMEOUT_S = 600


def diagnose(case: str, checkout: Path) -> dict[str, Any] | None:
    """One `pipediag run` of the case from `checkout`: its verdict's figures."""
    with tempfile.TemporaryDirectory() as tmp:
        # Run from the checkout's folder: `python -m` puts it first on the path, so that
        # checkout's pipediag is the one run.
        command = [
            sys.executable,
            "-m",
            "pipediag",
            "run",
            "--quiet",
            "--no-gpu",
            "--out",
            tmp,
            str(CASES_DIR / f"{case}.py"),
            "--epochs",
            str(EPOCHS),
        ]
        env = {**child_env(), "PYTHONPATH": str(checkout)}
        try:
            result = subprocess.run(
                command, cwd=checkout, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            return None
        report_file = Path(tmp) / "report.json"
        if not report_file.exists():
            print(tail(result.stderr), file=sys.stderr)
            return None
        report = json.loads(checked(report_file).read_text())
    verdict, alone = report["verdict"], report.get("compute_alone") or {}
    return {
        "label": verdict.get("label"),
        "cost": verdict.get("input_cost_fraction"),
        "interval": verdict.get("input_cost_interval"),
        "alone_s": alone.get("duration_s"),
        "blocks": len(alone.get("blocks") or []),
        "wall_s": report.get("wall_time_s"),
    }


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Spread of the costs, labels, interval widths and agreement over one arm's runs."""
    from benchmarks._input_cost import agreeing_runs

    measured = [r for r in runs if r.get("cost") is not None]
    costs = [r["cost"] for r in measured]
    widths = [r["interval"][1] - r["interval"][0] for r in measured if r.get("interval")]
    # A report without an interval (before schema 4) stands for its cost as a point.
    spans = [tuple(r["interval"] or (r["cost"], r["cost"])) for r in measured]
    return {
        "runs": len(runs),
        "costs": costs,
        "labels": [r["label"] for r in runs],
        "spread": max(costs) - min(costs) if costs else None,
        "mean_interval_width": sum(widths) / len(widths) if widths else None,
        "labels_agree_within_intervals": all(agreeing_runs(spans)) if spans else None,
        "median_alone_s": median([r["alone_s"] for r in runs if r.get("alone_s")] or [0.0]),
    }


def main() -> None:
    parser = base_parser(NAME, __doc__)
    parser.add_argument("--cases", default=",".join(DEFAULT_CASES))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", type=Path, help="another pipediag checkout to compare")
    options = parser.parse_args()
    arms = {"after": REPO_ROOT} | ({"before": options.before} if options.before else {})
    rows, results = [], []
    for case in options.cases.split(","):
        runs: dict[str, list[dict[str, Any]]] = {arm: [] for arm in arms}
        for i in range(options.runs):
            for arm, checkout in arms.items():
                found = diagnose(case, checkout)
                print(f"{case} {arm} run {i + 1}: {found}", flush=True)
                if found is not None:
                    runs[arm].append(found)
        for arm, found in runs.items():
            summary = summarise(found)
            results.append({"case": case, "arm": arm, **summary, "raw": found})
            rows.append(
                [
                    case,
                    arm,
                    " ".join(fmt(c, ".0%") for c in summary["costs"]),
                    fmt(summary["spread"], ".0%"),
                    fmt(summary["mean_interval_width"], ".0%"),
                    ",".join(sorted(set(summary["labels"]))),
                    summary["labels_agree_within_intervals"],
                    fmt(summary["median_alone_s"], ".1f", " s"),
                ]
            )
    headers = ["case", "arm", "costs", "spread", "interval", "labels", "agree", "alone"]
    print("\n" + format_table(headers, rows))
    write_results(
        options.json,
        NAME,
        settings={"runs": options.runs, "epochs": EPOCHS, "before": str(options.before)},
        summary={"rows": len(rows)},
        cases=results,
        quick=False,
    )


if __name__ == "__main__":
    main()
