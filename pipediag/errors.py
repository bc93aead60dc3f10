"""Errors pipediag reports to the user as one line, with the exit code to use."""

from __future__ import annotations

import re


class PipediagError(Exception):
    """A problem the user can fix; `str()` is the one-line message that says how."""

    exit_code = 2


class UsageError(PipediagError):
    """Bad command-line input or a bad script path: exit code 2."""


class ReportError(PipediagError):
    """A report file that cannot be read: missing, corrupt, or from a newer pipediag."""


def tf_error_text(exc: BaseException) -> str:
    """The part of a tf.data error that says what went wrong, without the iterator plumbing:
    `Incompatible shapes: [4] vs. [16]` rather than the function node and iterator path."""
    lines = [line.strip() for line in str(getattr(exc, "message", exc)).splitlines()]
    lines = [line for line in lines if line] or [""]
    # A trace error (autograph's "in user code:", then the frames) ends with what went wrong.
    message = lines[-1] if lines[0] == "in user code:" else lines[0]
    message = re.sub(r"\{\{[^}]*\}\}\s*", "", message)
    inner = re.search(r"Iterator::[\w:]+: (.*)", message)
    return (inner.group(1) if inner else message)[:160]


# An error in a note is cut here.
DESCRIBED_CHARS = 200


def describe_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:DESCRIBED_CHARS]
