"""Helpers the benchmark scripts share: ground truth, statistics, tables, cases, subprocesses,
and the one writer of result files (`write_results`, with its `run_stamp`).

The pure functions (truth from P and C, confusion tables, quantiles and IQR, speedup
errors, tables) are tested in `tests/unit/test_benchmarks.py`; the measuring functions import
TensorFlow lazily, so importing this module stays cheap.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gzip
import importlib
import importlib.metadata
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
CASES_DIR = BENCH_DIR / "cases"
RESULTS_DIR = BENCH_DIR / "results"
EXAMPLES_DIR = REPO_ROOT / "examples"

INPUT_BOUND = "input-bound"
COMPUTE_BOUND = "compute-bound"
BALANCED = "balanced"
UNKNOWN = "unknown"
VERDICTS = (INPUT_BOUND, BALANCED, COMPUTE_BOUND, UNKNOWN)

# --- ground truth bands (DS-Analyzer's differential rule, P = pipeline alone, C = train step
# on cached input) --------------------------------------------------------------------------
# When the pipeline overlaps the step (prefetch), the run goes at min(P, C) and each step
# waits 1/P - 1/C, a share 1 - P/C of the step. pipediag's "input-bound" starts at a 20%
# wait share (XProf's highly-input-bound threshold), i.e. at P/C = 0.8.
INPUT_BOUND_MAX_RATIO = 0.8
# The mirror band on the other side: a pipeline at least 25% faster than the step keeps a
# prefetch buffer full through normal jitter, so steps hardly wait.
COMPUTE_BOUND_MIN_RATIO = 1.25
# A case whose P/C lies within 10% of a band edge is flagged "near a boundary": run-to-run
# noise on 2 shared cores is about that large, so either label is defensible there.
BOUNDARY_MARGIN = 0.10

# The exit code of a child killed for running past its time limit.
TIMED_OUT = 124
# A child that wrote its result file and has not exited this much later has hung at exit.
DONE_GRACE_S = 15.0
# Child processes: no TF C++ info lines in the output we parse and show.
CHILD_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}
# git answers in milliseconds; a hung one (a lock, a network filesystem) must not hang a run.
GIT_TIMEOUT_S = 10


# --- truth ----------------------------------------------------------------------------------
def truth_ratio(pipeline_batches_per_s: float, compute_steps_per_s: float) -> float:
    """P / C: above 1 the pipeline outruns the train step."""
    if compute_steps_per_s <= 0:
        raise ValueError("the train step rate must be positive")
    return pipeline_batches_per_s / compute_steps_per_s


def classify_truth(pipeline_batches_per_s: float | None, compute_steps_per_s: float | None) -> str:
    """The measured ground truth from P (pipeline alone) and C (step on cached input)."""
    if not pipeline_batches_per_s or not compute_steps_per_s:
        return UNKNOWN
    return classify_ratio(truth_ratio(pipeline_batches_per_s, compute_steps_per_s))


def classify_ratio(ratio: float | None) -> str:
    """Truth from a P/C ratio (see the bands above)."""
    if ratio is None:
        return UNKNOWN
    if ratio < INPUT_BOUND_MAX_RATIO:
        return INPUT_BOUND
    if ratio > COMPUTE_BOUND_MIN_RATIO:
        return COMPUTE_BOUND
    return BALANCED


def window_truth_ratio(
    segments: Sequence[tuple[int, float]], compute_steps_per_s: float
) -> float | None:
    """P/C for a window whose pipeline rate changes between epochs (e.g. a cache fills).

    The overlap rule is applied per epoch segment (n batches in s seconds, rate n/s): a
    step waits max(0, s/n - 1/C) and lasts max(s/n, 1/C). When some segment makes steps
    wait, the result is 1 - (predicted wait share of the window), which for one steady
    segment is exactly P/C; when none does, it is the slowest segment's P/C (>= 1). So a
    steady pipeline gets the plain DS-Analyzer ratio, and a changing one is judged by
    where the window's time goes, as the diagnosis is.
    """
    if compute_steps_per_s <= 0:
        raise ValueError("the train step rate must be positive")
    step_s = 1.0 / compute_steps_per_s
    usable = [(n, s) for n, s in segments if n > 0 and s > 0]
    if not usable:
        return None
    wait = sum(n * max(0.0, s / n - step_s) for n, s in usable)
    total = sum(n * max(s / n, step_s) for n, s in usable)
    if wait > 0:
        return 1.0 - wait / total
    return min(n / s for n, s in usable) / compute_steps_per_s


def near_boundary(ratio: float, margin: float = BOUNDARY_MARGIN) -> bool:
    """Whether P/C lies within `margin` (relative) of a band edge."""
    return any(
        abs(ratio - edge) <= margin * edge
        for edge in (INPUT_BOUND_MAX_RATIO, COMPUTE_BOUND_MIN_RATIO)
    )


# --- statistics -----------------------------------------------------------------------------
def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default), without numpy."""
    if not values:
        raise ValueError("quantile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError("q must be in [0, 1]")
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float:
    return quantile(values, 0.5)


def iqr(values: Sequence[float]) -> tuple[float, float]:
    """The interquartile range as (25th, 75th percentile)."""
    return quantile(values, 0.25), quantile(values, 0.75)


def median_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free confidence interval for the median (order statistics, binomial).

    The interval [x_(k), x_(n-k+1)] covers the true median with probability
    1 - 2 P(Bin(n, 1/2) < k); k is the largest rank that keeps this at `confidence` or more.
    None when there are too few values for any such interval (n < 6 at 95%).
    """
    ordered = sorted(values)
    n = len(ordered)
    alpha_half = (1 - confidence) / 2
    below = 0  # P(Bin(n, 1/2) <= k - 1), as an exact integer numerator over 2**n
    k = 0
    while True:
        below += math.comb(n, k)
        if below / 2**n > alpha_half:
            break
        k += 1
    if k == 0 or k > n - k + 1:
        return None
    return ordered[k - 1], ordered[n - k]


def same_arm_ratios(runs: Sequence[tuple[bool, float]]) -> list[float]:
    """Ratios of back-to-back measurements of the same arm, from (arm, value) in time order.

    ABBA order (A B, B A, A B, ...) puts two runs of one arm side by side at every pair
    boundary. Nothing differs between them but time, so the spread of these ratios is the
    machine's noise floor for the A/B ratios.
    """
    return [
        earlier / later
        for (arm_a, earlier), (arm_b, later) in zip(runs, runs[1:], strict=False)
        if arm_a == arm_b
    ]


def abba_order(pair: int) -> tuple[bool, bool]:
    """The arms of pair `pair` in ABBA order: (False, True), then (True, False), ..."""
    return (False, True) if pair % 2 == 0 else (True, False)


def ratio_summary(ratios: Sequence[float]) -> dict[str, Any]:
    """`spread_summary` plus the 95% confidence interval of the median, as [low, high]."""
    ci = median_ci(ratios)
    return {**spread_summary(ratios), "ci95": None if ci is None else list(ci)}


def spread_summary(values: Sequence[float]) -> dict[str, float | int | None]:
    """Count, median, quartiles and extremes: how every result file keeps a distribution.

    The extremes are what a few runs' "median [min, max]" cites (the case docstrings).
    """
    if not values:
        return {"n": 0, "median": None, "q1": None, "q3": None, "min": None, "max": None}
    q1, q3 = iqr(values)
    return {
        "n": len(values),
        "median": median(values),
        "q1": q1,
        "q3": q3,
        "min": min(values),
        "max": max(values),
    }


def relative_error(predicted: float, measured: float) -> float:
    """Signed error of a prediction, relative to the measurement (+0.10 = 10% too high)."""
    if measured == 0:
        raise ValueError("relative error against a zero measurement")
    return predicted / measured - 1.0


# --- confusion table ------------------------------------------------------------------------
def confusion(pairs: Iterable[tuple[str, str]]) -> dict[str, dict[str, int]]:
    """Counts of (truth, predicted) pairs, truth -> predicted -> count, every label present."""
    matrix = {truth: dict.fromkeys(VERDICTS, 0) for truth in VERDICTS}
    for truth, predicted in pairs:
        matrix.setdefault(truth, dict.fromkeys(VERDICTS, 0))
        matrix[truth][predicted] = matrix[truth].get(predicted, 0) + 1
    return matrix


def accuracy_of(matrix: Mapping[str, Mapping[str, int]]) -> tuple[int, int]:
    """(right, total) from a confusion matrix; cases whose truth is unknown do not count."""
    right = sum(row.get(truth, 0) for truth, row in matrix.items() if truth != UNKNOWN)
    total = sum(sum(row.values()) for truth, row in matrix.items() if truth != UNKNOWN)
    return right, total


def format_confusion(matrix: Mapping[str, Mapping[str, int]]) -> str:
    """Rows: truth; columns: pipediag's verdict. Rows and columns with no case are dropped."""
    used_rows = [t for t in VERDICTS if sum(matrix.get(t, {}).values())]
    used_cols = [p for p in VERDICTS if any(matrix.get(t, {}).get(p, 0) for t in VERDICTS)]
    headers = ["truth \\ pipediag", *used_cols]
    rows = [[t, *(str(matrix[t].get(p, 0)) for p in used_cols)] for t in used_rows]
    return format_table(headers, rows)


# --- output ---------------------------------------------------------------------------------
def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table with columns padded to their widest cell."""
    cells = [[str(h) for h in headers], *([_cell(v) for v in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def fmt(value: float | None, spec: str = ".1f", suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def base_parser(name: str, description: str | None) -> argparse.ArgumentParser:
    """Every benchmark's shared options: --quick for a smoke run, --json for results.

    Also silences TF's C++ info lines for this process (only benchmark scripts call this).
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    first_line = (description or name).strip().splitlines()[0]
    parser = argparse.ArgumentParser(prog=f"benchmarks/{name}.py", description=first_line)
    parser.add_argument("--quick", action="store_true", help="tiny smoke run (figures are noisy)")
    parser.add_argument(
        "--json",
        type=Path,
        default=RESULTS_DIR / f"{name}.json",
        help="where to write the results (default: %(default)s)",
    )
    return parser


def add_raw_option(parser: argparse.ArgumentParser, what: str) -> None:
    """`--raw PATH`: also keep the raw figures (`what`) for later analysis, gzipped.

    The results file keeps summaries only (docs/design.md, "Benchmark results"); raw arrays
    go only where the user asks, and never into benchmarks/results, which is committed.
    """
    parser.add_argument(
        "--raw",
        type=raw_path,
        metavar="PATH",
        help=f"also write {what} here, as gzipped JSON (not under benchmarks/results)",
    )


def raw_path(value: str) -> Path:
    """An argparse type: a path for raw figures, refused inside benchmarks/results."""
    try:
        return check_raw_path(Path(value))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def check_raw_path(path: Path) -> Path:
    """`path`, unless it lies in benchmarks/results (committed: summaries only)."""
    if path.resolve().is_relative_to(RESULTS_DIR.resolve()):
        raise ValueError(f"{path}: raw figures are not kept in benchmarks/results; write elsewhere")
    return path


def write_results(
    path: Path,
    name: str,
    *,
    settings: Mapping[str, Any],
    summary: Mapping[str, Any],
    cases: Sequence[Mapping[str, Any]],
    quick: bool,
    raw: Any = None,
    raw_to: Path | None = None,
    stamp: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The one writer of benchmark results, in the one shape every result file has.

    `{"benchmark", "stamp", "quick", "settings", "summary", "cases"}`: `summary` holds the
    figures the README cites, `cases` one summary per case or run; distributions are kept
    as summary statistics (`spread_summary`), never as raw arrays. `raw`, when given with
    `raw_to`, goes to that file alone (gzipped JSON, with the same stamp). `stamp` defaults
    to this run's (`run_stamp`); only a conversion of older results passes its own.
    Returns the document written.
    """
    if raw_to is not None:
        check_raw_path(raw_to)
    document: dict[str, Any] = {
        "benchmark": name,
        "stamp": dict(stamp) if stamp is not None else run_stamp(),
        "quick": quick,
        "settings": dict(settings),
        "summary": dict(summary),
        "cases": list(cases),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, default=_json_default) + "\n")
    print(f"\nresults written to {path}")
    if raw_to is not None and raw is not None:
        raw_to.parent.mkdir(parents=True, exist_ok=True)
        raw_document = {"benchmark": name, "stamp": document["stamp"], "raw": raw}
        with gzip.open(raw_to, "wt", encoding="utf-8") as out:
            json.dump(raw_document, out, default=_json_default)
        print(f"raw figures written to {raw_to}")
    # TensorFlow has crashed at interpreter exit after a benchmark; what was printed must
    # not be lost in an unflushed buffer with it.
    sys.stdout.flush()
    return document


def split_raw(
    rows: Sequence[Mapping[str, Any]], raw_keys: Sequence[str], id_keys: Sequence[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rows without their raw arrays, and the arrays apart (each with the row's `id_keys`).

    A benchmark builds its rows with everything it measured, then writes the first part to
    its results and the second only to `--raw`.
    """
    kept = [{k: v for k, v in row.items() if k not in raw_keys} for row in rows]
    raw = [
        {**{k: row.get(k) for k in id_keys}, **{k: row[k] for k in raw_keys if k in row}}
        for row in rows
    ]
    return kept, raw


def _json_default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


# --- the stamp: which code, which TensorFlow, which machine ----------------------------------
def run_stamp() -> dict[str, Any]:
    """What a reader of a result needs to compare it with another: code, versions, machine."""
    commit, dirty = git_state()
    return {
        "commit": commit,
        "dirty": dirty,
        "tensorflow": package_version("tensorflow", "tensorflow-cpu", "tf-nightly"),
        "keras": package_version("keras"),
        "python": platform.python_version(),
        "machine": machine_info(),
        "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def git_state() -> tuple[str | None, bool | None]:
    """(HEAD's commit, whether tracked files differ from it), or (None, None) outside git.

    Result files themselves do not make the tree dirty: a benchmark rewrites them, and a run
    that follows another is still a run of the same code.
    """
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=True,
        )
        status = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"]
            + ["--", ".", f":(exclude){RESULTS_DIR.relative_to(REPO_ROOT).as_posix()}"],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None, None
    return head.stdout.strip() or None, bool(status.stdout.strip())


def package_version(*distributions: str) -> str | None:
    """The installed version of the first of `distributions` found, without importing it.

    Importing TensorFlow takes seconds; a parent process that only runs children need not.
    A module already imported reports its own `__version__`, the one that actually ran.
    """
    module = sys.modules.get(distributions[0])
    version = getattr(module, "__version__", None)
    if isinstance(version, str):
        return version
    for distribution in distributions:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            return importlib.metadata.version(distribution)
    return None


def machine_info(nvml: Any = None) -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "platform": platform.platform(),
        **gpu_info(nvml),
    }
    try:
        info["loadavg_1m"] = os.getloadavg()[0]
    except OSError:
        info["loadavg_1m"] = None
    return info


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The CPU's model name from /proc/cpuinfo, or None where it cannot be read (not Linux)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
            return value.strip()
    return None


def gpu_info(nvml: Any = None) -> dict[str, Any]:
    """The first NVIDIA GPU's name and the count, from NVML; None and 0 without one.

    `nvml` is the pynvml module (a fake in tests); by default it is imported here, and any
    failure (no library, no driver, no device) means no GPU. Nothing is changed on the
    device: only its name is read.
    """
    try:
        if nvml is None:
            nvml = importlib.import_module("pynvml")
        nvml.nvmlInit()
    except Exception:  # pynvml raises its own error classes; ImportError without it
        return {"gpu": None, "gpu_count": 0}
    try:
        count = nvml.nvmlDeviceGetCount()
        name = nvml.nvmlDeviceGetName(nvml.nvmlDeviceGetHandleByIndex(0)) if count else None
    except Exception:  # a device that will not answer: no GPU for the stamp
        count, name = 0, None
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()
    if isinstance(name, bytes):  # older pynvml returns bytes
        name = name.decode(errors="replace")
    return {"gpu": name, "gpu_count": count}


# --- cases ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CaseInfo:
    """A case's declared metadata (what it was built for; the truth is measured)."""

    name: str
    path: Path
    style: str
    intended: str
    bottleneck: str
    expected_suggestion: str | None
    fixes: dict[str, str]
    doc: str


REQUIRED_ATTRS = (
    "BOTTLENECK",
    "INTENDED",
    "STYLE",
    "EXPECTED_SUGGESTION",
    "FIXES",
    "make_dataset",
    "make_model",
)


def case_names() -> list[str]:
    """Every case script in benchmarks/cases (helpers start with an underscore)."""
    return sorted(p.stem for p in CASES_DIR.glob("*.py") if not p.name.startswith("_"))


def load_case(name: str) -> ModuleType:
    """Import a case as a module; its folder goes on sys.path for its `_case` helper."""
    if str(CASES_DIR) not in sys.path:
        sys.path.insert(0, str(CASES_DIR))
    return importlib.import_module(name)


def case_info(module: ModuleType) -> CaseInfo:
    missing = [attr for attr in REQUIRED_ATTRS if not hasattr(module, attr)]
    if missing:
        raise AttributeError(f"case {module.__name__} lacks {', '.join(missing)}")
    return CaseInfo(
        name=module.__name__,
        path=Path(module.__file__ or ""),
        style=module.STYLE,
        intended=module.INTENDED,
        bottleneck=module.BOTTLENECK,
        expected_suggestion=module.EXPECTED_SUGGESTION,
        fixes=dict(module.FIXES),
        doc=module.__doc__ or "",
    )


def rule_prefix(suggestion_id: str) -> str:
    """ "PD001-sequential-map" -> "PD001": cases name rules by their stable prefix."""
    return suggestion_id.split("-", 1)[0].upper()


def suggestion_matches(suggestion_id: str | None, expected: str | None) -> bool | None:
    """Whether the top suggestion is the expected one; None when there is nothing to judge."""
    if expected is None or suggestion_id is None:
        return None
    return rule_prefix(suggestion_id) == rule_prefix(expected)


def fix_for(info: CaseInfo, suggestion_id: str | None) -> str | None:
    """The case's way of applying a suggestion (a `--fix` name), if it declares one."""
    if suggestion_id is None:
        return None
    return info.fixes.get(rule_prefix(suggestion_id))


# --- running things -------------------------------------------------------------------------
def child_env() -> dict[str, str]:
    env = {**os.environ, **CHILD_ENV}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def run_child(
    cmd: Sequence[str],
    *,
    timeout_s: float,
    quiet: bool = True,
    done_file: Path | None = None,
    done_grace_s: float = DONE_GRACE_S,
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run a command from the repository root; returns the result and its wall time.

    A child still running after `timeout_s` is killed and counts as failed (exit code 124,
    as `timeout` reports it): a benchmark records the failed run and goes on. With
    `done_file`, a child that wrote it and has not exited `done_grace_s` later is killed at
    once, with the same code: a plain run of a case with a `from_generator` source hangs in
    TensorFlow at exit after its rate is written, and would wait out the whole timeout.
    """
    began = time.perf_counter()
    process = subprocess.Popen(
        list(cmd),
        cwd=REPO_ROOT,
        env=child_env(),
        stdout=subprocess.PIPE if quiet else None,
        stderr=subprocess.PIPE if quiet else None,
        text=True,
    )
    deadline = began + timeout_s
    done_since: float | None = None
    while True:
        now = time.perf_counter()
        if done_file is not None and done_since is None and done_file.is_file():
            done_since = now
        wait_until = deadline if done_since is None else min(deadline, done_since + done_grace_s)
        if now >= wait_until:
            process.kill()
            out, err = process.communicate()
            if done_since is None:
                message = f"timed out after {timeout_s:g} s and was killed"
            else:
                message = f"hung after writing its result, {now - done_since:.0f} s, and was killed"
            return (
                subprocess.CompletedProcess(list(cmd), TIMED_OUT, out or "", message),
                time.perf_counter() - began,
            )
        try:
            # Polling for `done_file` while the pipes drain.
            out, err = process.communicate(timeout=min(1.0, wait_until - now))
        except subprocess.TimeoutExpired:
            continue
        result = subprocess.CompletedProcess(list(cmd), process.returncode, out or "", err or "")
        return result, time.perf_counter() - began


def tail(text: str | None, lines: int = 15) -> str:
    return "\n".join((text or "").strip().splitlines()[-lines:])


def make_run_config(**settings: Any) -> Any:
    """A pipediag RunConfig from the settings it knows; others (from newer versions) dropped.

    Lets the benchmarks ask for e.g. `verify=False` without breaking on a pipediag that has
    no such knob yet.
    """
    from pipediag.config import RunConfig

    known = {f.name for f in dataclasses.fields(RunConfig)}
    return RunConfig(**{k: v for k, v in settings.items() if k in known})


# --- measuring without pipediag (TensorFlow imported here, lazily) -------------------------
def measure_pipeline(dataset: Any, *, epochs: int, skip: int, count: int) -> dict[str, Any]:
    """P: the training data read alone, epoch after epoch as training would read it.

    Batches `skip` .. `skip + count` are timed (the window a diagnosis judges, after its
    warm-up); each epoch gets a fresh iterator of the same dataset, as `fit` and `for`
    loops do, so caches filled in epoch 1 serve epoch 2. `segments` splits the window by
    epoch, (batches, seconds) each, for `window_truth_ratio`.
    """
    ends: list[tuple[float, int]] = []
    per_epoch: list[int] = []
    began = time.perf_counter()
    for epoch in range(epochs):
        batches = 0
        for _batch in dataset:
            ends.append((time.perf_counter(), epoch))
            batches += 1
            if len(ends) > skip + count:
                break
        per_epoch.append(batches)
        if len(ends) > skip + count:
            break
    window = ends[skip : skip + count + 1]
    segments: dict[int, list[float]] = {}
    for (before, _), (after, epoch) in zip(window, window[1:], strict=False):
        segment = segments.setdefault(epoch, [0, 0.0])
        segment[0] += 1
        segment[1] += after - before
    span = window[-1][0] - window[0][0] if len(window) > 1 else 0.0
    return {
        "batches_per_s": (len(window) - 1) / span if span > 0 else None,
        "batches": max(len(window) - 1, 0),
        "segments": [(int(n), s) for n, s in segments.values()],
        "epoch_batches": per_epoch,
        "first_batch_s": ends[0][0] - began if ends else None,
    }


def measure_compute(
    module: ModuleType, *, cache_batches: int, skip: int, count: int
) -> dict[str, Any]:
    """C: the case's own train step (its style, its model) on a few cached batches.

    `cache_batches` batches of the real data are cached and repeated with a prefetch, so
    input costs nothing; the first pass (which fills the cache) is inside the skipped steps.
    """
    import keras

    helpers = load_case("_case")
    keras.utils.set_random_seed(0)
    cached = module.make_dataset(frozenset()).take(cache_batches).cache().repeat()
    cached = cached.prefetch(2)
    timer = helpers.StepTimer()
    skip = max(skip, cache_batches + 2)
    helpers.train(
        module.make_model(),
        cached,
        style=module.STYLE,
        epochs=1,
        steps_per_epoch=skip + count + 1,
        timer=timer,
    )
    return {"steps_per_s": timer.rate(skip), "steps": len(timer.ends_s) - 1 - skip}


def checked(report_path: Path) -> Path:
    """`report_path`, after its figures are checked to agree with each other, as every report
    the test suite writes is (tests/report_identities.py); each disagreement is printed to
    stderr, so that a benchmark's long run goes on and its log says so."""
    tests = str(REPO_ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from report_identities import identity_problems

    from pipediag.report.io import load_report

    for problem in identity_problems(load_report(report_path)):
        print(f"REPORT DISAGREES WITH ITSELF: {report_path}: {problem}", file=sys.stderr)
    return report_path


def reason_text(stored: Any) -> str | None:
    """A reason as a report.json stores it (a code with its parameters, or an older
    report's words) in the report's own words; None where there is none."""
    if not stored:
        return None
    from pipediag.renderers.reason_words import reason_words
    from pipediag.report.reasons import Reason

    def built(value: Any) -> Reason:
        if isinstance(value, str):
            return Reason("as-written", detail=value)
        because = value.get("because")
        return Reason(**{**value, "because": built(because) if because else None})

    return reason_words(built(stored))
