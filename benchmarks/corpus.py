"""The corpus of public training scripts: the truth of each, and pipediag's answer beside it.

Every script in `benchmarks/tutorials/` (one public tutorial or example each, its header
naming the source, license and every change) runs unmodified in whole processes, with no
pipediag code loaded, in three modes that its `_truth` switch selects (FastFlow's method):

- A: the plain script;
- T: its final training dataset swapped for `ds.take(1).cache().repeat()`, the same steps per
  epoch and epochs;
- P: the training dataset read alone for the same epochs.

- AT: A and T in one process, alternated: blocks of the real batches and of the held one
  take turns within each epoch, each epoch starting on the other kind (`_truth.pattern`).

Then `pipediag run` on the plain script. A round runs A, T, AT, P, pipediag, and the next
round the reverse, so a host's drift falls on every side alike. Rates count epochs 2 on (the
first traces and compiles): from each epoch's start (steps over the epoch's time, its
start-up included) and within the epoch (from its first step's end to its last). The truth
cost is 1 - A/T per round, both ways; a script's truth is the median over rounds, with the
spread. On this host whole processes of a short script run up to a fifth faster or slower
than the one before, so the truth of record is the one measured in alternation (AT), where a
script has it; the whole runs' stands beside it.

Labels use pipediag's bands (input-bound at 20% or more, balanced from 5%). pipediag's label
is right where it is the truth's label from epoch start or within; a false alarm is
input-bound or balanced where both truths are under 5%, or compute-bound where either is 20%
or more.

    python benchmarks/corpus.py                          # every script, 3 rounds
    python benchmarks/corpus.py --scripts time_series --rounds 1
    python benchmarks/corpus.py --truth-only --split held-out
    python benchmarks/corpus.py --alternated-only        # AT alone, into the results' cases
    python benchmarks/corpus.py --alternated-only --with-pipediag --scripts mixup
    python benchmarks/corpus.py --beside-whole           # pipediag in turn with A and T
    python benchmarks/corpus.py --readme                 # also write the table into the README
    python benchmarks/corpus.py --keep /tmp/corpus-runs  # keep each run's report to read
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (
    base_parser,
    checked,
    median,
    run_stamp,
    spread_summary,
    write_results,
)
from pipediag.analysis.alternation import observer_logs
from pipediag.report.io import load_report

CORPUS_DIR = Path(__file__).resolve().parent / "tutorials"
README = CORPUS_DIR / "README.md"
TABLE_START, TABLE_END = "<!-- corpus table: start -->", "<!-- corpus table: end -->"
MODES = ("A", "T", "P")
ALTERNATED = "AT"
DIAGNOSED = "pipediag"
# pipediag's bands (pipediag/config.py): input-bound from 20%, balanced from 5%.
HIGH, MODERATE = 0.20, 0.05
# A corpus script's plain run takes at most 60 s; pipediag's deep phase adds to that.
PROCESS_TIMEOUT_S = 400
SKIP_EPOCHS = 1
# The constants a corpus script declares for the benchmarks.
CONSTANTS = ("SPLIT", "STYLE", "VARIANTS", "TUNED_CHANGE", "TUNED_FIX")


@dataclass(frozen=True)
class Script:
    """One corpus entry: a script and one of its variants (its extra arguments)."""

    path: Path
    variant: str
    args: tuple[str, ...]
    split: str
    style: str
    source: str
    # The hand-tuned variant (`PIPEDIAG_TUNED=1`), where the script has one: the change in
    # words, and the pipediag fix it is ("port-to-tf-ops" where no rewrite names it).
    tuned_change: str = ""
    tuned_fix: str = ""

    @property
    def name(self) -> str:
        return self.path.stem + (f"[{self.variant}]" if self.variant else "")


@dataclass
class Round:
    rates_start: dict[str, float | None] = field(default_factory=dict)
    rates_within: dict[str, float | None] = field(default_factory=dict)
    wall_s: dict[str, float] = field(default_factory=dict)
    diagnosis: dict[str, Any] | None = None
    # The cost measured in alternation (AT), from epoch start and within.
    alternated: tuple[float | None, float | None] = (None, None)

    def cost(self, within: bool) -> float | None:
        rates = self.rates_within if within else self.rates_start
        a, t = rates.get("A"), rates.get("T")
        return 1.0 - a / t if a and t else None


def scripts(names: Sequence[str] = (), split: str | None = None) -> list[Script]:
    """The corpus, read from each script's constants without importing it."""
    found = []
    for path in sorted(CORPUS_DIR.glob("*.py")):
        if path.name.startswith("_"):
            continue
        constants = _constants(path)
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        source = next(
            (ln[len("Source:") :].strip() for ln in doc.splitlines() if ln.startswith("Source:")),
            "",
        )
        for variant, args in dict(constants.get("VARIANTS", {"": []})).items():
            entry = Script(
                path,
                variant,
                tuple(args),
                str(constants.get("SPLIT", "tune")),
                str(constants.get("STYLE", "")),
                source,
                str(constants.get("TUNED_CHANGE", "")),
                str(constants.get("TUNED_FIX", "")),
            )
            if names and entry.name not in names and path.stem not in names:
                continue
            if split and entry.split != split:
                continue
            found.append(entry)
    return found


