"""The advisor's rules, one by one on hand-built reports (no TensorFlow). End to end on real
small pipelines, one per smell: tests/integration/test_advisor_tf.py.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from worded import worded_advice

from pipediag.analysis.advice_context import CPU_SATURATED_PCT, FEW_CORES_GAIN_SHARE
from pipediag.analysis.advisor import advise
from pipediag.renderers.answer import the_change
from pipediag.renderers.reason_words import reason_words
from pipediag.report.io import from_dict, to_dict
from pipediag.report.model import (
    Gain,
    PipelineBenchmark,
    PipelineOptions,
    Report,
    StepRecord,
    Suggestion,
    TrainSection,
    Verdict,
)
from pipediag.report.reasons import Reason
from pipediag.report.samples import HostSample, HostSection
from pipediag.report.stage_facts import cache_point
from pipediag.report.stages import AUTOTUNE, StageSettings, StageStats
from pipediag.report.trials import FixTrial, TrialFacts
from pipediag.report.vocabulary import AutoParallelBlocker, FixName

DEFAULT_OPTIONS = PipelineOptions(cpu_count=2)


def _chain(*stages: StageStats) -> list[StageStats]:
    """Link stages into a line: each reads the one before."""
    return [
        dataclasses.replace(s, index=i, inputs=[i - 1] if i else []) for i, s in enumerate(stages)
    ]


def _seq_map_pipeline(own_s: float = 0.020, auto_parallel: bool = False) -> list[StageStats]:
    blocker: AutoParallelBlocker | None = None if auto_parallel else "stateful function"
    return _chain(
        StageStats(0, "source", own_s_per_batch=0.0005),
        StageStats(0, "map", function="decode", source="train.py:12",
                   auto_parallel=auto_parallel, auto_parallel_blocker=blocker,
                   stateful=True, own_s_per_batch=own_s),
        StageStats(0, "batch", settings=StageSettings(batch_size=32), own_s_per_batch=0.0005),
        StageStats(0, "prefetch", settings=StageSettings(buffer_size=AUTOTUNE),
                   own_s_per_batch=0.0),
    )  # fmt: skip


def _report(
    stages: list[StageStats],
    *,
    label: str = "input-bound",
    pipeline_rate: float = 40.0,
    compute_rate: float = 160.0,
    train_rate: float = 38.0,
    options: PipelineOptions = DEFAULT_OPTIONS,
    trials: list[FixTrial] | None = None,
    busy_pct: float | None = None,
) -> Report:
    host = HostSection(available=False)
    steps: list[StepRecord] = []
    if busy_pct is not None:
        steps = [StepRecord(i, 1.0 + i * 0.1, 0.1, 0.05, "input-bound") for i in range(10)]
        host = HostSection(
            available=True,
            cpu_count=2,
            samples=[
                HostSample(1.0 + k * 0.05, 190.0, busy_pct, 0.0, [busy_pct, busy_pct], 1, 30.0)
                for k in range(20)
            ],
        )
    return Report(
        script="train.py",
        verdict=Verdict(
            label=label,
            input_wait_fraction=0.7 if label == "input-bound" else 0.02,
            compute_alone_steps_per_s=compute_rate,
            pipeline_headroom=pipeline_rate / compute_rate,
        ),
        pipeline=PipelineBenchmark(
            measured=True,
            batches_per_s=pipeline_rate,
            stages=stages,
            options=options,
            trials=trials or [],
        ),
        train=TrainSection(steps_per_s=train_rate, measured_steps=len(steps), steps=steps),
        host=host,
    )


def _ids(report: Report) -> list[str]:
    return [s.id for s in worded_advice(report)]


def _trial(fix: FixName, stage: int | None, speedup: float, **facts: Any) -> FixTrial:
    return FixTrial(
        fix=fix,
        stage_index=stage,
        verified=True,
        baseline_batches_per_s=40.0,
        variant_batches_per_s=40.0 * speedup,
        speedup=speedup,
        rounds=3,
        facts=TrialFacts(**facts),
    )


# --- hand-built reports ------------------------------------------------------------------------


def test_sequential_map_fix_carries_evidence_code_its_gain_and_an_estimate() -> None:
    # GIVEN a sequential map owning 20 of the pipeline's 25 ms per batch, verified at 2.0x
    report = _report(_seq_map_pipeline(), trials=[_trial("parallel-map", 1, 2.0)])

    # WHEN advised
    (top, *_) = worded_advice(report)

    # THEN the map is named, with the user's function in the code, and the DS-Analyzer
    # prediction min(160, 40 * 2.0) / 38 is discounted for 2 shared cores
    assert top.id == "PD001-sequential-map"
    assert top.stage == "map(decode)" and top.stage_index == 1
    assert top.code == "ds = ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE)"
    assert "train.py:12" in top.evidence and "stateful function" in top.evidence
    # its one gain, measured on the pipeline alone; the end-to-end estimate only orders it
    assert top.gain == Gain("pipeline-alone", 2.0)
    assert top.estimate == pytest.approx(1 + (80 / 38 - 1) * FEW_CORES_GAIN_SHARE)
    assert top.estimate < 2.0


def test_a_map_that_tf_data_parallelises_itself_gets_no_fix() -> None:
    stages = _seq_map_pipeline(auto_parallel=True)

    assert "PD001-sequential-map" not in _ids(_report(stages))


def test_a_cheap_sequential_map_is_not_worth_a_fix() -> None:
    stages = _seq_map_pipeline(own_s=0.001)  # 4% of the 25 ms per batch

    assert "PD001-sequential-map" not in _ids(_report(stages))


def test_compute_bound_gets_one_note_and_no_input_fix() -> None:
    report = _report(
        _seq_map_pipeline(), label="compute-bound", pipeline_rate=300.0, compute_rate=100.0
    )

    (note,) = worded_advice(report)

    assert note.id == "PD000-pipeline-fine" and note.kind == "note"
    assert "3.0x" in note.title
    assert "300.0 batches/s" in note.evidence and "100.0 steps/s" in note.evidence


def test_balanced_runs_still_get_input_fixes() -> None:
    assert "PD001-sequential-map" in _ids(_report(_seq_map_pipeline(), label="balanced"))


def test_a_stage_cost_a_hair_over_the_whole_reads_as_all_of_it() -> None:
    # GIVEN a map measured at 25.5 ms on a 25 ms pipeline (noise), and one at 40 ms (timed up
    # to the stage, without the overlap the whole pipeline gets)
    near = worded_advice(_report(_seq_map_pipeline(own_s=0.0255)))[0].evidence
    over = worded_advice(_report(_seq_map_pipeline(own_s=0.040)))[0].evidence

    # THEN the first is all of the pipeline's time, the second is explained as more than it
    assert "adds 25.5 ms per batch of the pipeline's 25.0 ms (100%)" in near
    assert "more than the whole pipeline's 25.0 ms" in over


def test_saturated_cpu_says_more_threads_cannot_help_and_parallelism_predicts_nothing() -> None:
    report = _report(
        _seq_map_pipeline(),
        trials=[_trial("parallel-map", 1, 2.0)],
        busy_pct=CPU_SATURATED_PCT + 5,
    )

    found = {s.id: s for s in worded_advice(report)}

    saturated = found["PD010-cpu-saturated"]
    assert "95% busy" in saturated.evidence
    assert "tf.data service" in saturated.evidence and "TFRecord" in saturated.evidence
    assert found["PD001-sequential-map"].estimate == 1.0
    # a note, with no code: moving the work is no line to paste
    assert (saturated.kind, saturated.code) == ("note", "")
    # and the answer says that no change helped, and why
    change = the_change(dataclasses.replace(report, suggestions=advise(report)))
    assert change.words == (
        "none measured to help on your training; the host CPU is saturated: "
        "more parallel calls cannot help"
    )
    assert change.code == []


def test_a_saturated_cpu_with_no_fix_is_said_once_and_the_answer_says_why() -> None:
    # GIVEN input costing half of training, no fix for its pipeline, and the cores full
    stages = _chain(StageStats(0, "source"), StageStats(0, "prefetch"))

    def costing(busy_pct: float) -> Report:
        report = _report(stages, busy_pct=busy_pct)
        verdict = dataclasses.replace(report.verdict, input_cost_fraction=0.5)
        return dataclasses.replace(report, verdict=verdict)

    saturated = costing(CPU_SATURATED_PCT + 5)
    # THEN one note says so, and none repeats that no rule found a change
    assert [(s.id, s.kind) for s in advise(saturated)] == [("PD010-cpu-saturated", "note")]
    change = the_change(dataclasses.replace(saturated, suggestions=advise(saturated)))
    assert change.words.endswith("the host CPU is saturated: more parallel calls cannot help")
    # and with cores to spare, the note that no rule found a change
    assert [s.id for s in advise(costing(CPU_SATURATED_PCT - 30))] == ["PD014-no-input-fix"]


def test_busy_but_not_saturated_cpu_is_not_reported() -> None:
    report = _report(_seq_map_pipeline(), busy_pct=CPU_SATURATED_PCT - 20)

    assert "PD010-cpu-saturated" not in _ids(report)


def test_a_fix_measured_without_gain_becomes_a_note_at_the_end() -> None:
    report = _report(_seq_map_pipeline(), trials=[_trial("parallel-map", 1, 0.99)])

    (last,) = [s for s in worded_advice(report) if s.id == "PD001-sequential-map"]

    assert last.kind == "note" and "not worth it" in last.title
    assert worded_advice(report)[-1] == last
    # AND it forecasts no end-to-end gain that its title contradicts
    assert last.estimate == 1.0 and "End to end" not in last.evidence


def test_missing_prefetch_only_when_the_options_leave_none() -> None:
    stages = _chain(
        StageStats(0, "source", own_s_per_batch=0.001),
        StageStats(0, "batch", settings=StageSettings(batch_size=8), own_s_per_batch=0.02),
    )
    injected = _report(stages)
    not_injected = _report(
        stages, options=dataclasses.replace(DEFAULT_OPTIONS, inject_prefetch=False)
    )

    assert "PD003-no-prefetch" not in _ids(injected)
    (fix,) = [s for s in worded_advice(not_injected) if s.id == "PD003-no-prefetch"]
    assert "inject_prefetch=false" in fix.evidence
    assert fix.code.startswith("ds = ds.prefetch(tf.data.AUTOTUNE)")


def test_cache_after_a_random_map_is_a_correctness_warning_ranked_first() -> None:
    # GIVEN a costly sequential map (a verified 2x fix) and a cache after a random map
    stages = _chain(
        *_seq_map_pipeline()[:2],
        StageStats(0, "parallel-map", function="augment", random=True),
        StageStats(0, "cache", settings=StageSettings(filename="")),
        StageStats(0, "batch", settings=StageSettings(batch_size=8)),
    )
    report = _report(stages, trials=[_trial("parallel-map", 1, 2.0)])

    # WHEN advised
    first, second, *_ = worded_advice(report)

    # THEN the warning comes before the speed fix
    assert first.id == "PD006-cache-after-random"
    assert first.correctness_warning and first.kind == "warning"
    assert first.stage == "cache" and "parallel-map(augment)" in first.title
    assert second.id == "PD001-sequential-map"


def test_cache_after_a_random_map_is_reported_even_when_compute_bound() -> None:
    stages = _chain(
        StageStats(0, "source"),
        StageStats(0, "map", function="augment", random=True),
        StageStats(0, "cache", settings=StageSettings(filename="")),
    )

    ids = _ids(_report(stages, label="compute-bound"))

    assert ids == ["PD006-cache-after-random", "PD000-pipeline-fine"]


def test_the_tutorials_cache_then_shuffle_is_no_cache_after_random() -> None:
    # GIVEN image_dataset_from_directory's own shuffle, then the tutorial's
    # cache().shuffle(1000).prefetch(): the later shuffle reorders the cache every epoch
    stages = _chain(
        StageStats(0, "source"),
        StageStats(
            0,
            "shuffle",
            settings=StageSettings(buffer_size=256),
            made_by="image_dataset_from_directory",
        ),
        StageStats(0, "parallel-map", function="load_image"),
        StageStats(0, "batch", settings=StageSettings(batch_size=32)),
        StageStats(0, "cache", settings=StageSettings(filename="")),
        StageStats(0, "shuffle", settings=StageSettings(buffer_size=1000)),
        StageStats(0, "prefetch"),
    )

    ids = _ids(_report(stages, label="compute-bound"))

    # THEN neither the cache nor the loader's buffer, which the script cannot set, is warned of
    assert "PD006-cache-after-random" not in ids
    assert "PD008-small-shuffle-buffer" not in ids


def test_a_shuffle_after_the_cache_does_not_unfreeze_random_augmentation() -> None:
    stages = _chain(
        StageStats(0, "source"),
        StageStats(0, "shuffle", settings=StageSettings(buffer_size=5000)),
        StageStats(0, "map", function="augment", random=True),
        StageStats(0, "cache", settings=StageSettings(filename="")),
        StageStats(0, "shuffle", settings=StageSettings(buffer_size=5000)),
    )

    (warning,) = [s for s in worded_advice(_report(stages)) if s.id == "PD006-cache-after-random"]

    assert "map(augment)" in warning.title and "shuffle" not in warning.title


def test_the_script_s_own_tiny_shuffle_is_still_warned_of() -> None:
    stages = _chain(
        StageStats(0, "source"),
        StageStats(0, "shuffle", settings=StageSettings(buffer_size=256)),
        StageStats(0, "batch", settings=StageSettings(batch_size=32)),
    )
    assert "PD008-small-shuffle-buffer" in _ids(_report(stages))


@pytest.mark.parametrize(
    ("buffer", "batch", "expected"),
    [
        (500, 32, "under 1000 elements"),
        (2000, 256, "under 10 batches of 256"),
        (100, 32, "under 1000 elements and under 10 batches of 32"),
        (5000, 32, None),
    ],
)
def test_shuffle_buffer_thresholds_say_which(buffer: int, batch: int, expected: str | None) -> None:
    stages = _chain(
        StageStats(0, "source"),
        StageStats(0, "shuffle", settings=StageSettings(buffer_size=buffer)),
        StageStats(0, "batch", settings=StageSettings(batch_size=batch)),
    )

    found = [s for s in worded_advice(_report(stages)) if s.id == "PD008-small-shuffle-buffer"]

    if expected is None:
        assert found == []
    else:
        assert found[0].title.endswith(f"({expected})")


def test_a_cache_goes_after_the_batch_that_alone_reads_its_stage_when_the_batch_is_plain() -> None:
    from pipediag.report.stage_facts import batch_caching

    stages = _chain(
        StageStats(0, "source"),
        StageStats(0, "map", function="decode"),
        StageStats(0, "batch", settings=StageSettings(batch_size=8)),
        StageStats(0, "map", function="augment", random=True),
        StageStats(0, "batch", settings=StageSettings(batch_size=4)),
    )
    assert batch_caching(stages, 1) == 2
    # read by a random map, or by a zip: no batch to cache after
    assert batch_caching(stages, 2) is None
    zipped = [*stages[:2], StageStats(2, "zip", inputs=[1, 0])]
    assert batch_caching(zipped, 1) is None


def test_cache_needs_a_fitting_size_and_a_costly_deterministic_prefix() -> None:
    stages = _chain(
        StageStats(0, "source", own_s_per_batch=0.001),
        StageStats(0, "parallel-map", function="decode", own_s_per_batch=0.02),
        StageStats(0, "batch", settings=StageSettings(batch_size=8), own_s_per_batch=0.0),
        StageStats(0, "shuffle", settings=StageSettings(buffer_size=5000)),
    )
    assert cache_point(stages) == 1
    fits = dataclasses.replace(
        _trial(
            "cache", 1, 8.0, elements=1000, cache_bytes=4_000_000, available_bytes=8_000_000_000
        ),
        fits_in_memory=True,
    )
    too_big = dataclasses.replace(fits, fits_in_memory=False)

    (cache,) = [
        s for s in worded_advice(_report(stages, trials=[fits])) if s.id == "PD005-cache-prefix"
    ]
    assert "4.0 MB" in cache.title and "from epoch 2" in cache.title
    assert cache.stage == "parallel-map(decode)"
    assert "PD005-cache-prefix" not in _ids(_report(stages, trials=[too_big]))
    assert "PD005-cache-prefix" not in _ids(_report(stages))  # no size known: no advice


def _keras_windows(made_by: str = "timeseries_dataset_from_array") -> list[StageStats]:
    """timeseries_dataset_from_array's graph: the data repeated endlessly, zipped with the
    window indices (a finite range), gathered, shuffled and batched; then the script's map."""
    unbounded = StageSettings(count=-1)
    return [
        StageStats(0, "source", name="TensorDataset", made_by=made_by),
        StageStats(1, "repeat", settings=unbounded, inputs=[0], made_by=made_by),
        StageStats(2, "source", name="RangeDataset", made_by=made_by),
        StageStats(3, "zip", inputs=[1, 2], own_s_per_batch=0.0001, made_by=made_by),
        StageStats(4, "parallel-map", inputs=[3], own_s_per_batch=0.02, made_by=made_by),
        StageStats(5, "prefetch", inputs=[4], made_by=made_by),
        StageStats(6, "shuffle", settings=StageSettings(buffer_size=256), inputs=[5],
                   made_by=made_by),
        StageStats(7, "batch", settings=StageSettings(batch_size=32), inputs=[6],
                   made_by=made_by),
        StageStats(8, "map", function="split_window", inputs=[7], own_s_per_batch=0.0003,
                   created_at="train.py:40"),
    ]  # fmt: skip


