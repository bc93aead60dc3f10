"""Compute alone (T): the user's own train step on one cached batch, the pipeline idle, every
variable it writes put back; under fit the compiled train function is called directly.
Method: (docs/design.md, "Input cost"), (docs/design.md, "Rates in alternation")."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from pipediag.analysis.stats import latency_stats
from pipediag.clock import Clock, run_block
from pipediag.report.model import ComputeAlone
from pipediag.report.reasons import Reason
from pipediag.report.vocabulary import ComputeAloneMethod
from pipediag.training.driver import TrainDriver, fit_distributor, fit_step_blocker
from pipediag.training.fit_backend import on_jax
from pipediag.training.jax_fit import JaxStepAlone

MAX_SECONDS = 2.0
MIN_STEPS = 50
# Sub-millisecond steps: 50 of them are too short to average the scheduler's noise out.
MIN_SECONDS = 0.25
MAX_STEPS = 2000
# Untimed first calls: under fit the cached batch's static shapes may retrace the step; in a
# loop the pipeline's prefetch buffer refills during the first steps served from the cache.
WARMUP_STEPS = 3


def steps_lasting(seconds: float, step_s: float, *, fewest: int, most: int) -> int:
    """The steps of `step_s` in about `seconds`, within `fewest` and `most` (no step: `most`)."""
    return most if step_s <= 0 else max(fewest, min(most, math.ceil(seconds / step_s)))


class FitStepAlone:
    """fit's compiled train function on the cached batch, variables put back after a block."""

    method: ComputeAloneMethod = "keras-train-function"

    def __init__(self, model: Any, batch: Any) -> None:
        self._driver = TrainDriver.keras_fit(model)
        self.per_call = self._driver.batches_per_call
        self.restored_variables = len(self._driver.variables)
        self._feed = cached_batch_feed(model, batch)

    def block(self, step_ended: Callable[[float], bool], *, clock: Clock, warmup: int) -> None:
        # Fit's own training goes on between blocks: each block puts its variables back.
        train, feed = self._driver.train, self._feed
        with self._driver.restoring():
            run_block(lambda: sync_logs(train(feed())), step_ended, clock, warmup)


class StepAlone(Protocol):
    """What runs fit's train step alone, whatever the backend."""

    per_call: int
    method: ComputeAloneMethod
    restored_variables: int

    def block(self, step_ended: Callable[[float], bool], *, clock: Clock, warmup: int) -> None: ...


def fit_step_alone(model: Any, batch: Any) -> StepAlone | Reason:
    if (blocker := fit_step_blocker(model, "backend-no-step-alone")) is not None:
        return blocker
    return JaxStepAlone(model, batch) if on_jax(model) else FitStepAlone(model, batch)


def measure_step_alone(
    runner: StepAlone, *, clock: Clock, origin: float, step_s_hint: float
) -> ComputeAlone:
    """The train step alone in one run, where training ended with no steps to alternate."""
    per_call = runner.per_call
    wanted = steps_lasting(MIN_SECONDS, step_s_hint * per_call, fewest=MIN_STEPS, most=MAX_STEPS)
    began = clock.now()
    ends: list[float] = []  # the first is where the first timed step starts
    cpu_from = 0.0

    def step_ended(at: float) -> bool:
        nonlocal cpu_from
        if not ends:
            cpu_from = time.process_time()
        ends.append(at)
        return len(ends) > wanted or at >= ends[0] + MAX_SECONDS

    runner.block(step_ended, clock=clock, warmup=WARMUP_STEPS)
    cpu_s, now = time.process_time() - cpu_from, clock.now()
    if not (durations := [b - a for a, b in zip(ends, ends[1:], strict=False)]):
        return ComputeAlone(measured=False, reason=Reason("no-step-alone"))
    span = ends[-1] - ends[0]
    result = ComputeAlone(
        measured=True,
        method=runner.method,
        start_s=began - origin,
        duration_s=now - began,
        warmup_steps=WARMUP_STEPS,
        steps=len(durations),
        steps_per_s=len(durations) / span if span > 0 else None,
        step_time=latency_stats(durations),
        restored_variables=runner.restored_variables,
        cpu_s_per_step=cpu_s / len(durations),
    )
    return _per_batch(result, per_call) if per_call > 1 else result


def cached_batch_feed(model: Any, batch: Any) -> Callable[[], Any]:
    """The cached batch repeated, as FastFlow's T feeds fit: a dataset iterator, as Keras
    takes a shorter path on a Python iterable (docs/design.md, "Rates in alternation")."""
    import tensorflow as tf

    # No autotuning: its thread takes CPU beside the step (docs/design.md, "Iterator tear-down").
    options = tf.data.Options()
    options.autotune.enabled = False
    cached = tf.data.Dataset.from_tensors(batch).repeat().with_options(options)
    iterator = iter(fit_distributor(model)(cached))
    return lambda: iterator


def _per_batch(result: ComputeAlone, per_call: int) -> ComputeAlone:
    """With steps_per_execution, one call trains `per_call` batches: rates per batch."""
    rate = None if result.steps_per_s is None else result.steps_per_s * per_call
    cpu = None if result.cpu_s_per_step is None else result.cpu_s_per_step / per_call
    stats = result.step_time
    assert stats is not None
    durations = ("mean_s", "median_s", "p90_s", "min_s", "max_s")
    scaled = replace(stats, **{name: getattr(stats, name) / per_call for name in durations})
    steps = result.steps * per_call
    return replace(result, steps=steps, steps_per_s=rate, cpu_s_per_step=cpu, step_time=scaled)


def sync_logs(logs: Any) -> None:
    """Wait for the step's work: on an accelerator the call returns before the kernels end."""
    if isinstance(logs, dict):
        for value in logs.values():
            if hasattr(value, "numpy"):
                value.numpy()
                return
