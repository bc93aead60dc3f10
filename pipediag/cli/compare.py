"""`pipediag compare BASE NEW`: what changed between two reports, and whether it is more
than noise."""

from __future__ import annotations

import argparse

from pipediag.cli.common import Command, add_run_noise, noise_rules, write_png


def add_arguments(compare: argparse.ArgumentParser) -> None:
    compare.add_argument("base", metavar="BASE", help="the earlier report.json (or its folder)")
    compare.add_argument("new", metavar="NEW", help="the later report.json (or its folder)")
    compare.add_argument("--png", metavar="PATH", help="also draw both runs side by side")
    add_run_noise(compare)


def compare_command(options: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from pipediag.analysis.compare import compare_reports
    from pipediag.renderers.compare_text import render_comparison
    from pipediag.report.io import load_report

    base, new = load_report(options.base), load_report(options.new)
    comparison = compare_reports(base, new, noise_rules(options))
    print(render_comparison(comparison, options.base, options.new), end="")
    if not options.png:
        return 0
    from pipediag.renderers.compare_png import render_comparison_png

    names = (options.base, options.new)
    return write_png(
        lambda path: render_comparison_png(comparison, base, new, path, names), options.png
    )


COMMAND = Command(
    name="compare",
    help="what changed between two reports, and whether it is more than noise",
    description=(
        "Compare two saved reports (no TensorFlow needed): the training rate, the verdict "
        "and its shares, the three rates, each stage's cost and the fixes that appeared "
        "or went away. A change inside the runs' own spread is called noise."
    ),
    add_arguments=add_arguments,
    run=compare_command,
    examples=("pipediag compare before/report.json after/report.json --png diff.png",),
)
