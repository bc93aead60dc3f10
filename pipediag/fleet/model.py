"""The fleet report: plain, frozen data, versioned apart from the per-worker report.

`fleet.json` is this, serialised (`fleet/io.py`). Fields added later must have defaults, so
that older fleet reports still load. Units are in the field names, as in `report/model.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipediag.report.reasons import Reason

# 2: why no straggler is named is a code (`report/reasons.py`); version 1's words are kept
# as written. The straggler is figures only, worded by the renderers (`fleet/words.py`); an
# older one's `explanation` is dropped on reading.
FLEET_SCHEMA_VERSION = 2

# What made the straggler slow (`Straggler.cause`).
CAUSE_INPUT = "input"  # its own input pipeline: it waited for batches longer than the others
CAUSE_COMPUTE = "compute"  # its own train step: slower compute than the others'
CAUSE_HOST_CPU = "host-cpu"  # other processes on its host took the cores
CAUSE_GPU = "gpu"  # its accelerator was busier than the others' for the same steps


@dataclass(frozen=True)
class WorkerRow:
    """One worker's figures, read from its report.

    Shares are of that worker's training time: `input_cost_fraction` is 1 - A/T (what input
    costs, waiting included), `input_wait_fraction` the share its steps waited for a batch.
    Rates: P pipeline alone (batches/s), T compute alone and A training (steps/s). Host CPU:
    this process in percent of one core (psutil's scale, up to 100 x `cpu_count`) and the
    whole host in percent of all its cores.
    """

    task: str
    report_path: str
    task_type: str | None = None
    task_index: int | None = None
    script: str = ""
    verdict: str = "unknown"
    measured_steps: int = 0
    input_cost_fraction: float | None = None
    input_wait_fraction: float | None = None
    wait_s_per_step: float | None = None
    step_s: float | None = None
    pipeline_batches_per_s: float | None = None
    compute_alone_steps_per_s: float | None = None
    compute_alone_source: str = ""
    training_steps_per_s: float | None = None
    # The rate of its measured steps, one unbroken window of `measured_steps`: lockstep is
    # judged on it, because synchronous workers' windows end at most a step apart, while a
    # training rate pooled from alternation blocks has each block's edges and transition
    # steps, different on each worker (docs/design.md, "Multi-worker jobs").
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
    # Seconds from the fleet's time zero (the earliest worker's) to this worker's.
    clock_offset_s: float = 0.0


@dataclass(frozen=True)
class Straggler:
    """The worker that held the others back, and why (`fleet/analysis.py`).

    `cause` is one of the CAUSE_* labels. Its own figures are its row's (`task`); the
    `others_*` fields are the other timed workers' medians of the same figures, which the
    renderers set its own against (`fleet/words.py`). A median is None where no other worker
    has the figure.
    """

    task: str
    cause: str
    steps_per_s: float | None = None
    others_steps_per_s: float | None = None
    # Seconds per step by which its input wait and the rest of its step exceed the other
    # workers' medians: the larger part is the one that dominates.
    extra_wait_s: float | None = None
    extra_compute_s: float | None = None
    others_input_wait_fraction: float | None = None
    others_input_cost_fraction: float | None = None
    others_system_cpu_pct: float | None = None
    others_other_cpu_pct: float | None = None
    others_gpu_util_pct: float | None = None


@dataclass(frozen=True)
class FleetReport:
    """Every worker of one job, side by side."""

    workers: list[WorkerRow] = field(default_factory=list)
    straggler: Straggler | None = None
    # Why no worker is named (one worker only, or all alike).
    no_straggler_reason: Reason | None = None
    # The workers trained at one rate (synchronous training): each one's input cost 1 - A/T
    # is then the cluster's, and only its own input wait tells the workers apart.
    lockstep: bool = False
    schema_version: int = FLEET_SCHEMA_VERSION
    created_utc: str = ""
    # How the workers' timelines were put on one clock.
    clock: str = ""
    notes: list[str] = field(default_factory=list)
