"""Input cost from three rates, and its split, on hand-built timelines (no TensorFlow)."""

from __future__ import annotations

import math

import pytest

from pipediag.analysis.alternation import paired_cost
from pipediag.analysis.classifier import build_train_section, judge
from pipediag.analysis.input_cost import epoch_start_stage
from pipediag.renderers.rate_words import compute_alone_origin
from pipediag.renderers.verdict_words import cost_headline, phase_name, verdict_line
from pipediag.report.model import (
    ComputeAlone,
    EpochStart,
    PipelineBenchmark,
    RateBlock,
    Report,
    TrainSection,
)
from pipediag.report.samples import HostSample, HostSection
from pipediag.report.stages import LatencyStats, StageSettings, StageStats
from pipediag.timeline import RawStep

ORIGIN = 100.0


def _train(
    steps: list[tuple[float, float, int]], *, source: str = "iterator-timing", warmup: int = 0
) -> TrainSection:
    """Steps of (duration, wait, epoch), back to back."""
    raw, t = [], ORIGIN
    for duration, wait, epoch in steps:
        raw.append(RawStep(t, t + duration, wait, epoch))
        t += duration
    return build_train_section(
        raw, origin=ORIGIN, warmup_steps=warmup, style="custom-loop", input_wait_source=source
    )


def _alone(step_s: float, cpu_s_per_step: float | None = None) -> ComputeAlone:
    stats = LatencyStats(50, step_s, step_s, step_s, step_s, step_s)
    return ComputeAlone(
        measured=True,
        method="cached-batch-loop",
        steps=50,
        steps_per_s=1 / step_s,
        step_time=stats,
        cpu_s_per_step=cpu_s_per_step,
    )


def test_contention_is_the_gap_that_waiting_does_not_explain() -> None:
    # GIVEN steps of 20 ms that wait 1 ms, a step alone of 11 ms, a pipeline barely faster
    train = _train([(0.020, 0.001, 0)] * 50, source="batch-stamps")
    host = HostSection(
        available=True,
        cpu_count=2,
        samples=[HostSample(t / 10, 190.0, 97.0, 0.0, [97.0, 97.0], 0, 50.0) for t in range(11)],
    )
    # WHEN judged with the measured compute-alone rate and the host samples
    verdict = judge(
        train,
        PipelineBenchmark(measured=True, batches_per_s=60.0),
        compute_alone=_alone(0.011, cpu_s_per_step=0.011),
        host=host,
    )
    # THEN input costs 1 - A/T = 45%, mostly contention, and the label follows the cost
    assert verdict.input_cost_fraction == pytest.approx(1 - 50 / (1 / 0.011))
    assert verdict.input_wait_fraction == pytest.approx(0.05)
    split = verdict.cost_split
    assert split is not None and split.dominant == "contention"
    assert split.wait == pytest.approx(0.05)
    assert split.wait + split.contention + split.fetch == pytest.approx(verdict.input_cost_fraction)
    assert verdict.label == "input-bound" and verdict.compute_alone_source == "measured"
    # the process kept 1.9 cores busy while training, the step alone 1.0: 0.9 for the pipeline
    assert split.pipeline_cores_busy == pytest.approx(0.9)
    assert split.free_cores == pytest.approx(0.06)
    # and the headline worded from these facts says so
    line = verdict_line(verdict, 60.0, train)
    assert line.startswith("INPUT-BOUND: input costs 45% of training time, mostly CPU contention")


def test_a_pull_from_a_far_faster_pipeline_is_fetch_not_wait() -> None:
    # GIVEN a 1.4 ms step that spends 0.34 ms in next(), a pipeline 7x faster than training
    train = _train([(0.0014, 0.00034, 0)] * 100)
    verdict = judge(
        train,
        PipelineBenchmark(measured=True, batches_per_s=5100.0),
        compute_alone=_alone(0.00106),
    )
    split = verdict.cost_split
    assert split is not None
    # THEN the measured wait is the per-pull overhead, and it dominates
    assert split.dominant == "fetch" and split.wait == 0.0
    assert split.fetch == pytest.approx(0.34 / 1.4)
    assert verdict.label == "input-bound"
    assert "mostly the per-pull overhead of next()" in verdict_line(verdict, 5100.0, train)


