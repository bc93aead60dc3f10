"""The straggler in words, its figures set against the other workers' medians
(`Straggler.others_*`), for the fleet's renderers."""

from __future__ import annotations

from pipediag.fleet.model import FleetReport, Straggler, StragglerCause, WorkerRow
from pipediag.renderers.numbers import counted
from pipediag.renderers.reason_words import reason_words

DOMINANT: dict[StragglerCause, str] = {
    "input": "input dominates: its own pipeline kept it waiting",
    "gpu": "its GPU dominates: it was busier than the others' for the same steps",
    "host-cpu": "its host dominates: other processes took its cores",
    "compute": "its train step dominates, not its input",
}


# How the workers' timelines were put on one clock, by their rows' `clock_anchor`.
CLOCK_ANCHORS = "wall-clock anchors (origin_unix_s), one per worker"
CLOCK_CREATED = "created_utc for {tasks} (older reports: whole seconds)"
CLOCK_MISSING = "{tasks} at 0 (no time stamp)"
CLOCK_NONE = "not aligned: no worker's report has a wall-clock anchor; each starts at 0"


def clock_text(fleet: FleetReport) -> str:
    """What aligned the workers: their wall-clock anchors, then those placed otherwise."""
    rows = fleet.workers
    if all(row.clock_anchor == "none" for row in rows):
        return CLOCK_NONE
    coarse = [row.task for row in rows if row.clock_anchor == "created-utc"]
    missing = [row.task for row in rows if row.clock_anchor == "none"]
    parts = [CLOCK_ANCHORS] if len(coarse) + len(missing) < len(rows) else []
    if coarse:
        parts.append(CLOCK_CREATED.format(tasks=", ".join(coarse)))
    if missing:
        parts.append(CLOCK_MISSING.format(tasks=", ".join(missing)))
    return "; ".join(parts)


def fleet_heading(fleet: FleetReport) -> str:
    """`FLEET: 2 workers`, how fleet.txt's and fleet.png's titles begin."""
    return f"FLEET: {counted(len(fleet.workers), 'worker')}"


def no_straggler_text(fleet: FleetReport) -> str:
    return reason_words(fleet.no_straggler_reason) or "none named"


def straggler_text(fleet: FleetReport, straggler: Straggler) -> str:
    """Its rate, wait and cost, which part of its step dominates, then its host and GPU."""
    row = next((r for r in fleet.workers if r.task == straggler.task), None)
    row = row or WorkerRow(task=straggler.task, report_path="")
    rate = f"{straggler.steps_per_s or 0.0:.1f} steps/s"
    if fleet.lockstep:
        first = (
            f"the workers trained in lockstep ({rate} here; synchronous training: each "
            "waits for the slowest in every step's all-reduce)"
        )
    elif straggler.others_steps_per_s is not None:
        first = f"{rate} against {straggler.others_steps_per_s:.1f} on the others (median)"
    else:
        first = rate
    parts = [first]
    if wait := _vs(row.input_wait_fraction, straggler.others_input_wait_fraction, "{:.0%}"):
        parts.append(f"its steps waited {wait} of their time for input")
    cost = _vs(row.input_cost_fraction, straggler.others_input_cost_fraction, "{:.0%}")
    if cost and not fleet.lockstep:
        parts.append(f"input costs it {cost} of training")
    if straggler.extra_wait_s is not None and straggler.extra_compute_s is not None:
        parts.append(
            f"per step, its input wait is {straggler.extra_wait_s * 1e3:+.1f} ms and the rest "
            f"of its step {straggler.extra_compute_s * 1e3:+.1f} ms against the others'"
        )
    sentence = "; ".join(parts) + f": {DOMINANT.get(straggler.cause, straggler.cause)}."
    busy = _vs(row.gpu_util_pct, straggler.others_gpu_util_pct, "{:.0f}%")
    gpu = f"GPU: {busy} busy." if busy else "GPU: none sampled."
    return " ".join([sentence, _host(row, straggler), gpu])


def _host(row: WorkerRow, straggler: Straggler) -> str:
    if row.system_cpu_pct is None:
        return "Host CPU: not sampled."
    cores = f" of {row.cpu_count * 100}%" if row.cpu_count else ""
    process = f"this process {row.process_cpu_pct:.0f}%{cores}, " if row.process_cpu_pct else ""
    whole = _vs(row.system_cpu_pct, straggler.others_system_cpu_pct, "{:.0f}%")
    text = f"Host CPU: {process}the whole host {whole} busy"
    if other := _vs(row.other_cpu_pct, straggler.others_other_cpu_pct, "{:.0f}%"):
        text += f", other processes {other}"
    return text + "."


def _vs(value: float | None, others: float | None, form: str) -> str:
    """`45% (others 12%)`: a figure against the others' median; "" when unknown."""
    if value is None:
        return ""
    text = form.format(value)
    return text if others is None else f"{text} (others {form.format(others)})"