def test_a_repeat_zipped_with_a_finite_input_ends_with_it_and_may_be_cached() -> None:
    stages = _keras_windows()
    # The gather reads the data repeated forever, but the zip ends with the range: cacheable.
    assert cache_point(stages) == 4
    # The same map after a repeat with nothing to end it is not.
    endless = _chain(
        StageStats(0, "source"),
        StageStats(0, "repeat", settings=StageSettings(count=-1)),
        StageStats(0, "parallel-map", function="decode", own_s_per_batch=0.02),
    )
    assert cache_point(endless) is None
    ended = [*endless, StageStats(3, "take", settings=StageSettings(count=100), inputs=[2])]
    ended.append(StageStats(4, "map", function="f", inputs=[3], own_s_per_batch=0.03))
    assert cache_point(ended) == 4
    # take(-1) takes everything; a concatenation with an endless part never ends
    taken_all = dataclasses.replace(ended[3], settings=StageSettings(count=-1))
    assert cache_point([*ended[:3], taken_all, ended[4]]) is None
    joined = [
        *endless,
        StageStats(3, "source"),
        StageStats(4, "concatenate", inputs=[3, 2]),
        StageStats(5, "map", function="f", inputs=[4], own_s_per_batch=0.03),
    ]
    assert cache_point(joined) is None