def test_a_slow_pipeline_makes_the_step_wait() -> None:
    train = _train([(0.030, 0.020, 0)] * 40)
    verdict = judge(
        train, PipelineBenchmark(measured=True, batches_per_s=35.0), compute_alone=_alone(0.010)
    )
    split = verdict.cost_split
    assert split is not None and split.dominant == "wait"
    assert verdict.input_cost_fraction == pytest.approx(2 / 3)
    assert verdict.label == "input-bound"


def test_measured_wait_stands_when_the_short_compute_alone_run_was_slower() -> None:
    # GIVEN a compute-alone run that came out slower than the steps minus their waits (noise)
    train = _train([(0.020, 0.004, 0)] * 40)
    verdict = judge(
        train, PipelineBenchmark(measured=True, batches_per_s=60.0), compute_alone=_alone(0.019)
    )
    # THEN the cost is at least the measured wait, and the parts still add up
    split = verdict.cost_split
    assert split is not None
    assert verdict.input_cost_fraction == pytest.approx(0.2)
    assert split.contention == 0.0 and split.wait == pytest.approx(0.2)


def test_without_a_compute_alone_run_the_rate_is_estimated_and_says_why() -> None:
    train = _train([(0.020, 0.002, 0)] * 40)
    verdict = judge(
        train,
        PipelineBenchmark(measured=True, batches_per_s=100.0),
        compute_alone=ComputeAlone(measured=False, reason="--steps all: no safe point"),
    )
    assert verdict.compute_alone_source == "estimated"
    assert verdict.compute_alone_reason == "--steps all: no safe point"
    assert verdict.compute_alone_steps_per_s == pytest.approx(1 / 0.018)
    # step minus wait cannot see contention: the cost is the wait
    assert verdict.input_cost_fraction == pytest.approx(0.1)
    assert verdict.label == "balanced"
    assert "(compute alone estimated: contention not measured)" in verdict_line(
        verdict, 100.0, train
    )


def test_a_cache_filling_in_epoch_one_gives_two_phases() -> None:
    # GIVEN epoch 1 input-bound (30 ms steps, 20 ms waits), epochs 2-3 near the step alone
    train = _train([(0.030, 0.020, 0)] * 30 + [(0.0102, 0.0001, 1)] * 30 + [(0.0101, 0.0, 2)] * 30)
    verdict = judge(
        train, PipelineBenchmark(measured=True, batches_per_s=40.0), compute_alone=_alone(0.010)
    )
    # THEN one verdict per phase; the headline says which dominates and what comes after
    assert [(p.first_epoch, p.last_epoch) for p in verdict.phases] == [(0, 0), (1, 2)]
    assert [phase_name(p) for p in verdict.phases] == ["epoch 1", "epochs 2-3"]
    first, after = verdict.phases
    assert first.label == "input-bound" and first.input_cost_fraction == pytest.approx(2 / 3)
    assert after.label == "compute-bound" and after.steps == 60
    line = verdict_line(verdict, 40.0, train)
    assert "epoch 1 dominates" in line
    assert "after it (epochs 2-3) compute-bound" in line


def test_steady_epochs_are_one_phase() -> None:
    train = _train([(0.012, 0.001, 0)] * 30 + [(0.0125, 0.001, 1)] * 30)
    verdict = judge(
        train, PipelineBenchmark(measured=True, batches_per_s=200.0), compute_alone=_alone(0.010)
    )
    assert verdict.phases == []


def test_a_pipeline_alone_slower_than_training_is_called_disturbed() -> None:
    # GIVEN training at 68 steps/s fed by a pipeline read alone at 34 batches/s
    train = _train([(0.0147, 0.011, 0)] * 40, source="batch-stamps")
    verdict = judge(
        train, PipelineBenchmark(measured=True, batches_per_s=34.0), compute_alone=_alone(0.005)
    )
    # THEN the lines under the headline say the pipeline-alone reading cannot be right
    head = cost_headline(verdict, 34.0)
    assert head is not None
    assert head.details == [
        "Training outran the pipeline read alone (68.0 against 34.0): that reading was "
        "disturbed; read its stage figures with care."
    ]


# --- rates in alternation --------------------------------------------------------------------


def _blocks(
    training: list[float],
    alone: list[float],
    *,
    steps: int = 20,
    training_cpu_s: float | None = None,
    alone_cpu_s: float | None = None,
) -> ComputeAlone:
    """A T A T ... A blocks at the given rates (steps/s), each of `steps` steady steps."""
    blocks = []
    t = 10.0
    for i, rate in enumerate(training):
        blocks.append(RateBlock("training", t, steps, steps / rate, 0, training_cpu_s))
        t += steps / rate
        if i < len(alone):
            blocks.append(RateBlock("step-alone", t, steps, steps / alone[i], 0, alone_cpu_s))
            t += steps / alone[i]
    return ComputeAlone(
        measured=True,
        method="keras-train-function",
        steps=steps * len(alone),
        steps_per_s=alone[0],
        blocks=blocks,
        block_steps=steps,
    )


