"""The prescription on the corpus: is pipediag's first change the one a careful engineer
makes, and is the gain it claims the gain the script's training shows?

Every corpus script that declares a hand-tuned variant (`TUNED_CHANGE`, `TUNED_FIX`; the
docs' own "configure the dataset for performance" steps, or what a careful engineer would
write) runs with no pipediag code loaded, plain and tuned in one process, alternated
(`PIPEDIAG_TRUTH=AB`, `benchmarks/tutorials/_truth.py`): blocks of each pipeline's batches
take turns in every epoch, each pipeline read one whole pass an epoch, so the host's drift
falls on both alike. Whole processes of either, one after the other, moved by a fifth from
one to the next on this host. The truth is the speedup, tuned over plain, from each epoch's
start and within, over epochs 2 on (`corpus.alternated_costs`), the median over rounds with
its spread. Each round also runs `pipediag run` on the plain script, before or after the
alternated process in turn, and reads its first change: the first suggestion that changes
the speed.

Per script, the table says:
- the hand-tuned change and pipediag's first change (its rule and fix);
- whether the first change is the right call: the hand-tuned change ("port-to-tf-ops"
  matches the rule that asks for it) where the truth shows it at least 1.05x faster in
  every round (pipediag's own floor for a rewrite worth keeping), no change where it does
  not;
- pipediag's claim (the fix's one gain, where it was measured: on training, else the most
  the change can gain with its stage held or all input free, else on the pipeline alone; an
  estimate is no claim) against the truth: held where claim / truth lies in [0.75, 1.33].
  Only a claim for the hand-tuned change is read so: another change's claim is not a
  forecast of the hand-tuned one's speedup.

A first change other than the tuned one is reported as such: whether it is at least as fast
needs its own variant of the script, which this benchmark does not make.

    python benchmarks/corpus_prescription.py                    # every tuned script, 3 rounds
    python benchmarks/corpus_prescription.py --scripts mixup --rounds 1
    python benchmarks/corpus_prescription.py --readme           # also write the README table
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import base_parser, checked, median, write_results
from benchmarks.corpus import (
    PROCESS_TIMEOUT_S,
    README,
    Script,
    _child_env,
    alternated_costs,
    run_mode,
    scripts,
)
from pipediag.report.stage_facts import VERIFIED_MIN_GAIN

TABLE_START = "<!-- prescription table: start -->"
TABLE_END = "<!-- prescription table: end -->"
# A claim within these bounds of the truth holds (the goal).
CLAIM_LOW, CLAIM_HIGH = 0.75, 1.33
# The rule that asks to port a Python stage to TF ops (no rewrite makes it).
PORT_RULE = "PD007"
PORT_TO_TF_OPS = "port-to-tf-ops"


# How each basis of a suggestion's one gain (`Suggestion.gain.basis`) is said in the table.
CLAIM_KINDS = {
    "training": "measured",
    "held": "at most",
    "input-free": "at most",
    "pipeline-alone": "pipeline alone",
    "step-alone": "step alone",
}


def first_change(suggestions: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The first suggestion that changes the speed, with the one gain it claims and where it
    was measured (on training, a stage held, the pipeline or the step alone); no claim where
    nothing measured it (an estimate is no claim)."""
    for s in suggestions:
        if s.get("kind", "fix") != "fix":
            continue
        gain = s.get("gain") or {}
        speedup = gain.get("speedup")
        how = CLAIM_KINDS.get(gain.get("basis", ""), "none")
        return {
            "id": s.get("id", ""),
            "fix": s.get("fix"),
            "stage": s.get("stage"),
            "claim": float(speedup) if speedup is not None and how != "none" else None,
            "claim_kind": how if speedup is not None else "none",
        }
    return None


def same_change(change: Mapping[str, Any] | None, tuned_fix: str) -> bool:
    """Whether pipediag's first change is the hand-tuned one."""
    if change is None:
        return False
    if tuned_fix == PORT_TO_TF_OPS:
        return str(change.get("id", "")).startswith(PORT_RULE)
    return change.get("fix") == tuned_fix


def right_call(same: bool, no_change: bool, truth_low: float | None) -> str:
    """Whether the first change is the right call: the hand-tuned change where the truth
    shows it faster (its spread's low end at least the 1.05x at which pipediag keeps a
    rewrite), no change where it does not; another change is "other" (is it as fast? this
    benchmark has no variant of it to time)."""
    faster = truth_low is not None and truth_low >= VERIFIED_MIN_GAIN
    if no_change:
        return "no" if faster else "yes: no change"
    if same:
        return "yes" if faster else "no: not faster"
    return "other"


def claim_holds(claim: float | None, truth: float | None) -> bool | None:
    """claim / truth within [0.75, 1.33]; None where either is missing."""
    if claim is None or truth is None or truth <= 0:
        return None
    return CLAIM_LOW <= claim / truth <= CLAIM_HIGH


def judged_change(
    change: Mapping[str, Any] | None, tuned_fix: str, truth: float | None
) -> dict[str, Any] | None:
    """The first change, whether it is the hand-tuned one, and whether its claim holds: only
    a claim for the hand-tuned change is read against that change's speedup."""
    if change is None:
        return None
    same = same_change(change, tuned_fix)
    holds = claim_holds(change.get("claim"), truth) if same else None
    return {**change, "same_change": same, "claim_holds": holds}


