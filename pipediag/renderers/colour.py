"""Colour for a terminal: the verdict's line in its label's colour, and nothing else; none
where `NO_COLOR` (no-color.org) is set, `TERM=dumb`, or the output is not a terminal."""

from __future__ import annotations

import os
from typing import TextIO

_RESET = "\033[0m"
# Bold, in red, yellow or green by how much input matters; an uncertain verdict bold alone.
_SGR = {"input-bound": "1;31", "balanced": "1;33", "compute-bound": "1;32", "uncertain": "1"}


def use_colour(stream: TextIO) -> bool:
    if "NO_COLOR" in os.environ or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def mark_verdict(text: str, label: str) -> str:
    """`text` with its first non-blank line (the verdict) in its label's colour."""
    if (attributes := _SGR.get(label)) is None:
        return text
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if line.strip():
            lines[index] = f"\033[{attributes}m{line}{_RESET}"
            break
    return "\n".join(lines)
