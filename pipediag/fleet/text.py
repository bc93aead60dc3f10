"""`fleet.txt`: one row per worker, then the straggler and its cause."""

from __future__ import annotations

import textwrap

from pipediag.fleet.model import FleetReport, WorkerRow
from pipediag.fleet.words import fleet_heading, no_straggler_text, straggler_text

WIDTH = 100
MISSING = "-"

# (header, width, alignment) per column; every figure is one of the row's fields.
COLUMNS = (
    ("task", 10, "<"),
    ("verdict", 14, "<"),
    ("cost", 5, ">"),
    ("wait", 5, ">"),
    ("P b/s", 8, ">"),
    ("T st/s", 8, ">"),
    ("A st/s", 8, ">"),
    ("host CPU proc/sys", 18, ">"),
    ("GPU", 5, ">"),
)


def render_fleet_text(fleet: FleetReport) -> str:
    """The fleet report as plain text, ending with a newline."""
    lines = [_title(fleet), "", _line([name for name, _, _ in COLUMNS])]
    lines += [_line(_cells(row)) for row in fleet.workers]
    lines.append("")
    lines.append(
        "cost: input's share of training time (1 - A/T); wait: share of step time waiting for "
        "a batch; P pipeline alone, T compute alone, A training; host CPU: this process (of "
        "one core) / the whole host"
    )
    lines.append("")
    if fleet.straggler is not None:
        straggler = fleet.straggler
        why = straggler_text(fleet, straggler)
        lines += _wrapped(f"Straggler: {straggler.task} ({straggler.cause}): {why}")
    else:
        lines += _wrapped(f"Straggler: {no_straggler_text(fleet)}")
    lines += _wrapped(f"Clock: {fleet.clock}; offsets {_offsets(fleet)}")
    for note in fleet.notes:
        lines += _wrapped(f"Note: {note}")
    return "\n".join(lines) + "\n"


def _title(fleet: FleetReport) -> str:
    scripts = sorted({row.script for row in fleet.workers if row.script})
    return f"{fleet_heading(fleet)}  [{', '.join(scripts)}]"


def _cells(row: WorkerRow) -> list[str]:
    compute = _rate(row.compute_alone_steps_per_s)
    if compute != MISSING and row.compute_alone_source == "estimated":
        compute = f"~{compute}"
    return [
        row.task,
        row.verdict,
        _share(row.input_cost_fraction),
        _share(row.input_wait_fraction),
        _rate(row.pipeline_batches_per_s),
        compute,
        _rate(row.training_steps_per_s),
        _host(row),
        MISSING if row.gpu_util_pct is None else f"{row.gpu_util_pct:.0f}%",
    ]


def _line(cells: list[str]) -> str:
    columns = zip(cells, COLUMNS, strict=True)
    parts = [f"{cell:{align}{width}}" for cell, (_, width, align) in columns]
    return "  ".join(parts).rstrip()


def _share(value: float | None) -> str:
    return MISSING if value is None else f"{value:.0%}"


def _rate(value: float | None) -> str:
    return MISSING if value is None else f"{value:.1f}"


def _host(row: WorkerRow) -> str:
    process = MISSING if row.process_cpu_pct is None else f"{row.process_cpu_pct:.0f}%"
    if row.cpu_count:
        process += f" of {row.cpu_count * 100}%"
    system = MISSING if row.system_cpu_pct is None else f"{row.system_cpu_pct:.0f}%"
    return f"{process} / {system}"


def _offsets(fleet: FleetReport) -> str:
    return ", ".join(f"{row.task} +{row.clock_offset_s * 1e3:.1f} ms" for row in fleet.workers)


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False)
