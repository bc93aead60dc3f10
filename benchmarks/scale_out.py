"""Scale-out figures: each script diagnosed with `--scale-out N` (default 2).

Per script, from the report: the verdict; whether the pipeline can move and what blocks
it; the pipeline read in this process (P) against the same part read through the local
tf.data service (S); bytes per batch; the transfer ceiling (one batch made, sent again and
again) and its time per batch; CPU per batch on each side; the servers' start-up; and the
wall time the check added (the report's `scale_out` phase). Then the prediction's inputs:
compute alone T, training A, the per-worker rate W and its source, the transfer ceiling X
and its source, the workers needed and the predicted speedup.

The local workers share this host's cores: S shows that the pipeline runs on workers and
what transfer costs, not a cluster's speed.

    python benchmarks/scale_out.py                        # both examples + two suite cases
    python benchmarks/scale_out.py --cases contention_fit --workers 4
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (
    CASES_DIR,
    EXAMPLES_DIR,
    REPO_ROOT,
    base_parser,
    checked,
    fmt,
    format_table,
    reason_text,
    run_child,
    tail,
    write_results,
)

NAME = "scale_out"
DEFAULT_SCRIPTS = (
    EXAMPLES_DIR / "input_bound_fit.py",
    EXAMPLES_DIR / "compute_bound_loop.py",
    CASES_DIR / "contention_fit.py",
    CASES_DIR / "tfrecord_slow_read_fit.py",
)
SCRIPT_ARGS = ("--epochs", "2")
RUN_TIMEOUT_S = 300


def figures(report: Mapping[str, Any]) -> dict[str, Any]:
    """The row of one diagnosed script, from its report JSON."""
    section = report.get("scale_out") or {}
    local = next((m for m in section.get("measurements", []) if m["where"] == "local"), {})
    prediction = section.get("prediction") or {}
    verdict = report.get("verdict", {})
    return {
        "verdict": verdict.get("label"),
        "compatible": section.get("compatible"),
        "blockers": [b["kind"] for b in section.get("blockers", [])],
        "distribute_after": section.get("distribute_after"),
        "measured": bool(local.get("measured")),
        "not_measured_reason": reason_text(local.get("reason"))
        or "; ".join(filter(None, map(reason_text, section.get("notes", [])))),
        "local_batches_per_s": local.get("local_batches_per_s"),
        "service_batches_per_s": local.get("batches_per_s"),
        "bytes_per_batch": local.get("bytes_per_batch"),
        "transfer_batches_per_s": local.get("transfer_batches_per_s"),
        "transfer_s_per_batch": local.get("transfer_s_per_batch"),
        "consumer_cpu_s_per_batch": local.get("consumer_cpu_s_per_batch"),
        "worker_cpu_s_per_batch": local.get("worker_cpu_s_per_batch"),
        "startup_s": local.get("startup_s"),
        "check_wall_s": report.get("phase_times_s", {}).get("scale_out"),
        "diagnosis_wall_s": report.get("wall_time_s"),
        "prediction": prediction,
    }


def main() -> int:
    parser = base_parser(NAME, __doc__)
    parser.add_argument("--workers", type=int, default=2, help="local workers (default 2)")
    parser.add_argument(
        "--cases", help="comma-separated benchmarks/cases names instead of the default set"
    )
    options = parser.parse_args()
    scripts = (
        [CASES_DIR / f"{n.strip().removesuffix('.py')}.py" for n in options.cases.split(",")]
        if options.cases
        else list(DEFAULT_SCRIPTS)
    )
    rows: dict[str, Any] = {}
    for script in scripts:
        name = str(script.relative_to(REPO_ROOT))
        with tempfile.TemporaryDirectory(prefix="pipediag-scale-out-") as out:
            command = [sys.executable, "-m", "pipediag", "run", "--quiet"]
            command += ["--scale-out", str(options.workers), "--out", out, str(script)]
            result, wall_s = run_child([*command, *SCRIPT_ARGS], timeout_s=RUN_TIMEOUT_S)
            report_path = Path(out) / "report.json"
            if not report_path.exists():
                print(f"{name}: no report (exit {result.returncode})\n{tail(result.stderr)}")
                continue
            rows[name] = {
                **figures(json.loads(checked(report_path).read_text())),
                "process_wall_s": wall_s,
            }
    print(_measured_table(rows))
    print()
    print(_prediction_table(rows))
    write_results(
        options.json,
        NAME,
        settings={"workers": options.workers},
        summary=_summary(rows),
        cases=[{"script": name, **row} for name, row in rows.items()],
        quick=False,
    )
    return 0


def _summary(rows: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The figures the README cites: the wall time the check added, and the service's rate
    against the pipeline's own, per script."""
    return {
        "check_wall_s": {name: row.get("check_wall_s") for name, row in rows.items()},
        "service_over_local": {
            name: row["service_batches_per_s"] / row["local_batches_per_s"]
            for name, row in rows.items()
            if row.get("service_batches_per_s") and row.get("local_batches_per_s")
        },
    }


def _measured_table(rows: Mapping[str, Mapping[str, Any]]) -> str:
    headers = [
        "script",
        "verdict",
        "blockers",
        "P here",
        "S service",
        "KiB/batch",
        "transfer ms",
        "recv CPU ms",
        "worker CPU ms",
        "start-up s",
        "check s",
    ]
    table = []
    for name, r in rows.items():
        kib = None if r["bytes_per_batch"] is None else r["bytes_per_batch"] / 1024
        transfer = r["transfer_s_per_batch"]
        table.append(
            [
                name,
                r["verdict"],
                ",".join(r["blockers"]) or "none",
                fmt(r["local_batches_per_s"]),
                fmt(r["service_batches_per_s"]) if r["measured"] else "not sent",
                fmt(kib),
                fmt(None if transfer is None else transfer * 1e3, ".2f"),
                fmt(_ms(r["consumer_cpu_s_per_batch"]), ".2f"),
                fmt(_ms(r["worker_cpu_s_per_batch"]), ".2f"),
                fmt(r["startup_s"]),
                fmt(r["check_wall_s"]),
            ]
        )
    return format_table(headers, table)


def _prediction_table(rows: Mapping[str, Mapping[str, Any]]) -> str:
    headers = ["script", "T", "A", "W (source)", "X (source)", "workers", "speedup", "limit"]
    table = []
    for name, r in rows.items():
        p = r["prediction"] or {}
        table.append(
            [
                name,
                fmt(p.get("target_steps_per_s")),
                fmt(p.get("training_steps_per_s")),
                _with_source(fmt(p.get("per_worker_batches_per_s")), p.get("per_worker_source")),
                _with_source(fmt(p.get("transfer_batches_per_s"), ".0f"), p.get("transfer_source")),
                p.get("workers_needed") or "-",
                fmt(p.get("predicted_speedup"), ".1f", "x"),
                p.get("limited_by") or reason_text(p.get("reason")) or "-",
            ]
        )
    return format_table(headers, table)


def _with_source(value: str, source: str | None) -> str:
    return f"{value} ({source or '-'})"


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


if __name__ == "__main__":
    sys.exit(main())