def _constants(path: Path) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id in CONSTANTS:
                values[target.id] = ast.literal_eval(node.value)
    return values


def rates(stamps: Mapping[str, Any], skip: int = SKIP_EPOCHS) -> tuple[float | None, float | None]:
    """Steps per second over the epochs after `skip`: from each epoch's start, and within
    (from each epoch's first step end to its last); None where no epoch is left to count."""
    epochs = [e for e in stamps.get("epochs", []) if e.get("ends_s")][skip:]
    steps = sum(len(e["ends_s"]) for e in epochs)
    span = sum(e["ends_s"][-1] - e["start_s"] for e in epochs)
    inner_steps = sum(len(e["ends_s"]) - 1 for e in epochs)
    inner = sum(e["ends_s"][-1] - e["ends_s"][0] for e in epochs)
    return (
        steps / span if steps and span > 0 else None,
        inner_steps / inner if inner_steps and inner > 0 else None,
    )


def alternated_costs(
    stamps: Mapping[str, Any], skip: int = SKIP_EPOCHS
) -> tuple[float | None, float | None]:
    """1 - A/T from one AT process, from each epoch's start and within, over the epochs
    after `skip` (from an `AB` process: 1 - plain/tuned, kind 1 being the tuned pipeline).

    Within: each block's steps after its first quarter (the real pipeline refills its
    buffers while the held batch trains, and the block after starts on them), leaving out
    each epoch's first step and each kind's first. From the start, each kind's own start-up
    and end are added once an epoch: its first step where that falls inside the epoch (an
    epoch's first step also holds what the epoch boundary costs both kinds, under fit the
    last iterator's tear-down, and is left out), and a loop's end of pass and tear-down,
    timed for each kind apart (`closing_s`): each the median over the epochs, since a
    tear-down waits 0 to 2.5 s at random, for either kind, where a slow stage's work in
    flight would make every epoch wait."""
    if not _alternation_is_whole(stamps):
        return None, None
    drop = int(stamps.get("block") or 1) // 4
    settled = {kind: [0.0, 0] for kind in (0, 1)}
    openings: dict[int, list[float]] = {0: [], 1: []}
    closings: dict[int, list[float]] = {0: [], 1: []}
    counted = [e for e in stamps.get("epochs", []) if e.get("ends_s")][skip:]
    for epoch in counted:
        ends, kinds = epoch["ends_s"], epoch["kinds"]
        previous, run, seen = epoch["start_s"], 0, set()
        for i, (end, kind) in enumerate(zip(ends, kinds, strict=True)):
            run = run + 1 if i and kinds[i - 1] == kind else 1
            took = end - previous
            previous = end
            first = kind not in seen
            seen.add(kind)
            if first and i:
                openings[kind].append(took)
            elif not first and run > drop:
                settled[kind][0] += took
                settled[kind][1] += 1
        for kind, took in enumerate(epoch.get("closing_s") or ()):
            closings[kind].append(took)

    def step_s(kind: int, with_edges: bool) -> float | None:
        spent, steps = settled[kind]
        if not steps or spent <= 0:
            return None
        if not with_edges:
            return spent / steps
        epochs = len(counted)
        opening = statistics.median(openings[kind]) if openings[kind] else 0.0
        closing = statistics.median(closings[kind]) if closings[kind] else 0.0
        opened = 1 if openings[kind] else 0
        return (spent + (opening + closing) * epochs) / (steps + opened * epochs)

    def cost(with_edges: bool) -> float | None:
        a, t = step_s(0, with_edges), step_s(1, with_edges)
        return 1.0 - t / a if a and t else None

    return cost(True), cost(False)


