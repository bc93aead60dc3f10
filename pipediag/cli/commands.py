"""`pipediag COMMAND ...`: every command in one table (each a module with a `COMMAND`), and
`main`, which runs one; errors the user can fix (`errors.PipediagError`) are caught here
only, and become one line and their exit code."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from pipediag.cli import check, compare, history, merge, report, run
from pipediag.cli.common import Command, ExamplesHelpFormatter, OneLineParser, examples_text
from pipediag.errors import PipediagError
from pipediag.version import __version__

# In the order `pipediag --help` lists them.
COMMANDS: tuple[Command, ...] = tuple(
    module.COMMAND for module in (run, report, compare, check, history, merge)
)

EXAMPLES = (
    "pipediag run train.py --epochs 3          # diagnose; the script's own args follow it",
    "pipediag run --steps 300 train.py         # measure longer for a narrower interval",
    "pipediag report pipediag-out/report.json  # re-render a saved report",
    "pipediag compare before.json after.json   # what a change did, beyond noise or not",
    "pipediag COMMAND --help                   # each command's options",
)


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The `pipediag` parser, and each command's own parser by its name."""
    parser = OneLineParser(
        prog="pipediag",
        allow_abbrev=False,
        description="Find out why TensorFlow training is slow: the input pipeline or the model.",
        epilog=examples_text(EXAMPLES),
        formatter_class=ExamplesHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pipediag {__version__}")
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=OneLineParser
    )
    parsers: dict[str, argparse.ArgumentParser] = {}
    for command in COMMANDS:
        parsers[command.name] = subparsers.add_parser(
            command.name,
            help=command.help,
            description=command.description,
            usage=command.usage,
            allow_abbrev=command.allow_abbrev,
            epilog=examples_text(command.examples),
            formatter_class=ExamplesHelpFormatter,
        )
        command.add_arguments(parsers[command.name])
    return parser, parsers


def main(argv: Sequence[str] | None = None) -> int:
    parser, parsers = build_parser()
    line = list(sys.argv[1:] if argv is None else argv)
    # Only `run` passes the rest of its line on: everything after SCRIPT is the script's.
    ours, script_args = run.split_script_args(line, parsers[run.COMMAND.name])
    options = parser.parse_args(ours)
    options.script_args = script_args
    command = next(c for c in COMMANDS if c.name == options.command)
    try:
        return command.run(options, parsers[command.name])
    except PipediagError as exc:
        print(f"pipediag: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        # `pipediag report ... | head`: the reader left; no traceback, and none at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
