"""Scale-out, the pure part: blockers, the distribute point, the prediction, the code, the words.

Built reports and hand-made stages only: no TensorFlow, no service (those are in
tests/test_scale_out_service.py).
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from synthetic_reports import CostEvidence, synthetic_cost_report

from pipediag.renderers.scale_out import blocker_words, scale_out_lines
from pipediag.renderers.text import render_text
from pipediag.report.io import from_dict, to_dict
from pipediag.report.model import Report
from pipediag.report.reasons import Reason
from pipediag.report.scale_out import ScaleOut, ServiceBlocker, ServiceMeasurement
from pipediag.report.stages import StageStats
from pipediag.scale_out.analysis import (
    ASSUMED_NETWORK_BYTES_PER_S,
    distribute_point,
    enrich_report,
    host_cpu_is_limit,
    local_path_blocker,
    moved_share,
    predict,
    python_blockers,
    refused_blocker,
    shows_scale_out,
    stays_local,
)
from pipediag.scale_out.service import length_delimited, parse_address


def _chain(py_at: int | None = None, costs: list[float] | None = None) -> list[StageStats]:
    """source -> map(decode) -> batch -> prefetch, a Python call at stage `py_at`."""
    kinds = [("source", "TensorSliceDataset", None), ("map", "MapDataset", "decode")]
    kinds += [("batch", "BatchDatasetV2", None), ("prefetch", "PrefetchDataset", None)]
    stages = []
    for index, (kind, name, function) in enumerate(kinds):
        py = index == py_at
        stages.append(
            StageStats(
                index=index,
                kind=kind,
                name=name,
                function=function,
                source="train.py:12" if function else None,
                inputs=[index - 1] if index else [],
                uses_py_function=py,
                stateful_ops=["PyFunc"] if py else [],
                own_s_per_batch=None if costs is None else costs[index],
                batches_per_s=None if costs is None else 1.0 / max(1e-9, sum(costs[: index + 1])),
            )
        )
    return stages


def _report(section: ScaleOut, stages: list[StageStats] | None = None, **cost: float) -> Report:
    report = synthetic_cost_report(**cost)  # type: ignore[arg-type]
    pipeline = dataclasses.replace(report.pipeline, stages=stages or [])
    return dataclasses.replace(report, pipeline=pipeline, scale_out=section)


def _measured(where: str, **fields: object) -> ServiceMeasurement:
    base = {
        "where": where,
        "address": "dispatch:5050",
        "workers": 2,
        "measured": True,
        "batches_per_s": 100.0,
        "bytes_per_batch": 4e6,
        "transfer_batches_per_s": 500.0,
        "transfer_s_per_batch": 0.002,
        "consumer_cpu_s_per_batch": 0.0,
    }
    base.update(fields)
    return ServiceMeasurement(**base)  # type: ignore[arg-type]


# --- blockers and where distribute goes --------------------------------------------------------


def test_a_python_map_is_a_blocker_with_its_stage_and_line() -> None:
    # GIVEN a map that calls tf.numpy_function
    stages = _chain(py_at=1)
    # WHEN its blockers are listed
    (blocker,) = python_blockers(stages)
    # THEN it names the stage, the line and the op, and says what to do
    assert blocker.kind == "python-function"
    assert (blocker.stage_index, blocker.stage, blocker.source) == (1, "map(decode)", "train.py:12")
    assert (blocker.python_ops, blocker.generator) == (["tf.numpy_function"], False)
    assert "Port it to TF ops" in blocker_words(blocker)


def test_a_generator_source_says_to_write_files() -> None:
    stages = _chain()
    stages[0] = dataclasses.replace(
        stages[0], name="from_generator", function="gen", uses_py_function=True
    )
    (blocker,) = python_blockers(stages)
    assert blocker.stage_index == 0 and blocker.generator
    assert "TFRecord" in blocker_words(blocker)


@pytest.mark.parametrize(
    ("py_at", "cut"),
    [(None, 3), (3, 2), (2, 1), (1, 0), (0, None)],
)
def test_distribute_goes_after_the_last_stage_that_can_move(py_at: int | None, cut: int) -> None:
    # GIVEN a chain with a Python call at one stage (or none)
    stages = _chain(py_at=py_at)
    # THEN distribute goes after the stage just before it, or nowhere if the source calls Python
    assert distribute_point(stages, python_blockers(stages)) == cut


def test_local_paths_do_not_move_the_distribute_point() -> None:
    stages = _chain()
    blocker = local_path_blocker(stages[0], ["/data/a.tfrecord"], 1)
    assert distribute_point(stages, [blocker]) == 3


def test_a_zip_with_one_blocked_input_cannot_be_cut_below_it() -> None:
    # GIVEN zip(a, b(py)) -> batch
    stages = [
        StageStats(index=0, kind="source", name="RangeDataset"),
        StageStats(index=1, kind="source", name="from_generator", uses_py_function=True),
        StageStats(index=2, kind="zip", name="ZipDataset", inputs=[0, 1]),
        StageStats(index=3, kind="batch", name="BatchDatasetV2", inputs=[2]),
    ]
    assert distribute_point(stages, python_blockers(stages)) is None


def test_moved_share_and_the_stages_that_stay() -> None:
    stages = _chain(py_at=2, costs=[0.001, 0.006, 0.002, 0.001])
    cut = distribute_point(stages, python_blockers(stages))
    assert cut == 1
    assert moved_share(stages, cut) == pytest.approx(0.7)
    assert [s.kind for s in stays_local(stages, cut)] == ["batch", "prefetch"]


def test_local_files_are_named_by_folder_with_the_fix() -> None:
    stages = _chain()
    paths = [f"/data/shard-{i}.tfrecord" for i in range(3)]
    blocker = local_path_blocker(stages[0], paths, 16)
    assert blocker.kind == "local-path" and blocker.paths_total == 16
    words = blocker_words(blocker)
    assert "16 local files in /data/ (shard-0.tfrecord" in words
    assert "source: TensorSlice" in words
    assert "object store" in words
    shared = local_path_blocker(stages[0], paths[:1], 1, shared_fs="nfs4")
    assert shared.shared_fs == "nfs4"
    assert "nfs4" in blocker_words(shared) and "object store" not in blocker_words(shared)


def _sample_blockers() -> list[ServiceBlocker]:
    """One blocker of each kind and each wording, from hand-made stages."""
    stages = _chain(py_at=1)
    both_ops = dataclasses.replace(
        stages[1], source=None, stateful_ops=["EagerPyFunc", "PyFunc", "EagerPyFunc"]
    )
    no_ops = dataclasses.replace(stages[1], stateful_ops=[])
    generator = dataclasses.replace(
        stages[0], name="from_generator", function="gen", source="gen.py:3", uses_py_function=True
    )
    shards = [f"/data/shard-{i}.tfrecord" for i in range(3)]
    return [
        *python_blockers([stages[1], both_ops, no_ops, generator]),
        local_path_blocker(stages[0], shards, 16),
        local_path_blocker(None, shards[:1], 1, shared_fs="nfs4"),
        local_path_blocker(stages[1], ["/a/x.bin", "/b/y.bin"], 2),
        refused_blocker("InvalidArgumentError: boom", up_to=""),
        refused_blocker("", up_to="map(decode) (train.py:12)"),  # check.py said why
    ]


# Each sample's sentence as pipediag wrote it in `detail` before schema 9 typed the facts
# (an empty error was "no batch came back" in scale_out/check.py).
_PORT = (
    ": a worker cannot run this process's Python functions. Port it to TF ops (tf.image, "
    "tf.io, tf.strings), or keep it and the stages after it on this host"
)
_ELSEWHERE = (
    ": workers on other machines cannot see them: put them on a shared filesystem (NFS, "
    "mounted at the same path) or an object store (gs://, s3://) and read them from there; "
    "workers on this host (--scale-out) can read them"
)
_SENTENCES_AS_WRITTEN = [
    "map(decode) at train.py:12 calls tf.numpy_function" + _PORT,
    "map(decode) calls tf.numpy_function and tf.py_function" + _PORT,
    "map(decode) at train.py:12 calls Python (tf.py_function or tf.numpy_function)" + _PORT,
    "source(gen) at gen.py:3 runs a Python generator in this process: workers cannot call "
    "it. Write the data to TFRecord files, or build it with TF ops (from_tensor_slices, "
    "list_files + TFRecordDataset)",
    "source: TensorSlice reads 16 local files in /data/ (shard-0.tfrecord, shard-1.tfrecord, "
    "shard-2.tfrecord, ...)" + _ELSEWHERE,
    "the pipeline reads 1 local file (/data/shard-0.tfrecord): they are on a nfs4 filesystem: "
    "mount it at the same path on every worker",
    "map(decode) at train.py:12 reads 2 local files (/a/x.bin, /b/y.bin)" + _ELSEWHERE,
    "the service failed on the whole pipeline when tried: InvalidArgumentError: boom",
    "the service failed on the pipeline up to map(decode) (train.py:12) when tried: no batch "
    "came back",
]


def test_each_blocker_reads_as_the_sentence_it_replaced() -> None:
    # GIVEN blockers of each kind, holding facts
    blockers = _sample_blockers()
    # THEN their words are the sentences pipediag stored before, byte for byte
    assert [blocker_words(b) for b in blockers] == _SENTENCES_AS_WRITTEN


@pytest.mark.parametrize("version", [8, 9])
def test_an_older_reports_blocker_sentence_renders_as_written(version: int) -> None:
    # GIVEN a report whose blockers held their sentence (`detail`), as schema 8 and schema 9
    # before its typing of the facts wrote them
    section = ScaleOut(checked=True, requested=True, blockers=_sample_blockers())
    report = enrich_report(_report(section))
    old = to_dict(report)
    old["schema_version"] = version
    kept = ("kind", "stage_index", "stage", "source", "paths", "paths_total")
    old["scale_out"]["blockers"] = [
        {**{key: stored[key] for key in kept}, "detail": sentence}
        for stored, sentence in zip(
            old["scale_out"]["blockers"], _SENTENCES_AS_WRITTEN, strict=True
        )
    ]
    # WHEN it is read
    read = from_dict(old)
    # THEN each sentence is kept as written, and the section renders as the report made now
    assert read.scale_out is not None
    assert [b.detail_as_written for b in read.scale_out.blockers] == _SENTENCES_AS_WRITTEN
    assert scale_out_lines(read) == scale_out_lines(report)
    assert [f"blocker: {s}" for s in _SENTENCES_AS_WRITTEN] == scale_out_lines(report)[1:10]


# --- when the summary shows it -----------------------------------------------------------------


def test_host_cpu_is_the_limit_when_contention_dominates() -> None:
    assert host_cpu_is_limit(synthetic_cost_report(wait=0.04, contention=0.40))


def test_host_cpu_is_not_the_limit_for_a_waiting_pipeline_with_free_cores() -> None:
    report = synthetic_cost_report(
        wait=0.40, contention=0.02, evidence=CostEvidence(pipeline_cores_busy=0.2)
    )
    report = dataclasses.replace(report, host=dataclasses.replace(report.host, samples=[]))
    assert not host_cpu_is_limit(report)


def test_shown_when_asked_for_or_input_bound_on_a_busy_host() -> None:
    section = ScaleOut(checked=True, compatible=True, distribute_after_index=3)
    busy = _report(section, _chain(), wait=0.04, contention=0.40)
    assert shows_scale_out(busy)
    compute = dataclasses.replace(
        busy, verdict=dataclasses.replace(busy.verdict, label="compute-bound")
    )
    assert not shows_scale_out(compute)
    asked = dataclasses.replace(compute, scale_out=dataclasses.replace(section, requested=True))
    assert shows_scale_out(asked)


# --- the prediction ----------------------------------------------------------------------------


def test_prediction_from_the_pipeline_alone_and_local_transfer() -> None:
    # GIVEN the whole pipeline can move, measured through local workers
    section = ScaleOut(
        checked=True,
        compatible=True,
        distribute_after_index=3,
        moves_whole_pipeline=True,
        measurements=[_measured("local", bytes_per_batch=1000.0)],
    )
    report = _report(section, _chain(), wait=0.04, contention=0.40)
    p = predict(report)
    # THEN a worker makes what the pipeline alone made here; T sets the rate
    target = report.verdict.compute_alone_steps_per_s
    assert target is not None
    assert (p.per_worker_batches_per_s, p.per_worker_source) == (60.0, "pipeline-alone")
    assert (p.transfer_batches_per_s, p.transfer_source) == (500.0, "local-service")
    assert p.limited_by == "compute"
    assert p.predicted_steps_per_s == pytest.approx(target)
    assert p.workers_needed == math.ceil(target / 60.0)
    assert p.predicted_speedup == pytest.approx(target / 25.0)


def test_receiving_costs_the_train_step_cpu() -> None:
    section = ScaleOut(
        checked=True,
        distribute_after_index=3,
        moves_whole_pipeline=True,
        measurements=[_measured("local", bytes_per_batch=1000.0, consumer_cpu_s_per_batch=0.01)],
    )
    report = _report(section, _chain(), wait=0.04, contention=0.40)
    target = report.verdict.compute_alone_steps_per_s
    assert target is not None
    cores = report.environment.cpu_count or report.host.cpu_count
    # T becomes 1 / (1/T + c/n)
    expected = 1.0 / (1.0 / target + 0.01 / cores)
    assert predict(report).predicted_steps_per_s == pytest.approx(expected)


def test_big_batches_are_limited_by_the_assumed_network_without_a_cluster() -> None:
    # 100 MB per batch over 10 Gbit/s: 12.5 batches/s, below the train step alone
    section = ScaleOut(
        checked=True,
        distribute_after_index=3,
        moves_whole_pipeline=True,
        measurements=[_measured("local", bytes_per_batch=100e6)],
    )
    p = predict(_report(section, _chain(), wait=0.04, contention=0.40))
    assert p.limited_by == "transfer" and p.transfer_source == "assumed-network"
    assert p.predicted_steps_per_s == pytest.approx(ASSUMED_NETWORK_BYTES_PER_S / 100e6)
    assert p.workers_needed == 1


def test_a_cluster_measurement_gives_the_per_worker_rate() -> None:
    section = ScaleOut(
        checked=True,
        distribute_after_index=3,
        moves_whole_pipeline=True,
        measurements=[
            _measured("local"),
            _measured("cluster", per_worker_batches_per_s=10.0, transfer_batches_per_s=30.0),
        ],
    )
    p = predict(_report(section, _chain(), wait=0.04, contention=0.40))
    assert (p.per_worker_batches_per_s, p.per_worker_source) == (10.0, "cluster")
    assert (p.transfer_source, p.limited_by, p.workers_needed) == (
        "cluster",
        "transfer",
        3,
    )


def test_stages_left_on_this_host_cap_the_prediction() -> None:
    # GIVEN a Python stage after the batch: the prefix moves, 5 ms per batch stays here
    stages = _chain(py_at=3, costs=[0.001, 0.010, 0.001, 0.005])
    cut = distribute_point(stages, python_blockers(stages))
    section = ScaleOut(checked=True, distribute_after_index=cut, moves_whole_pipeline=False)
    p = predict(_report(section, stages, wait=0.04, contention=0.40))
    assert p.per_worker_source == "stage-timing"
    assert p.per_worker_batches_per_s == pytest.approx(1 / 0.012)
    assert p.local_s_per_batch == pytest.approx(0.005)
    # 200 batches/s from the local stage is above T here: compute still limits
    assert p.limited_by == "compute"
    slow = dataclasses.replace(stages[3], own_s_per_batch=0.05)
    p = predict(_report(section, [*stages[:3], slow], wait=0.04, contention=0.40))
    assert p.limited_by == "local-stages" and p.predicted_steps_per_s == pytest.approx(20.0)


def test_no_prediction_when_nothing_can_move() -> None:
    section = ScaleOut(checked=True, compatible=False, distribute_after_index=None)
    p = predict(_report(section, _chain(py_at=0)))
    assert p.workers_needed is None and p.reason is not None


# --- code and words ----------------------------------------------------------------------------


def test_code_to_paste_places_distribute_with_its_mode_and_the_epoch_note() -> None:
    stages = _chain(py_at=3, costs=[0.001, 0.010, 0.001, 0.005])
    section = ScaleOut(
        checked=True,
        distribute_after_index=2,
        distribute_after="batch",
        requested=True,
        measurements=[_measured("cluster", per_worker_batches_per_s=40.0)],
    )
    report = enrich_report(_report(section, stages, wait=0.04, contention=0.40))
    assert report.scale_out is not None
    code = report.scale_out.code
    assert "DispatchServer" in code and "WorkerServer" in code
    assert 'dispatcher_address="dispatch:5050"' in code
    assert 'processing_mode="parallel_epochs", service="grpc://dispatch:5050"' in code
    assert "in the training script, after batch:" in code
    assert "stay here: prefetch" in code
    assert "distributed_epoch" in code and "steps_per_epoch" in code
    compile("\n".join(line for line in code.splitlines() if not line.startswith("#")), "c", "exec")


def test_summary_lines_say_what_was_measured_where() -> None:
    section = ScaleOut(
        checked=True,
        compatible=True,
        distribute_after_index=3,
        distribute_after="prefetch",
        moves_whole_pipeline=True,
        requested=True,
        measurements=[
            _measured(
                "local",
                startup_s=4.5,
                local_batches_per_s=60.0,
                notes=[Reason("one-host", value=2, limit=2)],
            ),
            ServiceMeasurement(
                where="cluster",
                address="10.0.0.9:5050",
                reason=Reason("service-error", detail="no tf.data dispatcher answered"),
            ),
        ],
    )
    report = enrich_report(_report(section, _chain(), wait=0.04, contention=0.40))
    text = "\n".join(scale_out_lines(report))
    assert "the whole pipeline can move; distribute after prefetch" in text
    assert "this host, 2 local workers (started in 4.5 s)" in text
    assert "100.0 batches/s through the service vs 60.0 in this process" in text
    assert "3.8 MiB per batch" in text and "transfer 2.00 ms per batch" in text
    assert "note: one host: the 2 workers shared its 2 cores;" in text
    assert "grpc://10.0.0.9:5050: not measured: no tf.data dispatcher answered" in text
    assert "prediction:" in text and "code:" in text
    assert "Scale out" in render_text(report)


def test_not_shown_for_a_compute_bound_run_nobody_asked_about() -> None:
    section = ScaleOut(checked=True, compatible=True, distribute_after_index=3)
    report = _report(section, _chain(), wait=0.01, contention=0.0)
    report = enrich_report(report)
    assert scale_out_lines(report) == []
    assert "Scale out" not in render_text(report)


def test_old_reports_and_empty_ones_render_without_the_section() -> None:
    assert scale_out_lines(Report(script="x.py")) == []
    assert "Scale out" not in render_text(Report(script="x.py"))


def test_the_section_round_trips_through_json() -> None:
    section = ScaleOut(
        checked=True,
        blockers=[refused_blocker("InvalidArgumentError: boom", up_to="")],
        measurements=[_measured("local")],
        stages=_chain(),
    )
    report = enrich_report(_report(section, [], wait=0.04, contention=0.40))
    again = from_dict(to_dict(report))
    assert again == report
    old = to_dict(report)
    del old["scale_out"]
    assert from_dict(old).scale_out is None


@pytest.mark.parametrize(
    ("part", "up_to", "shown"),
    [
        ("whole pipeline", "", "measured on this host, 2 local workers (started"),
        (
            "pipeline up to map (py_function)",
            "map (py_function)",
            "measured on this host, 2 local workers (started in 4.5 s) (pipeline up to "
            "map (py_function)): ",
        ),
    ],
)
def test_a_version_8_measurement_in_words_reads_as_its_stage(
    part: str, up_to: str, shown: str
) -> None:
    # GIVEN a version 8 report, whose measurement said in words what it read
    section = ScaleOut(checked=True, compatible=True, requested=True)
    measured = _measured("local", startup_s=4.5, up_to=up_to)
    report = enrich_report(_report(dataclasses.replace(section, measurements=[measured])))
    old = to_dict(report)
    (stored,) = old["scale_out"]["measurements"]
    del stored["up_to"]
    stored["part"] = part
    old["schema_version"] = 8
    # WHEN it is read
    read = from_dict(old)
    # THEN the words are the stage's label alone, and it renders as a report made now
    assert read.scale_out is not None and read.scale_out.measurements == [measured]
    text = "\n".join(scale_out_lines(read))
    assert text == "\n".join(scale_out_lines(report))
    assert shown in " ".join(text.split())


# --- small parsers -----------------------------------------------------------------------------


def test_dispatcher_addresses() -> None:
    assert parse_address("grpc://host-1.example:5050") == "host-1.example:5050"
    assert parse_address("10.0.0.2:5050") == "10.0.0.2:5050"
    for bad in ("host", "grpc://host:", "http://host:5050", "host:99999"):
        with pytest.raises(ValueError):
            parse_address(bad)


def test_workers_read_from_the_wire_format() -> None:
    # GetWorkersResponse with two WorkerInfo { address = 1; id = 2 }
    def info(address: bytes, worker_id: int) -> bytes:
        inner = b"\x0a" + bytes([len(address)]) + address + b"\x10" + bytes([worker_id])
        return b"\x0a" + bytes([len(inner)]) + inner

    reply = info(b"localhost:1234", 1) + info(b"w2:99", 2)
    infos = length_delimited(reply, 1)
    assert [length_delimited(i, 1) for i in infos] == [[b"localhost:1234"], [b"w2:99"]]
    with pytest.raises(ValueError):
        length_delimited(b"\x0a\x85", 1)


def test_the_png_shows_the_status_and_prediction_at_the_foot_of_its_fixes() -> None:
    from pipediag.renderers.png import build_figure
    from pipediag.renderers.scale_out import scale_out_headlines

    section = ScaleOut(
        checked=True,
        compatible=True,
        distribute_after_index=3,
        distribute_after="prefetch",
        moves_whole_pipeline=True,
        requested=True,
        measurements=[_measured("local", startup_s=4.5, local_batches_per_s=60.0)],
    )
    report = enrich_report(_report(section, _chain(), wait=0.04, contention=0.40))
    headlines = scale_out_headlines(report)
    assert headlines[0] == "tf.data service: the whole pipeline can move; distribute after prefetch"
    assert len(headlines) <= 2
    drawn = [t.get_text() for t in build_figure(report).texts if t.get_gid() == "scale-out"]
    assert drawn and drawn[0].startswith(headlines[0][:40])
    # a compute-bound run nobody asked about does not show the section: nothing of it is drawn
    quiet = dataclasses.replace(section, requested=False)
    hidden = enrich_report(_report(quiet, _chain(), wait=0.01, contention=0.0))
    assert hidden.scale_out is not None and not hidden.scale_out.shown
    assert not [t for t in build_figure(hidden).texts if t.get_gid() == "scale-out"]
