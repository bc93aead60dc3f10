"""The command line: `pipediag COMMAND ...`, one module per command, listed in one table
(`commands.COMMANDS`); the argument checks they share are in `argtypes`.

`main` imports the commands when it is called, not when this package is imported: the
front doors below the command line (`pipediag.keras`) share `argtypes`, and importing it
must not load the command line above them.
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """`pipediag`'s entry point, the console script's and `python -m pipediag`'s."""
    from pipediag.cli import commands

    return commands.main(argv)