def _cache_advice(stages: list[StageStats]) -> str:
    fits = dataclasses.replace(
        _trial("cache", 4, 2.5, elements=6131, cache_bytes=900_000, available_bytes=8_000_000_000),
        fits_in_memory=True,
    )
    report = _report(stages, trials=[fits])
    (cache,) = [s for s in worded_advice(report) if s.id == "PD005-cache-prefix"]
    return cache.code


def test_a_cache_inside_a_keras_utility_is_written_as_the_call_asked_for_its_elements() -> None:
    # GIVEN a cache point inside timeseries_dataset_from_array, before its shuffle and batch
    code = _cache_advice(_keras_windows())

    # THEN the script asks the utility for its elements in order, caches, shuffles all of
    # them anew each epoch and batches as before: no cache after the utility's shuffle
    assert code.splitlines() == [
        "ds = tf.keras.utils.timeseries_dataset_from_array(..., shuffle=False, "
        "batch_size=None)  # your call, its windows in order",
        "ds = ds.cache().shuffle(6131).batch(32)  # shuffled anew each epoch",
    ]


def test_a_cache_inside_an_unshuffled_keras_call_goes_right_after_it() -> None:
    stages = _keras_windows()
    stages[6] = dataclasses.replace(stages[6], kind="prefetch", settings=StageSettings())

    # What follows the point in the call is deterministic: its batches are cached whole.
    assert _cache_advice(stages) == "ds = ds.cache()  # right after your call"


