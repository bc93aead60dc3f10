"""Colour for a terminal: the verdict's line marked by its label, and nothing else.

Colour only where the output is a terminal and the user has not opted out: `NO_COLOR`
(no-color.org) set to anything, or `TERM=dumb`. A pipe or a file gets plain text.
"""

from __future__ import annotations

import os
from typing import TextIO

from pipediag.report.vocabulary import BALANCED, COMPUTE_BOUND, INPUT_BOUND, UNCERTAIN

_RESET = "\033[0m"
# Each label's SGR attributes: bold, and a colour that says how much input matters (red,
# yellow, green); an uncertain verdict bold alone.
_SGR = {INPUT_BOUND: "1;31", BALANCED: "1;33", COMPUTE_BOUND: "1;32", UNCERTAIN: "1"}


def use_colour(stream: TextIO) -> bool:
    if "NO_COLOR" in os.environ or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def mark_verdict(text: str, label: str) -> str:
    """`text` with its first non-blank line (the verdict) in its label's colour."""
    attributes = _SGR.get(label)
    if attributes is None:
        return text
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if line.strip():
            lines[index] = f"\033[{attributes}m{line}{_RESET}"
            break
    return "\n".join(lines)
