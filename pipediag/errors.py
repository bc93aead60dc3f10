"""Errors pipediag reports to the user as one line, with the exit code to use."""

from __future__ import annotations


class PipediagError(Exception):
    """A problem the user can fix; `str()` is the one-line message that says how."""

    exit_code = 2


class UsageError(PipediagError):
    """Bad command-line input or a bad script path: exit code 2."""


class ReportError(PipediagError):
    """A report file that cannot be read: missing, corrupt, or from a newer pipediag."""
