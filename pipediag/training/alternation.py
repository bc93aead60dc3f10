"""Training and the train step alone, measured in alternating blocks (docs/design.md, "Rates
in alternation"). `Alternation` is the framework-neutral schedule and record: its owner (fit's
callback, or a loop's budget server) runs each block and hands it the step ends."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pipediag.analysis import paired
from pipediag.analysis.alternation import PairedCost, block_of, paired_cost
from pipediag.analysis.classifier import LABEL_MAX_HALF_WIDTH
from pipediag.analysis.input_cost import DEFAULT_THRESHOLDS
from pipediag.analysis.stats import latency_stats
from pipediag.clock import Clock, Quiet
from pipediag.report.model import ComputeAlone, RateBlock
from pipediag.report.reasons import Reason, error_reason
from pipediag.report.vocabulary import ComputeAloneMethod, RateBlockKind
from pipediag.training.compute_alone import WARMUP_STEPS, StepAlone, steps_lasting

# The longest the samplers pause for a quiet block with no training block's rate to size it.
QUIET_MAX_S = 10.0

Next = Literal["step-alone", "training", "quiet-training", "done"]


@dataclass
class _OpenBlock:
    """The block being timed; `last_end` is None while the step running is not timed."""

    kind: RateBlockKind
    start: float
    last_end: float | None
    durations: list[float]
    cpu_from: float


def _straddles(cost: PairedCost | None) -> bool:
    """Whether the interval holds a band's edge: the label is then its low end's."""
    if cost is None or cost.low is None or cost.high is None:
        return False
    edges = (DEFAULT_THRESHOLDS.moderately_input_bound, DEFAULT_THRESHOLDS.highly_input_bound)
    return any(cost.low < edge <= cost.high for edge in edges)


def block_steps_for(step_s: float, most: int = paired.MAX_BLOCK_STEPS) -> int:
    return steps_lasting(paired.BLOCK_S, step_s, fewest=paired.MIN_BLOCK_STEPS, most=most)


def unbounded_block_steps(step_s: float, per_call: int = 1) -> int:
    """A block's steps where nothing bounds them (a loop's steps left are unknown): about
    `BLOCK_S` of steps, at most 64 unless 64 last under `UNBOUNDED_BLOCK_S`; in whole calls of
    `per_call` steps, as a block ending inside a call leaves the call's rest in no block."""
    most = paired.MAX_BLOCK_STEPS_UNBOUNDED
    if step_s > 0:
        most = max(most, math.ceil(paired.UNBOUNDED_BLOCK_S / step_s))
    return per_call * math.ceil(block_steps_for(step_s, most) / per_call)