def _host(free_cores: float, cores: int = 2) -> HostSection:
    """Host samples over the first 10 s: `free_cores` of `cores` idle throughout."""
    busy_pct = 100.0 * (cores - free_cores) / cores
    return HostSection(
        available=True,
        cpu_count=cores,
        samples=[
            HostSample(t / 10, 100.0, busy_pct, 0.0, [busy_pct] * cores, 0, 50.0)
            for t in range(100)
        ],
    )


GENERATOR = PipelineBenchmark(
    measured=True,
    batches_per_s=40.0,
    stages=[StageStats(0, "source", name="from_generator", uses_py_function=True)],
)


def test_a_large_gap_with_little_pipeline_cpu_stands_in_full() -> None:
    # GIVEN a from_generator pipeline: training at 16.1 steps/s against the step alone at 30.8,
    # taken in alternation, the pipeline's threads keeping only 0.1 more cores busy, and 1.2
    # of 2 cores free (the case a model of cores once capped at a few points)
    train = _train([(1 / 16.1, 0.002, 0)] * 60, source="batch-stamps")
    alone = _blocks(
        [16.1, 16.0, 16.2, 16.1],
        [30.8, 30.5, 31.0],
        training_cpu_s=1 / 30.8 + 0.1 / 16.1,
        alone_cpu_s=1 / 30.8,
    )
    # WHEN judged
    verdict = judge(train, GENERATOR, compute_alone=alone, host=_host(free_cores=1.2))
    # THEN the measured cost stands: 1 - 16.1/30.8 = 48%, the wait its own, the rest contention
    assert verdict.input_cost_fraction == pytest.approx(1 - 16.1 / 30.8, abs=0.005)
    assert verdict.training_steps_per_s == pytest.approx(16.1, abs=0.05)
    assert verdict.compute_alone_steps_per_s == pytest.approx(30.77, abs=0.05)
    split = verdict.cost_split
    assert split is not None and split.dominant == "contention"
    assert split.wait == pytest.approx(0.002 * 16.1)
    assert split.wait + split.contention + split.fetch == pytest.approx(verdict.input_cost_fraction)
    # the pipeline's cores come from the blocks' own CPU, and cores were free: the GIL
    assert split.pipeline_cores_busy == pytest.approx(0.1, abs=0.01)
    assert split.contention_kind == "gil"
    assert verdict.label == "input-bound"
    low, high = verdict.input_cost_interval or [0.0, 0.0]
    assert low < verdict.input_cost_fraction < high and high - low < 0.03
    assert verdict_line(verdict, 40.0, train).startswith(
        "INPUT-BOUND: input costs 48% of training time (47-48%), mostly contention for "
        "Python's GIL: the pipeline's Python code holds the interpreter lock"
    )


def test_a_saturated_host_is_contention_for_the_cores_even_beside_python() -> None:
    train = _train([(1 / 16.1, 0.002, 0)] * 60, source="batch-stamps")
    alone = _blocks([16.1, 16.0, 16.2, 16.1], [30.8, 30.5, 31.0])
    verdict = judge(train, GENERATOR, compute_alone=alone, host=_host(free_cores=0.2))
    split = verdict.cost_split
    assert split is not None and split.contention_kind == "cores"
    assert "mostly CPU contention" in verdict_line(verdict, 40.0, train)
    # without host samples nothing says what it contends for
    unknown = judge(train, GENERATOR, compute_alone=alone).cost_split
    assert unknown is not None and unknown.contention_kind == ""
    # and with cores free beside a pipeline that runs no Python, neither cores nor the GIL
    plain = PipelineBenchmark(measured=True, batches_per_s=40.0, stages=[StageStats(0, "map")])
    free = judge(train, plain, compute_alone=alone, host=_host(free_cores=1.2))
    assert free.cost_split is not None and free.cost_split.contention_kind == ""
    assert (
        ", mostly contention: the train step runs slower beside the pipeline's threads though "
        "1.2 cores were free"
    ) in verdict_line(free, 40.0, train)


