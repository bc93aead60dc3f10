"""The README's test command on fresh clones, run after run: is the suite green on any host?

Each run clones the commit that was HEAD when the loop started (later commits wait for the
next loop) into a new folder, makes a new virtual environment there, and runs the README's
own install-and-test line in it, as a new user would (`pip install -e '.[test]' && python
-m pytest -q`). `--quiet-runs` runs go on the host as it is; `--loaded-runs` more go with
another process spinning on one core the whole time (`python -c "while True: pass"`), as a
busy laptop or a shared CI box would have it. Nothing is retried or rerun: a run's failures
are its failures.

Per run: the install and suite times, the counts from pytest's closing line, and the id of
every test that failed or errored. The summary counts the runs that were all green.

    python benchmarks/fresh_clone_suite.py                 # 5 quiet runs, then 2 loaded
    python benchmarks/fresh_clone_suite.py --quiet-runs 1 --loaded-runs 0
    python benchmarks/fresh_clone_suite.py --quick         # one run of tests/unit only
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import base_parser, format_table, run_stamp, spread_summary, write_results

REPO_ROOT = Path(__file__).resolve().parent.parent
README = REPO_ROOT / "README.md"
README_TEST_PREFIX = "pip install -e '.[test]'"
# pytest's closing line: "1198 passed, 1 failed, 3 skipped in 697.12s (0:11:37)".
SUMMARY_LINE = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+) in ([\d.]+)s")
FAILED_LINE = re.compile(r"^(FAILED|ERROR) (\S+)")
# The whole run, install included, may take no longer than CI gives it.
RUN_TIMEOUT_S = 90 * 60


@dataclass
class SuiteRun:
    index: int
    loaded: bool
    commit: str
    install_s: float
    suite_s: float
    exit_code: int
    counts: dict[str, int] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)

    @property
    def green(self) -> bool:
        bad = self.counts.get("failed", 0) + self.counts.get("error", 0)
        return self.exit_code == 0 and bad == 0 and self.counts.get("passed", 0) > 0


def readme_test_command(readme: Path = README) -> tuple[list[str], list[str]]:
    """The README's install line and test line, split where it says `&&`."""
    for line in readme.read_text().splitlines():
        if line.strip().startswith(README_TEST_PREFIX):
            words = shlex.split(line.strip())
            cut = words.index("&&")
            return words[:cut], words[cut + 1 :]
    raise SystemExit(f"{readme} has no line starting {README_TEST_PREFIX!r}")


def pytest_counts(output: str) -> tuple[dict[str, int], list[str]]:
    """pytest's closing counts ("passed", "failed", "error", ...) and the failed test ids."""
    counts: dict[str, int] = {}
    failed: list[str] = []
    for raw in output.splitlines():
        line = raw.strip()
        if found := FAILED_LINE.match(line):
            failed.append(found.group(2))
        if found := SUMMARY_LINE.match(line.strip("= ")):
            counts = {}
            for part in found.group(1).split(", "):
                number, _, word = part.partition(" ")
                counts[word.rstrip("s") if word == "errors" else word] = int(number)
    return counts, failed


def _fresh_venv(clone: Path) -> Path:
    venv = clone / ".venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--upgrade", "pip"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return venv / "bin"