def test_a_cache_inside_another_library_call_says_where_it_goes() -> None:
    code = _cache_advice(_keras_windows(made_by="make_windows"))

    assert code.startswith("ds = ds.cache()  # inside make_windows (your call), right after")
    assert "before its own shuffle: write that part of it yourself" in code


def _vectorizable_pipeline() -> list[StageStats]:
    return _chain(
        StageStats(0, "source", own_s_per_batch=0.0005),
        StageStats(0, "map", function="scale", source="train.py:9", own_s_per_batch=0.020),
        StageStats(0, "batch", settings=StageSettings(batch_size=256), own_s_per_batch=0.0005),
    )


def test_vectorising_is_dropped_when_the_check_found_it_unsafe() -> None:
    unsafe = FixTrial(
        fix="vectorize",
        stage_index=1,
        verified=False,
        reason=Reason("unsafe-keep-map", because=Reason("fails-on-batch", detail="ValueError")),
        unsafe=True,
    )
    assert "PD004-vectorize-map" in _ids(_report(_vectorizable_pipeline()))
    assert "PD004-vectorize-map" not in _ids(_report(_vectorizable_pipeline(), trials=[unsafe]))


def test_a_checked_vectorisation_says_so_and_uses_its_measured_gain() -> None:
    checked = _trial("vectorize", 1, 12.0, sample_elements=512)
    report = _report(_vectorizable_pipeline(), trials=[checked])

    (vectorize,) = [s for s in worded_advice(report) if s.id == "PD004-vectorize-map"]

    assert vectorize.gain == Gain("pipeline-alone", 12.0)
    assert "On 512 of your elements" in vectorize.evidence


