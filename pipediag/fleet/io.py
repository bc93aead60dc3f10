"""The fleet report <-> JSON: versioned like the per-worker report, read tolerantly."""

from __future__ import annotations

import dataclasses
from typing import Any

from pipediag.errors import ReportError
from pipediag.fleet.analysis import find_straggler
from pipediag.fleet.model import FLEET_SCHEMA_VERSION, ClockAnchor, FleetReport, WorkerRow
from pipediag.fleet.words import CLOCK_CREATED

# The per-worker report's tolerant reader: unknown fields ignored, a stored reason in words
# read as written (versions 1 and 2 wrote the no-straggler reason and the notes in words).
from pipediag.report.upgrades import build_dataclass


def fleet_to_dict(fleet: FleetReport) -> dict[str, Any]:
    return dataclasses.asdict(fleet)


def fleet_from_dict(data: Any) -> FleetReport:
    """Rebuild a fleet report; unknown fields are ignored, missing optional ones defaulted."""
    if not isinstance(data, dict) or not isinstance(data.get("schema_version"), int):
        raise ReportError("not a pipediag fleet report: no integer 'schema_version'")
    if (version := data["schema_version"]) > FLEET_SCHEMA_VERSION:
        raise ReportError(
            f"fleet report schema version {version} is newer than this pipediag reads "
            f"({FLEET_SCHEMA_VERSION}); upgrade pipediag"
        )
    try:
        # Version 1 wrote "" for no reason.
        fleet = build_dataclass(
            FleetReport, {**data, "no_straggler_reason": data.get("no_straggler_reason") or None}
        )
        if isinstance(data.get("clock"), str):
            fleet = dataclasses.replace(fleet, workers=_anchored(fleet.workers, data["clock"]))
        if isinstance(straggler := data.get("straggler"), dict) and "explanation" in straggler:
            # An older file's straggler, worded without medians: found again from the rows.
            found, _ = find_straggler(fleet.workers)
            if found is not None and found.task == straggler.get("task"):
                fleet = dataclasses.replace(fleet, straggler=found)
        return fleet
    except (TypeError, ValueError, AttributeError) as exc:
        raise ReportError(f"malformed pipediag fleet report: {exc}") from exc


def _anchored(rows: list[WorkerRow], clock: str) -> list[WorkerRow]:
    """An older fleet's rows, anchors read back from the `clock` words: a wall-clock one where a row
    has one, else those listed by creation time, in row order (labels may hold ", " or repeat)."""
    prefix, suffix = CLOCK_CREATED.split("{tasks}")
    start = clock.find(prefix)
    end = clock.find(suffix, start + len(prefix)) if start >= 0 else -1
    coarse = clock[start + len(prefix) : end] if end >= 0 else ""
    anchored = []
    for row in rows:
        anchor: ClockAnchor = "none"
        if row.origin_unix_s is not None:
            anchor = "origin-unix"
        elif coarse == row.task or coarse.startswith(f"{row.task}, "):
            anchor = "created-utc"
            coarse = coarse.removeprefix(row.task).removeprefix(", ")
        anchored.append(dataclasses.replace(row, clock_anchor=anchor))
    return anchored