class Alternation:
    """The blocks' schedule and what each measured. `lead`: A0's start and durations (None:
    none). `whole_blocks`: no step dropped as a transition (a JAX loop). `max_rounds`: what
    fit's steps left allow. `quiet`: the samplers paused for every other training block, and
    after the rounds the observer check's own blocks (`observer_blocks`)."""

    def __init__(
        self,
        *,
        clock: Clock,
        origin: float,
        block_steps: int,
        lead: tuple[float, Sequence[float]] | None,
        fixed_rounds: int | None = None,
        max_rounds: int | None = None,
        whole_blocks: bool = False,
        scale: float = 1.0,
        quiet: Quiet | None = None,
    ) -> None:
        self._clock, self._quiet = clock, quiet
        self._whole_blocks = whole_blocks
        soft = max(paired.MAX_ROUNDS, round(paired.MAX_ROUNDS * scale))
        self._max_rounds = soft if max_rounds is None else min(soft, max_rounds)
        self._steps_bound = max_rounds
        extended = paired.EDGE_EXTENSION * soft
        # A loop's steps left are unknown: its end ends the rounds (docs/design.md, "Rates in
        # alternation").
        self._most_rounds = extended if max_rounds is None else min(extended, max_rounds)
        self._max_seconds = paired.MAX_SECONDS * scale
        self._origin, self.block_steps = origin, block_steps
        self._fixed_rounds = fixed_rounds
        self.blocks: list[RateBlock] = []
        # Quiet and watched training in turn after the rounds (`--observer-check`): not the cost's.
        self.observer_blocks: list[RateBlock] = []
        self._observer_began: float | None = None
        self._alone_durations: list[float] = []
        self._alone_cpu_s, self._alone_steps = 0.0, 0
        self.began = clock.now()
        self._next: Next = "training"
        if lead is not None and lead[1]:
            self.blocks.append(block_of("training", lead[0] - origin, lead[1]))
            self._next = "step-alone"
        self._open: _OpenBlock | None = None

    @property
    def next(self) -> Next:
        """What runs next; only `end_block` decides it."""
        return self._next

    @property
    def open_kind(self) -> RateBlockKind | None:
        return None if self._open is None else self._open.kind

    @property
    def closes_with_next_step(self) -> bool:
        """Whether the next step that ends (`step_ended`) completes the open block."""
        if (opened := self._open) is None or opened.last_end is None:
            return False
        return len(opened.durations) + 1 >= self.block_steps

    @property
    def rounds(self) -> int:
        return sum(b.kind == "step-alone" for b in self.blocks)

    def start_block(self, kind: RateBlockKind, at: float) -> None:
        if kind == "quiet-training":
            self._hold_quiet()
        self._open = _OpenBlock(kind, at, at, [], time.process_time())

    def step_ended(self, at: float) -> bool:
        """A step of the open block ended at `at`; True when that closed the block."""
        opened = self._open
        assert opened is not None
        if opened.last_end is None:  # the step across an interruption is not timed
            opened.last_end = at
            return False
        return self.step_timed(at - opened.last_end, end=at)

    def step_timed(self, duration_s: float, *, end: float | None = None) -> bool:
        """A step of the open block took `duration_s`; True when that closed the block."""
        opened = self._open
        assert opened is not None
        opened.durations.append(duration_s)
        opened.last_end = end
        if len(opened.durations) < self.block_steps:
            return False
        self.end_block()
        return True

    def skip_step(self) -> None:
        """The step now running is not timed (it crosses an epoch's end in a custom loop)."""
        if self._open is not None:
            self._open.last_end = None

    def end_block(self) -> None:
        """Close the open block with its steps so far, and decide what runs next."""
        opened, self._open = self._open, None
        self.release_samplers()
        if opened is None:
            return
        if not (durations := opened.durations):
            self._next = "done"
            return
        cpu, start_s = time.process_time() - opened.cpu_from, opened.start - self._origin
        block = block_of(opened.kind, start_s, durations, cpu_s=cpu, whole=self._whole_blocks)
        if self._observer_began is not None:
            self.observer_blocks.append(block)
            self._next = self._next_observer_block(block.kind)
            return
        self.blocks.append(block)
        if opened.kind == "step-alone":
            self._alone_durations.extend(durations[block.dropped_steps :])
            self._alone_cpu_s += cpu
            self._alone_steps += len(durations)
            # Every other training block is a quiet one, from the second.
            last = self._last_training_block()
            quiet = self._quiet is not None and last is not None and last.kind == "training"
            self._next = "quiet-training" if quiet else "training"
            if quiet:
                self._hold_quiet()
        elif self._wants_another_round():
            self._next = "step-alone"
        elif self._quiet is not None and self._room_for_observer_pair():
            self._observer_began = self._clock.now()
            self._next = self._next_observer_block(block.kind)
        else:
            self._next = "done"

    def _next_observer_block(self, last: RateBlockKind) -> Next:
        """The observer check's blocks: a quiet one, then a watched one, while there is room."""
        if last == "quiet-training":
            return "training"  # its pair closes with a watched block
        quiet = sum(b.kind == "quiet-training" for b in self.observer_blocks)
        if quiet >= paired.OBSERVER_PAIRS or not self._room_for_observer_pair():
            return "done"
        self._hold_quiet()
        return "quiet-training"

    def _room_for_observer_pair(self) -> bool:
        """Within the check's time, and a quiet and a watched block within fit's steps left."""
        began = self._observer_began
        if began is not None and self._clock.now() - began >= paired.OBSERVER_S:
            return False
        if self._steps_bound is None:
            return True
        # The rounds' training blocks are at most `max_rounds` + 1 (a lead, or A0 on the steps).
        training = sum(b.kind != "step-alone" for b in self.blocks) + len(self.observer_blocks)
        return training + 2 <= self._steps_bound + 1

    def release_samplers(self) -> None:
        """The samplers read again (the alternation is over, or failed)."""
        if self._quiet is not None:
            self._quiet.release()

    def _hold_quiet(self) -> None:
        """At most three blocks' time and a second, lest training cut short leave a pause."""
        if self._quiet is None:
            return
        last = self._last_training_block()
        rate = last.steps_per_s if last is not None else None
        self._quiet.hold(3 * self.block_steps / rate + 1.0 if rate else QUIET_MAX_S)

    def _last_training_block(self) -> RateBlock | None:
        return next((b for b in reversed(self.blocks) if b.kind != "step-alone"), None)

    def _wants_another_round(self) -> bool:
        rounds = self.rounds
        if self._fixed_rounds is not None:
            return rounds < self._fixed_rounds
        if rounds < paired.ALTERNATION_MIN_ROUNDS:
            return True
        elapsed = self._clock.now() - self.began
        within_limits = (
            rounds < self._most_rounds and elapsed < paired.EDGE_EXTENSION * self._max_seconds
        )
        last = self._last_training_block()
        if last is not None and last.kind == "quiet-training":
            # A quiet block reads against watched blocks on both sides, so that drift cancels
            # (docs/design.md, "What pipediag costs a step"): one more round, within the limits.
            return within_limits
        cost = paired_cost(self.blocks)
        width = cost.half_width if cost is not None else None
        if rounds < self._max_rounds and elapsed < self._max_seconds:
            # A narrow interval across an edge still reads on: its label would be its low
            # end's (docs/design.md, "Rates in alternation").
            return width is None or width > paired.TARGET_HALF_WIDTH or _straddles(cost)
        # Past the bounds, only an interval too wide for a label where it lies (too noisy to tell).
        return (
            within_limits
            and width is not None
            and width > LABEL_MAX_HALF_WIDTH
            and _straddles(cost)
        )

    def result(self, method: ComputeAloneMethod, *, restored: int = 0) -> ComputeAlone:
        """T from the step-alone blocks (an open one closed), and every block for the pairs."""
        self.end_block()
        self.release_samplers()  # closing a step-alone block may have paused them
        alone = [b for b in self.blocks if b.kind == "step-alone"]
        steps, seconds = sum(b.steps for b in alone), sum(b.seconds for b in alone)
        if not steps or seconds <= 0:
            return ComputeAlone(measured=False, reason=Reason("no-step-in-blocks"))
        return ComputeAlone(
            measured=True,
            method=method,
            start_s=self.began - self._origin,
            duration_s=self._clock.now() - self.began,
            warmup_steps=WARMUP_STEPS,
            steps=steps,
            steps_per_s=steps / seconds,
            step_time=latency_stats(self._alone_durations),
            restored_variables=restored,
            cpu_s_per_step=self._alone_cpu_s / self._alone_steps if self._alone_steps else None,
            blocks=list(self.blocks),
            observer_blocks=list(self.observer_blocks),
            block_steps=self.block_steps,
        )


