"""The device sync that ends a JAX loop's timed blocks (docs/design.md, "JAX").

A jitted JAX step returns as soon as its work is dispatched: a loop served a cached batch
can run far ahead of its device, and timing it from pull to pull would count dispatch as
speed. So the alternation's blocks start and end on `jax.block_until_ready` over every live
JAX array, which includes the step's outputs (the loop holds them), and waits for them
alone: one sync a block, never one a step, so that training keeps its overlap. JAX is
taken from `sys.modules`, never imported: a script that did not import it has nothing to
wait for.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from pipediag.clock import Clock
from pipediag.timeline import StepTimeline


def device_sync() -> Callable[[], None] | None:
    """What waits for the JAX work in flight, or None where the script has not imported JAX."""
    jax = sys.modules.get("jax")
    if jax is None or not hasattr(jax, "live_arrays"):
        return None

    def sync() -> None:
        jax.block_until_ready(jax.live_arrays())

    return sync


def synced_step_s(timeline: StepTimeline, sync: Callable[[], None], clock: Clock) -> float | None:
    """The measured steps' mean step, from the first one's start to the end of the work they
    dispatched (`sync` waits for it): what sizes the blocks, where single durations are
    dispatch times. None before any measured step."""
    measured = timeline.steps[timeline.warmup_steps :]
    if not measured:
        return None
    sync()
    steps = sum(s.count for s in measured)
    return max(0.0, clock.now() - measured[0].start) / steps
