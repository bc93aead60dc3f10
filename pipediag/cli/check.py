"""`pipediag check REPORT`: fail (exit 1) when a report breaks a threshold, a CI gate."""

from __future__ import annotations

import argparse

from pipediag.cli.argtypes import positive_rate, share
from pipediag.cli.common import Command, add_run_noise, noise_rules
from pipediag.errors import UsageError

# Every threshold held / one or more broke; bad input exits with 2 (`errors.PipediagError`).
CHECK_PASSED = 0
CHECK_FAILED = 1


def add_arguments(check: argparse.ArgumentParser) -> None:
    check.add_argument("report", metavar="REPORT", help="report.json (or its folder)")
    check.add_argument("--max-input-cost", type=share, metavar="F", help="most input cost")
    check.add_argument("--max-input-wait", type=share, metavar="F", help="most input wait")
    check.add_argument(
        "--min-steps-per-s", type=positive_rate, metavar="X", help="least training rate"
    )
    check.add_argument("--baseline", metavar="BASE", help="an earlier report to compare with")
    check.add_argument(
        "--max-slowdown",
        type=share,
        metavar="F",
        help="most training may slow down against --baseline (it fails only beyond the runs' "
        "noise)",
    )
    add_run_noise(check)


def check_command(options: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from pipediag.analysis.gate import Thresholds, check_report
    from pipediag.renderers.check_words import check_line
    from pipediag.report.io import load_report

    thresholds = Thresholds(
        max_input_cost=options.max_input_cost,
        max_input_wait=options.max_input_wait,
        min_steps_per_s=options.min_steps_per_s,
        max_slowdown=options.max_slowdown,
    )
    if (options.baseline is None) != (options.max_slowdown is None):
        raise UsageError("--baseline and --max-slowdown go together: give both, or neither")
    if not thresholds.any():
        raise UsageError(
            "nothing to check: give --max-input-cost, --max-input-wait, --min-steps-per-s, "
            "or --baseline with --max-slowdown"
        )
    report = load_report(options.report)
    baseline = None if options.baseline is None else load_report(options.baseline)
    results = check_report(report, thresholds, baseline, noise_rules(options))
    for result in results:
        print(check_line(result))
    return CHECK_PASSED if all(r.passed for r in results) else CHECK_FAILED


COMMAND = Command(
    name="check",
    help="fail (exit 1) when a report breaks a threshold: a CI gate",
    description=(
        "Check a saved report against thresholds (no TensorFlow needed). Prints one line "
        "per threshold and exits 1 if any broke, 0 if all held, 2 on bad input. Shares "
        "are written 0.2 or 20%."
    ),
    add_arguments=add_arguments,
    run=check_command,
    examples=(
        "pipediag check out/report.json --max-input-cost 20%",
        "pipediag check out/report.json --baseline main/report.json --max-slowdown 10%",
    ),
)
