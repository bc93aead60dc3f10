"""At the step budget, a pipeline whose cache fills in epoch 1 is measured on into epoch 2."""

from __future__ import annotations

import pytest
from synthetic_reports import FakeClock

from pipediag.bench.pipeline import cache_ends_each_epoch
from pipediag.conclusion import newest_steps
from pipediag.config import RunConfig
from pipediag.phases import PHASE_EXTENSION_STEPS
from pipediag.report.model import PipelineBenchmark
from pipediag.session import DiagnosticSession
from pipediag.timeline import StepTimeline

CACHED = "Prefetch <- Batch <- Map <- Cache <- TensorSlice"


def _session(chain: str, wait_s: float, *, epochs: tuple[int, ...] = (0,)) -> DiagnosticSession:
    clock = FakeClock()
    config = RunConfig(measured_steps=20, warmup_steps=2, sample_host=False, sample_gpu=False)
    session = DiagnosticSession("x", [], config, clock=clock, log=None, install_hooks=False)
    session.conclusion.diagnosis.pipeline = PipelineBenchmark(
        measured=True,
        dataset=chain,
        batches_per_s=50.0,
        cache_ends_each_epoch=cache_ends_each_epoch(chain.split(" <- ")),
    )
    t = start = clock.now()
    for epoch in epochs:
        for _ in range(22 // len(epochs)):
            session.timeline.add(t, t + 0.02, wait_s, epoch)
            t += 0.02
    clock.advance(t - start)
    return session


def test_a_waiting_first_epoch_over_a_cache_is_measured_on() -> None:
    session = _session(CACHED, wait_s=0.015)
    assert session.keep_measuring()
    assert not session.timeline.budget_reached  # 20 more steps to go


def test_a_first_epoch_that_hardly_waits_is_not() -> None:
    assert not _session(CACHED, wait_s=0.0001).keep_measuring()


def test_a_cache_before_repeat_is_one_endless_stream() -> None:
    chain = "Prefetch <- Repeat <- Batch <- Cache <- TensorSlice"
    assert not _session(chain, wait_s=0.015).keep_measuring()


def test_no_cache_no_extension() -> None:
    assert not _session("Prefetch <- Batch <- Map <- TensorSlice", wait_s=0.015).keep_measuring()


def test_enough_steps_of_the_next_epoch_end_it() -> None:
    session = _session(CACHED, wait_s=0.015, epochs=(0, 1))
    # 11 steps of epoch 2 are fewer than the extension's 20: measure on
    assert session.keep_measuring()
    t = session.clock.now()
    for i in range(PHASE_EXTENSION_STEPS):
        session.timeline.add(t + i * 0.02, t + (i + 1) * 0.02, 0.0, 1)
    assert not session.keep_measuring()


def test_after_a_filling_cache_the_first_training_block_comes_from_one_epoch() -> None:
    # GIVEN measured steps in epoch 1 (reading the uncached pipeline), then epoch 2
    timeline = StepTimeline(warmup_steps=2, measured_steps=40)
    t = 0.0
    for epoch, step_s, steps in ((0, 0.030, 30), (1, 0.010, 12)):
        for _ in range(steps):
            timeline.add(t, t + step_s, 0.0, epoch)
            t += step_s
    # WHEN the alternation's lead block of 16 steps reaches back into epoch 1
    lead = newest_steps(timeline, 16)
    assert lead is not None and lead[1][0] == pytest.approx(0.030)
    # THEN after a filling cache there is no lead: fit's own next steps make that block
    assert newest_steps(timeline, 16, one_epoch=True) is None
    # ...and a lead wholly inside the newest epoch is kept
    one = newest_steps(timeline, 8, one_epoch=True)
    assert one is not None and one[1] == pytest.approx([0.010] * 8)
