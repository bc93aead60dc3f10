"""The pipeline pipediag would write, from hand-built stages and kept changes."""

from __future__ import annotations

import dataclasses

from pipediag.analysis.pipeline_code import rewritten_chain
from pipediag.report.fixes import fix_words
from pipediag.report.prescription import CodeLine, StageChange
from pipediag.report.stages import StageSettings, StageStats


def _mnist_chain() -> list[StageStats]:
    return [
        StageStats(0, "source", "TensorSliceDataset", created_at="train.py:20"),
        StageStats(
            1,
            "shuffle",
            "ShuffleDatasetV3",
            StageSettings(buffer_size=1000),
            inputs=[0],
            created_at="train.py:21",
        ),
        StageStats(
            2, "map", "MapDataset", function="preprocess", inputs=[1], created_at="train.py:22"
        ),
        StageStats(
            3,
            "batch",
            "BatchDatasetV2",
            StageSettings(batch_size=32),
            inputs=[2],
            created_at="train.py:23",
        ),
    ]


def _texts(lines: list[CodeLine]) -> list[str]:
    return [line.text for line in lines]


def test_no_change_writes_the_users_chain_source_first() -> None:
    lines = rewritten_chain(_mnist_chain(), [])

    assert _texts(lines) == [
        "ds = tf.data.Dataset.from_tensor_slices(...)",
        "ds = ds.shuffle(1000)",
        "ds = ds.map(preprocess)",
        "ds = ds.batch(32)",
    ]
    assert all(line.change is None for line in lines)
    assert [line.site for line in lines] == [f"train.py:{n}" for n in (20, 21, 22, 23)]


def test_a_vectorised_map_is_written_after_its_batch_and_marked() -> None:
    change = StageChange("vectorize", 2, ("batched",))

    lines = rewritten_chain(_mnist_chain(), [change])

    assert _texts(lines)[2:] == [
        "ds = ds.batch(32)",
        "ds = ds.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)",
    ]
    moved = lines[3]
    assert (moved.change, moved.site, moved.semantics) == (
        "vectorize",
        "train.py:22",
        ["batched"],
    )


def test_a_hoisted_map_and_its_cache_go_before_the_shuffle() -> None:
    change = StageChange("hoist-cache", 2, ("element-order", "cache"))

    lines = rewritten_chain(_mnist_chain(), [change])

    assert _texts(lines) == [
        "ds = tf.data.Dataset.from_tensor_slices(...)",
        "ds = ds.map(preprocess)",
        "ds = ds.cache()",
        "ds = ds.shuffle(1000)",
        "ds = ds.batch(32)",
    ]
    # AND the shuffle is marked moved by the same change
    assert [line.change for line in lines] == [
        None,
        "hoist-cache",
        "hoist-cache",
        "hoist-cache",
        None,
    ]


def test_parallel_map_prefetch_and_options_compose_in_one_chain() -> None:
    changes = [
        StageChange("parallel-map", 2),
        StageChange("prefetch-end", 3),
        StageChange("thread-cap", None, value=1),
    ]

    lines = rewritten_chain(_mnist_chain(), changes)

    assert _texts(lines)[2:] == [
        "ds = ds.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)",
        "ds = ds.batch(32)",
        "ds = ds.prefetch(tf.data.AUTOTUNE)",
        "options = tf.data.Options()",
        "options.threading.private_threadpool_size = 1",
        "ds = ds.with_options(options)",
    ]
    assert lines[4].site == "train.py:23"  # the prefetch follows the last stage


def test_a_generator_source_is_written_as_tensor_slices_of_one_epoch() -> None:
    stages = [
        StageStats(0, "source", "from_generator", function="augmented", created_at="t.py:9"),
        StageStats(1, "batch", "BatchDatasetV2", StageSettings(batch_size=8), inputs=[0]),
    ]

    (source, _) = rewritten_chain(stages, [StageChange("materialise-generator", 0)])

    assert source.text.startswith("ds = tf.data.Dataset.from_tensor_slices(")
    assert "augmented()" in source.text and source.site == "t.py:9"


