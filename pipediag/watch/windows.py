"""Steps into windows of N steps or an epoch, each labelled by its wait share; past
`max_windows` the older half is merged in pairs (docs/design.md, "Watching a long run")."""

from __future__ import annotations

from dataclasses import dataclass

from pipediag.analysis.input_cost import label_of
from pipediag.report.vocabulary import VerdictLabel
from pipediag.report.watch import WatchWindow
from pipediag.timeline import RawStep

# 10,000 windows (a window per 100 steps over a million steps) keep the report's watch
# section around 3 MB; a typical run (a window per epoch) is never merged.
DEFAULT_MAX_WINDOWS = 10_000


def label_by_wait_share(share: float | None) -> VerdictLabel:
    """XProf's wording for a share of step time spent waiting for input."""
    return "unknown" if share is None else label_of(share)


@dataclass
class _Open:
    """Running sums of the window being filled."""

    epoch: int
    first_step: int
    start: float
    end: float
    last_step: int = 0
    steps: int = 0
    step_time_s: float = 0.0
    wait_s: float = 0.0
    waited_time_s: float = 0.0  # step time of the steps whose wait is known
    waits_known: int = 0
    windows: int = 1  # the windows it stands for, once merged


def _window(index: int, sums: _Open, origin: float) -> WatchWindow:
    known = sums.waits_known and sums.waited_time_s > 0
    share = sums.wait_s / sums.waited_time_s if known else None
    return WatchWindow(
        index=index,
        first_step=sums.first_step,
        last_step=sums.last_step,
        start_s=sums.start - origin,
        end_s=sums.end - origin,
        steps=sums.steps,
        step_time_s=sums.step_time_s,
        steps_per_s=sums.steps / sums.step_time_s if sums.step_time_s > 0 else None,
        input_wait_s=sums.wait_s if sums.waits_known else None,
        input_wait_fraction=share,
        label=label_by_wait_share(share),
        epoch=sums.epoch,
        windows=sums.windows,
        waited_time_s=sums.waited_time_s if sums.waits_known else None,
    )


def merge_windows(earlier: WatchWindow, later: WatchWindow) -> WatchWindow:
    """One window standing for two consecutive ones; its share is weighted by step time."""
    known = [w for w in (earlier, later) if w.input_wait_s is not None]
    sums = _Open(
        earlier.epoch,
        earlier.first_step,
        earlier.start_s,
        later.end_s,
        last_step=later.last_step,
        steps=earlier.steps + later.steps,
        step_time_s=earlier.step_time_s + later.step_time_s,
        wait_s=sum(w.input_wait_s or 0.0 for w in known),
        # An older report's window kept no waited time: all of its steps count.
        waited_time_s=sum(
            w.step_time_s if w.waited_time_s is None else w.waited_time_s for w in known
        ),
        waits_known=len(known),
        windows=earlier.windows + later.windows,
    )
    return _window(earlier.index, sums, 0.0)


class WindowAccumulator:
    """Turns step records, in order, into closed windows: one per `every_steps` steps (None:
    per epoch) after the first `warmup_steps`, on the time axis that starts at `origin`."""

    def __init__(self, every_steps: int | None, *, origin: float, warmup_steps: int) -> None:
        if every_steps is not None and every_steps < 1:
            raise ValueError(f"a window needs at least one step, got {every_steps}")
        self.every_steps, self.origin = every_steps, origin
        self.warmup_steps = warmup_steps
        self._open: _Open | None = None
        self._closed = 0

    def add(self, step: int, record: RawStep) -> WatchWindow | None:
        """Take the record whose first step is `step`; the window it closed (records stay whole)."""
        if step < self.warmup_steps:
            return None
        closed = None
        if self.every_steps is None and self._open is not None and record.epoch != self._open.epoch:
            closed = self.close()
        if (sums := self._open) is None:
            sums = self._open = _Open(record.epoch, step, record.start, record.end)
        duration = record.duration_s
        sums.steps += record.count
        sums.step_time_s += duration
        sums.end = record.end
        sums.last_step = step + record.count - 1
        if record.input_wait_s is not None:
            sums.wait_s += record.input_wait_s
            sums.waited_time_s += duration
            sums.waits_known += 1
        if self.every_steps is not None and sums.steps >= self.every_steps:
            closed = self.close()
        return closed

    def reset(self) -> None:
        self._open = None

    def close(self) -> WatchWindow | None:
        """The window still open (at the end of the run), closed; None if none is."""
        sums, self._open = self._open, None
        if sums is None:
            return None
        window = _window(self._closed, sums, self.origin)
        self._closed += 1
        return window


class WindowList:
    """The closed windows of a run, bounded: past `max_windows` the older half is merged."""

    def __init__(self, max_windows: int = DEFAULT_MAX_WINDOWS) -> None:
        self.max_windows = max(2, max_windows)
        self.merges = 0
        self._windows: list[WatchWindow] = []

    def append(self, window: WatchWindow) -> None:
        self._windows.append(window)
        if len(self._windows) > self.max_windows:
            half = len(self._windows) // 2 // 2 * 2
            old = self._windows[:half]
            merged = [merge_windows(old[i], old[i + 1]) for i in range(0, half, 2)]
            self._windows = merged + self._windows[half:]
            self.merges += 1

    def items(self) -> list[WatchWindow]:
        return list(self._windows)