def diagnose(script: Script, work: Path) -> dict[str, Any] | None:
    """`pipediag run` on the plain script: its first change, or None without a report."""
    out = work / f"{script.name}-prescription"
    subprocess.run(
        [sys.executable, "-m", "pipediag", "run", "--quiet", "--out", str(out)]
        + [str(script.path), *script.args],
        env=_child_env(None, None),
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
    )
    path = out / "report.json"
    if not path.exists():
        return None
    return first_change(json.loads(checked(path).read_text()).get("suggestions", []))


def alternated_speedups(stamps: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """Tuned over plain from one `AB` process, from each epoch's start and within: the
    alternation's cost of the plain pipeline against the tuned one, as a speedup."""
    start, within = alternated_costs(stamps)
    return _speedup(start), _speedup(within)


def _speedup(cost: float | None) -> float | None:
    return 1.0 / (1.0 - cost) if cost is not None and cost < 1.0 else None


def _spread_of(values: Sequence[float]) -> dict[str, float | None]:
    return {
        "median": median(values) if values else None,
        "min": min(values) if values else None,
        "max": max(values) if values else None,
    }


def measure(script: Script, rounds: int, work: Path) -> dict[str, Any]:
    from_start: list[float] = []
    within: list[float] = []
    changes: list[dict[str, Any] | None] = []
    for number in range(rounds):
        sides = ["alternated", "pipediag"]
        if number % 2:
            sides.reverse()
        start = inner = None
        for side in sides:
            if side == "pipediag":
                changes.append(diagnose(script, work))
                continue
            stamps, _ = run_mode(script, "AB", work)
            start, inner = alternated_speedups(stamps)
            from_start += [start] if start is not None else []
            within += [inner] if inner is not None else []
        print(
            f"  {script.name} round {number + 1}: speedup "
            f"{start if start is not None else float('nan'):.2f}x from epoch start, "
            f"{inner if inner is not None else float('nan'):.2f}x within; "
            f"first change {changes[-1]}",
            flush=True,
        )
    truth = _spread_of(from_start)
    judged = [judged_change(change, script.tuned_fix, truth["median"]) for change in changes]
    return {
        "script": script.name,
        "split": script.split,
        "tuned_change": script.tuned_change,
        "tuned_fix": script.tuned_fix,
        "truth": {**truth, "within": _spread_of(within)},
        "first_changes": judged,
    }


def table(cases: Sequence[Mapping[str, Any]]) -> str:
    lines = [
        "| script | split | hand-tuned change | truth in alternation: from start; within | "
        "pipediag's first change | right? | claim | claim / truth |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for case in cases:
        t = case["truth"]
        truth = "; ".join(
            f"{s['median']:.2f}x ({s['min']:.2f}-{s['max']:.2f})"
            if s and s.get("median") is not None
            else "-"
            for s in (t, t.get("within"))
        )
        for change in case["first_changes"] or [None]:
            right = right_call(
                change is not None and change["same_change"], change is None, t["min"]
            )
            if change is None:
                first, claim, ratio = "none", "-", "-"
            else:
                first = f"{change['id']} at {change['stage']}" if change["stage"] else change["id"]
                claim = (
                    f"{change['claim']:.2f}x {change['claim_kind']}"
                    if change["claim"] is not None
                    else "-"
                )
                ratio = (
                    f"{change['claim'] / t['median']:.2f}"
                    if change["claim"] is not None and t["median"] and change["same_change"]
                    else "-"
                )
            lines.append(
                f"| {case['script']} | {case['split']} | {case['tuned_change']} | {truth} | "
                f"{first} | {right} | {claim} | {ratio} |"
            )
    return "\n".join(lines)


def write_readme_table(text: str, readme: Path = README) -> None:
    content = readme.read_text()
    if TABLE_START not in content:
        content += f"\n{TABLE_START}\n{TABLE_END}\n"
    head, rest = content.split(TABLE_START, 1)
    _, tail = rest.split(TABLE_END, 1)
    readme.write_text(f"{head}{TABLE_START}\n{text}\n{TABLE_END}{tail}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser("corpus_prescription", __doc__)
    parser.add_argument("--scripts", default="", help="comma-separated script names")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--readme", action="store_true", help="write the table into the README")
    args = parser.parse_args(argv)
    names = [n for n in args.scripts.split(",") if n]
    chosen = [s for s in scripts(names) if s.tuned_fix]
    rounds = 1 if args.quick else args.rounds
    if not chosen:
        raise SystemExit("no corpus script of those names has a hand-tuned variant")
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pipediag-prescription-") as tmp:
        cases = [measure(script, rounds, Path(tmp)) for script in chosen]
    text = table(cases)
    print(text)
    if args.readme:
        write_readme_table(text)
    same = sum(1 for c in cases for f in c["first_changes"] if f and f["same_change"])
    right = sum(
        1
        for c in cases
        for f in c["first_changes"]
        if right_call(bool(f and f["same_change"]), f is None, c["truth"]["min"]).startswith("yes")
    )
    held = sum(1 for c in cases for f in c["first_changes"] if f and f["claim_holds"])
    runs = sum(len(c["first_changes"]) for c in cases)
    write_results(
        args.json,
        "corpus_prescription",
        settings={"rounds": rounds, "scripts": [s.name for s in chosen]},
        summary={
            "runs": runs,
            "first_change_is_the_tuned_one": same,
            "first_change_right": right,
            "claim_within_bounds": held,
            "seconds": time.monotonic() - began,
        },
        cases=cases,
        quick=args.quick,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
