"""The fleet report <-> JSON: versioned like the per-worker report, read tolerantly."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from pipediag.errors import ReportError
from pipediag.fleet.analysis import find_straggler
from pipediag.fleet.model import (
    FLEET_SCHEMA_VERSION,
    ClockAnchor,
    FleetReport,
    Straggler,
    WorkerRow,
)
from pipediag.fleet.words import CLOCK_CREATED
from pipediag.report.reasons import Reason

T = TypeVar("T")


def fleet_to_dict(fleet: FleetReport) -> dict[str, Any]:
    return dataclasses.asdict(fleet)


def fleet_from_dict(data: Any) -> FleetReport:
    """Rebuild a fleet report; unknown fields are ignored, missing optional ones defaulted."""
    if not isinstance(data, dict) or not isinstance(data.get("schema_version"), int):
        raise ReportError("not a pipediag fleet report: no integer 'schema_version'")
    version = data["schema_version"]
    if version > FLEET_SCHEMA_VERSION:
        raise ReportError(
            f"fleet report schema version {version} is newer than this pipediag reads "
            f"({FLEET_SCHEMA_VERSION}); upgrade pipediag"
        )
    try:
        fields = _known(FleetReport, data)
        fields["workers"] = [_build(WorkerRow, row) for row in data.get("workers", [])]
        if isinstance(data.get("clock"), str):
            fields["workers"] = _anchored(fields["workers"], data["clock"])
        straggler = data.get("straggler")
        fields["straggler"] = None if straggler is None else _build(Straggler, straggler)
        if isinstance(straggler, dict) and "explanation" in straggler:
            # An older file's straggler, worded without medians: found again from the rows.
            found, _ = find_straggler(fields["workers"])
            if found is not None and found.task == fields["straggler"].task:
                fields["straggler"] = found
        why = data.get("no_straggler_reason")
        fields["no_straggler_reason"] = _reason(why) if why else None
        fields["notes"] = [_reason(note) for note in data.get("notes", [])]
        return FleetReport(**fields)
    except (TypeError, ValueError, AttributeError) as exc:
        raise ReportError(f"malformed pipediag fleet report: {exc}") from exc


def _anchored(rows: list[WorkerRow], clock: str) -> list[WorkerRow]:
    """An older fleet's rows, each anchor read back from its `clock` words: a row with a
    wall-clock anchor has one; the words list those placed by their creation time, in row
    order (a label may hold ", ", and two runs outside a job may share one)."""
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


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {key: value for key, value in data.items() if key in names}


def _build(cls: type[T], data: Any) -> T:
    if not isinstance(data, dict):
        raise TypeError(f"{cls.__name__} must be an object, got {type(data).__name__}")
    return cls(**_known(cls, data))


def _reason(stored: Any) -> Reason:
    """A stored reason: versions 1 (the no-straggler reason) and 2 (the notes) wrote words,
    kept as written."""
    if isinstance(stored, str):
        return Reason("as-written", detail=stored)
    because = stored.get("because")
    return Reason(**{**_known(Reason, stored), "because": _reason(because) if because else None})
