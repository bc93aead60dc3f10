"""The model side of a compute-bound run, held by `ComputeAlone`: where the step's time goes,
and changes measured on the step alone (docs/design.md, "When the model sets the rate")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pipediag.report.reasons import Reason
from pipediag.report.vocabulary import TrialStop

# The changes a model-side trial measures, as the report names them.
ModelChange = Literal["jit_compile", "steps_per_execution", "mixed_precision", "device_copy", ""]

# What a profiled operation's time is grouped by: its op type or scope, or one of the two
# host gaps outside any op (docs/design.md, "When the model sets the rate").
TopOpKind = Literal["op_type", "scope", "host-python", "host-launch", "host-as-written", ""]
# "host-as-written": an older report's gap in words pipediag did not write, kept as its name.
HOST_GAP_KINDS: tuple[TopOpKind, ...] = ("host-python", "host-launch", "host-as-written")


@dataclass(frozen=True)
class TopOp:
    """A group of the step's profiled time: `share` of it, `self_s` seconds per step (children
    excluded). `name`: the op type or scope as profiled; "" for a host gap (see its kind)."""

    name: str
    kind: TopOpKind = ""
    share: float = 0.0
    self_s: float = 0.0


@dataclass(frozen=True)
class ModelTrial:
    """A model-side change, measured on the train step alone against the unchanged step through the
    pairs (docs/design.md, "The paired engine"). `speedup`: the gain a whole run would see (for
    `steps_per_execution`, fit's own per-step time added to both sides). A mixed-precision trial's
    `float32_layers`: the layers its clone kept in float32 (None: no clone)."""

    change: ModelChange
    baseline_steps_per_s: float | None = None
    variant_steps_per_s: float | None = None
    speedup: float | None = None
    interval: list[float] | None = None
    rounds: int = 0
    stopped: TrialStop = ""
    reason: Reason | None = None
    code: str = ""
    seconds: float = 0.0  # the trial's, its build and compilation included
    # The value tried: steps per execution, the dtype policy's name, or the copy's batch device.
    setting: str = ""
    float32_layers: list[str] | None = None
    # The host-to-device copy's share of the step fed from the host, from the step alone's
    # median rates (`1 - baseline / variant`); None for the other changes.
    share: float | None = None

    @property
    def measured(self) -> bool:
        return self.speedup is not None