def test_an_interval_across_a_band_boundary_is_worded_as_both_bands() -> None:
    # GIVEN two runs of one script whose pairs put the cost either side of 20%, each with an
    # interval across it
    train = _train([(0.1, 0.001, 0)] * 40, source="batch-stamps")
    pipeline = PipelineBenchmark(measured=True, batches_per_s=40.0)
    lower = judge(
        train,
        pipeline,
        compute_alone=_blocks([10.0] * 4, [10 / 0.82, 10 / 0.78, 10 / 0.81]),
    )
    higher = judge(
        train,
        pipeline,
        compute_alone=_blocks([10.0] * 4, [10 / 0.80, 10 / 0.76, 10 / 0.79]),
    )
    # THEN each claims the band its low end supports, and the headline reads the interval:
    # neither flips
    assert (lower.label, higher.label) == ("balanced", "balanced")
    assert verdict_line(lower, 40.0, train).startswith(
        "BALANCED TO INPUT-BOUND: input costs 20% of training time (16-23%)"
    )
    assert verdict_line(higher, 40.0, train).startswith(
        "BALANCED TO INPUT-BOUND: input costs 22% of training time (18-25%)"
    )
    assert (lower.alternation_pairs, higher.alternation_pairs) == (3, 3)


def test_an_interval_that_reaches_zero_is_not_measurable() -> None:
    # GIVEN a step that waits 2% and pairs in which training ran about as fast as the step alone
    train = _train([(0.1, 0.002, 0)] * 40, source="batch-stamps")
    pipeline = PipelineBenchmark(measured=True, batches_per_s=40.0)
    verdict = judge(
        train, pipeline, compute_alone=_blocks([10.0] * 4, [10 / 0.98, 10 / 1.01, 10 / 0.99])
    )
    # THEN nothing is read from the gap: the cost is the wait measured step by step, the
    # label compute-bound, and the words say how large it could be rather than a cost
    assert verdict.input_cost_fraction == pytest.approx(0.02) and verdict.label == "compute-bound"
    split = verdict.cost_split
    assert split is not None and (split.contention, split.fetch) == (0.0, 0.0)
    assert split.wait == pytest.approx(0.02) and split.dominant is None
    interval = verdict.input_cost_interval
    assert interval is not None and interval[0] == 0.0 and 0.0 < interval[1] < 0.05
    assert verdict_line(verdict, 40.0, train) == (
        f"COMPUTE-BOUND: input cost not measurable above noise (at most {interval[1]:.0%}): "
        "the model's train step sets the rate"
    )
    head = cost_headline(verdict, 40.0)
    assert head is not None and head.details == [
        "Training ran as fast as the train step alone within the 90% interval of 3 alternating "
        "pairs."
    ]
    # the wait share XProf would report stays beside it, as measured
    assert verdict.input_wait_fraction == pytest.approx(0.02)


def test_a_material_wait_is_measured_cost_whatever_the_pairs_noise() -> None:
    # GIVEN steps that wait 12% and pairs whose interval reaches zero
    train = _train([(0.1, 0.012, 0)] * 40, source="batch-stamps")
    verdict = judge(
        train,
        PipelineBenchmark(measured=True, batches_per_s=40.0),
        compute_alone=_blocks([10.0] * 4, [10 / 0.98, 10 / 1.01, 10 / 0.99]),
    )
    # THEN the wait is the cost and holds the interval's low end up: it is measured
    assert verdict.input_cost_fraction == pytest.approx(0.12) and verdict.label == "balanced"
    interval = verdict.input_cost_interval
    assert interval is not None and interval[0] == pytest.approx(0.12)
    assert "not measurable" not in verdict_line(verdict, 40.0, train)


def test_training_as_fast_as_the_step_alone_costs_nothing_with_one_pair() -> None:
    train = _train([(0.1, 0.0, 0)] * 40, source="batch-stamps")
    verdict = judge(
        train,
        PipelineBenchmark(measured=True, batches_per_s=40.0),
        compute_alone=_blocks([10.0, 10.2], [9.9]),
    )
    assert verdict.input_cost_fraction == 0.0 and verdict.label == "compute-bound"
    assert verdict.input_cost_interval is None  # one pair has no spread


