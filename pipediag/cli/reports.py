"""What `pipediag compare`, `check` and `history`, the commands over saved reports, share.

None of them runs a script, so none imports TensorFlow: they read report JSON and history
lines, and work where only the reports were copied (a CI job's artefacts). They follow the
CLI's conventions: one-line errors, exit code 2 for bad input, a newer report or history
line refused with a message that says to upgrade.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from pipediag.analysis.noise import DEFAULT_RULES, NoiseRules
from pipediag.cli.argtypes import share
from pipediag.cli.common import said_written


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
    return replace(
        DEFAULT_RULES,
        run_to_run=options.run_noise,
        run_to_run_points=DEFAULT_RULES.run_to_run_points * scale,
    )


def write_png(draw: Callable[[Path], Path], path: str) -> int:
    """Draw the PNG `--png PATH` asked for; the exit code (1: it could not be written)."""
    try:
        written = draw(Path(path))
    except OSError as exc:
        print(f"pipediag: error: could not write {path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return said_written([written], [])