def test_a_map_timed_costlier_than_the_guess_is_still_vectorised_where_measured_to_gain() -> None:
    # GIVEN the map timed 60 ms a batch of 256 (234 us an element, over the 200-us guess)
    stages = _vectorizable_pipeline()
    stages[1] = dataclasses.replace(stages[1], own_s_per_batch=0.060)
    # THEN without a trial it is not offered; with one measured at 47x, it is
    assert "PD004-vectorize-map" not in _ids(_report(stages))
    measured = _trial("vectorize", 1, 47.0, sample_elements=512)
    assert "PD004-vectorize-map" in _ids(_report(stages, trials=[measured]))


def test_a_vectorisation_through_vectorized_map_writes_that_code_and_why() -> None:
    # GIVEN a map whose function fails on a batch as written, checked through vectorized_map
    refusal = Reason("fails-on-batch", detail="ValueError: Input serialized must be a scalar")
    checked = _trial(
        "vectorize", 1, 1.7, sample_elements=512, vectorized_map=True, batch_refusal=refusal
    )
    report = _report(_vectorizable_pipeline(), trials=[checked])

    (vectorize,) = [s for s in worded_advice(report) if s.id == "PD004-vectorize-map"]

    assert "with tf.vectorized_map" in vectorize.title
    assert vectorize.refused_as_written == refusal
    assert "on 512 of your elements" in vectorize.evidence
    assert reason_words(refusal) == (
        "the function fails on a batch (ValueError: Input serialized must be a scalar)"
    )
    assert vectorize.code == (
        "ds = ds.batch(256).map(lambda batch: tf.vectorized_map(scale, batch, "
        "fallback_to_while_loop=True), num_parallel_calls=tf.data.AUTOTUNE)"
    )
    assert vectorize.gain == Gain("pipeline-alone", 1.7)


