"""`fleet.txt`: one row per worker, then the straggler and its cause."""

from __future__ import annotations

import textwrap

from pipediag.fleet.model import FleetReport, WorkerRow
from pipediag.fleet.words import clock_text, fleet_heading, no_straggler_text, straggler_text
from pipediag.renderers.reason_words import reason_words

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
KEY = (
    "cost: input's share of training time (1 - A/T); wait: share of step time waiting for "
    "a batch; P pipeline alone, T compute alone, A training; host CPU: this process (of "
    "one core) / the whole host"
)


def render_fleet_text(fleet: FleetReport) -> str:
    scripts = sorted({row.script for row in fleet.workers if row.script})
    lines = [f"{fleet_heading(fleet)}  [{', '.join(scripts)}]", ""]
    lines += [_line([name for name, _, _ in COLUMNS])]
    lines += [_line(_cells(row)) for row in fleet.workers]
    lines += ["", KEY, ""]
    if (straggler := fleet.straggler) is not None:
        why = straggler_text(fleet, straggler)
        lines += _wrapped(f"Straggler: {straggler.task} ({straggler.cause}): {why}")
    else:
        lines += _wrapped(f"Straggler: {no_straggler_text(fleet)}")
    offsets = ", ".join(f"{row.task} +{row.clock_offset_s * 1e3:.1f} ms" for row in fleet.workers)
    lines += _wrapped(f"Clock: {clock_text(fleet)}; offsets {offsets}")
    for note in fleet.notes:
        lines += _wrapped(f"Note: {reason_words(note)}")
    return "\n".join(lines) + "\n"


def _cells(row: WorkerRow) -> list[str]:
    compute = _shown(row.compute_alone_steps_per_s, "{:.1f}")
    if compute != MISSING and row.compute_alone_source == "estimated":
        compute = f"~{compute}"
    return [
        row.task,
        row.verdict,
        _shown(row.input_cost_fraction, "{:.0%}"),
        _shown(row.input_wait_fraction, "{:.0%}"),
        _shown(row.pipeline_batches_per_s, "{:.1f}"),
        compute,
        _shown(row.training_steps_per_s, "{:.1f}"),
        _host(row),
        _shown(row.gpu_util_pct, "{:.0f}%"),
    ]


def _line(cells: list[str]) -> str:
    columns = zip(cells, COLUMNS, strict=True)
    return "  ".join(f"{cell:{align}{width}}" for cell, (_, width, align) in columns).rstrip()


def _shown(value: float | None, form: str) -> str:
    return MISSING if value is None else form.format(value)


def _host(row: WorkerRow) -> str:
    process = _shown(row.process_cpu_pct, "{:.0f}%")
    if row.cpu_count:
        process += f" of {row.cpu_count * 100}%"
    return f"{process} / {_shown(row.system_cpu_pct, '{:.0f}%')}"


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False)
