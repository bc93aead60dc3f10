"""`pipediag report PATH`: re-render a saved report (no TensorFlow needed)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipediag.cli.common import Command, answer_text, in_colour, said_written


def add_arguments(report: argparse.ArgumentParser) -> None:
    report.add_argument("path", help="report.json, or the directory holding it")
    report.add_argument(
        "--out",
        metavar="DIR",
        help="where to write report.png, trace.json and summary.txt (default: beside the report)",
    )
    report.add_argument(
        "--full", action="store_true", help="print every figure (summary.txt), not the answer"
    )


def report_command(options: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from pipediag.renderers import write_outputs
    from pipediag.renderers.files import REPORT_JSON
    from pipediag.renderers.text import render_text
    from pipediag.report.io import load_report

    source = Path(options.path)
    report = load_report(source)
    out = Path(options.out) if options.out else (source if source.is_dir() else source.parent)
    written, failures = write_outputs(report, out)
    text = render_text(report) if options.full else answer_text(report, out, written)
    print(in_colour(report, text), end="")
    return said_written([p for p in written if p.name != REPORT_JSON or options.out], failures)


COMMAND = Command(
    name="report",
    help="re-render the summary, PNG and trace from a saved report",
    description="Re-render a saved report (no TensorFlow needed).",
    add_arguments=add_arguments,
    run=report_command,
    examples=("pipediag report pipediag-out/report.json --out rendered",),
)
