"""pipediag never changes what a corpus script computes: fit's loss after every step, with
and without pipediag, on the scripts named (three short ones by default).

Each script runs twice in whole processes, seeded and with TensorFlow's ops deterministic
(`PIPEDIAG_TRUTH_SEED`): once plain, once under `pipediag run --steps all`, which runs the
whole diagnosis (the pipeline alone, the alternation between fit's own steps, the stage
holds and the rewrites on training, the model-side trials) while the script trains to its
end. The corpus switch records the loss after each of fit's steps
(`PIPEDIAG_TRUTH_LOSSES`); the two lists must be equal, float for float.

This lives here rather than in the test suite because the three scripts take about 2.5
minutes together, a fifth of the suite's 12-minute budget; tests/integration/test_no_change.py
checks the same on a small script in the suite.

    python benchmarks/corpus_no_change.py
    python benchmarks/corpus_no_change.py --scripts text_classification
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import base_parser, format_table, write_results
from benchmarks.corpus import PROCESS_TIMEOUT_S, Script, scripts

DEFAULT_SCRIPTS = ("text_classification", "time_series[dense]", "text_from_scratch")
SEED = "7"


@dataclass(frozen=True)
class LossCheck:
    script: str
    steps: int
    identical: bool
    first_difference: int | None  # the first step whose loss differs; None where none does
    pipediag_exit_code: int


def first_difference(plain: Sequence[float], diagnosed: Sequence[float]) -> int | None:
    """The first step whose loss differs, or where one list ends first; None if equal."""
    for index, (a, b) in enumerate(zip(plain, diagnosed, strict=False)):
        if a != b:
            return index
    return None if len(plain) == len(diagnosed) else min(len(plain), len(diagnosed))


def _env(losses: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIPEDIAG_TRUTH")}
    env.update(
        PIPEDIAG_TRUTH_SEED=SEED, PIPEDIAG_TRUTH_LOSSES=str(losses), TF_CPP_MIN_LOG_LEVEL="2"
    )
    return env


def check(script: Script, work: Path) -> LossCheck:
    plain, diagnosed = work / f"{script.name}-plain.json", work / f"{script.name}-pipediag.json"
    command = [str(script.path), *script.args]
    subprocess.run(
        [sys.executable, *command],
        env=_env(plain),
        check=True,
        capture_output=True,
        timeout=PROCESS_TIMEOUT_S,
    )
    run = subprocess.run(
        [sys.executable, "-m", "pipediag", "run", "--quiet", "--steps", "all"]
        + ["--out", str(work / f"{script.name}-report"), *command],
        env=_env(diagnosed),
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
    )
    expected = json.loads(plain.read_text())
    got = json.loads(diagnosed.read_text()) if diagnosed.exists() else []
    where = first_difference(expected, got)
    return LossCheck(script.name, len(expected), where is None, where, run.returncode)


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser("corpus_no_change", __doc__)
    parser.add_argument(
        "--scripts", default=",".join(DEFAULT_SCRIPTS), help="comma-separated script names"
    )
    args = parser.parse_args(argv)
    names = [n for n in args.scripts.split(",") if n]
    chosen = [s for s in scripts(names) if s.style == "keras-fit"]
    if args.quick:
        chosen = chosen[:1]
    if not chosen:
        raise SystemExit("no corpus script of that name trains with fit")
    with tempfile.TemporaryDirectory(prefix="pipediag-no-change-") as tmp:
        results = [check(script, Path(tmp)) for script in chosen]
    rows = [
        [r.script, r.steps, "yes" if r.identical else f"NO (step {r.first_difference})"]
        for r in results
    ]
    print(format_table(["script", "steps", "losses identical"], rows))
    write_results(
        args.json,
        "corpus_no_change",
        settings={"scripts": [s.name for s in chosen], "seed": SEED},
        summary={"identical": sum(r.identical for r in results), "scripts": len(results)},
        cases=[asdict(r) for r in results],
    )
    return 0 if all(r.identical and r.pipediag_exit_code == 0 for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