def head_commit() -> str:
    """The commit every run clones: HEAD when the loop starts, so that commits made while it
    runs do not mix two versions into one set of runs."""
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def run_once(
    index: int, *, commit: str, loaded: bool, test_args: Sequence[str], log_dir: Path
) -> SuiteRun:
    """One fresh clone at `commit`, one fresh venv, the README's line; the log kept in
    `log_dir`."""
    with tempfile.TemporaryDirectory(prefix="pipediag-clone-") as tmp:
        clone = Path(tmp) / "pipediag"
        subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], check=True)
        subprocess.run(["git", "checkout", "-q", commit], cwd=clone, check=True)
        # The README's line as that commit has it.
        install, test = readme_test_command(clone / "README.md")
        bin_dir = _fresh_venv(clone)
        # The host's own settings (pip's index and certificates) stay; the venv comes first.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(
            PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(bin_dir.parent)
        )
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if loaded else None
        try:
            start = time.monotonic()
            installed = subprocess.run(install, cwd=clone, env=env, capture_output=True, text=True)
            if installed.returncode != 0:
                raise SystemExit(f"run {index}: {' '.join(install)} failed:\n{installed.stderr}")
            install_s = time.monotonic() - start
            start = time.monotonic()
            suite = subprocess.run(
                [*test, *test_args],
                cwd=clone,
                env=env,
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT_S,
            )
            suite_s = time.monotonic() - start
        finally:
            if hog is not None:
                hog.kill()
                hog.wait()
    log = suite.stdout + suite.stderr
    (log_dir / f"run{index}{'-loaded' if loaded else ''}.log").write_text(log)
    counts, failed = pytest_counts(log)
    return SuiteRun(index, loaded, commit[:7], install_s, suite_s, suite.returncode, counts, failed)


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser("fresh_clone_suite", __doc__)
    parser.add_argument("--quiet-runs", type=int, default=5, help="runs on the host as it is")
    parser.add_argument(
        "--loaded-runs", type=int, default=2, help="runs with another process on one core"
    )
    parser.add_argument(
        "--logs", type=Path, default=None, help="keep each run's pytest output here"
    )
    args = parser.parse_args(argv)
    quiet_runs, loaded_runs = (1, 0) if args.quick else (args.quiet_runs, args.loaded_runs)
    test_args = ["tests/unit"] if args.quick else []
    log_dir = args.logs or Path(tempfile.mkdtemp(prefix="pipediag-suite-logs-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    commit = head_commit()
    runs: list[SuiteRun] = []
    for index in range(quiet_runs + loaded_runs):
        run = run_once(
            index + 1,
            commit=commit,
            loaded=index >= quiet_runs,
            test_args=test_args,
            log_dir=log_dir,
        )
        runs.append(run)
        state = "green" if run.green else f"RED {run.failed or run.exit_code}"
        print(
            f"run {run.index}{' (loaded)' if run.loaded else ''} at {run.commit}: {state}, "
            f"{run.counts}, suite {run.suite_s:.0f} s, install {run.install_s:.0f} s",
            flush=True,
        )
    rows = [
        [
            r.index,
            r.commit,
            "one core busy" if r.loaded else "as it is",
            f"{r.install_s:.0f}",
            f"{r.suite_s:.0f}",
            r.counts.get("passed", 0),
            r.counts.get("failed", 0) + r.counts.get("error", 0),
            r.counts.get("skipped", 0),
            ", ".join(r.failed) or "-",
        ]
        for r in runs
    ]
    print(
        format_table(
            [
                "run",
                "commit",
                "host",
                "install s",
                "suite s",
                "passed",
                "failed",
                "skipped",
                "failures",
            ],
            rows,
        )
    )
    green = sum(r.green for r in runs)
    print(f"green: {green} of {len(runs)} runs; logs in {log_dir}")
    write_results(
        args.json,
        "fresh_clone_suite",
        settings={"quiet_runs": quiet_runs, "loaded_runs": loaded_runs, "test_args": test_args},
        summary={
            "runs": len(runs),
            "green_runs": green,
            "suite_s": spread_summary([r.suite_s for r in runs]),
            "install_s": spread_summary([r.install_s for r in runs]),
            "failed_tests": sorted({t for r in runs for t in r.failed}),
        },
        cases=[{**asdict(r), "green": r.green} for r in runs],
        quick=args.quick,
        # The commit the runs cloned, not HEAD when they end (commits made meanwhile).
        stamp={**run_stamp(), "commit": commit, "dirty": False},
    )
    return 0 if green == len(runs) else 1


if __name__ == "__main__":
    sys.exit(main())
