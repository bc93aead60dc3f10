"""The command line, one module per command (`commands.COMMANDS`). `main` imports them when
called: `pipediag.keras` imports `argtypes`, and so this package, but must not load a command."""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """`pipediag`'s entry point, the console script's and `python -m pipediag`'s."""
    from pipediag.cli import commands

    return commands.main(argv)