def test_a_pull_explains_the_gap_measured_in_alternation_but_never_enlarges_it() -> None:
    # GIVEN a custom loop whose next() takes 30% of each step (iterator timing), a pipeline
    # far faster than training, and a measured gap of only 10%
    train = _train([(0.01, 0.003, 0)] * 60)
    pipeline = PipelineBenchmark(measured=True, batches_per_s=5000.0)
    alone = _blocks([100.0, 99.0, 101.0, 100.0], [100 / 0.9, 100 / 0.9, 100 / 0.9])
    verdict = judge(train, pipeline, compute_alone=alone)
    # THEN the pull is the gap: fetch 10%, not 30%, and nothing is left for contention
    split = verdict.cost_split
    assert split is not None and split.dominant == "fetch"
    assert split.fetch == pytest.approx(0.10, abs=0.005) and split.wait == 0.0
    assert verdict.input_cost_fraction == pytest.approx(0.10, abs=0.005)
    # and under fit's batch stamps (the pull not in the wait), waiting 9%: the pull's estimate
    # (1/P at A, 2%) fills only the point the wait leaves of the gap
    stamped = _train([(0.01, 0.0009, 0)] * 60, source="batch-stamps")
    verdict = judge(stamped, pipeline, compute_alone=alone)
    split = verdict.cost_split
    assert split is not None and split.pull_s == pytest.approx(1 / 5000)
    assert split.wait == pytest.approx(0.09)
    assert split.fetch == pytest.approx(0.01, abs=0.005) and split.contention == 0.0
    assert verdict.input_cost_fraction == pytest.approx(0.10, abs=0.005)


def test_a_heavy_pipeline_s_time_a_batch_is_no_pull_under_fit_s_batch_stamps() -> None:
    # GIVEN fit's batch stamps (the pull not timed), waiting 8%, training at 10.8 steps/s
    # against 14.2 alone, and an augmentation pipeline of 54 batches/s alone: 5x training,
    # its 18.5 ms a batch spent on two cores of its own threads
    stamped = _train([(0.0926, 0.0074, 0)] * 60, source="batch-stamps")
    pipeline = PipelineBenchmark(measured=True, batches_per_s=54.0)
    alone = _blocks([10.8, 10.7, 10.9, 10.8], [14.2, 14.1, 14.3])
    verdict = judge(stamped, pipeline, compute_alone=alone)
    # THEN a pull is charged at most what a pull of a ready batch costs (1 ms at A: 1%),
    # and the rest of the gap the wait leaves is contention, not the per-pull overhead
    split = verdict.cost_split
    assert split is not None and split.pull_s == pytest.approx(0.001)
    assert split.fetch == pytest.approx(0.0108, abs=0.002)
    assert split.dominant == "contention" and split.contention > 0.1


def test_a_measured_wait_above_the_gap_stands_and_the_interval_holds_it() -> None:
    # GIVEN steps that wait 15% under fit, and pairs that put the gap at about 10%
    train = _train([(0.01, 0.0015, 0)] * 60, source="batch-stamps")
    alone = _blocks([100.0] * 4, [100 / 0.89, 100 / 0.91, 100 / 0.90])
    verdict = judge(
        train, PipelineBenchmark(measured=True, batches_per_s=150.0), compute_alone=alone
    )
    # THEN the wait stands as measured, and the interval is moved to hold it: a material
    # wait is a measurement no noise of the pairs can undo
    assert verdict.input_cost_fraction == pytest.approx(0.15)
    interval = verdict.input_cost_interval
    assert interval is not None and interval == pytest.approx([0.15, 0.15])


# --- epoch starts ----------------------------------------------------------------------------


def _epochs(starts: list[EpochStart], *, wait_s: float = 0.005) -> TrainSection:
    """Fit's steps of 50 ms (A = 20 steps/s), 140 per epoch, with the given epoch starts."""
    raw, t = [], ORIGIN
    for epoch in range(3):
        for _ in range(140):
            raw.append(RawStep(t, t + 0.05, wait_s, epoch))
            t += 0.05
    return build_train_section(
        raw,
        origin=ORIGIN,
        warmup_steps=0,
        style="keras-fit",
        input_wait_source="batch-stamps",
        epoch_starts=[(e.epoch, e.duration_s, e.steps_per_epoch) for e in starts],
    )


SHUFFLED = PipelineBenchmark(
    measured=True,
    batches_per_s=200.0,
    stages=[
        StageStats(0, "source", name="TensorSliceDataset"),
        StageStats(1, "shuffle", settings=StageSettings(buffer_size=10000), inputs=[0]),
        StageStats(2, "batch", settings=StageSettings(batch_size=32), inputs=[1]),
    ],
)