class FitAlternation:
    """The alternation under fit: step-alone blocks run between fit's own, timed steps."""

    def __init__(self, runner: StepAlone, alternation: Alternation, *, clock: Clock) -> None:
        self._runner, self.alternation = runner, alternation
        self._clock = clock
        self._warmed = self._skip_next = False
        self.failure: Reason | None = None

    @property
    def done(self) -> bool:
        return self.failure is not None or self.alternation.next == "done"

    def after_training_block(self) -> bool:
        """A training block ended: the step alone's block runs, if due; True once all are done."""
        alternation = self.alternation
        if self.failure is not None or alternation.next != "step-alone":
            return self.done
        warmup = 0 if self._warmed else WARMUP_STEPS
        self._warmed = True

        def step_ended(at: float) -> bool:
            # The block starts after the warm-up: its first step starts at the first end.
            if alternation.open_kind is None:
                alternation.start_block("step-alone", at)
                return False
            return alternation.step_ended(at)

        try:
            self._runner.block(step_ended, clock=self._clock, warmup=warmup)
        except Exception as exc:  # the phase is lost, never the user's training
            self.failure = error_reason("step-alone-failed", exc)
        return self.done

    def training_step(self, start: float, end: float) -> bool:
        """One of fit's steps, from its start to its end; True when its block is complete."""
        if self._skip_next:
            self._skip_next = False
            return False
        alternation = self.alternation
        if alternation.open_kind is None:
            quiet = alternation.next == "quiet-training"
            alternation.start_block("quiet-training" if quiet else "training", start)
        return alternation.step_timed(end - start)

    def skip_step(self) -> None:
        """fit's next step is not timed (it starts an epoch: it carries the start-up)."""
        self._skip_next = True

    def result(self) -> ComputeAlone:
        """T and every block so far (an open one closed with its steps)."""
        if self.failure is not None:
            self.alternation.release_samplers()
            return ComputeAlone(measured=False, reason=self.failure)
        runner = self._runner
        return self.alternation.result(runner.method, restored=runner.restored_variables)
