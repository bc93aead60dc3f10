"""The command line: `pipediag COMMAND ...`, one module per command (`commands.COMMANDS`).

`main` imports the commands when called: `pipediag.keras` shares `argtypes`, and importing
it must not load the command line above it.
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """`pipediag`'s entry point, the console script's and `python -m pipediag`'s."""
    from pipediag.cli import commands

    return commands.main(argv)
