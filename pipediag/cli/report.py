"""`pipediag report PATH`: re-render a saved report (no TensorFlow needed)."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from pipediag.cli.common import Command, said_written


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
    from pipediag.renderers import REPORT_JSON, answer, write_outputs
    from pipediag.renderers.colour import mark_verdict, use_colour
    from pipediag.renderers.text import render_text
    from pipediag.report.io import load_report

    source = Path(options.path)
    report = load_report(source)
    out = Path(options.out) if options.out else (source if source.is_dir() else source.parent)
    written, failures = write_outputs(report, out)
    if options.full:
        text = render_text(report)
    else:
        width = min(answer.WIDTH, shutil.get_terminal_size((answer.WIDTH, 24)).columns)
        names = [p.name for p in written]
        text = answer.render_answer(report, answer.report_line(out, names), width)
    print(mark_verdict(text, report.verdict.label) if use_colour(sys.stdout) else text, end="")
    written = [p for p in written if p.name != REPORT_JSON or options.out]
    return said_written(written, failures)


COMMAND = Command(
    name="report",
    help="re-render the summary, PNG and trace from a saved report",
    description="Re-render a saved report (no TensorFlow needed).",
    add_arguments=add_arguments,
    run=report_command,
    examples=("pipediag report pipediag-out/report.json --out rendered",),
)
