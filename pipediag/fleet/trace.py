"""`fleet_trace.json`: every worker's own trace as one process (its GPU counters joined),
moved by its clock offset so that an all-reduce lines up across the processes
(docs/design.md, "Multi-worker jobs")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipediag.fleet.collect import WorkerReport
from pipediag.fleet.model import FLEET_SCHEMA_VERSION, FleetReport, WorkerRow
from pipediag.fleet.words import clock_text
from pipediag.renderers.chrome_trace import (
    COUNTERS_TID,
    DISPLAY_TIME_UNIT,
    GPU_PID,
    TS_DECIMALS,
    US_PER_S,
    metadata_event,
    trace_events,
)

Event = dict[str, Any]

# A worker's GPU counters move into its process, on a thread of their own.
GPU_TID = COUNTERS_TID + 1
PROCESS_METADATA = frozenset({"process_name", "process_sort_index"})


def fleet_trace(workers: Sequence[WorkerReport], fleet: FleetReport) -> dict[str, Any]:
    """The merged trace; `workers` in the order of `fleet.workers`."""
    straggler = fleet.straggler.task if fleet.straggler is not None else None
    events: list[Event] = []
    for position, (worker, row) in enumerate(zip(workers, fleet.workers, strict=True)):
        pid = position + 1
        events += _process_metadata(pid, position, row, straggler == row.task)
        offset_us = row.clock_offset_s * US_PER_S
        for event in trace_events(worker.report)["traceEvents"]:
            # the process names the fleet gives anew
            if not (event["ph"] == "M" and event["name"] in PROCESS_METADATA):
                events.append(_moved(event, pid, offset_us))
    return {
        "traceEvents": events,
        "displayTimeUnit": DISPLAY_TIME_UNIT,
        "metadata": {
            "tool": "pipediag",
            "kind": "fleet",
            "fleet_schema_version": FLEET_SCHEMA_VERSION,
            "clock": f"seconds since the earliest worker's diagnosis started, in microseconds; "
            f"aligned on {clock_text(fleet)}",
            "clock_offsets_us": {
                row.task: round(row.clock_offset_s * US_PER_S, TS_DECIMALS) for row in fleet.workers
            },
            "processes": {row.task: i + 1 for i, row in enumerate(fleet.workers)},
            "straggler": straggler,
        },
    }


def _moved(event: Event, pid: int, offset_us: float) -> Event:
    moved = dict(event)
    if event["pid"] == GPU_PID:
        moved["tid"] = GPU_TID
    moved["pid"] = pid
    if event["ph"] != "M":
        moved["ts"] = round(event["ts"] + offset_us, TS_DECIMALS)
    return moved


def _process_metadata(pid: int, position: int, row: WorkerRow, straggler: bool) -> list[Event]:
    rate = (
        f", {row.training_steps_per_s:.1f} steps/s" if row.training_steps_per_s is not None else ""
    )
    events = [
        metadata_event("process_name", pid, 0, {"name": f"{row.task}: {row.verdict}{rate}"}),
        metadata_event("process_sort_index", pid, 0, {"sort_index": position}),
    ]
    if straggler:
        events.append(metadata_event("process_labels", pid, 0, {"labels": "straggler"}))
    return events
