"""`pipediag merge DIR...`: the workers of a multi-worker job in one fleet report."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipediag.cli.common import Command, said_written
from pipediag.errors import UsageError


def add_arguments(merge: argparse.ArgumentParser) -> None:
    merge.add_argument(
        "paths",
        nargs="+",
        metavar="DIR",
        help="the --out directory the workers shared, worker report directories, or "
        "report.json files",
    )
    merge.add_argument(
        "--out",
        metavar="DIR",
        help="where to write the fleet files (default: DIR, when one directory is given)",
    )


def merge_command(options: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from pipediag.fleet.merge import merge_reports
    from pipediag.fleet.text import render_fleet_text

    if (out := options.out) is None:
        if len(options.paths) > 1:
            raise UsageError("several DIRs given: say where the fleet report goes with --out DIR")
        given = Path(options.paths[0])
        out = given if given.is_dir() else given.parent
    fleet, written, failures = merge_reports(options.paths, out)
    print(render_fleet_text(fleet), end="")
    return said_written(written, failures)


COMMAND = Command(
    name="merge",
    help="merge the reports of a multi-worker job's workers into one fleet report",
    description=(
        "Merge the workers' reports of one job (each `pipediag run` under TF_CONFIG writes "
        "OUT/TYPE-INDEX/report.json) into fleet.json, fleet.txt, fleet_trace.json and "
        "fleet.png: a row per worker, the straggler and its cause, one trace on a common "
        "clock. No TensorFlow needed."
    ),
    add_arguments=add_arguments,
    run=merge_command,
    allow_abbrev=False,
)
