"""The held output pooled into the cost, or not: every kept corpus report judged both ways.

`python benchmarks/corpus.py --beside-whole --keep DIR` keeps each of pipediag's runs' reports.
pipediag's verdict is a function of what a report holds (the alternation's blocks, the stage
holds' figures, the steps), so the same runs can be judged twice: with the trial of training
on the pipeline's output held in memory pooled into the cost, as pipediag does, and with it
left out. Both are judged against the corpus's truth of record (`corpus.json`): a paired
comparison with no host noise between its arms (docs/design.md, "The held output").

    python benchmarks/held_output_pooling.py --keep DIR
    python benchmarks/held_output_pooling.py --keep DIR --since 2026-12-07T08:10
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import RESULTS_DIR, base_parser, write_results
from benchmarks.corpus import judge as judge_label
from benchmarks.corpus import scripts, truths
from pipediag.analysis.classifier import judge
from pipediag.report.io import load_report
from pipediag.report.model import Report, Verdict
from pipediag.report.stage_facts import output_stage

NAME = "held_output_pooling"


def both_ways(report: Report) -> tuple[Verdict, Verdict]:
    """The verdict without the held output, and with it (pipediag's)."""
    stages = [
        dataclasses.replace(s, training_speedup_if_free_low=None) for s in report.pipeline.stages
    ]
    alone = dataclasses.replace(report.pipeline, stages=stages)
    without = judge(report.train, alone, compute_alone=report.compute_alone, host=report.host)
    pooled = judge(
        report.train, report.pipeline, compute_alone=report.compute_alone, host=report.host
    )
    return without, pooled


def base_over_training(report: Report) -> float | None:
    """The held trial's unchanged side over A: 1 where it timed the script's own training."""
    output = output_stage(report.pipeline.stages)
    training = report.verdict.training_steps_per_s
    if output is None or not output.training_speedup_if_free or not training:
        return None
    held = output.training_held_steps_per_s
    if not held:
        return None
    around_s = report.train.fit_overhead_s or 0.0
    return 1.0 / (output.training_speedup_if_free / held + around_s) / training


def script_name(report: Report) -> str | None:
    """The corpus script (and variant) the report ran."""
    stem = Path(report.script).stem
    for script in scripts():
        if script.path.stem == stem and tuple(script.args) == tuple(report.args):
            return script.name
    return None


def _cell(verdict: Verdict) -> str:
    cost = verdict.input_cost_fraction
    text = verdict.label if cost is None else f"{verdict.label} {cost:.0%}"
    interval = verdict.input_cost_interval
    return text + (f" ({interval[0]:.0%}-{interval[1]:.0%})" if interval else "")


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser(NAME, __doc__)
    parser.add_argument("--keep", type=Path, required=True, help="corpus.py's --keep folder")
    parser.add_argument(
        "--since",
        type=datetime.fromisoformat,
        default=None,
        help="only reports written from this local time on (one corpus run's)",
    )
    parser.add_argument("--corpus", type=Path, default=RESULTS_DIR / "corpus.json")
    args = parser.parse_args(argv)
    import json

    cases_by_script = {c["script"]: c for c in json.loads(args.corpus.read_text())["cases"]}
    runs: list[dict[str, Any]] = []
    for path in sorted(args.keep.glob("*/report.json")):
        written = datetime.fromtimestamp(path.stat().st_mtime)
        if args.since is not None and written < args.since:
            continue
        report = load_report(path)
        name = script_name(report)
        case = cases_by_script.get(name or "")
        if case is None:
            continue
        truth_start, truth_within = truths(case)
        without, pooled = both_ways(report)
        run: dict[str, Any] = {"script": name, "split": case["split"], "report": path.parent.name}
        for key, verdict in (("without", without), ("pooled", pooled)):
            run[key] = {
                "label": verdict.label,
                "cost": verdict.input_cost_fraction,
                "interval": verdict.input_cost_interval,
                **judge_label(verdict.label, truth_start, truth_within),
            }
        run["held"] = pooled.held_output_cost
        run["base_over_training"] = base_over_training(report)
        runs.append(run)
        mark = "" if without.label == pooled.label else "   <- changed"
        print(
            f"{name:28} {_cell(without):32} -> {_cell(pooled):32} held "
            f"{'-' if run['held'] is None else format(run['held'], '.0%')}{mark}"
        )
    summary = {
        "runs": len(runs),
        "pooled_runs": sum(r["held"] is not None for r in runs),
        "changed": sum(r["without"]["label"] != r["pooled"]["label"] for r in runs),
        **{
            f"{what}_{key}": sum(r[key][what] for r in runs)
            for what in ("right", "false_alarm")
            for key in ("without", "pooled")
        },
    }
    print(
        f"{summary['runs']} runs, the held output pooled in {summary['pooled_runs']}: labels "
        f"right {summary['right_without']} without it, {summary['right_pooled']} with; false "
        f"alarms {summary['false_alarm_without']} and {summary['false_alarm_pooled']}"
    )
    settings = {"keep": str(args.keep), "since": str(args.since) if args.since else None}
    write_results(args.json, NAME, settings=settings, summary=summary, cases=runs, quick=args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
