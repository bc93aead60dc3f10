"""What every command is made of: its record in the table, the parser that says a usage
error in one line, the short answer `run` and `report` print, and the options of the commands
over saved reports (`compare`, `check`, `history`: no TensorFlow, one-line errors)."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from pipediag.analysis.noise import DEFAULT_RULES, NoiseRules
from pipediag.cli.argtypes import share
from pipediag.errors import UsageError

if TYPE_CHECKING:
    from pipediag.report.model import Report


class OneLineParser(argparse.ArgumentParser):
    """Usage errors in one line that says where to look, instead of argparse's usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(UsageError.exit_code, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


@dataclass(frozen=True)
class Command:
    """One `pipediag COMMAND`: its help, its options, and what it does."""

    name: str  # the word after `pipediag`
    help: str  # its line in `pipediag --help`
    description: str  # the paragraph of `pipediag COMMAND --help`
    add_arguments: Callable[[argparse.ArgumentParser], None]
    # Given its own parser too, for a usage error found after parsing; returns the exit code.
    run: Callable[[argparse.Namespace, argparse.ArgumentParser], int]
    usage: str | None = None  # where argparse's own would mislead
    allow_abbrev: bool = True
    examples: tuple[str, ...] = ()  # command lines shown at the end of its `--help`


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
    """The short answer (`quiet`: the verdict, where the report is), no wider than the terminal."""
    from pipediag.renderers import answer

    width = min(answer.WIDTH, shutil.get_terminal_size((answer.WIDTH, 24)).columns)
    where = answer.report_line(folder, [p.name for p in written])
    return answer.render_answer(report, where, width, quiet=quiet)


def in_colour(report: Report, text: str) -> str:
    """`text` with the verdict marked, when stdout is a terminal that shows colour."""
    from pipediag.renderers.colour import mark_verdict, use_colour

    return mark_verdict(text, report.verdict.label) if use_colour(sys.stdout) else text


def add_run_noise(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--run-noise",
        type=share,
        default=DEFAULT_RULES.run_to_run,
        metavar="F",
        help="how much a rate moves between two runs of the same script beyond each run's own "
        f"spread (default {DEFAULT_RULES.run_to_run:.0%}%, measured on a shared 2-core host; "
        "0 on a quiet, dedicated machine)",
    )


def noise_rules(options: argparse.Namespace) -> NoiseRules:
    """The noise rules with `--run-noise`'s run-to-run share."""
    scale = options.run_noise / DEFAULT_RULES.run_to_run if DEFAULT_RULES.run_to_run else 0.0
    points = DEFAULT_RULES.run_to_run_points * scale
    return replace(DEFAULT_RULES, run_to_run=options.run_noise, run_to_run_points=points)


def write_png(draw: Callable[[Path], Path], path: str) -> int:
    """Draw the PNG `--png PATH` asked for; the exit code (1: it could not be written)."""
    try:
        written = draw(Path(path))
    except OSError as exc:
        print(f"pipediag: error: could not write {path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return said_written([written], [])
