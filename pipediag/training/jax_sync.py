"""The device sync that ends a JAX loop's timed blocks: a jitted step returns once dispatched
(docs/design.md, "JAX"). JAX is taken from `sys.modules`, never imported."""

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
    """The measured steps' mean up to the end of their device work (durations are dispatch)."""
    measured = timeline.steps[timeline.warmup_steps :]
    if not measured:
        return None
    sync()
    return max(0.0, clock.now() - measured[0].start) / sum(s.count for s in measured)
