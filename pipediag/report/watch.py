"""The watch section of the report: a long run window by window, and the alerts it raised."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipediag.report.vocabulary import LabelBasis, VerdictLabel


@dataclass(frozen=True)
class WatchWindow:
    """One window of training (N steps, or an epoch), labelled by input wait share, not input
    cost (docs/design.md, "Watching a long run"): `input_wait_s` over `waited_time_s`, the
    time of the steps whose wait is known. Older windows merged count in `windows`."""

    index: int
    first_step: int
    last_step: int
    start_s: float
    end_s: float
    steps: int
    step_time_s: float
    steps_per_s: float | None
    input_wait_s: float | None
    input_wait_fraction: float | None
    label: VerdictLabel = "unknown"
    epoch: int = 0
    windows: int = 1
    waited_time_s: float | None = None


@dataclass(frozen=True)
class WatchAlert:
    """The wait share at or over the threshold for K windows in a row (docs/design.md,
    "Watching a long run"): figures over those windows; `t_s` is when the last ended."""

    t_s: float
    window_index: int
    first_step: int
    last_step: int
    windows: int
    threshold: float
    input_wait_fraction: float
    steps_per_s: float | None
    epoch: int = 0


@dataclass(frozen=True)
class WatchSection:
    every_steps: int | None = None  # None: a window per epoch
    windows: list[WatchWindow] = field(default_factory=list)
    alerts: list[WatchAlert] = field(default_factory=list)
    alert_input_share: float | None = None
    alert_windows: int = 0
    alert_command: str | None = None
    alert_hook: str | None = None  # the callable's name
    tensorboard_logdir: str | None = None  # the run directory the scalars were written to
    label_basis: LabelBasis = "input-wait-share"
    merged_windows: int = 0
