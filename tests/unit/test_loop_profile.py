"""The profiler window over a custom loop's own served steps, on a fake profiler and clock:
how many pulls it covers, that a loop stopping first still stops the profiler, and that its
reading reaches compute alone ahead of the XLA trial."""

from __future__ import annotations

from typing import Any

from loop_serving import RecordedResults, loop_server
from synthetic_reports import FakeClock

from pipediag.analysis.op_time import OpEvent, ProfiledWindow
from pipediag.conclusion import Conclusion
from pipediag.config import RunConfig
from pipediag.progress import ProgressStep
from pipediag.report.model import ComputeAlone
from pipediag.report.reasons import Reason
from pipediag.timeline import StepTimeline
from pipediag.training.budget import LoopResult, LoopWork
from pipediag.training.loop_profile import LoopProfile, keras_layer_names

STEP_S = 0.01


class FakeProfiler:
    """The profiler seam: records its calls; its window is one MatMul per profiled step."""

    def __init__(self, clock: FakeClock, start_failure: str | None = None) -> None:
        self.clock = clock
        self.calls: list[str] = []
        self.read_with: tuple[int, int] | None = None
        self.start_failure = start_failure

    def start(self) -> str | None:
        self.calls.append("start")
        return self.start_failure

    def stop(self) -> None:
        self.calls.append("stop")

    def read(self, steps: int, wall_ns: int) -> ProfiledWindow | str:
        self.calls.append("read")
        self.read_with = (steps, wall_ns)
        step_ns = wall_ns // steps
        ops = [OpEvent("dense/MatMul:MatMul", k * step_ns, step_ns // 2) for k in range(steps)]
        return ProfiledWindow(steps, wall_ns, wall_ns * 3 // 4, ops)

    def discard(self) -> None:
        self.calls.append("discard")


def _drive(window: LoopProfile, clock: FakeClock, pulls: int | None = None) -> list[Any]:
    """The loop: each pull's batch takes one step; `pulls` stops it early."""
    served = []
    while pulls is None or len(served) < pulls:
        batch = window.next_batch()
        if batch is None:
            break
        served.append(batch)
        clock.advance(STEP_S)
    return served


def test_the_window_covers_its_steps_pulls_and_groups_their_ops() -> None:
    clock = FakeClock()
    profiler = FakeProfiler(clock)
    window = LoopProfile("cached", steps=3, clock=clock, profiler=profiler, layer_names=["dense"])
    served = _drive(window, clock)
    top, reason = window.result()
    assert served == ["cached"] * 3
    assert profiler.calls == ["start", "stop", "read"]
    assert profiler.read_with == (3, int(3 * STEP_S * 1e9))
    assert reason is None
    assert [op.name for op in top if op.kind == "op_type"] == ["MatMul"]
    assert [op.kind for op in top][-2:] == ["host-python", "host-launch"]
    assert sum(op.share for op in top if op.kind != "scope") <= 1.0 + 1e-9


def test_a_loop_stopping_inside_the_window_stops_the_profiler_with_a_reason() -> None:
    clock = FakeClock()
    profiler = FakeProfiler(clock)
    window = LoopProfile("cached", steps=5, clock=clock, profiler=profiler, layer_names=[])
    assert _drive(window, clock, pulls=2) == ["cached"] * 2
    assert window.result() == ([], Reason("profile-stopped"))
    assert profiler.calls == ["start", "discard"]
    assert window.next_batch() is None


def test_a_profiler_that_cannot_start_serves_nothing_and_says_why() -> None:
    clock = FakeClock()
    busy = Reason("profiler-no-start", detail="another session is active")
    window = LoopProfile(
        "cached", steps=5, clock=clock, profiler=FakeProfiler(clock, busy), layer_names=[]
    )
    assert _drive(window, clock) == []
    assert window.result() == ([], busy)


def test_layer_names_come_from_the_model_the_step_closes_over() -> None:
    class Layer:
        def __init__(self, name: str) -> None:
            self.name = name

    class Model:
        layers = [Layer("dense"), Layer("dense_1")]

    model = Model()

    def train_step(batch: Any) -> Any:
        return model, batch

    assert keras_layer_names(train_step) == ["dense", "dense_1"]
    assert keras_layer_names(lambda batch: batch) == []


class _Say:
    def note(self, reason: Reason) -> None: ...
    def phase(
        self, step: ProgressStep, budget_s: float | None = None, *, redraw: bool = True
    ) -> None: ...
    def add_phase(self, name: str, start: float, end: float) -> None: ...
    def log(self, message: str) -> None: ...
    def note_once(self, reason: Reason) -> None: ...


def test_the_budget_server_profiles_before_xla_and_the_reading_reaches_compute_alone() -> None:
    clock = FakeClock()
    profiler = FakeProfiler(clock)
    conclusion = Conclusion(
        config=RunConfig(20),
        clock=clock,
        timeline=StepTimeline(warmup_steps=2, measured_steps=20),
        say=_Say(),
        lockstep=False,
    )
    conclusion.diagnosis.compute_alone = ComputeAlone(measured=True)

    class ToConclusion(RecordedResults):
        def __call__(self, result: LoopResult) -> LoopWork:
            conclusion.fold(result)
            return super().__call__(result)

    results = ToConclusion(work=LoopWork(model_s=2.0))
    server = loop_server(
        clock, results, step_s=STEP_S, step="the step runs eagerly", profiler=profiler
    )
    while server.next_batch() is not None:
        clock.advance(STEP_S)
    server.finish()
    assert results.order == ["concluded", "profiled", "xla"]
    alone = conclusion.diagnosis.compute_alone
    assert alone is not None and alone.top_ops and alone.top_ops_reason is None
    assert profiler.read_with is not None and profiler.read_with[0] == 5
    assert alone.model_side_s > 0
