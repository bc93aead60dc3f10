"""Scale-out on a real tf.data service: a dispatcher and two workers on localhost (CI has no
cluster), standing in for a cluster where `--data-service` is tested.

Start-up is mostly TensorFlow's import in each server process (seconds on 2 cores), so one
service serves the module; `--scale-out` starts (and must stop) its own.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runner import ENV

from pipediag.bench.pipeline import benchmark_dataset
from pipediag.bench.structure import walk
from pipediag.config import RunConfig
from pipediag.renderers.reason_words import reason_words
from pipediag.report.model import PipelineBenchmark
from pipediag.report.reasons import Reason
from pipediag.scale_out.check import check_scale_out
from pipediag.scale_out.local_files import find_local_files
from pipediag.scale_out.service import LocalService, ServiceError, probe_dispatcher
from pipediag.scale_out.train import train_through

pytestmark = pytest.mark.tensorflow

SERVER_MODULE = "pipediag.scale_out.server"


def _servers() -> list[int]:
    """Service servers this test process started and that are still running."""
    import psutil

    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if SERVER_MODULE in " ".join(child.cmdline()):
                found.append(child.pid)
        except psutil.Error:  # noqa: PERF203 - a process that ended meanwhile
            continue
    return found


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalService]:
    pytest.importorskip("tensorflow")
    with LocalService(2) as service:
        yield service
    assert _servers() == [], "a tf.data server outlived the service that started it"


@pytest.fixture
def tf() -> Any:
    return pytest.importorskip("tensorflow")


def _pipeline(rate: float = 100.0) -> PipelineBenchmark:
    return PipelineBenchmark(measured=True, batches_per_s=rate, cpu_s_per_batch=0.001)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _doubled(value: Any) -> Any:
    return value * 2


def python_map(x: Any) -> Any:
    import tensorflow as tf

    return tf.py_function(_doubled, [x], tf.int64)


def features(x: Any) -> tuple[Any, Any]:
    import tensorflow as tf

    return tf.fill([16], tf.cast(x, tf.float32)), x


# --- the service itself ------------------------------------------------------------------------


def test_the_dispatcher_lists_its_workers(cluster: LocalService) -> None:
    workers = probe_dispatcher(cluster.address)
    assert len(workers) == 2
    assert all(w.startswith("localhost:") for w in workers)


def test_a_start_that_times_out_leaves_no_process(cluster: LocalService) -> None:
    before = set(_servers())  # the module's own service
    began = time.monotonic()
    with pytest.raises(ServiceError) as error:
        LocalService(1, start_timeout_s=0.05).start()
    assert error.value.reason == Reason("servers-not-started", limit=0.05)
    assert reason_words(error.value.reason) == (
        "the local tf.data servers did not start within 0.05 s"
    )
    assert set(_servers()) == before
    assert time.monotonic() - began < 5  # servers still importing are terminated, not awaited


def test_an_address_that_does_not_answer_is_one_line() -> None:
    began = time.monotonic()
    with pytest.raises(ServiceError) as error:
        probe_dispatcher(f"127.0.0.1:{_closed_port()}")
    address = error.value.reason.detail
    assert error.value.reason.code == "no-dispatcher-answer"
    assert reason_words(error.value.reason).startswith(
        f"no tf.data dispatcher answered at {address} within 2 s ("
    )
    assert "\n" not in reason_words(error.value.reason)
    assert time.monotonic() - began < 10  # the probe's own timeout is 2 s


# --- compatibility -----------------------------------------------------------------------------


def test_a_py_function_pipeline_gets_its_blocker_with_the_line(
    tf: Any, cluster: LocalService
) -> None:
    # GIVEN a map calling tf.py_function before the batch
    ds = tf.data.Dataset.range(64).map(python_map).batch(8)
    config = RunConfig(data_service=cluster.target)
    # WHEN it is checked against the service
    section = check_scale_out(walk(ds), _pipeline(), config)
    # THEN the blocker names the map and the line of its function
    line = inspect.getsourcelines(python_map)[1]
    (blocker,) = section.blockers
    assert blocker.kind == "python-function"
    assert blocker.source == f"test_scale_out_service.py:{line}"
    assert blocker.stage == "map(python_map)" and blocker.python_ops == ["tf.py_function"]
    assert section.compatible is False
    # the range before it could move, but stage costs are unknown here: it is measured
    assert section.distribute_after_index == 0
    (measured,) = section.measurements
    assert measured.measured and measured.up_to.startswith("source")
    # its rate is in output batches: 8 elements make one
    assert measured.bytes_per_batch == 8 * 8


def test_a_py_function_after_the_batch_leaves_the_batch_to_the_workers(
    tf: Any, cluster: LocalService
) -> None:
    ds = tf.data.Dataset.range(10_000).map(features).batch(8).map(lambda a, b: (a, python_map(b)))
    section = check_scale_out(walk(ds), _pipeline(), RunConfig(data_service=cluster.target))
    stages = section.stages
    assert section.distribute_after_index is not None
    assert stages[section.distribute_after_index].kind == "batch"
    (measured,) = section.measurements
    assert measured.measured and measured.batches_per_s and measured.batches_per_s > 0


def test_a_python_source_moves_nothing_and_sends_nothing(tf: Any, cluster: LocalService) -> None:
    def rows() -> Iterator[int]:
        yield from range(32)

    ds = tf.data.Dataset.from_generator(rows, output_signature=tf.TensorSpec((), tf.int64)).batch(4)
    section = check_scale_out(walk(ds), _pipeline(), RunConfig(data_service=cluster.target))
    assert section.distribute_after_index is None and section.measurements == []
    assert [b.stage_index for b in section.blockers] == [0]
    assert Reason("nothing-sent") in section.notes


def test_local_files_are_found_with_the_stage_that_reads_them(tf: Any, tmp_path: Path) -> None:
    paths = []
    for i in range(4):
        path = tmp_path / f"shard-{i}.tfrecord"
        with tf.io.TFRecordWriter(str(path)) as writer:
            writer.write(b"record")
        paths.append(str(path))
    spec = {"x": tf.io.FixedLenFeature([], tf.string)}  # a feature key is not a path
    listed = tf.data.TFRecordDataset(paths).map(lambda r: tf.io.parse_single_example(r, spec))
    globbed = tf.data.Dataset.list_files(str(tmp_path / "*.tfrecord"), shuffle=False)
    inside = tf.data.Dataset.range(2).interleave(lambda _: tf.data.TFRecordDataset(paths[0]))
    remote = tf.data.TFRecordDataset(["gs://bucket/a.tfrecord"])
    for ds, total, kind in ((listed, 4, "source"), (globbed, 4, "source"), (inside, 1, "flat-map")):
        walked = walk(ds)
        (found,) = find_local_files(walked)
        assert found.total == total and set(found.paths) <= set(paths)
        assert found.stage_index is not None
        assert walked.stages[found.stage_index].stats.kind in (kind, "interleave")
    assert find_local_files(walk(remote)) == []
    section = check_scale_out(walk(listed), _pipeline(), RunConfig())
    (blocker,) = section.blockers
    assert blocker.kind == "local-path" and blocker.paths_total == 4
    # local files do not pin any stage: the whole pipeline can move once they are shared
    assert section.moves_whole_pipeline


# --- measured through the service --------------------------------------------------------------


def test_a_pure_tf_pipeline_is_measured_through_the_service(tf: Any, cluster: LocalService) -> None:
    ds = tf.data.Dataset.range(100_000).map(features).batch(8).prefetch(2)
    section = check_scale_out(walk(ds), _pipeline(50.0), RunConfig(data_service=cluster.target))
    assert section.compatible and section.moves_whole_pipeline
    (m,) = section.measurements
    assert m.measured, m.reason
    assert (m.where, m.workers, m.processing_mode) == ("cluster", 2, "parallel_epochs")
    assert m.batches_per_s and m.batches and m.duration_s > 0
    assert m.per_worker_batches_per_s == pytest.approx(m.batches_per_s / 2)
    assert m.local_batches_per_s == 50.0
    assert m.bytes_per_batch == 8 * 16 * 4 + 8 * 8  # float32[8, 16] and int64[8]
    assert m.transfer_batches_per_s and m.transfer_s_per_batch
    assert m.transfer_s_per_batch == pytest.approx(1 / m.transfer_batches_per_s)
    assert m.consumer_cpu_s_per_batch is not None


def test_scale_out_starts_its_own_workers_and_stops_them(tf: Any) -> None:
    ds = tf.data.Dataset.range(100_000).map(features).batch(8)
    before = set(_servers())
    began = time.monotonic()
    section = check_scale_out(walk(ds), _pipeline(), RunConfig(scale_out_workers=2))
    (m,) = section.measurements
    assert m.measured, m.reason
    assert (m.where, m.workers) == ("local", 2)
    assert m.startup_s is not None and 0 < m.startup_s <= m.wall_time_s
    assert m.worker_cpu_s_per_batch is not None and m.worker_cpu_s_per_batch > 0
    assert Reason("one-host", value=2, limit=os.cpu_count()) in m.notes
    assert section.wall_time_s <= time.monotonic() - began
    assert set(_servers()) == before


def test_what_the_service_refuses_when_tried_becomes_a_blocker(
    tf: Any, cluster: LocalService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a pipeline no static check objects to, that fails on the workers
    import pipediag.scale_out.check as scale_out

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise tf.errors.InvalidArgumentError(
            None,
            None,
            "Failed to get element from worker w:1: Failed to get element: "
            "NotFoundError: /only/here.bin; No such file or directory\nmore plumbing",
        )

    monkeypatch.setattr(scale_out, "read_through", refuse)
    ds = tf.data.Dataset.range(100).batch(4)
    section = check_scale_out(walk(ds), _pipeline(), RunConfig(data_service=cluster.target))
    # THEN its error is a blocker, in one line, and nothing is said to move as is
    (blocker,) = section.blockers
    assert blocker.kind == "refused"
    assert "NotFoundError: /only/here.bin" in blocker.error and "\n" not in blocker.error
    assert section.compatible is False and section.distribute_after_index is None
    (m,) = section.measurements
    assert not m.measured


def test_an_unanswered_dispatcher_is_one_note_and_the_rest_stays(tf: Any) -> None:
    ds = tf.data.Dataset.range(1000).map(features).batch(8)
    notes: list[Reason] = []
    address = f"grpc://127.0.0.1:{_closed_port()}"
    section = check_scale_out(
        walk(ds), _pipeline(), RunConfig(data_service=address), note=notes.append
    )
    (m,) = section.measurements
    assert not m.measured and m.reason is not None and m.reason.code == "service-error"
    assert "no tf.data dispatcher answered" in reason_words(m.reason)
    assert len(notes) == 1 and notes[0].code == "data-service-failed"
    assert "\n" not in reason_words(notes[0])
    # the static check still stands
    assert section.compatible and section.distribute_after_index is not None


# --- the user's training is untouched ----------------------------------------------------------


def _training_run(tf: Any, service: LocalService | None) -> tuple[list[float], float | None]:
    """Two epochs of fit on a shuffled, randomly augmented pipeline; between them, the check
    (with training through the service) when `service` is given."""
    import keras

    keras.utils.set_random_seed(7)
    gen = tf.random.Generator.from_seed(3)
    x = tf.random.stateless_normal((256, 16), seed=[1, 2])
    y = tf.reduce_sum(x, axis=1, keepdims=True)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(256, seed=5)
    ds = ds.map(lambda a, b: (a + gen.normal(a.shape) * 0.1, b)).batch(32).prefetch(2)
    model = keras.Sequential(
        [
            keras.layers.Input((16,)),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dropout(0.3),
            keras.layers.Dense(1),
        ]
    )
    model.compile(keras.optimizers.Adam(0.01), "mse")
    losses: list[float] = []

    class Record(keras.callbacks.Callback):  # type: ignore[misc]
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            losses.append(float(logs["loss"]))

    model.fit(ds, epochs=1, verbose=0, callbacks=[Record()])
    rate = None
    if service is not None:
        config = RunConfig(data_service=service.target, data_service_train=True)
        train = functools.partial(train_through, model, "keras-fit")
        section = check_scale_out(walk(ds), _pipeline(), config, train=train)
        (m,) = section.measurements
        assert m.measured, m.reason
        rate = m.train_steps_per_s
        assert rate is not None, m.train_reason
    model.fit(ds, epochs=1, verbose=0, callbacks=[Record()])
    return losses, rate


def test_the_check_leaves_training_and_its_losses_unchanged(tf: Any, cluster: LocalService) -> None:
    plain, _ = _training_run(tf, None)
    checked, rate = _training_run(tf, cluster)
    assert checked == plain
    assert rate is not None and rate > 0


def test_benchmark_then_check_keeps_the_users_iterator(tf: Any, cluster: LocalService) -> None:
    # GIVEN a seeded shuffle: another iterator drawing seeds would change the user's order
    ds = tf.data.Dataset.range(64).shuffle(64, seed=1).batch(8)
    expected = [b.numpy().tolist() for b in ds]
    ds = tf.data.Dataset.range(64).shuffle(64, seed=1).batch(8)
    pipeline = benchmark_dataset(ds, max_batches=4, max_seconds=1.0)
    check_scale_out(walk(ds), pipeline, RunConfig(data_service=cluster.target))
    assert [b.numpy().tolist() for b in ds] == expected


# --- end to end --------------------------------------------------------------------------------

SCRIPT = """
import sys
import keras
import tensorflow as tf

