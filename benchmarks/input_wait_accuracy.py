"""Input-wait accuracy: pipediag's per-step input wait against a known injected delay.

`benchmarks/injected_delay.py` makes every batch cost a known delay with no prefetch, so
each step's true input wait is that delay. pipediag diagnoses it under Keras fit (wait from
the batch stamps taken in the graph) and a custom loop (wait timed at the iterator); for
every measured step the error is (measured wait - delay). The table gives,
per style and delay, the median absolute error, its 90th percentile and the median signed
error (bias: tf.data's own per-batch cost, a few tens of microseconds, counts as wait).

All diagnoses run in this process (as `pipediag.diagnose` would for a user), one after
another.

    python benchmarks/input_wait_accuracy.py           # 6 delays x 2 styles, 50 steps each
    python benchmarks/input_wait_accuracy.py --quick   # 2 delays x 2 styles, 15 steps
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (
    BENCH_DIR,
    add_raw_option,
    base_parser,
    format_table,
    make_run_config,
    median,
    quantile,
    split_raw,
    spread_summary,
    write_results,
)

NAME = "input_wait_accuracy"
SCRIPT = BENCH_DIR / "injected_delay.py"
STYLES = ("fit", "loop")
# 0 ms gives the floor: what a step "waits" when the pipeline costs only its own overhead.
DELAYS_MS = (0.0, 2.0, 5.0, 10.0, 20.0, 40.0)
QUICK_DELAYS_MS = (5.0, 20.0)
MEASURED_STEPS = 50
QUICK_MEASURED_STEPS = 15
WARMUP_STEPS = 5
EPOCHS = 5  # 100 batches an epoch: always more than warm-up + measured steps
# The pipeline-alone benchmark is not what is measured here; keep it short.
BENCH_SECONDS = 0.5
# Every measured step's wait: kept only with --raw; the results keep its spread and errors.
RAW_KEYS = ("waits_ms",)


def error_stats(waits_s: list[float], delay_s: float) -> dict[str, float | int | None]:
    """Errors of measured waits against the true delay, in milliseconds."""
    errors_ms = [(w - delay_s) * 1000 for w in waits_s]
    absolute = [abs(e) for e in errors_ms]
    return {
        "steps": len(errors_ms),
        "median_abs_error_ms": median(absolute),
        "p90_abs_error_ms": quantile(absolute, 0.9),
        "median_error_ms": median(errors_ms),
        "median_abs_error_rel": median(absolute) / (delay_s * 1000) if delay_s > 0 else None,
    }


def diagnose_one(style: str, delay_ms: float, steps: int) -> dict[str, Any]:
    import pipediag

    with tempfile.TemporaryDirectory(prefix="pipediag-wait-") as out:
        report = pipediag.diagnose(
            SCRIPT,
            ["--style", style, "--delay-ms", str(delay_ms), "--epochs", str(EPOCHS)],
            config=make_run_config(
                measured_steps=steps,
                warmup_steps=WARMUP_STEPS,
                bench_seconds=BENCH_SECONDS,
                sample_gpu=False,
                verify=False,
            ),
            out=out,
            log=None,
        )
    waits = [
        s.input_wait_s
        for s in report.train.steps
        if s.label != "warmup" and s.input_wait_s is not None
    ]
    result: dict[str, Any] = {
        "style": style,
        "delay_ms": delay_ms,
        "source": report.train.input_wait_source,
        "complete": report.complete,
        "waits_ms": [w * 1000 for w in waits],
        "wait_ms": spread_summary([w * 1000 for w in waits]),
    }
    if waits:
        result.update(error_stats(waits, delay_ms / 1000))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(NAME, __doc__)
    add_raw_option(parser, "every measured step's wait")
    args = parser.parse_args(argv)
    delays = QUICK_DELAYS_MS if args.quick else DELAYS_MS
    steps = QUICK_MEASURED_STEPS if args.quick else MEASURED_STEPS

    results = []
    for style in STYLES:
        for delay in delays:
            results.append(diagnose_one(style, delay, steps))
            print(f"  {style} {delay:g} ms: {results[-1].get('steps', 0)} steps", flush=True)

    rows = [
        [
            r["style"],
            r["source"],
            f"{r['delay_ms']:g}",
            r.get("steps", 0),
            _ms(r.get("median_abs_error_ms")),
            _ms(r.get("p90_abs_error_ms")),
            _ms(r.get("median_error_ms"), signed=True),
            "-" if r.get("median_abs_error_rel") is None else f"{r['median_abs_error_rel']:.1%}",
        ]
        for r in results
    ]
    print()
    headers = [
        "style",
        "wait from",
        "delay ms",
        "steps",
        "median |err| ms",
        "p90 |err| ms",
        "bias ms",
        "median |err| / delay",
    ]
    print(format_table(headers, rows))
    overall = {}
    for style in STYLES:
        absolute = [
            abs(w - r["delay_ms"]) for r in results if r["style"] == style for w in r["waits_ms"]
        ]
        if absolute:
            overall[style] = {
                "median_abs_error_ms": median(absolute),
                "p90_abs_error_ms": quantile(absolute, 0.9),
            }
            print(
                f"{style}: all delays, median |error| {overall[style]['median_abs_error_ms']:.2f}"
                f" ms, p90 {overall[style]['p90_abs_error_ms']:.2f} ms"
            )
    cases, raw = split_raw(results, RAW_KEYS, ["style", "delay_ms"])
    write_results(
        args.json,
        NAME,
        settings={"delays_ms": delays, "measured_steps": steps},
        summary=overall,
        cases=cases,
        quick=args.quick,
        raw=raw,
        raw_to=args.raw,
    )
    return 0


def _ms(value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.2f}" if signed else f"{value:.2f}"


if __name__ == "__main__":
    sys.exit(main())
