"""The files of a report directory, named once for the writers and the answer's pointer."""

from __future__ import annotations

PREVIOUS = "previous"  # where a run keeps the report it finds in its output folder
REPORT_JSON = "report.json"
REPORT_TEXT = "summary.txt"
REPORT_PNG = "report.png"
TRACE_JSON = "trace.json"