def _alternation_is_whole(stamps: Mapping[str, Any]) -> bool:
    """Every step's kind is known: where fit kept one iterator, TensorFlow pulled one element
    a step; where a call ran several steps (their time spread evenly), it ran one kind."""
    epochs = stamps.get("epochs", [])
    steps = sum(len(e.get("ends_s", [])) for e in epochs)
    if "pulls" in stamps and stamps["pulls"] != steps:
        return False
    for epoch in epochs:
        at = 0
        for size in epoch.get("calls", []):
            if len(set(epoch["kinds"][at : at + size])) > 1:
                return False
            at += size
    return True


def label_of(cost: float | None) -> str:
    if cost is None:
        return "unknown"
    if cost >= HIGH:
        return "input-bound"
    if cost >= MODERATE:
        return "balanced"
    return "compute-bound"


def judge(label: str, truth_start: float | None, truth_within: float | None) -> dict[str, bool]:
    """Is pipediag's label right (either truth's label), and is it a false alarm?"""
    truths = [c for c in (truth_start, truth_within) if c is not None]
    right = any(label == label_of(c) for c in truths)
    alarm = bool(truths) and (
        (label in ("input-bound", "balanced") and all(c < MODERATE for c in truths))
        or (label == "compute-bound" and any(c >= HIGH for c in truths))
    )
    return {"right": right, "false_alarm": alarm}


def _child_env(mode: str | None, out: Path | None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PIPEDIAG_TRUTH") and k != "PIPEDIAG_TUNED"
    }
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if mode is not None and out is not None:
        env.update(PIPEDIAG_TRUTH=mode, PIPEDIAG_TRUTH_OUT=str(out))
    return env


def run_mode(script: Script, mode: str, work: Path) -> tuple[dict[str, Any], float]:
    """One whole process of the script in `mode`: its stamps and its wall time."""
    out = work / f"{script.path.stem}-{script.variant}-{mode}.json"
    out.unlink(missing_ok=True)
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(script.path), *script.args],
        env=_child_env(mode, out),
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
    )
    wall = time.monotonic() - start
    if done.returncode != 0 or not out.exists():
        raise RuntimeError(f"{script.name} ({mode}) failed: {done.stderr[-2000:]}")
    return json.loads(out.read_text()), wall


def unused(path: Path) -> Path:
    """`path`, or the first of `path-2`, `path-3`, ... that does not exist: each run's report
    is kept apart, so a run judged wrong can be read afterwards (`--keep`)."""
    found, number = path, 1
    while found.exists():
        number += 1
        found = path.with_name(f"{path.name}-{number}")
    return found


