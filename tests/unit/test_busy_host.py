"""A busy host: other processes' load is not input cost (docs/design.md, "A busy host").

Hand-built timelines, rates in alternation and host samples; no TensorFlow.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest

from pipediag.analysis.classifier import build_train_section, judge
from pipediag.analysis.host_contention import other_processes_cores
from pipediag.renderers.text import render_text
from pipediag.renderers.verdict_words import cost_headline, verdict_line
from pipediag.report.model import (
    ComputeAlone,
    EpochStart,
    PipelineBenchmark,
    RateBlock,
    Report,
    TrainSection,
)
from pipediag.report.samples import HostSample, HostSection
from pipediag.report.stages import StageStats
from pipediag.timeline import RawStep

ORIGIN = 100.0
PIPELINE = PipelineBenchmark(measured=True, batches_per_s=40.0, stages=[StageStats(0, "map")])


def _train(step_s: float, wait_s: float, steps: int = 60) -> TrainSection:
    raw = [RawStep(ORIGIN + i * step_s, ORIGIN + (i + 1) * step_s, wait_s, 0) for i in range(steps)]
    return build_train_section(
        raw, origin=ORIGIN, warmup_steps=0, style="custom-loop", input_wait_source="batch-stamps"
    )


def _blocks(training: Sequence[float], alone: Sequence[float], start_s: float) -> ComputeAlone:
    """A0 T1 A1 T2 ... blocks of 10 steps at the given rates (steps/s), from `start_s`."""
    blocks, t = [], start_s
    for i, rate in enumerate(training):
        blocks.append(RateBlock("training", t, 10, 10 / rate, 0))
        t += 10 / rate
        if i < len(alone):
            blocks.append(RateBlock("step-alone", t, 10, 10 / alone[i], 0))
            t += 10 / alone[i]
    return ComputeAlone(
        measured=True,
        method="cached-batch-loop",
        steps=10 * len(alone),
        steps_per_s=alone[0],
        blocks=blocks,
        block_steps=10,
        start_s=start_s,
        duration_s=t - start_s,
    )


def _alternation(training: float, alone: float, start_s: float) -> ComputeAlone:
    """Training and the step alone at steady rates, each block 1% off the last."""
    return _blocks(
        [training * (1 + 0.01 * (i % 2)) for i in range(4)],
        [alone * (1 - 0.01 * (i % 2)) for i in range(3)],
        start_s,
    )


def _host(others: float, *, until_s: float = 60.0, process: float = 1.0) -> HostSection:
    """Samples every 0.5 s up to `until_s`: this process on `process` cores, other processes
    on `others`, of 2."""
    return HostSection(
        available=True,
        cpu_count=2,
        interval_s=0.5,
        samples=[
            HostSample(t / 2, 100.0 * process, 50.0 * (process + others), 0.0, [0.0, 0.0], 0, 50.0)
            for t in range(1, int(until_s * 2))
        ],
    )


def test_contention_read_while_others_took_the_host_is_uncertain() -> None:
    # GIVEN training at 16 steps/s against the step alone at 31, hardly waiting (contention),
    # while other processes kept 0.8 of the 2 cores busy
    train = _train(1 / 16.0, 0.001)
    alone = _alternation(16.0, 31.0, start_s=4.0)
    verdict = judge(train, PIPELINE, compute_alone=alone, host=_host(others=0.8))
    # THEN the cost is still measured, but not called input-bound: their 40% of the host may
    # be all of it, and the interval's low end says so
    assert verdict.input_cost_fraction == pytest.approx(1 - 16 / 31, abs=0.02)
    assert verdict.label == "uncertain" and verdict.severity == "unknown"
    assert verdict.busy_host_cores == pytest.approx(0.8)
    low, high = verdict.input_cost_interval or [0.0, 0.0]
    assert low == pytest.approx(max(0.0, 1 - 16.2 / 31 - 0.4), abs=0.03) and high > 0.45
    line = verdict_line(verdict, 40.0, train)
    assert line.startswith(
        "UNCERTAIN: the host was busy (other processes kept 0.8 cores busy): input costs 48%"
    )
    assert line.endswith("perhaps theirs; run again on a quiet host")
    # the headline says it all: nothing under it repeats it
    head = cost_headline(verdict, 40.0)
    assert head is not None and head.details == []
    # with the others on a whole core, the low end reaches zero: still a measured cost,
    # never "not measurable above noise" (the pairs' own interval held well above zero)
    busier = judge(train, PIPELINE, compute_alone=alone, host=_host(others=1.0))
    assert busier.label == "uncertain"
    assert (busier.input_cost_interval or [1.0])[0] == pytest.approx(0.0, abs=0.002)
    assert "input costs 48% of training time (0-" in verdict_line(busier, 40.0, train)
    report = Report(script="train.py", verdict=busier, pipeline=PIPELINE, train=train)
    assert "not measurable" not in render_text(report)


def test_a_cost_that_holds_beyond_the_others_share_keeps_its_label_and_names_them() -> None:
    # GIVEN a step that waits 60% of its time, other processes on 0.3 of 2 cores (15%)
    train = _train(0.1, 0.06)
    alone = _alternation(10.0, 25.0, start_s=7.0)
    verdict = judge(train, PIPELINE, compute_alone=alone, host=_host(others=0.3))
    # THEN input-bound stands (its low end minus 15% is still over 20%), the host named
    assert verdict.label == "input-bound"
    assert verdict.busy_host_cores == pytest.approx(0.3)
    low, _ = verdict.input_cost_interval or [0.0, 0.0]
    assert 0.2 < low < 0.6 - 0.1
    assert "the host was busy (other processes kept 0.3 cores busy)" in verdict_line(
        verdict, 40.0, train
    )


def test_a_cost_far_above_the_others_share_stays_input_bound_however_wide_its_pairs() -> None:
    # A slow generator on a host with one core taken: input costs ~80%, the pairs scatter
    # (10 to 30 steps/s), and other processes hold half the host. The cost less their share
    # is still input-bound; only the displayed low end widens.
    train = _train(0.1, 0.07)
    alone = _blocks([10.0, 9.0, 11.0, 10.0], [40.0, 70.0, 45.0], start_s=7.0)
    verdict = judge(train, PIPELINE, compute_alone=alone, host=_host(others=1.0))

    assert verdict.input_cost_fraction is not None and verdict.input_cost_fraction > 0.7
    assert verdict.label == "input-bound", verdict
    assert verdict.busy_host_cores == pytest.approx(1.0)


def test_a_quiet_host_and_a_compute_bound_run_say_nothing_of_others() -> None:
    train = _train(1 / 16.0, 0.001)
    alone = _alternation(16.0, 31.0, start_s=4.0)
    quiet = judge(train, PIPELINE, compute_alone=alone, host=_host(others=0.04))
    assert quiet.label == "input-bound" and quiet.busy_host_cores is None
    assert "busy" not in verdict_line(quiet, 40.0, train)
    # a busy host cannot make a compute-bound run less so
    fast = _train(1 / 30.0, 0.0)
    compute = judge(
        fast, PIPELINE, compute_alone=_alternation(30.0, 30.2, 4.0), host=_host(others=0.8)
    )
    assert compute.label == "compute-bound" and "busy" not in verdict_line(compute, 40.0, fast)


def test_others_count_only_while_training_and_the_step_alone_were_measured() -> None:
    # other processes ran before the measured steps (to 0.9 s), then stopped
    host = _host(others=0.0)
    early = [
        HostSample(t / 10, 100.0, 95.0, 0.0, [0.0, 0.0], 0, 50.0) for t in range(1, 10)
    ]  # 0.9 of 2 cores by others, before the steps
    host = HostSection(
        available=True,
        cpu_count=2,
        interval_s=0.1,
        samples=early + [s for s in host.samples if s.t_s >= 1.0],
    )
    assert other_processes_cores(host, 0.0, 0.8) == pytest.approx(0.9, abs=0.05)
    assert other_processes_cores(host, 5.0, 20.0) == pytest.approx(0.0)
    train = TrainSection()
    assert other_processes_cores(None, 0.0, 1.0) is None
    assert judge(train, PIPELINE, host=host).busy_host_cores is None


def test_the_two_readings_skew_cancels_before_the_clip() -> None:
    # this process's reading runs ahead of the system's by a sample: per sample the others'
    # figure swings +-0.4 cores around 0.05, and only its mean is clipped at zero
    samples = [
        HostSample(t / 2, 100.0 + (40.0 if t % 2 else -40.0), 52.5, 0.0, [0.0, 0.0], 0, 50.0)
        for t in range(1, 41)
    ]
    host = HostSection(available=True, cpu_count=2, interval_s=0.5, samples=samples)
    assert other_processes_cores(host, 0.0, 20.0) == pytest.approx(0.05, abs=0.01)


def _noisy_alternation(alones: tuple[float, ...], start_s: float = 4.0) -> ComputeAlone:
    """Training at 10 steps/s against a step alone that read `alones` steps/s in turn."""
    return _blocks([10.0] * (len(alones) + 1), alones, start_s)


def test_a_cost_too_noisy_for_one_band_is_uncertain_with_the_steps_to_tell() -> None:
    # GIVEN the step alone at 12, 13.5 and 15.5 steps/s against training at 10: a cost of
    # 26% whose interval runs from about 9% to 41%, across the 20% edge
    train = _train(0.1, 0.001)
    alone = _noisy_alternation((12.0, 13.5, 15.5))
    verdict = judge(train, PIPELINE, compute_alone=alone, host=_host(0.0))
    low, high = verdict.input_cost_interval or [0.0, 0.0]
    assert low < 0.2 < high and (high - low) / 2 > 0.05
    # THEN no band is claimed: the label is uncertain, and says how to narrow it
    assert verdict.label == "uncertain" and verdict.uncertain_because == "too-noisy"
    assert verdict.busy_host_cores is None
    steps = verdict.steps_to_tell
    assert steps is not None and steps % 100 == 0 and 2 * 60 <= steps <= 2000
    line = verdict_line(verdict, 40.0, train)
    assert line.startswith("UNCERTAIN: too noisy to tell: input costs ")
    assert line.endswith(f"measure more: --steps {steps}")
    # under it, the pairs the interval was read from
    head = cost_headline(verdict, 40.0)
    assert head is not None and head.details == [
        "Its 90% interval, over 3 alternating pairs, reaches across a band's edge; the "
        "alternation runs longer with more steps."
    ]


def test_pairs_that_reach_zero_are_no_cost_however_an_epoch_start_lifts_the_interval() -> None:
    # GIVEN the step alone at 9, 10.5 and 12 steps/s against training at 10: pairs whose
    # interval runs from below zero to over 10%, and each epoch starting 0.15 s late, 1.5%
    # of an epoch of 100 steps, which lifts the interval's low end above zero
    train = dataclasses.replace(
        _train(0.1, 0.001), epoch_starts=[EpochStart(e, 0.15, 100) for e in range(3)]
    )
    verdict = judge(train, PIPELINE, compute_alone=_noisy_alternation((9.0, 10.5, 12.0)))
    low, high = verdict.input_cost_interval or [0.0, 0.0]
    assert 0.0 < low < 0.05 < high and (high - low) / 2 > 0.05
    # THEN the pairs measured no cost above noise: compute-bound, not "too noisy to tell",
    # as where no epoch start lifts it
    assert verdict.label == "compute-bound" and verdict.uncertain_because == ""
    plain = judge(_train(0.1, 0.001), PIPELINE, compute_alone=_noisy_alternation((9.0, 10.5, 12.0)))
    assert plain.label == "compute-bound" and (plain.input_cost_interval or [1.0])[0] == 0.0


def test_a_wide_interval_inside_one_band_keeps_its_label() -> None:
    # the same spread around a 64% cost stays input-bound: both ends over 20%
    train = _train(0.1, 0.001)
    alone = _noisy_alternation((25.0, 28.0, 32.0))
    verdict = judge(train, PIPELINE, compute_alone=alone, host=_host(0.0))
    low, _ = verdict.input_cost_interval or [0.0, 0.0]
    assert low > 0.2 and verdict.label == "input-bound" and verdict.uncertain_because == ""


def test_a_narrow_interval_across_an_edge_claims_the_band_of_its_low_end() -> None:
    # GIVEN the step alone at 10.5, 10.7 and 10.9 steps/s against training at 10: a cost of
    # about 7% whose interval reaches under 5%, but not 5 points either side
    train = _train(0.1, 0.001)
    verdict = judge(
        train, PIPELINE, compute_alone=_noisy_alternation((10.5, 10.7, 10.9)), host=_host(0.0)
    )
    low, high = verdict.input_cost_interval or [0.0, 0.0]
    cost = verdict.input_cost_fraction or 0.0
    assert low < 0.05 < cost < high and (high - low) / 2 <= 0.05
    # THEN the label is the band the low end supports, and the title names both
    assert verdict.label == "compute-bound" and verdict.uncertain_because == ""
    assert verdict_line(verdict, 40.0, train).startswith("COMPUTE-BOUND TO BALANCED: ")


def test_time_the_hypervisor_gave_to_other_guests_is_not_other_processes() -> None:
    # a VM counts stolen time busy: this process on 1 of 2 cores, the machine 70% busy of
    # which 20 points stolen by the hypervisor, nothing else running in the guest
    samples = [
        HostSample(t / 2, 100.0, 70.0, 0.0, [0.0, 0.0], 0, 50.0, steal_pct=20.0)
        for t in range(1, 41)
    ]
    host = HostSection(available=True, cpu_count=2, interval_s=0.5, samples=samples)
    assert other_processes_cores(host, 0.0, 20.0) == pytest.approx(0.0)
    # where the platform does not say, what it cannot tell apart is counted as before
    bare = [HostSample(t / 2, 100.0, 70.0, 0.0, [0.0, 0.0], 0, 50.0) for t in range(1, 41)]
    assert other_processes_cores(
        HostSection(available=True, cpu_count=2, interval_s=0.5, samples=bare), 0.0, 20.0
    ) == pytest.approx(0.4)


def test_the_sampler_reads_the_stolen_share_of_the_whole_machine() -> None:
    from collections import namedtuple

    from pipediag.samplers.host import cpu_percentages

    times = namedtuple("times", ["user", "idle", "steal"])
    before = [times(0.0, 0.0, 0.0), times(0.0, 0.0, 0.0)]
    after = [times(0.6, 0.2, 0.2), times(0.1, 0.9, 0.0)]  # 0.2 s of 2 core-seconds stolen
    assert cpu_percentages(before, after)[3] == pytest.approx(10.0)
    no_steal = namedtuple("no_steal", ["user", "idle"])
    assert cpu_percentages([no_steal(0.0, 0.0)], [no_steal(1.0, 0.0)])[3] is None


def _one_piece(alone: float) -> ComputeAlone:
    """The step alone timed once, after training: no blocks, no pairs."""
    return ComputeAlone(
        measured=True, method="keras-train-function", steps=19, steps_per_s=alone, start_s=8.0
    )


def test_a_cost_read_from_one_piece_of_the_step_alone_is_too_short_to_tell() -> None:
    # GIVEN a short run: training at 10 steps/s hardly waiting, the step alone timed once
    # after it at 11.6 (a tutorial read 14% so, where whole runs put the cost under 0)
    train = _train(0.1, 0.0005)
    verdict = judge(train, PIPELINE, compute_alone=_one_piece(11.6), host=_host(0.0))
    # THEN no band is claimed: the label is uncertain, and says how to get an interval
    assert verdict.input_cost_interval is None and verdict.input_cost_fraction is not None
    assert verdict.label == "uncertain" and verdict.uncertain_because == "too-short"
    line = verdict_line(verdict, 40.0, train)
    assert line.startswith("UNCERTAIN: too short to tell: input read 14% of training time")
    assert line.endswith("train for more steps to measure them in turn")
    # and a wait measured step by step that carries the band alone keeps its label
    waiting = judge(_train(0.1, 0.025), PIPELINE, compute_alone=_one_piece(13.5), host=_host(0.0))
    assert waiting.label == "input-bound" and waiting.input_cost_fraction < 0.4
    # as does a cost that holds its band 20 points lower
    far = judge(train, PIPELINE, compute_alone=_one_piece(20.0), host=_host(0.0))
    assert far.label == "input-bound"
    # and a cost under 5% keeps compute-bound
    fine = judge(train, PIPELINE, compute_alone=_one_piece(10.2), host=_host(0.0))
    assert fine.label == "compute-bound"