def test_each_epochs_start_is_a_part_of_the_cost_spread_over_its_steps() -> None:
    # GIVEN epochs of 140 steps at 20 steps/s (7 s), each after the first starting 1.8 s late,
    # and steps that cost 10% (wait) against the step alone; the first epoch's start is longer
    train = _epochs([EpochStart(0, 3.0, 140), EpochStart(1, 1.8, 140), EpochStart(2, 1.8, 140)])
    verdict = judge(train, SHUFFLED, compute_alone=_alone(0.045))
    # THEN the start is e = 1.8 / (7 + 1.8) of an epoch, and the steps' parts fill the rest
    split = verdict.cost_split
    assert split is not None
    e = 1.8 / (140 / 20 + 1.8)
    assert split.epoch_start == pytest.approx(e)
    assert (split.epoch_start_s, split.epoch_steps) == (1.8, 140)
    assert split.wait == pytest.approx(0.1 * (1 - e))
    assert verdict.input_cost_fraction == pytest.approx(e + 0.1 * (1 - e))
    assert split.wait + split.contention + split.fetch + split.epoch_start == pytest.approx(
        verdict.input_cost_fraction
    )
    # the start-up dominates, and the shuffle buffer is named as its likely maker
    assert split.dominant == "epoch-start" and split.epoch_start_stage == "shuffle(10000)"
    assert verdict_line(verdict, 200.0, train) == (
        "INPUT-BOUND: input costs 28% of training time, mostly epoch starts: a 1.80 s start-up "
        "before each epoch, likely shuffle(10000): 20% of an epoch of 140 steps"
    )


def test_the_epoch_start_goes_into_the_interval_as_into_the_cost() -> None:
    train = _epochs([EpochStart(1, 1.8, 140)], wait_s=0.0)
    alone = _blocks([20.0] * 4, [20 / 0.89, 20 / 0.91, 20 / 0.90])
    verdict = judge(train, SHUFFLED, compute_alone=alone)
    assert alone.blocks
    paired = paired_cost(alone.blocks)
    assert paired is not None and paired.low is not None and paired.high is not None
    e = 1.8 / (140 / 20 + 1.8)
    assert verdict.input_cost_fraction == pytest.approx(e + paired.cost * (1 - e))
    assert verdict.input_cost_interval == pytest.approx(
        [e + paired.low * (1 - e), e + paired.high * (1 - e)]
    )


def test_only_the_first_epochs_start_is_no_part_and_an_unknown_length_is_said() -> None:
    # GIVEN only the first epoch's start: the run's own start-up, no part of the cost
    first_only = judge(_epochs([EpochStart(0, 3.0, 140)]), SHUFFLED, compute_alone=_alone(0.045))
    split = first_only.cost_split
    assert split is not None and split.epoch_start == 0.0 and split.epoch_start_s is None
    # GIVEN later epochs starting 2 s late, but of unknown length: seen, not spread
    unknown = judge(
        _epochs([EpochStart(1, 2.0), EpochStart(2, 2.0)]), SHUFFLED, compute_alone=_alone(0.045)
    )
    split = unknown.cost_split
    assert split is not None and split.epoch_start == 0.0
    assert (split.epoch_start_s, split.epoch_steps) == (2.0, None)
    assert unknown.input_cost_fraction == pytest.approx(0.1)
    head = cost_headline(unknown, SHUFFLED.batches_per_s)
    assert head is not None and head.details == [
        "Each epoch after the first started 2.00 s late; the epoch's length is unknown, so "
        "that start-up is not in the cost above."
    ]


def test_the_stage_that_likely_makes_the_epoch_start() -> None:
    shuffle = StageStats(1, "shuffle", settings=StageSettings(buffer_size=512))
    interleave = StageStats(2, "parallel-interleave", function="load")
    file_cache = StageStats(3, "cache", settings=StageSettings(filename="/tmp/c"))
    memory_cache = StageStats(3, "cache", settings=StageSettings(filename=""))
    assert epoch_start_stage([interleave, shuffle, file_cache]) == "shuffle(512)"
    assert epoch_start_stage([file_cache, interleave]) == "parallel-interleave(load)"
    assert epoch_start_stage([file_cache]) == "cache(/tmp/c)"
    assert epoch_start_stage([memory_cache]) == ""