def test_a_final_prefetch_is_raised_in_place_not_added_twice() -> None:
    stages = [
        *_mnist_chain(),
        StageStats(4, "prefetch", "PrefetchDataset", StageSettings(buffer_size=1), inputs=[3]),
    ]

    lines = rewritten_chain(stages, [StageChange("prefetch-end", 4)])

    assert _texts(lines)[-1] == "ds = ds.prefetch(tf.data.AUTOTUNE)"
    assert sum("prefetch" in t for t in _texts(lines)) == 1


def test_every_fix_id_has_words() -> None:
    from typing import get_args

    from pipediag.report.vocabulary import FixName

    assert all(fix_words(fix) != fix for fix in get_args(FixName))


def test_a_cache_follows_its_stage_and_an_interleave_gets_its_cycle_length() -> None:
    stages = [
        StageStats(0, "source", "TensorSliceDataset"),
        StageStats(1, "interleave", "InterleaveDataset", function="read", inputs=[0]),
        StageStats(2, "map", "MapDataset", function="decode", inputs=[1], created_at="t.py:4"),
        StageStats(3, "batch", "BatchDatasetV2", StageSettings(batch_size=16), inputs=[2]),
    ]
    changes = [
        StageChange("parallel-interleave", 1, value=2),
        StageChange("cache", 2, ("cache",)),
    ]

    lines = rewritten_chain(stages, changes)

    assert _texts(lines) == [
        "ds = tf.data.Dataset.from_tensor_slices(...)",
        "ds = ds.interleave(read, cycle_length=2, num_parallel_calls=tf.data.AUTOTUNE)",
        "ds = ds.map(decode)",
        "ds = ds.cache()",
        "ds = ds.batch(16)",
    ]
    assert (lines[3].change, lines[3].site, lines[3].semantics) == ("cache", "t.py:4", ["cache"])


def test_a_cache_of_whole_batches_follows_the_batch_and_a_vectorised_map_before_it() -> None:
    stages = [
        StageStats(0, "source", "TFRecordDataset"),
        StageStats(1, "map", "MapDataset", function="decode", inputs=[0], created_at="t.py:4"),
        StageStats(2, "batch", "BatchDatasetV2", StageSettings(batch_size=32), inputs=[1]),
    ]
    cache = StageChange("cache", 1, ("cache",), cached_in_batches=True)

    assert _texts(rewritten_chain(stages, [cache])) == [
        "ds = tf.data.TFRecordDataset(...)",
        "ds = ds.map(decode)",
        "ds = ds.batch(32)",
        "ds = ds.cache()",
    ]
    # under a kept vectorise the map yields the batches, and its cache follows it
    lines = rewritten_chain(stages, [StageChange("vectorize", 1), cache])
    assert _texts(lines)[1:] == [
        "ds = ds.batch(32)",
        "ds = ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE)",
        "ds = ds.cache()",
    ]
    assert lines[-1].change == "cache" and lines[-1].site == "t.py:4"


def test_a_zip_writes_each_branch_first_with_its_changes() -> None:
    # GIVEN images decoded on one branch, labels on another, zipped, then batched
    stages = [
        StageStats(0, "source", "TFRecordDatasetV2", created_at="train.py:10"),
        StageStats(1, "map", "MapDataset", function="decode", inputs=[0], created_at="train.py:11"),
        StageStats(2, "source", "TensorSliceDataset", created_at="train.py:12"),
        StageStats(3, "zip", "ZipDataset", inputs=[1, 2], created_at="train.py:13"),
        StageStats(
            4,
            "batch",
            "BatchDatasetV2",
            StageSettings(batch_size=64),
            inputs=[3],
            created_at="train.py:14",
        ),
    ]
    # WHEN the image branch's map is made parallel
    lines = rewritten_chain(stages, [StageChange("parallel-map", 1)])
    # THEN each branch is its own variable, the change on its line, then the zip and the rest
    assert _texts(lines) == [
        "ds0 = tf.data.TFRecordDataset(...)",
        "ds0 = ds0.map(decode, num_parallel_calls=tf.data.AUTOTUNE)",
        "ds1 = tf.data.Dataset.from_tensor_slices(...)",
        "ds = tf.data.Dataset.zip((ds0, ds1))",
        "ds = ds.batch(64)",
    ]
    assert [line.change for line in lines] == [None, "parallel-map", None, None, None]
    assert [line.site for line in lines] == [f"train.py:{n}" for n in (10, 11, 12, 13, 14)]


