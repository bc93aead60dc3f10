"""Finding the training on tutorial scripts that read their data before they train.

The TF-docs "Basic text classification" tutorial and the keras-io "Text classification from
scratch" example (both variants) adapt a `TextVectorization` layer on the raw text, a pass
over the data before `fit` (`examples/tutorials/`, on generated text). For each, in rounds
that alternate in one run:

- pipediag's report: the style, the verdict and input cost, the steps measured, the passes
  it skipped; with `--before PATH`, the same from another checkout of pipediag (an older
  commit) in the same round;
- the truth, from whole runs without pipediag (`benchmarks/_fit_rate.py`): A, the script's
  own fit steps per second after its first epoch, and T, the same script trained on one
  cached batch (`--cached`); input cost = 1 - A/T, counted over steps (as pipediag counts)
  and from each epoch's start.

    python benchmarks/data_passes.py [--repeats 2] [--before /path/to/old/checkout]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (
    BENCH_DIR,
    REPO_ROOT,
    base_parser,
    checked,
    child_env,
    fmt,
    format_table,
    median,
    run_child,
    tail,
    write_results,
)

NAME = "data_passes"
TUTORIALS = {
    "tfdocs-basic-text": ["examples/tutorials/text_classification_basic.py"],
    "kerasio-scratch-dataset": [
        "examples/tutorials/text_classification_from_scratch.py",
        "--variant",
        "dataset",
    ],
    "kerasio-scratch-model": [
        "examples/tutorials/text_classification_from_scratch.py",
        "--variant",
        "model",
    ],
}
# Whole runs: enough epochs for one after the first (which traces, and fills the cache).
TRUTH_EPOCHS = 2
TIMEOUT_S = 900


def whole_run(command: list[str], cached: bool) -> dict[str, Any] | None:
    """Steps per second of a run without pipediag, after its first epoch (median of epochs)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rate.json"
        args = [*command, "--epochs", str(TRUTH_EPOCHS), *(["--cached"] if cached else [])]
        result, _ = run_child(
            [sys.executable, str(BENCH_DIR / "_fit_rate.py"), str(out), *args],
            timeout_s=TIMEOUT_S,
        )
        if result.returncode != 0 or not out.exists():
            print(tail(result.stderr), file=sys.stderr)
            return None
        epochs = json.loads(out.read_text())
    if not epochs:
        return None
    return {
        "steps_per_s": median([e["steps_per_s"] for e in epochs]),
        "with_start_steps_per_s": median([e["with_start_steps_per_s"] for e in epochs]),
    }


def pipediag_run(command: list[str], checkout: Path | None) -> dict[str, Any] | None:
    """The report of `pipediag run` on the script, from this checkout or another one."""
    with tempfile.TemporaryDirectory() as tmp:
        # The script by its full path, run from the checkout's folder: `python -m` puts the
        # working directory first on the path, so that checkout's pipediag is the one run.
        script, *args = command
        root = checkout or REPO_ROOT
        cmd = [sys.executable, "-m", "pipediag", "run", "--out", tmp, str(REPO_ROOT / script)]
        env = {**child_env(), "PYTHONPATH": str(root)}
        began = time.perf_counter()
        try:
            result = subprocess.run(
                [*cmd, *args], cwd=root, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            return None
        wall_s = time.perf_counter() - began
        report_file = Path(tmp) / "report.json"
        if not report_file.exists():
            print(tail(result.stderr), file=sys.stderr)
            return None
        report = json.loads(checked(report_file).read_text())
    train, verdict = report["train"], report["verdict"]
    return {
        "style": train["style"],
        "label": verdict.get("label"),
        "input_cost": verdict.get("input_cost_fraction"),
        "measured_steps": train["measured_steps"],
        "skipped": [
            f"{p['batches']} batches by {p.get('by') or 'the script'}"
            for p in train.get("skipped_passes", [])
        ],
        "stop_reason": report.get("stop_reason"),
        "wall_s": wall_s,
        "output_after_the_pass": "Vocabulary size:" in (result.stdout or ""),
    }


def main() -> None:
    parser = base_parser(NAME, __doc__)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--before", type=Path, help="another pipediag checkout to compare")
    parser.add_argument("--tutorials", default=",".join(TUTORIALS))
    options = parser.parse_args()
    names = options.tutorials.split(",")
    repeats = 1 if options.quick else options.repeats
    rows: list[dict[str, Any]] = []
    for name in names:
        command = TUTORIALS[name]
        runs: dict[str, list[Any]] = {"A": [], "T": [], "after": [], "before": []}
        for round_ in range(repeats):
            # The order flips each round, so a drift of the host falls on every arm alike.
            arms = ["A", "T", "after", "before"]
            for arm in arms if round_ % 2 == 0 else arms[::-1]:
                if arm == "before" and options.before is None:
                    continue
                if arm in ("A", "T"):
                    runs[arm].append(whole_run(command, cached=arm == "T"))
                else:
                    checkout = options.before if arm == "before" else None
                    runs[arm].append(pipediag_run(command, checkout))
                print(f"{name} round {round_ + 1} {arm}: {runs[arm][-1]}", flush=True)
        a = [r["steps_per_s"] for r in runs["A"] if r]
        a_start = [r["with_start_steps_per_s"] for r in runs["A"] if r]
        t = [r["steps_per_s"] for r in runs["T"] if r]
        truth = 1 - median(a) / median(t) if a and t else None
        truth_start = 1 - median(a_start) / median(t) if a_start and t else None
        rows.append(
            {
                "tutorial": name,
                "truth_input_cost": truth,
                "truth_input_cost_with_epoch_start": truth_start,
                "A_steps_per_s": median(a) if a else None,
                "T_steps_per_s": median(t) if t else None,
                "after": runs["after"],
                "before": runs["before"],
            }
        )
    table = []
    for row in rows:
        for arm in ("before", "after"):
            for run in row[arm]:
                if run is None:
                    table.append([row["tutorial"], arm, "failed", "", "", "", "", ""])
                    continue
                table.append(
                    [
                        row["tutorial"],
                        arm,
                        run["style"],
                        run["label"],
                        fmt(run["input_cost"], ".2f"),
                        fmt(row["truth_input_cost"], ".2f"),
                        run["measured_steps"],
                        "; ".join(run["skipped"]) or "-",
                    ]
                )
    print(
        format_table(
            ["tutorial", "pipediag", "style", "verdict", "cost", "truth", "steps", "skipped"],
            table,
        )
    )
    write_results(
        options.json,
        NAME,
        settings={"repeats": repeats, "truth_epochs": TRUTH_EPOCHS, "before": str(options.before)},
        summary={
            row["tutorial"]: {
                "truth_input_cost": row["truth_input_cost"],
                "truth_input_cost_with_epoch_start": row["truth_input_cost_with_epoch_start"],
                "styles_after": sorted({r["style"] for r in row["after"] if r}),
                "styles_before": sorted({r["style"] for r in row["before"] if r}),
            }
            for row in rows
        },
        cases=rows,
        quick=options.quick,
    )


if __name__ == "__main__":
    main()
