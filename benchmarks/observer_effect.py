"""What watching costs the training pipediag watches, per corpus script, in one run each.

`pipediag run --observer-check` on each script of `benchmarks/tutorials/`, unmodified: every
other training block of the alternation is a quiet one, the script's own steps with
pipediag's sampler threads paused (A0 T1 Q1 T2 A2 T3 Q3 ...; docs/design.md, "What pipediag
costs a step"). The ratio of the watched blocks' rate to the quiet blocks' (each quiet block
against the watched blocks either side, past the step-alone block between; their mean log
ratio with a 90% interval) is what the samplers cost training, measured in alternation in
one process: the comparison across processes swings 2x on this host. What the quiet blocks
keep (the hooks' work a step, the batch stamps) is bounded apart by
`benchmarks/overhead_blocks.py`, against blocks with nothing of pipediag installed.

A run has a pair or three (one per quiet block), too few to bound 3% alone on this host, so
each script's pairs are pooled over its runs, and the corpus's over every script.

Per run it also keeps the samplers' own CPU time (the host and GPU sections'
`sampler_cpu_s`) over the run's wall time: the CPU pipediag's threads took from the cores.

    python benchmarks/observer_effect.py                   # every script, 2 runs each
    python benchmarks/observer_effect.py --scripts mixup --runs 3
    python benchmarks/observer_effect.py --readme          # also write the table
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import median
from benchmarks.corpus import Script, corpus_parser, each_script, publish, run_pipediag
from pipediag.analysis.paired import log_interval

NAME = "observer_effect"
TABLE_START, TABLE_END = "<!-- observer table: start -->", "<!-- observer table: end -->"
RUNS = 2
# The goal: training watched within 3% of its rate unwatched.
BOUND = 0.03


def measure(script: Script, runs: int, work: Path) -> dict[str, Any]:
    """`runs` diagnoses with the observer check, and what each read."""
    found = []
    for number in range(runs):
        diagnosis, wall = run_pipediag(script, work, ["--observer-check"])
        run_s = diagnosis["report_wall_s"] or wall
        effect = diagnosis.get("observer_effect")
        found.append(
            {
                "label": diagnosis["label"],
                "cost": diagnosis["cost"],
                "ratio": effect["ratio"] if effect else None,
                "low": effect["low"] if effect else None,
                "high": effect["high"] if effect else None,
                "pairs": effect["pairs"] if effect else 0,
                "logs": diagnosis["observer_logs"],
                "sampler_cpu_ms_per_s": 1000 * diagnosis["sampler_cpu_s"] / run_s
                if run_s > 0
                else None,
                "wall_s": wall,
            }
        )
        print(f"  {script.name} run {number + 1}: {_run_cell(found[-1])}", flush=True)
    return {
        "script": script.name,
        "split": script.split,
        "style": script.style,
        "runs": found,
        "pooled": pooled([log for run in found for log in run["logs"]]),
    }


def pooled(logs: Sequence[float]) -> dict[str, Any] | None:
    """The watched/quiet ratio over every pair given, with its 90% interval; None without."""
    found = log_interval(logs)
    if found is None:
        return None
    return {
        "ratio": math.exp(found.mean),
        "low": None if found.low is None else math.exp(found.low),
        "high": None if found.high is None else math.exp(found.high),
        "pairs": found.pairs,
    }


def _run_cell(run: Mapping[str, Any] | None) -> str:
    if run is None or run["ratio"] is None:
        return "no pair"
    interval = (
        f" ({run['low']:.2f}-{run['high']:.2f})"
        if run["low"] is not None and run["high"] is not None
        else ""
    )
    plural = "" if run["pairs"] == 1 else "s"
    return f"{run['ratio']:.2f}{interval}, {run['pairs']} pair{plural}"


def table(cases: Sequence[Mapping[str, Any]]) -> str:
    rows = [
        "| script | style | watched / samplers paused, each run (90% interval, pairs) | "
        "over its runs' pairs | samplers' CPU (ms per s of run) |",
        "|---|---|---|---|---|",
    ]
    for case in cases:
        runs = "; ".join(_run_cell(r) for r in case["runs"])
        cpu = [r["sampler_cpu_ms_per_s"] for r in case["runs"] if r["sampler_cpu_ms_per_s"]]
        rows.append(
            f"| {case['script']} | {case['style']} | {runs} | {_run_cell(case['pooled'])} | "
            f"{'-' if not cpu else f'{median(cpu):.1f}'} |"
        )
    return "\n".join(rows)


def goals(cases: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    found = {c["script"]: c["pooled"] for c in cases if c["pooled"] is not None}
    return {
        "scripts": len(cases),
        "with_pairs": len(found),
        # Every pair of every script: the corpus's ratio and its interval.
        "all_pairs": pooled([log for c in cases for r in c["runs"] for log in r["logs"]]),
        # Scripts whose ratio over their runs strays over the bound, and those whose interval
        # excludes 1 that way (the samplers measurably slowed them).
        "over_3pct": [s for s, f in found.items() if abs(f["ratio"] - 1) > BOUND],
        "slowed": [s for s, f in found.items() if f["high"] is not None and f["high"] < 1.0],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = corpus_parser(NAME, __doc__)
    parser.add_argument("--runs", type=int, default=RUNS)
    args = parser.parse_args(argv)
    runs = 1 if args.quick else args.runs
    chosen, cases = each_script(args, lambda script, work: measure(script, runs, work))
    settings = {"runs": runs, "split": args.split, "scripts": [s.name for s in chosen]}
    publish(
        NAME,
        args,
        cases,
        text=table(cases),
        summary=goals(cases),
        settings=settings,
        markers=(TABLE_START, TABLE_END),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
