"""`pipediag compare`, `pipediag check` and `pipediag history`: commands over saved reports.

None of them runs a script, so none imports TensorFlow: they read report JSON and history
lines, and work where only the reports were copied (a CI job's artefacts). They follow the
CLI's conventions (`cli.py`): one-line errors, exit code 2 for bad input, a newer report or
history line refused with a message that says to upgrade.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from pipediag.analysis.noise import DEFAULT_RULES, NoiseRules
from pipediag.errors import ReportError, UsageError

# `pipediag check`: every threshold held / one or more broke. Usage errors and unreadable
# reports exit with 2 (`errors.PipediagError`).
CHECK_PASSED = 0
CHECK_FAILED = 1


def share(text: str) -> float:
    """An argparse type: a share written as 0.2 or 20%."""
    stripped = text.strip()
    percent = stripped.endswith("%")
    try:
        value = float(stripped.removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a share like 0.2 or 20%, got {text!r}"
        ) from None
    if percent:
        value /= 100.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(
            f"expected a share from 0 to 1 (or 0% to 100%), got {text!r}"
            + ("" if percent else f"; for percent write {text}%")
        )
    return value


def positive_rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of steps/s, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def add_report_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add compare, check and history to the CLI's subcommands."""
    compare = commands.add_parser(
        "compare",
        help="what changed between two reports, and whether it is more than noise",
        description=(
            "Compare two saved reports (no TensorFlow needed): the training rate, the verdict "
            "and its shares, the three rates, each stage's cost and the fixes that appeared "
            "or went away. A change inside the runs' own spread is called noise."
        ),
    )
    compare.add_argument("base", metavar="BASE", help="the earlier report.json (or its folder)")
    compare.add_argument("new", metavar="NEW", help="the later report.json (or its folder)")
    compare.add_argument("--png", metavar="PATH", help="also draw both runs side by side")
    _add_run_noise(compare)

    check = commands.add_parser(
        "check",
        help="fail (exit 1) when a report breaks a threshold: a CI gate",
        description=(
            "Check a saved report against thresholds (no TensorFlow needed). Prints one line "
            "per threshold and exits 1 if any broke, 0 if all held, 2 on bad input. Shares "
            "are written 0.2 or 20%%."
        ),
    )
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
    _add_run_noise(check)

    history = commands.add_parser(
        "history",
        help="the trend of the runs recorded with `pipediag run --history FILE`",
        description=(
            "Print one row per recorded run and mark regressions: a run slower than the best "
            "earlier run of its script beyond noise, or a verdict worse than the run before."
        ),
    )
    history.add_argument("file", metavar="FILE", help="the history file (JSON lines)")
    history.add_argument("--png", metavar="PATH", help="also draw the trend")
    _add_run_noise(history)


def _add_run_noise(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--run-noise",
        type=share,
        default=DEFAULT_RULES.run_to_run,
        metavar="F",
        help="how much a rate moves between two runs of the same script beyond each run's own "
        f"spread (default {DEFAULT_RULES.run_to_run:.0%}, measured on a shared 2-core host; "
        "0 on a quiet, dedicated machine)",
    )


def _rules(options: argparse.Namespace) -> NoiseRules:
    scale = options.run_noise / DEFAULT_RULES.run_to_run if DEFAULT_RULES.run_to_run else 0.0
    return replace(
        DEFAULT_RULES,
        run_to_run=options.run_noise,
        run_to_run_points=DEFAULT_RULES.run_to_run_points * scale,
    )


def compare_command(options: argparse.Namespace) -> int:
    from pipediag.analysis.compare import compare_reports
    from pipediag.renderers.compare_text import render_comparison
    from pipediag.report.io import load_report

    base, new = load_report(options.base), load_report(options.new)
    comparison = compare_reports(base, new, _rules(options))
    print(render_comparison(comparison, options.base, options.new), end="")
    if not options.png:
        return 0
    from pipediag.renderers.compare_png import render_comparison_png

    return _write_png(
        lambda path: render_comparison_png(
            comparison, base, new, path, (options.base, options.new)
        ),
        options.png,
    )


def check_command(options: argparse.Namespace) -> int:
    from pipediag.analysis.gate import Thresholds, check_report
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
    results = check_report(report, thresholds, baseline, _rules(options))
    for result in results:
        print(result.line)
    return CHECK_PASSED if all(r.passed for r in results) else CHECK_FAILED


def history_command(options: argparse.Namespace) -> int:
    from pipediag.analysis.trend import trend
    from pipediag.renderers.history_text import render_history
    from pipediag.report.history import read_history

    entries = read_history(options.file)
    if not entries:
        raise ReportError(
            f"{options.file} holds no runs: record some with "
            f"`pipediag run --history {options.file} ...`"
        )
    result = trend(entries, _rules(options))
    print(render_history(result, options.file), end="")
    if not options.png:
        return 0
    from pipediag.renderers.history_png import render_history_png

    return _write_png(lambda path: render_history_png(result, path, options.file), options.png)


def _write_png(draw: Callable[[Path], Path], path: str) -> int:
    try:
        written = draw(Path(path))
    except OSError as exc:
        print(f"pipediag: error: could not write {path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"Wrote: {written}")
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "compare": compare_command,
    "check": check_command,
    "history": history_command,
}
