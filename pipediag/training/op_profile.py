"""A short TF profiler window over a few train steps, read into plain op events from the
host plane (docs/design.md, "When the model sets the rate")."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pipediag.analysis.op_time import OpEvent, ProfiledWindow
from pipediag.report.reasons import Reason

# Steps profiled, and the most seconds the window may take (a long step gets fewer).
PROFILED_STEPS = 5
MAX_WINDOW_S = 1.0
PYTHON_LINE = "python"
COMPUTE_LINE_PREFIXES = ("tf_Compute", "tf_inter_op", "tf_XLA")
HOST_PLANE = "/host:CPU"
# Level 2 records each executed op; Python tracing is not read, and costs more.
OP_TRACER_LEVEL = 2
QuietLogs = Callable[[], contextlib.AbstractContextManager[None]]


def profiled_steps(step_s: float) -> int:
    if step_s <= 0:
        return PROFILED_STEPS
    return max(1, min(PROFILED_STEPS, int(MAX_WINDOW_S / step_s)))


class ProfilerSession:
    """One TF profiler window; `quiet_logs` keeps TF's log lines out of the terminal."""

    def __init__(self, quiet_logs: QuietLogs = contextlib.nullcontext) -> None:
        self._quiet_logs = quiet_logs
        self.logdir: Path | None = None
        self.running = False
        # The lines of the thread that starts the window, which runs the steps.
        self._caller_lines = caller_line_names()

    def start(self) -> Reason | None:
        """Starts tracing into a new folder; or why it could not."""
        import tensorflow as tf

        logdir = Path(tempfile.mkdtemp(prefix="pipediag-ops-"))
        options = tf.profiler.experimental.ProfilerOptions(
            host_tracer_level=OP_TRACER_LEVEL, python_tracer_level=0, device_tracer_level=1
        )
        try:
            with self._quiet_logs():
                tf.profiler.experimental.start(str(logdir), options=options)
        except Exception as exc:  # a single-session resource: another may be active
            shutil.rmtree(logdir, ignore_errors=True)
            return Reason("profiler-no-start", detail=first_line(exc))
        self.logdir, self.running = logdir, True
        return None

    def stop(self) -> None:
        if not self.running:
            return
        self.running = False
        import tensorflow as tf

        with self._quiet_logs():
            tf.profiler.experimental.stop()

    def read(self, steps: int, wall_ns: int) -> ProfiledWindow | Reason:
        """The stopped window's op events and the caller's time in TF; its folder is removed."""
        logdir, self.logdir = self.logdir, None
        if logdir is None:
            return Reason("profiler-not-started")
        try:
            planes = [_host_events(plane, self._caller_lines) for _, plane in host_planes(logdir)]
        finally:
            shutil.rmtree(logdir, ignore_errors=True)
        if not planes:
            return Reason("no-host-trace")
        ops = [op for events, _ in planes for op in events]
        in_tensorflow = sum(inside for _, inside in planes)
        return ProfiledWindow(steps, wall_ns, min(in_tensorflow, wall_ns), ops)

    def discard(self) -> None:
        """Stops tracing; the folder is removed unread."""
        self.stop()
        logdir, self.logdir = self.logdir, None
        if logdir is not None:
            shutil.rmtree(logdir, ignore_errors=True)


def caller_line_names() -> frozenset[str]:
    """The names TF may give the calling thread's line: `python`, or its OS name."""
    names = {PYTHON_LINE}
    with contextlib.suppress(OSError, AttributeError):
        names.add(Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text().strip())
    return frozenset(n for n in names if n)


def host_planes(logdir: Path) -> Iterator[tuple[Any, Any]]:
    """The host plane of each trace under `logdir` (a TF profiler's), with its XSpace."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    for path in sorted(logdir.glob("plugins/profile/*/*.xplane.pb")):
        space = xplane_pb2.XSpace()
        space.ParseFromString(path.read_bytes())
        for plane in space.planes:
            if plane.name == HOST_PLANE:
                yield space, plane


def _host_events(plane: Any, caller_lines: frozenset[str]) -> tuple[list[OpEvent], int]:
    names = {key: meta.name for key, meta in plane.event_metadata.items()}
    ops: list[OpEvent] = []
    inside = 0
    for index, line in enumerate(plane.lines):
        if line.name in caller_lines:
            inside += _top_level_ns(line)
        elif line.name.startswith(COMPUTE_LINE_PREFIXES):
            for event in line.events:
                start_ns = line.timestamp_ns + event.offset_ps // 1000
                name = names.get(event.metadata_id, "")
                ops.append(OpEvent(name, start_ns, event.duration_ps // 1000, index))
    return ops, inside


def _top_level_ns(line: Any) -> int:
    """The time a thread's outermost events cover (nested events are inside them)."""
    total, reach = 0, -1
    for event in sorted(line.events, key=lambda e: e.offset_ps):
        start, end = event.offset_ps, event.offset_ps + event.duration_ps
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total // 1000


def first_line(exc: BaseException, limit: int = 160) -> str:
    text = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    return f"{type(exc).__name__}: {text[:limit]}"
