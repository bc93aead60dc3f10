"""The fleet report (`fleet.json`, via `fleet/io.py`): frozen data, versioned apart from the
per-worker report. Fields added later need defaults, so older fleet reports still load."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pipediag.report.reasons import Reason
from pipediag.report.vocabulary import ComputeAloneSource, VerdictLabel

# 2: the no-straggler reason a code, the straggler figures only; 3: the notes reasons, each
# row its `clock_anchor`. `fleet/io.py` converts older files.
FLEET_SCHEMA_VERSION = 3

# What made the straggler slow (`Straggler.cause`; words: `fleet/words.py`).
StragglerCause = Literal[
    "input",  # its own input wait per step exceeds the others'
    "gpu",  # its GPU was busier than the others'
    "host-cpu",  # other processes took its host's cores
    "compute",  # the rest of its step: none of the above stands out
]

# What places a worker's time zero on the fleet's clock (`WorkerRow.clock_anchor`).
ClockAnchor = Literal[
    "origin-unix",  # its report's wall-clock anchor (`origin_unix_s`)
    "created-utc",  # an older report's creation time, in whole seconds
    "none",  # no time stamp: it starts at 0
]


@dataclass(frozen=True)
class WorkerRow:
    """One worker's figures, read from its report. Host CPU: this process in percent of one
    core (psutil's scale, up to 100 x `cpu_count`), the whole host in percent of all cores."""

    task: str
    report_path: str
    task_type: str | None = None
    task_index: int | None = None
    script: str = ""
    verdict: VerdictLabel = "unknown"
    measured_steps: int = 0
    input_cost_fraction: float | None = None
    input_wait_fraction: float | None = None
    wait_s_per_step: float | None = None
    step_s: float | None = None
    pipeline_batches_per_s: float | None = None
    compute_alone_steps_per_s: float | None = None
    compute_alone_source: ComputeAloneSource = ""
    training_steps_per_s: float | None = None
    # The measured window's rate, not the pooled one: lockstep is judged on it.
    window_steps_per_s: float | None = None
    process_cpu_pct: float | None = None
    system_cpu_pct: float | None = None
    other_cpu_pct: float | None = None  # other processes, in percent of the whole host
    cpu_count: int = 0
    gpu_util_pct: float | None = None
    cost_wait: float | None = None
    cost_contention: float | None = None
    cost_fetch: float | None = None
    origin_unix_s: float | None = None
    # Seconds from the earliest worker's time zero to this worker's.
    clock_offset_s: float = 0.0
    clock_anchor: ClockAnchor = "none"


@dataclass(frozen=True)
class Straggler:
    """The worker that held the others back: its row's figures, `others_*` the others' medians."""

    task: str
    cause: StragglerCause
    steps_per_s: float | None = None
    others_steps_per_s: float | None = None
    # Seconds per step its input wait and the rest of its step exceed the others' medians by.
    extra_wait_s: float | None = None
    extra_compute_s: float | None = None
    others_input_wait_fraction: float | None = None
    others_input_cost_fraction: float | None = None
    others_system_cpu_pct: float | None = None
    others_other_cpu_pct: float | None = None
    others_gpu_util_pct: float | None = None


@dataclass(frozen=True)
class FleetReport:
    workers: list[WorkerRow] = field(default_factory=list)
    straggler: Straggler | None = None
    no_straggler_reason: Reason | None = None
    # One rate for all (synchronous): 1 - A/T is then the cluster's, not a worker's.
    lockstep: bool = False
    schema_version: int = FLEET_SCHEMA_VERSION
    created_utc: str = ""
    notes: list[Reason] = field(default_factory=list)
