"""`pipediag history FILE`: the trend of the runs recorded with `pipediag run --history`."""

from __future__ import annotations

import argparse

from pipediag.cli.common import Command, add_run_noise, noise_rules, write_png
from pipediag.errors import ReportError


def add_arguments(history: argparse.ArgumentParser) -> None:
    history.add_argument("file", metavar="FILE", help="the history file (JSON lines)")
    history.add_argument("--png", metavar="PATH", help="also draw the trend")
    add_run_noise(history)


def history_command(options: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from pipediag.analysis.trend import trend
    from pipediag.renderers.history_text import render_history
    from pipediag.report.history import read_history

    if not (entries := read_history(options.file)):
        raise ReportError(
            f"{options.file} holds no runs: record some with "
            f"`pipediag run --history {options.file} ...`"
        )
    result = trend(entries, noise_rules(options))
    print(render_history(result, options.file), end="")
    if not options.png:
        return 0
    from pipediag.renderers.history_png import render_history_png

    return write_png(lambda path: render_history_png(result, path, options.file), options.png)


COMMAND = Command(
    name="history",
    help="the trend of the runs recorded with `pipediag run --history FILE`",
    description=(
        "Print one row per recorded run and mark regressions: a run slower than the fastest "
        "run of its script recorded before it, beyond noise, or a verdict worse than the "
        "previous recorded run's."
    ),
    add_arguments=add_arguments,
    run=history_command,
)