def test_a_concatenation_joins_its_branches_in_order() -> None:
    stages = [
        StageStats(0, "source", "TextLineDataset"),
        StageStats(1, "source", "TextLineDataset"),
        StageStats(2, "concatenate", "ConcatenateDataset", inputs=[0, 1]),
    ]
    assert _texts(rewritten_chain(stages, [])) == [
        "ds0 = tf.data.TextLineDataset(...)",
        "ds1 = tf.data.TextLineDataset(...)",
        "ds = ds0.concatenate(ds1)",
    ]


def test_a_vectorise_through_vectorized_map_is_written_as_the_user_would() -> None:
    change = StageChange("vectorize", 2, ("vectorized-map",), vectorized_map=True)

    lines = rewritten_chain(_mnist_chain(), [change])

    assert _texts(lines)[2:] == [
        "ds = ds.batch(32)",
        "ds = ds.map(lambda batch: tf.vectorized_map(preprocess, batch, "
        "fallback_to_while_loop=True), num_parallel_calls=tf.data.AUTOTUNE)",
    ]
    assert (lines[3].change, lines[3].semantics) == ("vectorize", ["vectorized-map"])


def test_a_seeded_shuffle_keeps_its_seed_and_a_single_shuffle_says_so() -> None:
    # GIVEN shuffles as their ops ran: `shuffle(1000, seed=0)` without a global seed (TF's
    # default graph seed beside the op's), one with no seed, one not reshuffled each epoch
    seeded, unseeded, once = (
        dataclasses.replace(_mnist_chain()[1], settings=settings)
        for settings in (
            StageSettings(buffer_size=1000, seed=87654321, seed2=0),
            StageSettings(buffer_size=1000, seed=0, seed2=0),
            StageSettings(buffer_size=1000, seed=7, seed2=3, reshuffle_each_iteration=False),
        )
    )
    # and `shuffle(1000, seed=0)` under a global seed of 0, which TF runs as (0, 2**31 - 1)
    zeros = dataclasses.replace(
        seeded, settings=StageSettings(buffer_size=1000, seed=0, seed2=2**31 - 1)
    )
    # THEN each is written as the user would write it for the same order
    written = [
        _texts(rewritten_chain([_mnist_chain()[0], s], []))[1]
        for s in (seeded, unseeded, once, zeros)
    ]
    assert written == [
        "ds = ds.shuffle(1000, seed=0)",
        "ds = ds.shuffle(1000)",
        "ds = ds.shuffle(1000, seed=3, reshuffle_each_iteration=False)",
        "ds = ds.shuffle(1000, seed=0)",
    ]


def _image_loader_then_map() -> list[StageStats]:
    """image_dataset_from_directory's stages (the files decoded in a parallel map, shuffled
    eight batches deep, batched), then the script's own map."""
    keras = {"made_by": "image_dataset_from_directory", "created_at": "train.py:10"}
    return [
        StageStats(0, "source", "TensorSliceDataset", **keras),
        StageStats(1, "parallel-map", function="load_image", inputs=[0], **keras),
        StageStats(2, "shuffle", settings=StageSettings(buffer_size=256), inputs=[1], **keras),
        StageStats(3, "batch", settings=StageSettings(batch_size=32), inputs=[2], **keras),
        StageStats(4, "map", function="rescale", inputs=[3], created_at="train.py:11"),
    ]


