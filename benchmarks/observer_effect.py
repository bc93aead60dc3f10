"""What watching costs the training pipediag watches, per corpus script, in one run each.

`pipediag run --observer-check` on each script of `benchmarks/tutorials/`, unmodified: in the
alternation, each round runs T, A, quiet A, A, where a quiet block is the script's own steps
with pipediag's sampler threads paused (docs/design.md, "What pipediag costs a step"). The
ratio of the training blocks' rate to the quiet blocks' (each quiet block against the two
beside it, their mean log ratio with a 90% interval) is what the samplers cost training,
measured in alternation in one process: the comparison across processes swings 2x on this
host. What the quiet blocks keep (the hooks' work a step, the batch stamps) is bounded apart
by `benchmarks/overhead_blocks.py`, against blocks with nothing of pipediag installed.

Per run it also keeps the samplers' own CPU time (the host and GPU sections'
`sampler_cpu_s`) over the run's wall time: the CPU pipediag's threads took from the cores.

    python benchmarks/observer_effect.py                   # every script, 2 runs each
    python benchmarks/observer_effect.py --scripts mixup --runs 3
    python benchmarks/observer_effect.py --readme          # also write the table
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import base_parser, median, write_results
from benchmarks.corpus import README, Script, run_pipediag, scripts

NAME = "observer_effect"
TABLE_START, TABLE_END = "<!-- observer table: start -->", "<!-- observer table: end -->"
RUNS = 2
# The bound: training under pipediag within 3% of its rate unwatched.
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
                "sampler_cpu_ms_per_s": 1000 * diagnosis["sampler_cpu_s"] / run_s
                if run_s > 0
                else None,
                "wall_s": wall,
            }
        )
        print(f"  {script.name} run {number + 1}: {_run_cell(found[-1])}", flush=True)
    ratios = [r["ratio"] for r in found if r["ratio"] is not None]
    return {
        "script": script.name,
        "split": script.split,
        "style": script.style,
        "runs": found,
        "median_ratio": median(ratios) if ratios else None,
    }


def _run_cell(run: Mapping[str, Any]) -> str:
    if run["ratio"] is None:
        return f"no quiet pairs ({run['label']})"
    interval = (
        f" ({run['low']:.2f}-{run['high']:.2f})"
        if run["low"] is not None and run["high"] is not None
        else ""
    )
    return f"{run['ratio']:.2f}{interval}, {run['pairs']} pairs"


def table(cases: Sequence[Mapping[str, Any]]) -> str:
    rows = [
        "| script | style | watched / samplers paused, each run (90% interval, pairs) | "
        "median | samplers' CPU (ms per s of run) |",
        "|---|---|---|---|---|",
    ]
    for case in cases:
        runs = "; ".join(_run_cell(r) for r in case["runs"])
        ratio = case["median_ratio"]
        cpu = [r["sampler_cpu_ms_per_s"] for r in case["runs"] if r["sampler_cpu_ms_per_s"]]
        rows.append(
            f"| {case['script']} | {case['style']} | {runs} | "
            f"{'-' if ratio is None else f'{ratio:.2f}'} | "
            f"{'-' if not cpu else f'{median(cpu):.1f}'} |"
        )
    return "\n".join(rows)


def goals(cases: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    ratios = [c["median_ratio"] for c in cases if c["median_ratio"] is not None]
    return {
        "scripts": len(cases),
        "with_pairs": len(ratios),
        "median_ratio": median(ratios) if ratios else None,
        "lowest_ratio": min(ratios) if ratios else None,
        "highest_ratio": max(ratios) if ratios else None,
        # Scripts whose median ratio strays over the bound: the observer effect's goal.
        "over_3pct": [
            c["script"]
            for c in cases
            if c["median_ratio"] is not None and abs(c["median_ratio"] - 1) > BOUND
        ],
    }


def write_readme_table(text: str, readme: Path = README) -> None:
    body = readme.read_text()
    head, _, rest = body.partition(TABLE_START)
    _, _, tail = rest.partition(TABLE_END)
    readme.write_text(f"{head}{TABLE_START}\n{text}\n{TABLE_END}{tail}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser(NAME, __doc__)
    parser.add_argument("--scripts", default="", help="comma-separated script names")
    parser.add_argument("--split", choices=("tune", "held-out"), default=None)
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--readme", action="store_true", help="write the table into the README")
    args = parser.parse_args(argv)
    chosen = scripts([n for n in args.scripts.split(",") if n], args.split)
    runs = 1 if args.quick else args.runs
    cases = []
    with tempfile.TemporaryDirectory(prefix="pipediag-observer-") as tmp:
        for script in chosen:
            print(f"{script.name} ({script.split}, {script.style})", flush=True)
            try:
                cases.append(measure(script, runs, Path(tmp)))
            except (RuntimeError, subprocess.TimeoutExpired) as error:
                print(f"  skipped: {error}", flush=True)
    text = table(cases)
    print(text)
    summary = goals(cases)
    print(json.dumps(summary, indent=1))
    write_results(
        args.json,
        NAME,
        settings={"runs": runs, "split": args.split, "scripts": [s.name for s in chosen]},
        summary=summary,
        cases=cases,
        quick=args.quick,
    )
    if args.readme:
        write_readme_table(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