def test_under_fit_t_carries_fit_s_own_time_around_each_step() -> None:
    # GIVEN fit's 3-ms steps with 0.3 ms of its own Python inside each callback span, and a
    # free pipeline: the step-alone blocks run the train function back to back at 3 ms
    import dataclasses

    train = _train([(0.0033, 0.0, 0)] * 60, source="batch-stamps")
    alone = _blocks([1 / 0.0033] * 4, [1 / 0.003] * 3)
    pipeline = PipelineBenchmark(measured=True, batches_per_s=3000.0)
    bare = judge(train, pipeline, compute_alone=alone)
    assert bare.label == "balanced"  # 9% read as input cost
    # WHEN fit's time around its train function was measured on the steps
    fitted = judge(dataclasses.replace(train, fit_overhead_s=0.0003), pipeline, compute_alone=alone)
    # THEN T is the rate fit would reach on a cached batch, and nothing is input cost
    assert fitted.label == "compute-bound"
    assert fitted.compute_alone_steps_per_s == pytest.approx(1 / 0.0033, rel=1e-6)


def _held(
    speedup: float, low: float, high: float, *, held_rate: float = 10.0, **extra: object
) -> list[StageStats]:
    """A source, a map and its batch, the output held in memory on training."""
    return [
        StageStats(0, "source", name="TensorSliceDataset"),
        StageStats(1, "map", inputs=[0]),
        StageStats(
            2,
            "batch",
            inputs=[1],
            training_speedup_if_free=speedup,
            training_speedup_if_free_low=low,
            training_speedup_if_free_high=high,
            training_held_steps_per_s=held_rate,
            **extra,  # type: ignore[arg-type]
        ),
        StageStats(3, "options", inputs=[2]),
    ]


def test_pairs_that_read_a_cost_the_held_output_does_not_see_are_pooled_with_it() -> None:
    # GIVEN three pairs that read 7% (6-8%) beside a held trial in which training on the
    # pipeline's output held in memory ran only 1% faster than on the live pipeline
    train = _train([(0.01, 0.0, 0)] * 60, source="batch-stamps")
    alone = _blocks([100.0] * 4, [100 / 0.93, 100 / 0.925, 100 / 0.935])
    plain = PipelineBenchmark(measured=True, batches_per_s=900.0)
    assert judge(train, plain, compute_alone=alone).label == "balanced"
    held = PipelineBenchmark(
        measured=True, batches_per_s=900.0, stages=_held(1.01, 1.005, 1.015, held_rate=101.0)
    )
    verdict = judge(train, held, compute_alone=alone)
    # THEN the two readings pool: the cost lies between them, its interval reaches toward
    # each, and a cost that may be nothing claims no input-bound band
    assert verdict.held_output_cost == pytest.approx(0.0099, abs=1e-3)
    cost, interval = verdict.input_cost_fraction, verdict.input_cost_interval
    assert cost is not None and interval is not None
    assert 0.01 < cost < 0.04 and interval[0] <= 0.01 and interval[1] < 0.07
    assert verdict.label == "compute-bound"
    # and the T row says what T was read from
    report = Report(script="train.py", verdict=verdict, pipeline=held, compute_alone=alone)
    assert compute_alone_origin(report) == (
        "measured on a cached batch, in turn with training: 3 rounds of 20 steps; pooled with "
        "training on the output held in memory, 1%"
    )


def test_a_held_output_that_agrees_settles_an_interval_too_noisy_to_tell() -> None:
    # GIVEN pairs too noisy to place across 20%, and a held trial that read 1.64x (1.55-1.74x)
    train = _train([(0.1, 0.0, 0)] * 40, source="batch-stamps")
    alone = _blocks([8.0, 6.0, 8.5, 6.5], [10.0, 11.5, 9.0])
    plain = PipelineBenchmark(measured=True, batches_per_s=12.0)
    noisy = judge(train, plain, compute_alone=alone)
    assert (noisy.label, noisy.uncertain_because) == ("uncertain", "too-noisy")
    held = PipelineBenchmark(
        measured=True, batches_per_s=12.0, stages=_held(1.64, 1.55, 1.74, held_rate=12.0)
    )
    verdict = judge(train, held, compute_alone=alone)
    interval = verdict.input_cost_interval
    assert verdict.label == "input-bound" and interval is not None and interval[0] >= 0.2
    assert verdict.compute_alone_steps_per_s == pytest.approx(
        (verdict.training_steps_per_s or 0.0) / (1 - (verdict.input_cost_fraction or 0.0))
    )