def test_autotune_off_is_named_with_its_measured_gain() -> None:
    report = _report(
        _seq_map_pipeline(auto_parallel=True),
        options=dataclasses.replace(DEFAULT_OPTIONS, autotune=False),
        trials=[_trial("autotune-on", None, 1.5)],
    )

    (fix,) = [s for s in worded_advice(report) if s.id == "PD009-autotune-off"]

    assert fix.gain == Gain("pipeline-alone", 1.5)
    assert "options.autotune.enabled = True" in fix.code


def test_output_is_sorted_by_predicted_gain_and_deterministic() -> None:
    stages = _chain(
        StageStats(0, "source", own_s_per_batch=0.0),
        StageStats(0, "map", function="small", auto_parallel=False,
                   auto_parallel_blocker="option off",
                   own_s_per_batch=0.005),
        StageStats(0, "map", function="big", auto_parallel=False,
                   auto_parallel_blocker="option off",
                   own_s_per_batch=0.015),
        StageStats(0, "batch", settings=StageSettings(batch_size=8)),
        StageStats(0, "prefetch", settings=StageSettings(buffer_size=AUTOTUNE)),
    )  # fmt: skip
    report = _report(stages)

    first = worded_advice(report)

    assert [s.stage for s in first] == ["map(big)", "map(small)"]
    assert worded_advice(report) == first
    predicted = [s.estimate or 0 for s in first]
    assert predicted == sorted(predicted, reverse=True)


def test_suggestions_and_trials_survive_the_json_round_trip() -> None:
    report = _report(_seq_map_pipeline(), trials=[_trial("parallel-map", 1, 2.0)])
    report = dataclasses.replace(report, suggestions=advise(report))

    assert from_dict(to_dict(report)) == report