keras.utils.set_random_seed(0)
x = tf.random.stateless_normal((2048, 32), seed=[1, 2])
y = tf.cast(tf.reduce_sum(x, axis=1) > 0, tf.int64)

def heavy(a, b):
    for _ in range(8):
        a = tf.tanh(tf.linalg.matvec(tf.eye(32) * 1.01, a))
    return a, b

ds = tf.data.Dataset.from_tensor_slices((x, y)).map(heavy).batch(32).prefetch(2)
model = keras.Sequential([keras.layers.Input((32,)), keras.layers.Dense(2)])
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(ds, epochs=2, verbose=0)
print("trained")
"""


def test_cli_scale_out_and_an_unanswered_data_service(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    out = tmp_path / "out"
    dead = f"grpc://127.0.0.1:{_closed_port()}"
    # Servers inherit the environment: the marker finds any this run left behind.
    marker = f"pipediag-test-{os.getpid()}-{time.monotonic_ns()}"
    run = subprocess.run(
        [sys.executable, "-m", "pipediag", "run", "--scale-out", "1", "--data-service", dead]
        # (nothing here reads the deep phase: it is kept short)
        + ["--deep-seconds", "3", "--out", str(out), str(script)],
        env={**ENV, "PIPEDIAG_TEST_MARKER": marker},
        capture_output=True,
        text=True,
        timeout=300,
    )
    # THEN the diagnosis completes with the script's exit status
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert report["verdict"]["label"] != "unknown"
    section = report["scale_out"]
    local, remote = section["measurements"]
    assert local["where"] == "local" and local["measured"], local["reason"]
    assert remote["where"] == "cluster" and not remote["measured"]
    notes = [n for n in report["notes"] if n["code"] == "data-service-failed"]
    assert len(notes) == 1 and notes[0]["because"]["because"]["code"] == "no-dispatcher-answer"
    summary = (out / "summary.txt").read_text()
    assert "Scale out" in summary and "through the service" in summary
    assert "processing_mode=" in summary
    assert _orphans(marker) == []


def _orphans(marker: str) -> list[int]:
    """Server processes started under `marker` (inherited environment) still running."""
    import psutil

    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            cmdline = " ".join(process.info["cmdline"] or [])
            if SERVER_MODULE in cmdline and process.environ().get("PIPEDIAG_TEST_MARKER") == marker:
                found.append(process.pid)
        except psutil.Error:  # noqa: PERF203 - a process that ended meanwhile
            continue
    return found