def test_a_held_output_disturbed_without_an_interval_or_off_training_is_not_pooled() -> None:
    from pipediag.report.reasons import Reason

    train = _train([(0.01, 0.0, 0)] * 60, source="batch-stamps")
    alone = _blocks([100.0] * 4, [100 / 0.93, 100 / 0.925, 100 / 0.935])
    plain = judge(train, PipelineBenchmark(measured=True, batches_per_s=900.0), compute_alone=alone)
    for stages in (
        _held(1.01, 1.005, 1.015, training_speedup_if_free_unused=Reason("held-above-step-alone")),
        _held(1.01, 1.005, 1.015)[:2] + [StageStats(2, "batch", inputs=[1])],
        # its unchanged side ran at 79 steps/s against training's 100: a cache its copy
        # started empty, or a host that changed speed, so it timed another training
        _held(1.01, 1.005, 1.015, held_rate=80.0),
    ):
        pipeline = PipelineBenchmark(measured=True, batches_per_s=900.0, stages=stages)
        verdict = judge(train, pipeline, compute_alone=alone)
        assert verdict.held_output_cost is None
        assert verdict.input_cost_fraction == plain.input_cost_fraction


def test_under_fit_the_held_output_carries_fit_s_own_time_on_both_sides() -> None:
    # GIVEN 1 ms steps held at 2x, with 0.1 ms of fit's own work around each train function
    from pipediag.analysis.input_cost import held_output_log

    stages = _held(2.0, 1.9, 2.1, held_rate=1000.0)
    bare, _ = held_output_log(stages) or (0.0, 0.0)
    fitted, _ = held_output_log(stages, around_s=0.0001) or (0.0, 0.0)
    # THEN fit's own time dilutes the held gain: (2 + 0.1) / (1 + 0.1) ms
    assert bare == pytest.approx(math.log(2.0))
    assert fitted == pytest.approx(math.log(2.1 / 1.1))


def test_the_pooling_benchmark_judges_one_report_with_and_without_the_held_output() -> None:
    # GIVEN a report whose pairs read 7% and whose held output read 1%, its unchanged side
    # at training's rate
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:
        sys.path.insert(0, root)
    from benchmarks.held_output_pooling import base_over_training, both_ways

    train = _train([(0.01, 0.0, 0)] * 60, source="batch-stamps")
    alone = _blocks([100.0] * 4, [100 / 0.93, 100 / 0.925, 100 / 0.935])
    pipeline = PipelineBenchmark(
        measured=True, batches_per_s=900.0, stages=_held(1.01, 1.005, 1.015, held_rate=101.0)
    )
    verdict = judge(train, pipeline, compute_alone=alone)
    report = Report(
        script="t.py", verdict=verdict, pipeline=pipeline, compute_alone=alone, train=train
    )
    # THEN the two ways differ as pipediag's pooling does, and the held trial's unchanged
    # side is read against A
    without, pooled = both_ways(report)
    assert (without.label, pooled.label) == ("balanced", "compute-bound")
    assert without.held_output_cost is None and pooled.held_output_cost is not None
    assert base_over_training(report) == pytest.approx(1.0, rel=0.01)


def test_pairs_read_on_past_the_bound_lower_their_low_end_for_the_looks() -> None:
    # GIVEN 8 rounds (2 past the bound of 6) whose pairs read 4% and 14% in turn: 9.6%, its
    # 90% interval (5.5-12.8%) clear of the 5% edge
    train = _train([(0.1, 0.0, 0)] * 40, source="batch-stamps")
    pipeline = PipelineBenchmark(measured=True, batches_per_s=40.0)
    alone = _blocks([10.0] * 9, [10 / 0.96, 10 / 0.86] * 4)
    pairs = paired_cost(alone.blocks)
    assert pairs is not None and pairs.low is not None and pairs.low > 0.05
    verdict = judge(train, pipeline, compute_alone=alone)
    # THEN the low end widened for the three looks from the bound on reaches under it: each
    # round past the bound was a chance to stop where the interval left the edge, so the
    # label is that low end's band, and the interval says so
    low, high = verdict.input_cost_interval or [1.0, 0.0]
    assert low < 0.05 < verdict.input_cost_fraction < high
    assert verdict.label == "compute-bound"
    # WHEN the same pairs stop within the bound (6 rounds), THEN their own interval stands
    six = _blocks([10.0] * 7, [10 / 0.96, 10 / 0.86] * 3)
    within, within_pairs = judge(train, pipeline, compute_alone=six), paired_cost(six.blocks)
    assert within_pairs is not None and within.input_cost_interval is not None
    assert within.input_cost_interval[0] == pytest.approx(within_pairs.low, abs=1e-9)
