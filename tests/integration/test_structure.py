"""walk / effective_options on real, small tf.data pipelines (no TF mocks)."""

from __future__ import annotations

import subprocess
import sys
import time
import typing
from pathlib import Path
from typing import Any

import pytest

from pipediag.bench.structure import effective_options, walk
from pipediag.report.model import PipelineOptions
from pipediag.report.stages import AUTOTUNE, UNBOUNDED, StageSettings, StageStats

pytestmark = pytest.mark.tensorflow

# TensorFlow, imported when the first test here runs rather than when pytest collects this
# file: the unit layer's guard (tests/unit/conftest.py) can only see an import of TensorFlow
# while none has happened yet.
tf: Any = None


def describe(dataset: Any) -> list[StageStats]:
    """The stages as found, without their dataset objects."""
    return [stage.stats for stage in walk(dataset).stages]


@pytest.fixture(autouse=True, scope="module")
def _import_tensorflow() -> None:
    global tf
    tf = pytest.importorskip("tensorflow")


SLEEP_S = 0.005
THIS_FILE = Path(__file__).name


def _sleepy(value: Any) -> Any:
    time.sleep(SLEEP_S)
    return value


def slow_py_map(x: Any) -> Any:
    return tf.py_function(_sleepy, [x], tf.int64)


def cheap_map(x: Any) -> Any:
    return x * 2


def noisy_map(x: Any) -> Any:
    return x + tf.random.uniform([], maxval=3, dtype=tf.int64)


def make_files(x: Any) -> Any:
    return tf.data.Dataset.range(x)


def kinds(stages: list[StageStats]) -> list[str]:
    return [s.kind for s in stages]


def test_sequential_py_function_pipeline_lists_four_stages_in_order() -> None:
    # GIVEN the canonical slow pipeline: a sleeping py_function map without parallelism
    ds = tf.data.Dataset.range(100).map(slow_py_map).batch(4).prefetch(1)

    # WHEN it is described
    stages = describe(ds)

    # THEN the stages come source first, with the user's function located in this file
    assert kinds(stages) == ["source", "map", "batch", "prefetch"]
    assert [s.index for s in stages] == [0, 1, 2, 3]
    assert [s.inputs for s in stages] == [[], [0], [1], [2]]
    source, mapped, batch, prefetch = stages
    assert source.name == "RangeDataset"
    assert source.settings.stop == 100
    assert mapped.name == "MapDataset"
    assert mapped.function == "slow_py_map"
    assert mapped.source == f"{THIS_FILE}:{slow_py_map.__code__.co_firstlineno}"
    assert mapped.uses_py_function
    assert mapped.uses_py_function
    assert mapped.stateful
    # py_function is stateful, so tf.data will not parallelise this map by itself.
    assert (mapped.auto_parallel, mapped.auto_parallel_blocker) == (False, "stateful function")
    assert mapped.settings.num_parallel_calls is None
    assert batch.settings == StageSettings(batch_size=4, drop_remainder=False)
    assert prefetch.settings.buffer_size == 1
    assert not any(s.uses_py_function for s in (source, batch, prefetch))


