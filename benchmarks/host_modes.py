"""The paired cost on a host that runs at two speeds, read with and without its modes.

Draws alternations of training (A) and step-alone (T) blocks, A0 T1 A1 ... over 6 rounds,
each block's rate 380 steps/s (times 1 - cost for a training block), times 0.67 with chance
`--p-slow` (the host's slow mode, as the text classification tutorial's blocks showed), times
a stall of 0.6 with chance `--stall`, with 4% log-normal noise. Each alternation is read by
`paired_cost` as it is, and with `host_modes` switched off (the reading before the modes,
docs/design.md, "Rates in alternation"). Per true cost it prints the median |read - true|,
its 90th percentile, the share of runs that read 5% or more, and the share with no reading
(no pair left).

    python benchmarks/host_modes.py            # results/host_modes.json
    python benchmarks/host_modes.py --quick
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import base_parser, format_table, median, quantile, write_results
from pipediag.analysis import alternation
from pipediag.report.model import RateBlock
from pipediag.report.vocabulary import RateBlockKind

NAME = "host_modes"
RATE = 380.0
SLOW = 0.67
STALL = 0.6
NOISE = 0.04
ROUNDS = 6
COSTS = (0.0, 0.03, 0.1, 0.25, 0.5)


def draw(rng: random.Random, cost: float, p_slow: float, stall: float) -> list[RateBlock]:
    blocks = []
    for i in range(2 * ROUNDS + 1):
        kind: RateBlockKind = "training" if i % 2 == 0 else "step-alone"
        rate = RATE * (1 - cost if kind == "training" else 1.0)
        if rng.random() < p_slow:
            rate *= SLOW
        if rng.random() < stall:
            rate *= STALL
        rate *= math.exp(rng.gauss(0.0, NOISE))
        blocks.append(RateBlock(kind, 0.0, 100, 100 / rate))
    return blocks


def read(blocks: list[RateBlock], *, modes: bool) -> float | None:
    if modes:
        found = alternation.paired_cost(blocks)
    else:
        with mock.patch.object(alternation, "host_modes", return_value=None):
            found = alternation.paired_cost(blocks)
    return found.cost if found is not None else None


def summary_of(costs: Sequence[float | None], truth: float) -> dict[str, float]:
    read_costs = [c for c in costs if c is not None]
    errors = [abs(c - truth) for c in read_costs]
    return {
        "median_error": median(errors),
        "p90_error": quantile(errors, 0.9),
        "share_at_5pct": sum(c >= 0.05 for c in read_costs) / len(read_costs),
        "share_unread": 1 - len(read_costs) / len(costs),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser(NAME, __doc__)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--p-slow", type=float, default=0.3)
    parser.add_argument("--stall", type=float, default=0.0)
    args = parser.parse_args(argv)
    runs = 200 if args.quick else args.runs
    rng = random.Random(1)
    cases: list[dict[str, Any]] = []
    for p_slow in (0.0, args.p_slow):
        for cost in COSTS:
            drawn = [draw(rng, cost, p_slow, args.stall) for _ in range(runs)]
            cases.append(
                {
                    "p_slow": p_slow,
                    "cost": cost,
                    "modes_found": sum(alternation.host_modes(b) is not None for b in drawn) / runs,
                    "without_modes": summary_of([read(b, modes=False) for b in drawn], cost),
                    "with_modes": summary_of([read(b, modes=True) for b in drawn], cost),
                }
            )
    rows = [
        [
            c["p_slow"],
            f"{c['cost']:.2f}",
            f"{c['modes_found']:.2f}",
            *(
                f"{c[side]['median_error']:.3f} / {c[side]['p90_error']:.3f} / "
                f"{c[side]['share_at_5pct']:.3f} / {c[side]['share_unread']:.3f}"
                for side in ("without_modes", "with_modes")
            ),
        ]
        for c in cases
    ]
    headers = ["p slow", "cost", "modes found", "without modes", "with modes"]
    print("median error / p90 error / share read at 5% or more / share with no reading")
    print(format_table(headers, rows))
    write_results(
        args.json,
        NAME,
        settings={"runs": runs, "p_slow": args.p_slow, "stall": args.stall, "rounds": ROUNDS},
        summary={},
        cases=cases,
        quick=args.quick,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