def run_pipediag(
    script: Script, work: Path, options: Sequence[str] = ()
) -> tuple[dict[str, Any], float]:
    """`pipediag run` on the plain script, with pipediag's `options`: the verdict's figures
    and the wall time."""
    out = unused(work / f"{script.path.stem}-{script.variant}-report")
    start = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipediag",
            "run",
            "--quiet",
            *options,
            "--out",
            str(out),
            str(script.path),
            *script.args,
        ],
        env=_child_env(None, None),
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
    )
    wall = time.monotonic() - start
    report_path = out / "report.json"
    if not report_path.exists():
        raise RuntimeError(f"{script.name} under pipediag wrote no report: {done.stderr[-2000:]}")
    report = json.loads(checked(report_path).read_text())
    verdict = report.get("verdict", {})
    blocks = load_report(report_path).compute_alone
    watched = observer_logs(blocks.blocks, blocks.observer_blocks) if blocks is not None else []
    return {
        "label": verdict.get("label", "unknown"),
        "cost": verdict.get("input_cost_fraction"),
        "interval": verdict.get("input_cost_interval"),
        "A": verdict.get("training_steps_per_s"),
        "T": verdict.get("compute_alone_steps_per_s"),
        "observer_effect": verdict.get("observer_effect"),
        # log(watched rate / quiet rate) per pair of the observer check, to pool over runs.
        "observer_logs": watched,
        # The CPU pipediag's sampler threads took, and the run's wall time under pipediag.
        "sampler_cpu_s": sum(
            (report.get(section) or {}).get("sampler_cpu_s") or 0.0 for section in ("host", "gpu")
        ),
        "report_wall_s": report.get("wall_time_s"),
        "exit_code": done.returncode,
    }, wall


def measure(
    script: Script, rounds: int, *, truth_only: bool, work: Path, sides: Sequence[str] = ()
) -> list[Round]:
    """`rounds` rounds of `sides` (A, T, AT, P and pipediag unless given), each round in
    the reverse order of the one before."""
    results = []
    for number in range(rounds):
        order = list(sides) or ["A", "T", ALTERNATED, "P"] + ([] if truth_only else [DIAGNOSED])
        if number % 2:
            order.reverse()
        this = Round()
        for side in order:
            if side == DIAGNOSED:
                this.diagnosis, this.wall_s[side] = run_pipediag(script, work)
                continue
            stamps, this.wall_s[side] = run_mode(script, side, work)
            if side == ALTERNATED:
                this.alternated = alternated_costs(stamps)
                continue
            this.rates_start[side], this.rates_within[side] = rates(stamps)
        results.append(this)
        print(f"  {script.name} round {number + 1}: {_round_line(this)}", flush=True)
    return results


def _round_line(this: Round) -> str:
    parts = [
        f"{m} {this.rates_start.get(m) or 0:.1f}/{this.rates_within.get(m) or 0:.1f}" for m in MODES
    ]
    line = ", ".join(parts) + f"; cost {_pct(this.cost(False))}/{_pct(this.cost(True))}"
    line += f"; alternated {_pct(this.alternated[0])}/{_pct(this.alternated[1])}"
    if this.diagnosis:
        line += f"; pipediag {this.diagnosis['label']} {_pct(this.diagnosis['cost'])}"
    return line


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _spread(values: Sequence[float | None]) -> dict[str, float | int | None]:
    """The rounds' figures as every result file keeps a distribution, the missing left out."""
    return spread_summary([v for v in values if v is not None])