def test_parallel_map_autotune_and_explicit_parallelism() -> None:
    ds = (
        tf.data.Dataset.range(10)
        .map(cheap_map, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
        .map(cheap_map, num_parallel_calls=3)
        .prefetch(tf.data.AUTOTUNE)
    )

    stages = describe(ds)

    assert kinds(stages) == ["source", "parallel-map", "parallel-map", "prefetch"]
    assert stages[1].settings.num_parallel_calls == AUTOTUNE
    assert stages[1].settings.deterministic is False
    assert stages[2].settings.num_parallel_calls == 3
    # Left to the pipeline's `deterministic` option ("default" on the op).
    assert stages[2].settings.deterministic is None
    assert stages[3].settings.buffer_size == AUTOTUNE
    assert stages[1].function == "cheap_map"
    assert not stages[1].uses_py_function
    assert not stages[1].stateful


def test_map_flags_random_ops_and_auto_parallel_for_stateless_maps() -> None:
    ds = tf.data.Dataset.range(10).map(noisy_map).map(lambda x: x + 1)

    _, noisy, stateless = describe(ds)

    assert noisy.stateful
    assert noisy.random
    assert "RandomUniformInt" in noisy.stateful_ops
    assert (noisy.auto_parallel, noisy.auto_parallel_blocker) == (False, "stateful function")
    assert stateless.function == "<lambda>"
    assert not stateless.stateful
    assert stateless.auto_parallel is True


def test_interleave_settings() -> None:
    parallel = tf.data.Dataset.range(5).interleave(
        make_files, cycle_length=3, block_length=2, num_parallel_calls=tf.data.AUTOTUNE
    )
    sequential = tf.data.Dataset.range(5).interleave(make_files, cycle_length=2)

    p_stages = describe(parallel)
    s_stages = describe(sequential)

    assert kinds(p_stages) == ["source", "parallel-interleave"]
    assert p_stages[1].settings.cycle_length == 3
    assert p_stages[1].settings.block_length == 2
    assert p_stages[1].settings.num_parallel_calls == AUTOTUNE
    assert p_stages[1].function == "make_files"
    # Building a dataset inside the function is not "state" worth reporting.
    assert not p_stages[1].stateful
    assert kinds(s_stages) == ["source", "interleave"]
    assert s_stages[1].settings.cycle_length == 2
    assert s_stages[1].settings.block_length == 1


def test_cache_shuffle_repeat_take_settings(tmp_path: Path) -> None:
    cache_file = tmp_path / "cache"
    ds = (
        tf.data.Dataset.range(20)
        .cache()
        .cache(str(cache_file))
        .shuffle(16, reshuffle_each_iteration=False)
        .repeat()
        .take(7)
    )

    stages = describe(ds)

    assert kinds(stages) == ["source", "cache", "cache", "shuffle", "repeat", "take"]
    assert stages[1].settings.filename == ""  # in memory
    assert stages[2].settings.filename == str(cache_file)
    assert stages[3].settings.buffer_size == 16
    assert stages[3].settings.reshuffle_each_iteration is False
    assert stages[4].settings.count == UNBOUNDED
    assert stages[5].settings.count == 7


def test_a_shuffle_is_written_back_with_the_seed_it_ran_with() -> None:
    from tensorflow.python.eager import context

    from pipediag.analysis.pipeline_code import rewritten_chain

    # GIVEN shuffles with an op seed and without one, no global seed set (a script an
    # earlier test ran in this process may have set one: it is put back after)
    saved = context.global_seed()
    tf.random.set_seed(None)
    try:
        written = [
            rewritten_chain(describe(tf.data.Dataset.range(20).shuffle(16, **seed)), [])
            for seed in ({"seed": 0}, {})
        ]
    finally:
        tf.random.set_seed(saved)
    # THEN the code pipediag writes keeps the user's seed, and adds none
    assert [lines[1].text for lines in written] == [
        "ds = ds.shuffle(16, seed=0)",
        "ds = ds.shuffle(16)",
    ]


def test_zip_and_concatenate_keep_both_branches() -> None:
    left = tf.data.Dataset.range(10).map(cheap_map)
    right = tf.data.Dataset.range(10, 20)
    ds = tf.data.Dataset.zip((left, right)).concatenate(tf.data.Dataset.zip((right, right)))

    stages = describe(ds)

    by_kind = kinds(stages)
    assert by_kind.count("zip") == 2
    assert by_kind[-1] == "concatenate"
    first_zip = stages[by_kind.index("zip")]
    # Each input comes before the stage that reads it; `right` is listed once, shared.
    assert [stages[i].kind for i in first_zip.inputs] == ["map", "source"]
    assert all(i < s.index for s in stages for i in s.inputs)
    assert by_kind.count("source") == 2
    second_zip = stages[len(stages) - 2]
    assert second_zip.kind == "zip"
    assert second_zip.inputs[0] == second_zip.inputs[1]


def test_from_generator_is_one_source_named_after_the_generator() -> None:
    def count_up() -> Any:
        yield from range(3)

    ds = tf.data.Dataset.from_generator(
        count_up, output_signature=tf.TensorSpec([], tf.int64)
    ).batch(2)

    stages = describe(ds)

    assert kinds(stages) == ["source", "batch"]
    assert stages[0].name == "from_generator"
    assert stages[0].function == "count_up"
    assert stages[0].source == f"{THIS_FILE}:{count_up.__code__.co_firstlineno}"
    assert stages[0].uses_py_function


def test_filter_padded_batch_unbatch_and_options_stages() -> None:
    options = tf.data.Options()
    options.deterministic = False
    ds = (
        tf.data.Dataset.range(10)
        .filter(lambda x: x > 2)
        .padded_batch(3, drop_remainder=True)
        .unbatch()
        .with_options(options)
    )

    stages = describe(ds)

    found = kinds(stages)
    assert found[:3] == ["source", "filter", "padded-batch"]
    assert found[-2:] == ["unbatch", "options"]
    assert stages[2].settings.batch_size == 3
    assert stages[2].settings.drop_remainder is True
    # unbatch adds TF's own `normalize` map: flagged so advice skips it.
    internal = [s for s in stages if s.tf_internal]
    assert all(s.kind == "map" for s in internal)


def test_every_setting_read_from_the_graph_has_a_field_of_its_type() -> None:
    from pipediag.bench import structure

    hints = typing.get_type_hints(StageSettings)
    inputs = {name for read in structure._OP_INPUT_SETTINGS.values() for name, _ in read}
    for name in inputs | set(structure._ATTR_SETTINGS):
        assert hints[name] == structure._setting_type(name) | None, name


def test_effective_options_defaults_follow_tf_2_21() -> None:
    options = effective_options(tf.data.Dataset.range(3))

    assert options.cpu_count is not None and options.cpu_count >= 1
    assert options == PipelineOptions(cpu_count=options.cpu_count)


def test_effective_options_explicit_and_apply_default_optimizations_off() -> None:
    options = tf.data.Options()
    options.autotune.enabled = False
    options.deterministic = False
    options.threading.private_threadpool_size = 8
    options.experimental_optimization.apply_default_optimizations = False
    options.experimental_optimization.inject_prefetch = True
    ds = tf.data.Dataset.range(3).map(cheap_map).with_options(options)

    found = effective_options(ds)
    stages = describe(ds)

    assert found.autotune is False
    assert found.deterministic is False
    assert found.private_threadpool_size == 8
    # Defaults off unless asked for explicitly.
    assert found.map_parallelization is False
    assert found.inject_prefetch is True
    assert (stages[1].auto_parallel, stages[1].auto_parallel_blocker) == (False, "option off")


def test_modules_do_not_import_tensorflow() -> None:
    code = (
        "import sys, pipediag.bench.structure, pipediag.bench.stages; "
        "sys.exit('tensorflow' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], check=False, timeout=60)
    assert result.returncode == 0
