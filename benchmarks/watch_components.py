"""Watch mode's cost taken apart: each piece of CPU it adds per step, measured directly.

A whole-block ratio (`watch_overhead.py`) is the cost as the user sees it, but on 2 shared
cores a block's CPU time varies by ~10% around its median, so even hundreds of pairs leave
an interval of +-2%: too wide to show a cost under 1%. What watch mode adds is known piece by
piece, and each piece can be measured on its own, during the same blocks:

- **pipediag's threads** (the watcher, the host and GPU samplers): their CPU time read from
  the kernel (`/proc/self/task/<tid>/schedstat`, nanoseconds on a CPU) at a block's start
  and end. Exact: no other thread's work is in it.
- **the hook on the training thread**, on the user's critical path:
  - custom loop: every pull of the batch is timed (thread CPU) around `next()`, and the
    iterator's own fetch inside it; what is left is Python around the fetch, pipediag's
    wrapper among it. The hook's cost is that remainder in a watch block less in the off
    block of its pair (the same timers run in both, so they cancel).
  - `fit`: pipediag's two callback methods, timed (thread CPU) around each call, less the
    timer's own cost (calibrated on an empty call). Keras's loop over one more callback is
    not in it (well under a microsecond).
- **batch stamps** (`fit` only): the two stages pipediag appends to the dataset run on
  tf.data's threads. Their CPU per batch is measured on a dataset that costs next to nothing
  (the case's own batch, repeated), stamped and not, in alternating blocks: there the
  stages' cost is not lost among the pipeline's own work.

The pieces sum to the CPU watch mode spends per step, with a 95% interval over the pairs.
Against the off blocks' process CPU per step it is the CPU cost; against their step time it
bounds the throughput cost from above (it counts the threads' CPU as if all of it delayed
the training thread, which on 2 cores only part of it does). Not in the sum: effects on
the training's own work (caches, the GIL handed to a sampler thread), which only the
whole-block ratio sees; it is reported beside the sum as the cross-check.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

PIPEDIAG_THREAD_PREFIX = "pipediag-"
STAMP_PAIRS = 150  # ~40 s: each pair's difference is a few us on ~110 us batches
STAMP_BATCHES_PER_BLOCK = 1000
CALIBRATION_CALLS = 20_000


def mean_ci95(values: Sequence[float]) -> dict[str, Any]:
    """Mean and its normal-approximation 95% interval: a cost adds up, so its mean counts."""
    n = len(values)
    mean = sum(values) / n if n else math.nan
    if n < 2:
        return {"n": n, "mean": mean, "ci95": None}
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = 1.96 * sd / math.sqrt(n)
    return {"n": n, "mean": mean, "ci95": [mean - half, mean + half]}


def widened(figure: dict[str, Any], other: dict[str, Any] | None) -> dict[str, Any]:
    """`figure` (a `mean_ci95`) plus an independent figure's mean, with both intervals'
    half-widths combined in quadrature."""
    if other is None:
        return figure
    mean = figure["mean"] + other["mean"]
    halves = [(f["ci95"][1] - f["ci95"][0]) / 2 for f in (figure, other) if f["ci95"]]
    if len(halves) < 2:
        return {"n": figure["n"], "mean": mean, "ci95": None}
    half = math.sqrt(sum(h * h for h in halves))
    return {"n": figure["n"], "mean": mean, "ci95": [mean - half, mean + half]}


def share_of(figure: dict[str, Any], per_step: float) -> dict[str, Any]:
    """A per-step figure (mean and interval) as a share of another per-step figure."""
    ci = figure["ci95"]
    return {
        "n": figure["n"],
        "mean": figure["mean"] / per_step,
        "ci95": None if ci is None else [ci[0] / per_step, ci[1] / per_step],
    }


def thread_cpu_ns(prefix: str = PIPEDIAG_THREAD_PREFIX) -> dict[int, int] | None:
    """CPU nanoseconds so far of each live thread whose name starts with `prefix`, by native
    id; None where the kernel does not say (not Linux)."""
    found: dict[int, int] = {}
    for thread in threading.enumerate():
        if not thread.name.startswith(prefix) or thread.native_id is None:
            continue
        try:
            with open(f"/proc/self/task/{thread.native_id}/schedstat") as f:
                found[thread.native_id] = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            if not os.path.exists("/proc/self/task"):
                return None
    return found


def threads_spent_ns(before: dict[int, int], after: dict[int, int]) -> int:
    """What the threads spent between two readings; one started in between counts whole."""
    return sum(ns - before.get(tid, 0) for tid, ns in after.items())


@dataclass
class HookClock:
    """Thread-CPU totals the timed hooks add to; read and reset per block."""

    outer_s: float = 0.0  # custom loop: around `next()`
    inner_s: float = 0.0  # custom loop: the iterator's own fetch
    callback_s: float = 0.0  # fit: pipediag's callback methods
    callback_calls: int = 0

    def take(self) -> dict[str, float]:
        taken = {
            "outer_s": self.outer_s,
            "inner_s": self.inner_s,
            "callback_s": self.callback_s,
            "callback_calls": float(self.callback_calls),
        }
        self.outer_s = self.inner_s = self.callback_s = 0.0
        self.callback_calls = 0
        return taken


def timer_cost_s(calls: int = CALIBRATION_CALLS) -> float:
    """What timing one call with two `thread_time()` reads adds to what it counts."""
    clock = HookClock()

    def empty() -> None:
        return None

    timed = _timed_call(empty, clock)
    for _ in range(calls // 10):  # warm
        timed()
    clock.take()
    for _ in range(calls):
        timed()
    return clock.take()["callback_s"] / calls


def _timed_call(function: Callable[..., Any], clock: HookClock) -> Callable[..., Any]:
    thread_time = time.thread_time

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            clock.callback_s += thread_time() - start
            clock.callback_calls += 1

    return timed


@contextmanager
def timed_hooks(clock: HookClock) -> Iterator[None]:
    """Time the iterator's fetch (under pipediag's wrapper, which takes it as the original)
    and pipediag's `fit` callback methods; put everything back afterwards.

    Installed before any watch session starts, so a session's iterator patch wraps the
    timed fetch, and its callback binds the timed methods.
    """
    from tensorflow.python.data.ops import iterator_ops

    from pipediag.hooks.keras_fit import FitTracker

    owner = iterator_ops.OwnedIterator
    fetch = owner.__dict__["_next_internal"]
    thread_time = time.thread_time

    def timed_fetch(iterator: Any) -> Any:
        start = thread_time()
        try:
            return fetch(iterator)
        finally:
            clock.inner_s += thread_time() - start

    begin, end = FitTracker.on_batch_begin, FitTracker.on_batch_end
    owner._next_internal = timed_fetch
    FitTracker.on_batch_begin = _timed_call(begin, clock)  # type: ignore[method-assign]
    FitTracker.on_batch_end = _timed_call(end, clock)  # type: ignore[method-assign]
    try:
        yield
    finally:
        owner._next_internal = fetch
        FitTracker.on_batch_begin = begin  # type: ignore[method-assign]
        FitTracker.on_batch_end = end  # type: ignore[method-assign]


def timed_next(batches: Any, clock: HookClock) -> Any:
    """`next(batches)`, its thread CPU added to the clock's outer total."""
    start = time.thread_time()
    try:
        return next(batches)
    finally:
        clock.outer_s += time.thread_time() - start


