"""Input waits under `fit` from TensorFlow profiler traces, where batch stamps cannot be: each
step's `IteratorGetNextOp` event is its wait (docs/design.md, "Keras fit internals"). Tracing
costs time and memory, so only measured steps are traced, in bounded chunks."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipediag.clock import MONOTONIC, Clock, wall_minus_clock
from pipediag.training.op_profile import host_planes

GET_NEXT_LINE_PREFIX = "tf_data_iterator_get_next"
GET_NEXT_EVENT_PREFIX = "IteratorGetNext"
TASK_ENV_PLANE = "Task Environment"
PROFILE_START_STAT = "profile_start_time"
# 1 = "critical" host events only, GetNext among them (TF 2.21: the same 401 GetNext events
# for 400 steps at levels 1, 2 and 3). Level 2, the default, made a map of a hundred small ops
# cut a Keras fit from 105 to 19 steps/s; level 1 costs a few percent.
HOST_TRACER_LEVEL = 1
# TF's C++ log lines about pipediag's own profiler sessions, e.g.
# "I0000 00:00:1795995943.413364   16149 profiler_session.cc:132] Profiler session started."
PROFILER_LOG_LINE = re.compile(
    rb"^[IWE]\d{4} [\d:.]+\s+\d+ (profiler_session|save_profile|profiler_lock|"
    rb"profiler_factory|xplane_to_\w+|tf_threadpool_listener|device_tracer\w*|cupti\w*)\.cc"
)


@dataclass(frozen=True)
class WaitEvent:
    """One input wait, on the session clock."""

    start: float
    duration_s: float


@dataclass
class InputWaitTracer:
    """Starts and stops the TF profiler around chunks of steps; keeps the GetNext events."""

    clock: Clock = MONOTONIC
    events: list[WaitEvent] = field(default_factory=list)
    windows: list[tuple[float, float]] = field(default_factory=list)
    failure: str | None = None
    overhead_s: float = 0.0
    _logdir: Path | None = None
    _window_start: float | None = None
    _clock_offset_s: float = 0.0

    @property
    def active(self) -> bool:
        return self._logdir is not None

    def start(self) -> bool:
        """Start tracing; False (and `failure` set) when the profiler cannot be used."""
        if self.active or self.failure is not None:
            return self.active
        began = self.clock.now()
        from tensorflow import profiler

        logdir = Path(tempfile.mkdtemp(prefix="pipediag-trace-"))
        try:
            with quiet_profiler_logs():
                # No device or Python tracing: neither is read.
                options = profiler.experimental.ProfilerOptions(
                    host_tracer_level=HOST_TRACER_LEVEL,
                    python_tracer_level=0,
                    device_tracer_level=0,
                )
                profiler.experimental.start(str(logdir), options=options)
        except Exception as exc:  # the profiler is a shared, single-session resource
            shutil.rmtree(logdir, ignore_errors=True)
            self.failure = _one_line(exc)
            return False
        self._logdir = logdir
        self._clock_offset_s = wall_minus_clock(self.clock, lambda: time.time_ns() / 1e9, reads=5)
        self._window_start = self.clock.now()
        self.overhead_s += self._window_start - began
        return True

    def stop(self) -> None:
        """Stop tracing and collect the window's input-wait events."""
        if self._logdir is None:
            return
        began = self.clock.now()
        logdir, self._logdir = self._logdir, None
        from tensorflow import profiler

        try:
            with quiet_profiler_logs():
                profiler.experimental.stop()
            if self._window_start is not None:
                self.windows.append((self._window_start, began))
            self.events.extend(
                WaitEvent(wall_ns / 1e9 - self._clock_offset_s, dur_ns / 1e9)
                for wall_ns, dur_ns in read_get_next_events(logdir)
            )
        except Exception as exc:
            self.failure = _one_line(exc)
        finally:
            shutil.rmtree(logdir, ignore_errors=True)
            self.overhead_s += self.clock.now() - began

    def waits_for(self, start: float, end: float) -> float | None:
        """Input wait within [start, end]; None: not traced. Overlaps merge (tf.distribute)."""
        if not any(lo <= start and end <= hi for lo, hi in self.windows):
            return None
        spans = sorted(
            (max(e.start, start), min(e.start + e.duration_s, end))
            for e in self.events
            if start <= e.start <= end
        )
        total, reach = 0.0, start
        for lo, hi in spans:
            lo = max(lo, reach)
            if hi > lo:
                total += hi - lo
                reach = hi
        return total


@contextlib.contextmanager
def quiet_profiler_logs() -> Iterator[None]:
    """Keep TF's C++ log lines about pipediag's profiler sessions out of the terminal: fd 2
    is captured for the call, and every other line is written back to it unchanged."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            if kept := [line for line in capture if not PROFILER_LOG_LINE.match(line)]:
                os.write(2, b"".join(kept))


def read_get_next_events(logdir: Path) -> list[tuple[int, int]]:
    """(wall-clock start ns, duration ns) of every GetNext event in the traces under logdir."""
    found: list[tuple[int, int]] = []
    for space, plane in host_planes(logdir):
        base_ns = _profile_start_ns(space)
        names = {key: meta.name for key, meta in plane.event_metadata.items()}
        for line in plane.lines:
            if not line.name.startswith(GET_NEXT_LINE_PREFIX):
                continue
            for event in line.events:
                if names.get(event.metadata_id, "").startswith(GET_NEXT_EVENT_PREFIX):
                    start_ns = base_ns + line.timestamp_ns + event.offset_ps // 1000
                    found.append((start_ns, event.duration_ps // 1000))
    return found


def _profile_start_ns(space: Any) -> int:
    """TF 2.21 stores line times relative to the profile start, kept as a plane stat."""
    for plane in space.planes:
        if plane.name != TASK_ENV_PLANE:
            continue
        for stat in plane.stats:
            if plane.stat_metadata[stat.metadata_id].name == PROFILE_START_STAT:
                return int(stat.uint64_value)
    return 0


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