def truths(case: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """The truth of record, from epoch start and within: each measured in alternation where
    the case has it, else over whole runs."""

    def of(alternated: str, whole: str) -> float | None:
        for key in (alternated, whole):
            found = (case.get(key) or {}).get("median")
            if found is not None:
                return float(found)
        return None

    return of("alternated_start", "truth_start"), of("alternated_within", "truth_within")


def rejudge(case: dict[str, Any]) -> None:
    """Judge each of the case's pipediag runs again against its truth of record."""
    truth_start, truth_within = truths(case)
    case["labels"] = sorted({label_of(c) for c in (truth_start, truth_within) if c is not None})
    for d in case["diagnoses"]:
        d.update(judge(d["label"], truth_start, truth_within))
        d["error"] = (
            abs(d["cost"] - truth_start)
            if d.get("cost") is not None and truth_start is not None
            else None
        )


def summarise(script: Script, results: Sequence[Round]) -> dict[str, Any]:
    diagnoses = []
    for r in results:
        if r.diagnosis is None:
            continue
        plain = r.wall_s.get("A")
        plain_rate, traced_rate = r.rates_within.get("A"), r.diagnosis.get("A")
        fastflow_t, traced_t = r.rates_within.get("T"), r.diagnosis.get("T")
        diagnoses.append(
            {
                **r.diagnosis,
                "wall_s": r.wall_s[DIAGNOSED],
                "wall_ratio": r.wall_s[DIAGNOSED] / plain if plain else None,
                # The observer effect: training's rate in pipediag's A blocks against the
                # plain run's within its epochs, measured next to it in the same round.
                "a_ratio": traced_rate / plain_rate if traced_rate and plain_rate else None,
                # pipediag's T against FastFlow's T (the script fed `take(1).cache().repeat()`)
                # within its epochs, measured next to it in the same round.
                "t_ratio": traced_t / fastflow_t if traced_t and fastflow_t else None,
            }
        )
    case = {
        "script": script.name,
        "split": script.split,
        "style": script.style,
        "source": script.source,
        "truth_start": _spread([r.cost(False) for r in results]),
        "truth_within": _spread([r.cost(True) for r in results]),
        "alternated_start": _spread([r.alternated[0] for r in results]),
        "alternated_within": _spread([r.alternated[1] for r in results]),
        "rates_start": {
            m: median([v for r in results if (v := r.rates_start.get(m))] or [0]) for m in MODES
        },
        "rates_within": {
            m: median([v for r in results if (v := r.rates_within.get(m))] or [0]) for m in MODES
        },
        "plain_wall_s": median([w for r in results if (w := r.wall_s.get("A"))] or [0]) or None,
        "diagnoses": diagnoses,
    }
    rejudge(case)
    return case


def add_alternated(cases: list[dict[str, Any]], measured: Sequence[Mapping[str, Any]]) -> None:
    """The alternated truth of `measured` set on the same scripts' `cases`, with pipediag's
    runs measured beside it where there are any (else the earlier ones), judged again; a
    script not yet in `cases` joins them."""
    by_script = {c["script"]: c for c in cases}
    for new in measured:
        case = by_script.get(new["script"])
        if case is None:
            cases.append(dict(new))
            continue
        case["alternated_start"] = new["alternated_start"]
        case["alternated_within"] = new["alternated_within"]
        case["alternated_measured_at"] = new.get("measured_at")
        case["alternated_measured_commit"] = new.get("measured_commit")
        if new.get("diagnoses"):
            case["diagnoses"] = new["diagnoses"]
            case["diagnosed_at"] = new.get("measured_at")
            case["diagnosed_commit"] = new.get("measured_commit")
        rejudge(case)


def add_diagnoses(cases: list[dict[str, Any]], measured: Sequence[Mapping[str, Any]]) -> None:
    """pipediag's runs of `measured`, each beside the plain run and FastFlow's T of its
    round, in place of the same scripts' earlier runs in `cases`, judged on their truth of
    record (which these rounds leave as it was); a script not yet in `cases` is skipped."""
    by_script = {c["script"]: c for c in cases}
    for new in measured:
        case = by_script.get(new["script"])
        if case is None or not new.get("diagnoses"):
            continue
        case["diagnoses"] = new["diagnoses"]
        case["diagnosed_at"] = new.get("measured_at")
        case["diagnosed_commit"] = new.get("measured_commit")
        rejudge(case)


def table(cases: Sequence[Mapping[str, Any]]) -> str:
    """The README's table: one row per script, the held-out split apart."""
    lines = []
    for split in ("tune", "held-out"):
        rows = [c for c in cases if c["split"] == split]
        if not rows:
            continue
        diagnosed = max(len(c["diagnoses"]) for c in rows)
        plural = "s" if diagnosed != 1 else ""
        lines += [
            f"**{split}**",
            "",
            "| script | style | A / T / P (steps/s, from epoch start)"
            " | truth in alternation: from start; within"
            " | truth over whole runs: from start; within"
            f" | pipediag, {diagnosed} run{plural}: label, cost"
            " (interval) | pipediag / plain wall | A under pipediag / plain A"
            " | T under pipediag / FastFlow T |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for c in rows:
            r = c["rates_start"]
            runs = "; ".join(_diagnosis_cell(d) for d in c["diagnoses"]) or "-"
            ratios = [d["wall_ratio"] for d in c["diagnoses"] if d.get("wall_ratio")]
            observed = [d["a_ratio"] for d in c["diagnoses"] if d.get("a_ratio")]
            compute = [d["t_ratio"] for d in c["diagnoses"] if d.get("t_ratio")]
            lines.append(
                f"| {c['script']} | {c['style']} | {r['A']:.1f} / {r['T']:.1f} / {r['P']:.1f} "
                f"| {_spread_cell(c.get('alternated_start'))}; "
                f"{_spread_cell(c.get('alternated_within'))} "
                f"| {_spread_cell(c['truth_start'])}; {_spread_cell(c['truth_within'])} "
                f"| {runs} | {f'{median(ratios):.2f}x' if ratios else '-'} "
                f"| {f'{median(observed):.2f}' if observed else '-'} "
                f"| {f'{median(compute):.2f}' if compute else '-'} |"
            )
        lines.append("")
    return "\n".join(lines)


def _spread_cell(s: Mapping[str, float | None] | None) -> str:
    if not s or s["median"] is None:
        return "-"
    return f"{_pct(s['median'])} ({_pct(s['min'])} to {_pct(s['max'])})"


def _diagnosis_cell(d: Mapping[str, Any]) -> str:
    interval = d.get("interval")
    around = f" ({_pct(interval[0])}-{_pct(interval[-1])})" if interval else ""
    mark = " **false alarm**" if d.get("false_alarm") else ("" if d.get("right") else " wrong")
    return f"{d['label']} {_pct(d.get('cost'))}{around}{mark}"


def goals(cases: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    diagnosed = [c for c in cases if c["diagnoses"]]
    errors = [d["error"] for c in diagnosed for d in c["diagnoses"] if d["error"] is not None]
    flips = [c["script"] for c in diagnosed if len({d["label"] for d in c["diagnoses"]}) > 1]
    return {
        "scripts": len(cases),
        "false_alarms": sum(d["false_alarm"] for c in diagnosed for d in c["diagnoses"]),
        "wrong": sum(not d["right"] for c in diagnosed for d in c["diagnoses"]),
        "diagnoses": sum(len(c["diagnoses"]) for c in diagnosed),
        "flipping_scripts": flips,
        "median_error": median(errors) if errors else None,
        "max_error": max(errors) if errors else None,
    }


def write_readme_table(
    text: str, readme: Path = README, markers: tuple[str, str] = (TABLE_START, TABLE_END)
) -> None:
    """`text` in place of what stands between the two markers of `readme`."""
    start, end = markers
    body = readme.read_text()
    head, _, rest = body.partition(start)
    _, _, tail = rest.partition(end)
    readme.write_text(f"{head}{start}\n{text}\n{end}{tail}")


def publish(
    name: str,
    args: argparse.Namespace,
    cases: list[dict[str, Any]],
    *,
    text: str,
    summary: dict[str, Any],
    settings: dict[str, Any],
    markers: tuple[str, str] = (TABLE_START, TABLE_END),
    stamp: Mapping[str, Any] | None = None,
) -> None:
    """Print a corpus benchmark's table and summary, write its results (under `stamp`
    where results measured earlier keep theirs), and with `--readme` its table into the
    README."""
    print(text)
    print(json.dumps(summary, indent=1))
    write_results(
        args.json,
        name,
        settings=settings,
        summary=summary,
        cases=cases,
        quick=args.quick,
        stamp=stamp,
    )
    if args.readme:
        write_readme_table(text, README, markers)


def corpus_parser(name: str, description: str | None) -> argparse.ArgumentParser:
    """A corpus benchmark's options: which scripts, which split, and `--readme`."""
    parser = base_parser(name, description)
    parser.add_argument("--scripts", default="", help="comma-separated script names")
    parser.add_argument("--split", choices=("tune", "held-out"), default=None)
    parser.add_argument("--readme", action="store_true", help="write the table into the README")
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="keep every run's files here (each pipediag report in its own folder), not in a "
        "scratch folder deleted at the end",
    )
    return parser


def each_script(
    args: argparse.Namespace, measure_one: Callable[[Script, Path], dict[str, Any]]
) -> tuple[list[Script], list[dict[str, Any]]]:
    """The scripts `args` chose, and the case `measure_one` made of each in a scratch
    folder (`--keep`'s, kept); a script that failed or ran too long is said and skipped."""
    chosen = scripts([n for n in args.scripts.split(",") if n], args.split)
    cases = []
    with contextlib.ExitStack() as stack:
        if args.keep is None:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pipediag-corpus-")))
        else:
            work = args.keep
            work.mkdir(parents=True, exist_ok=True)
        for script in chosen:
            print(f"{script.name} ({script.split}, {script.style})", flush=True)
            try:
                cases.append(measure_one(script, work))
            except (RuntimeError, subprocess.TimeoutExpired) as error:
                print(f"  skipped: {error}", flush=True)
    return chosen, cases


def main(argv: Sequence[str] | None = None) -> int:
    parser = corpus_parser("corpus", __doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--truth-only", action="store_true", help="no pipediag runs")
    parser.add_argument(
        "--alternated-only",
        action="store_true",
        help="measure the truth in alternation alone, and set it on the same scripts' cases"
        " in the results file (--json), judging their pipediag runs again",
    )
    parser.add_argument(
        "--with-pipediag",
        action="store_true",
        help="with --alternated-only: pipediag's runs too, in turn with it, in place of the"
        " earlier ones",
    )
    parser.add_argument(
        "--beside-whole",
        action="store_true",
        help="pipediag's runs in turn with the plain run (A) and FastFlow's T alone, in place"
        " of the earlier ones in the results file (--json): its wall time and rates beside"
        " theirs",
    )
    args = parser.parse_args(argv)
    if args.beside_whole and (args.alternated_only or args.truth_only):
        parser.error(
            "--beside-whole runs pipediag beside A and T:"
            " not with --alternated-only or --truth-only"
        )
    rounds = 1 if args.quick else args.rounds
    sides = [ALTERNATED] if args.alternated_only else []
    if args.alternated_only and args.with_pipediag:
        sides.append(DIAGNOSED)
    if args.beside_whole:
        sides = ["A", "T", DIAGNOSED]
    chosen, cases = each_script(
        args,
        lambda script, work: summarise(
            script,
            measure(script, rounds, truth_only=args.truth_only, work=work, sides=sides),
        ),
    )
    settings: dict[str, Any] = {
        "rounds": rounds,
        "truth_only": args.truth_only,
        "split": args.split,
        "scripts": [s.name for s in chosen],
    }
    stamp = None
    if args.alternated_only or args.beside_whole:
        measured_at = run_stamp()
        for case in cases:
            case["measured_at"] = measured_at["time"]
            case["measured_commit"] = (measured_at.get("commit") or "")[:7] or None
        earlier = json.loads(args.json.read_text()) if args.json.exists() else {}
        stamp, settings = earlier.get("stamp"), {**earlier.get("settings", {})}
        key = "beside_whole" if args.beside_whole else "alternated"
        # each run's own stamp, by the scripts it measured (a split at a time keeps both)
        runs = {**settings.get(key, {}).get("runs", {})}
        runs[args.split or args.scripts or "all"] = measured_at
        settings[key] = {
            **settings.get(key, {}),
            "rounds": rounds,
            "stamp": measured_at,
            "runs": runs,
        }
        measured, cases = cases, [*earlier.get("cases", [])]
        (add_diagnoses if args.beside_whole else add_alternated)(cases, measured)
    publish(
        "corpus",
        args,
        cases,
        text=table(cases),
        summary=goals(cases),
        settings=settings,
        stamp=stamp,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