@dataclass
class StampCost:
    """CPU per batch of the two batch-stamp stages, from alternating blocks."""

    pairs: int
    plain_cpu_us: float
    delta_cpu_us: dict[str, Any] = field(default_factory=dict)


def stamp_stage_cost(element: Any, pairs: int = STAMP_PAIRS) -> StampCost:
    """The stamp stages' process CPU per batch, on `element` repeated (a pipeline of almost
    no cost of its own), stamped and plain in ABBA blocks."""
    import tensorflow as tf

    from benchmarks._common import abba_order, median
    from pipediag.clock import MONOTONIC
    from pipediag.hooks.batch_stamps import BatchStamps

    plain = tf.data.Dataset.from_tensors(element).repeat()
    per_arm: dict[bool, list[float]] = {False: [], True: []}
    for pair in range(pairs + 1):  # the first pair warms up both arms and is dropped
        for stamped in abba_order(pair):
            stamps = BatchStamps(MONOTONIC)
            dataset = stamps.attach(plain) if stamped else plain
            batches = iter(dataset)
            next(batches)
            start = time.process_time()
            for _ in range(STAMP_BATCHES_PER_BLOCK):
                next(batches)
            spent = time.process_time() - start
            if stamped:
                stamps.collect()
            if pair:
                per_arm[stamped].append(spent / STAMP_BATCHES_PER_BLOCK)
    deltas = [(b - a) * 1e6 for a, b in zip(per_arm[False], per_arm[True], strict=True)]
    return StampCost(
        pairs=pairs, plain_cpu_us=median(per_arm[False]) * 1e6, delta_cpu_us=mean_ci95(deltas)
    )