def test_a_keras_utility_is_written_as_the_one_call_the_script_made() -> None:
    lines = rewritten_chain(_image_loader_then_map(), [StageChange("prefetch-end", 4)])

    assert _texts(lines) == [
        "ds = tf.keras.utils.image_dataset_from_directory(...)",
        "ds = ds.map(rescale)",
        "ds = ds.prefetch(tf.data.AUTOTUNE)",
    ]
    assert lines[0].site == "train.py:10"


def _windows() -> list[StageStats]:
    """timeseries_dataset_from_array's stages: the data repeated, zipped with the window
    starts, gathered, shuffled eight batches deep and batched."""
    keras = {"made_by": "timeseries_dataset_from_array", "created_at": "train.py:10"}
    unbounded = StageSettings(count=-1)
    return [
        StageStats(0, "source", "TensorDataset", **keras),
        StageStats(1, "repeat", settings=unbounded, inputs=[0], **keras),
        StageStats(2, "source", "RangeDataset", **keras),
        StageStats(3, "zip", inputs=[1, 2], **keras),
        StageStats(4, "parallel-map", function="gather", inputs=[3], **keras),
        StageStats(5, "shuffle", settings=StageSettings(buffer_size=256), inputs=[4], **keras),
        StageStats(6, "batch", settings=StageSettings(batch_size=32), inputs=[5], **keras),
    ]


def test_a_cache_inside_the_time_series_utility_asks_it_for_its_windows_in_order() -> None:
    changes = [StageChange("cache", 4, value=6131), StageChange("prefetch-end", 6)]

    lines = rewritten_chain(_windows(), changes)

    # The call's shuffle would follow the cache: asked for none, the script shuffles every
    # window anew each epoch after its cache; the prefetch at the end goes after it all.
    assert _texts(lines) == [
        "ds = tf.keras.utils.timeseries_dataset_from_array(..., shuffle=False, batch_size=None)",
        "ds = ds.cache().shuffle(6131).batch(32)",
        "ds = ds.prefetch(tf.data.AUTOTUNE)",
    ]
    assert [line.change for line in lines] == ["cache", "cache", "prefetch-end"]


def test_a_cache_inside_a_directory_loader_keeps_its_stages_as_tf_data() -> None:
    # Asked for no shuffle, the loader would split off validation from files in order: the
    # script would train on other files. So no recipe: the loader's stages are written out.
    lines = rewritten_chain(_image_loader_then_map(), [StageChange("cache", 1, value=900)])

    assert _texts(lines)[:4] == [
        "ds = tf.data.Dataset.from_tensor_slices(...)",
        "ds = ds.map(load_image)",
        "ds = ds.cache()",
        "ds = ds.shuffle(256)",
    ]


def test_a_keras_call_that_reads_the_script_s_dataset_is_not_one_call() -> None:
    # fit's own map over the script's dataset (class weights) is no dataset utility.
    stages = [
        StageStats(0, "source", "TensorSliceDataset", created_at="train.py:5"),
        StageStats(1, "map", function="weigh", inputs=[0], made_by="Sequential.fit"),
    ]

    assert _texts(rewritten_chain(stages, [])) == [
        "ds = tf.data.Dataset.from_tensor_slices(...)",
        "ds = ds.map(weigh)",
    ]


def test_another_change_inside_a_keras_utility_keeps_its_stages_as_tf_data() -> None:
    lines = rewritten_chain(_image_loader_then_map(), [StageChange("vectorize", 1)])

    assert _texts(lines)[:3] == [
        "ds = tf.data.Dataset.from_tensor_slices(...)",
        "ds = ds.shuffle(256)",
        "ds = ds.batch(32)",
    ]
    assert "ds = ds.map(load_image, num_parallel_calls=tf.data.AUTOTUNE)" in _texts(lines)
