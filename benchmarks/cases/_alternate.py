"""Variants of a case trained in turn, one whole epoch at a time, in one process: the truth
of a fix on a host whose speed drifts.

On the 2-core VM the same variant's whole-process rate read 174 and 405 steps/s in two runs
minutes apart, and a round of one process per variant could not tell a 1.6x fix from none.
Within one process the drift still moves single epochs (the baseline's epochs read 99-218
steps/s over 20 s), so each variant's epoch is set between two epochs of the baseline,
and its ratio is taken over their geometric mean: what the host did over those three epochs
falls on both sides.

Each variant has its own model and train step, traced before the rounds, and its first
epoch (a cache's fill) is run before them too. An epoch is timed from the making of its
iterator to the end of its tear-down, so its recurring boundary counts as in a long
training; under fit from the epoch's start inside `fit(epochs=1)` (the call's own set-up,
which a long training pays once, is left out) to the call's return.

This module is imported from the case's folder, like `_case.py`, and imports nothing from
the repository.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from _case import FIT, make_loop_step

BASELINE = "baseline"


def fixes_of(label: str) -> frozenset[str]:
    """`cache+vectorize` -> its fixes; `baseline` -> none (`tuned` is a fix of its own)."""
    return frozenset() if label == BASELINE else frozenset(label.split("+"))


@dataclass
class Alternation:
    """What the rounds measured: each variant's epochs (in steps/s), and each variant's
    ratios over the baseline epochs around it, one per round."""

    epoch_rates: dict[str, list[float]] = field(default_factory=dict)
    ratios: dict[str, list[float]] = field(default_factory=dict)
    rounds: int = 0

    def as_json(self) -> dict[str, Any]:
        return {"rounds": self.rounds, "epoch_rates": self.epoch_rates, "ratios": self.ratios}


class _Variant:
    """One variant's dataset and model, and a way to run one timed epoch of it."""

    def __init__(self, dataset: Any, model: Any, style: str) -> None:
        self.dataset = dataset
        self.model = model
        self.style = style
        self._step: Callable[[Any, Any], Any] | None = None
        if style != FIT:
            self._step = make_loop_step(model)

    def epoch(self) -> float:
        """One epoch's steps per second, its boundary in."""
        if self._step is None:
            return self._fit_epoch()
        began = time.perf_counter()
        steps = 0
        iterator = iter(self.dataset)
        for x, y in iterator:
            self._step(x, y)
            steps += 1
        del iterator  # its tear-down, here rather than in the next variant's epoch
        return steps / (time.perf_counter() - began)

    def _fit_epoch(self) -> float:
        import keras

        marks: list[float] = []
        steps = [0]

        class _Mark(keras.callbacks.Callback):  # type: ignore[misc]
            def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
                marks.append(time.perf_counter())

            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                steps[0] += 1

        self.model.fit(self.dataset, epochs=1, verbose=0, callbacks=[_Mark()])
        return steps[0] / (time.perf_counter() - marks[0])


def alternate(
    make_dataset: Callable[[frozenset[str]], Any],
    make_model: Callable[[], Any],
    *,
    style: str,
    labels: list[str],
    rounds: int,
    max_seconds: float | None = None,
) -> Alternation:
    """Each variant in `labels` against the baseline, trained in turn (`in_turn`), each
    with its own model, its first epoch run before the rounds (tracing the step, filling
    any cache: the first epoch's one-off costs)."""
    variants = {
        label: _Variant(make_dataset(fixes_of(label)), make_model(), style)
        for label in [BASELINE, *[x for x in labels if x != BASELINE]]
    }
    for variant in variants.values():
        variant.epoch()
    epochs = {label: variant.epoch for label, variant in variants.items()}
    return in_turn(epochs, rounds=rounds, max_seconds=max_seconds)


def in_turn(
    epochs: dict[str, Callable[[], float]],
    *,
    rounds: int,
    max_seconds: float | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Alternation:
    """`rounds` rounds (fewer where `max_seconds` passes first) of B v1 B v2 ... B, the
    variants in the other order every other round; each variant's ratio is over the
    geometric mean of the baseline epochs either side of it. `epochs[label]()` runs one
    epoch and returns its steps/s; `epochs` holds the baseline."""
    others = [label for label in epochs if label != BASELINE]
    found = Alternation(
        epoch_rates={label: [] for label in epochs}, ratios={label: [] for label in others}
    )
    began = clock()
    for index in range(rounds):
        if max_seconds is not None and index > 0 and clock() - began >= max_seconds:
            break
        order = others if index % 2 == 0 else others[::-1]
        before = epochs[BASELINE]()
        found.epoch_rates[BASELINE].append(before)
        for label in order:
            rate = epochs[label]()
            after = epochs[BASELINE]()
            found.epoch_rates[label].append(rate)
            found.epoch_rates[BASELINE].append(after)
            found.ratios[label].append(rate / (before * after) ** 0.5)
            before = after
        found.rounds += 1
    return found