def test_a_measured_prefetch_gain_does_not_fire_when_tf_data_injects_one() -> None:
    # GIVEN a pipeline ending without prefetch, with inject_prefetch on, and a noisy "gain"
    stages = _seq_map_pipeline()[:3]
    report = _report(stages, trials=[_trial("prefetch-end", 2, 1.2)])
    # THEN no prefetch advice: tf.data already appends one (measured 0.99x: docs/design.md,
    # "tf.data behaviours")
    assert "PD003-no-prefetch" not in _ids(report)


def _gpu_report(dominant: str, *, input_s: float, host_s: float, transfer_s: float) -> Report:
    from pipediag.report.samples import GpuAnalysis, IdleAttribution

    idle = input_s + host_s + transfer_s
    analysis = GpuAnalysis(
        available=True,
        gpu_busy_fraction=1.0 - idle / 10.0,
        attribution=IdleAttribution(
            window_s=10.0,
            idle_s=idle,
            input_wait_s=input_s,
            host_overhead_s=host_s,
            transfer_s=transfer_s,
            dominant=dominant,
        ),
    )
    base = _report(_seq_map_pipeline(), label="compute-bound")
    return dataclasses.replace(base, gpu_analysis=analysis)


def test_gpu_idle_on_host_overhead_gets_the_launch_overhead_fix() -> None:
    # GIVEN a GPU idle 40% of the time, 3 of those 4 seconds on host-side overhead
    report = _gpu_report("host-overhead", input_s=0.5, host_s=3.0, transfer_s=0.5)
    (fix,) = [s for s in worded_advice(report) if s.id == "PD011-gpu-idle-cause"]
    assert "steps_per_execution" in fix.code
    assert "75% of its idle time" in fix.evidence
    # removing 3 s of idle out of 10 s: 10 / 7
    assert fix.estimate == pytest.approx(10 / 7)
    assert "steps_per_execution=32" in fix.code
    # and where the model-side trials measured a size on the step alone, it writes that one
    from pipediag.report.model import ComputeAlone
    from pipediag.report.model_side import ModelTrial

    tried = ModelTrial("steps_per_execution", speedup=1.3, setting="16")
    measured = dataclasses.replace(
        report, compute_alone=ComputeAlone(measured=True, trials=[tried])
    )
    (sized,) = [s for s in worded_advice(measured) if s.id == "PD011-gpu-idle-cause"]
    assert "steps_per_execution=16," in sized.code


def test_gpu_idle_on_transfer_gets_the_prefetch_to_device_fix() -> None:
    report = _gpu_report("transfer", input_s=0.2, host_s=0.3, transfer_s=2.0)
    (fix,) = [s for s in worded_advice(report) if s.id == "PD011-gpu-idle-cause"]
    assert "prefetch_to_device" in fix.code


def test_gpu_idle_waiting_for_input_is_left_to_the_pipeline_rules() -> None:
    report = _gpu_report("input-wait", input_s=3.0, host_s=0.5, transfer_s=0.5)
    assert "PD011-gpu-idle-cause" not in _ids(report)


def _hoist_pipeline(held: float | None = 6.5) -> list[StageStats]:
    """The quickstart's shape: a shuffle, then a costly Python map, then its batch."""
    return _chain(
        StageStats(0, "source", own_s_per_batch=0.0005),
        StageStats(0, "shuffle", settings=StageSettings(buffer_size=1024, seed=0)),
        StageStats(0, "map", function="to_example", source="train.py:30", stateful=True,
                   uses_py_function=True, own_s_per_batch=0.020,
                   training_speedup_if_free=held),
        StageStats(0, "batch", settings=StageSettings(batch_size=32), own_s_per_batch=0.0005),
    )  # fmt: skip


def _hoist_trial(**facts: Any) -> FixTrial:
    trial = _trial(
        "hoist-cache",
        2,
        1.0,
        elements=8192,
        cache_bytes=100_000_000,
        available_bytes=8_000_000_000,
        fill_s=7.0,
        **facts,
    )
    return dataclasses.replace(
        trial, verified=False, variant_batches_per_s=None, fits_in_memory=True
    )


