"""What every command is made of: its record in the table, the parser that says a usage
error in one line, and the short answer `run` and `report` print."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from pipediag.report.model import Report

USAGE_EXIT = 2


class OneLineParser(argparse.ArgumentParser):
    """Usage errors in one line that says where to look, instead of argparse's usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_EXIT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


@dataclass(frozen=True)
class Command:
    """One `pipediag COMMAND`: its help, its options, and what it does.

    Args:
        name: the word after `pipediag`.
        help: its line in `pipediag --help`.
        description: the paragraph of `pipediag COMMAND --help`.
        add_arguments: adds its options and positionals to its parser.
        run: does the command with the parsed options and its own parser (for a usage
            error found after parsing); returns the exit code.
        usage: its usage line, where argparse's own would mislead.
        allow_abbrev: whether a long option may be shortened.
        examples: command lines shown at the end of its `--help`, one a line.
    """

    name: str
    help: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, argparse.ArgumentParser], int]
    usage: str | None = None
    allow_abbrev: bool = True
    examples: tuple[str, ...] = ()


EXAMPLES_HEADING = "examples:"


def examples_text(examples: Sequence[str]) -> str | None:
    """The "examples:" block at the end of a `--help`; None without any."""
    if not examples:
        return None
    return EXAMPLES_HEADING + "\n" + "\n".join(f"  {line}" for line in examples)


class ExamplesHelpFormatter(argparse.HelpFormatter):
    """argparse's help, its paragraphs wrapped as usual, the examples block kept line by line."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith(EXAMPLES_HEADING):
            return "\n".join(indent + line for line in text.splitlines())
        return super()._fill_text(text, width, indent)


def said_written(written: Sequence[Path], failures: Sequence[str]) -> int:
    """Say which files were written and which could not be: exit 1 when any failed."""
    for failure in failures:
        print(f"pipediag: {failure}", file=sys.stderr)
    if written:
        print(f"Wrote: {', '.join(str(p) for p in written)}")
    return 1 if failures else 0


def answer_text(
    report: Report, folder: Path, written: Sequence[Path], *, quiet: bool = False
) -> str:
    """The short answer (with `quiet`, the verdict and where the report is), no wider than
    the terminal."""
    from pipediag.renderers import answer

    width = min(answer.WIDTH, shutil.get_terminal_size((answer.WIDTH, 24)).columns)
    where = answer.report_line(folder, [p.name for p in written])
    return answer.render_answer(report, where, width, quiet=quiet)


def in_colour(report: Report, text: str) -> str:
    """`text` with the verdict marked, when stdout is a terminal that shows colour."""
    from pipediag.renderers.colour import mark_verdict, use_colour

    return mark_verdict(text, report.verdict.label) if use_colour(sys.stdout) else text
