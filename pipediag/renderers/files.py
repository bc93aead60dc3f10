"""The files of a report directory, by name: the package's writers and the short answer's
pointer to them both name them here."""

from __future__ import annotations

PREVIOUS = "previous"  # where a run keeps the report it finds in its output folder
REPORT_JSON = "report.json"
REPORT_TEXT = "summary.txt"
REPORT_PNG = "report.png"
TRACE_JSON = "trace.json"