def test_a_map_under_a_shuffle_is_offered_hoisted_and_cached_with_its_hold_as_the_gain() -> None:
    # GIVEN the map's cache too slow to fill in a trial, its output held on training at 6.5x,
    # and its Python checked to give the same values twice
    report = _report(_hoist_pipeline(), trials=[_hoist_trial(python_repeatable=True)])
    found = worded_advice(report)
    (hoist,) = [s for s in found if s.id == "PD018-hoist-cache"]
    # THEN the change is offered with that gain, the code moves the map above the shuffle
    assert hoist.title == "cache() after map(to_example), moved above shuffle (100.0 MB, fits)"
    assert hoist.gain == Gain("held", 6.5)
    assert hoist.code.splitlines() == [
        "ds = ds.map(to_example)",
        "ds = ds.cache()",
        "ds = ds.shuffle(1024)",
    ]
    assert "same values for the same elements read twice" in hoist.evidence
    assert "about 7 s" in hoist.evidence
    # AND it ranks before porting the map to TF ops, whose 6.5x is only a bound
    ids = [s.id for s in found]
    assert ids.index("PD018-hoist-cache") < ids.index("PD007-py-function")


def test_no_hoisted_cache_over_python_that_gave_other_values_or_without_a_hold() -> None:
    random_python = _report(_hoist_pipeline(), trials=[_hoist_trial(python_repeatable=False)])
    assert "PD018-hoist-cache" not in _ids(random_python)
    unheld = _report(_hoist_pipeline(held=None), trials=[_hoist_trial(python_repeatable=True)])
    costly = dataclasses.replace(
        unheld, verdict=dataclasses.replace(unheld.verdict, input_cost_fraction=0.8)
    )
    assert "PD018-hoist-cache" not in _ids(costly)  # T/A is no measure of what a cache gives
    free = _report(_hoist_pipeline(held=1.01), trials=[_hoist_trial(python_repeatable=True)])
    assert "PD018-hoist-cache" not in _ids(free)


def test_a_gain_measured_on_training_outranks_any_predicted_one() -> None:
    from pipediag.analysis.advisor import _sort_key

    predicted = Suggestion("PD012-input-contention", estimate=1.64)
    measured = Suggestion("PD001-sequential-map", gain=Gain("training", 1.21))
    no_gain = Suggestion("PD003-no-prefetch", gain=Gain("training", 1.02))
    warning = Suggestion("PD006-cache-after-random", correctness_warning=True)
    found = [(2, predicted), (6, no_gain), (5, measured), (14, warning)]

    ranked = [s.id for _, s in sorted(found, key=lambda item: _sort_key(*item))]

    # THEN the measured gain leads the fixes, the prediction follows, and a fix measured
    # without gain comes last; a correctness warning stays first
    assert ranked == [warning.id, measured.id, predicted.id, no_gain.id]


def test_a_fix_without_a_prediction_ranks_by_the_bound_it_carries() -> None:
    from pipediag.analysis.advisor import _sort_key

    idle = Suggestion("PD011-gpu-idle-cause")
    port = Suggestion("PD007-py-function", gain=Gain("held", 1.57))
    predicted = Suggestion("PD012-input-contention", estimate=1.2)
    found = [(1, idle), (2, predicted), (13, port)]

    ranked = [s.id for _, s in sorted(found, key=lambda item: _sort_key(*item))]

    # THEN the port (at most 1.57x, ranked at its square root, 1.25x) leads the prediction,
    # and a fix with neither comes after both
    assert ranked == [port.id, predicted.id, idle.id]


def test_a_port_ranks_at_the_middle_of_its_bound_among_gains_measured_on_training() -> None:
    from pipediag.analysis.advisor import _sort_key

    def order(*found: Suggestion) -> list[str]:
        keyed = sorted(enumerate(found), key=lambda item: _sort_key(*item))
        return [f"{s.id} {s.gain.speedup}" for _, s in keyed]

    port = Suggestion("PD007-py-function", gain=Gain("held", 1.55))
    small_cap = Suggestion("PD012-input-contention", gain=Gain("training", 1.07))
    parallel = Suggestion("PD001-sequential-map", gain=Gain("training", 1.58))
    hoist = Suggestion("PD018-hoist-cache", gain=Gain("held", 1.3))

    # The port may gain 1.0-1.55x: ranked at 1.245x, above a thread cap measured at 1.07x,
    # below a parallel map measured at 1.58x; a hoisted cache's hold is its own gain.
    assert order(small_cap, port) == ["PD007-py-function 1.55", "PD012-input-contention 1.07"]
    assert order(port, parallel) == ["PD001-sequential-map 1.58", "PD007-py-function 1.55"]
    assert order(port, hoist, small_cap)[0] == "PD018-hoist-cache 1.3"
