"""pipediag's own errors (a rewrite that cannot be applied, a tf.data service that fails) carry
a code with its parameters; the renderers word them, as the sentences they were before."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import get_args

import pytest
from synthetic_reports import synthetic_report

from pipediag.bench.graph_edit import PipelineGraph, RewriteError
from pipediag.errors import describe_error
from pipediag.renderers.reason_words import reason_words
from pipediag.renderers.text import render_text
from pipediag.report import io
from pipediag.report.reasons import (
    Reason,
    ReasonedError,
    RewriteFailure,
    ServiceFailure,
    error_reason,
)
from pipediag.scale_out.service import ServiceError


def test_a_rewrite_that_cannot_be_applied_reads_as_its_sentence() -> None:
    # GIVEN a rewrite refused on an op it does not know
    error = RewriteError("not-a-known-map", detail="BatchDatasetV2")
    # THEN the error holds the code, and the trial's reason reads as before
    assert error.reason == Reason("not-a-known-map", detail="BatchDatasetV2")
    assert reason_words(Reason("cannot-rewrite", because=error.reason)) == (
        "cannot rewrite: BatchDatasetV2 is not a map this rewrite knows"
    )
    # AND caught as any error is, it reads as `describe_error` put it
    assert reason_words(Reason("check-failed", because=error.one_line_reason())) == (
        "could not be checked: RewriteError: BatchDatasetV2 is not a map this rewrite knows"
    )


def test_a_service_that_does_not_answer_reads_as_its_sentence() -> None:
    # GIVEN a dispatcher that did not answer
    status = Reason("grpc-status", detail="UNAVAILABLE")
    error = ServiceError("no-dispatcher-answer", detail="10.0.0.9:5050", limit=2.0, because=status)
    # THEN the run's note reads as before
    note = Reason("data-service-failed", because=Reason("service-error", because=error.reason))
    assert reason_words(note) == (
        "--data-service: no tf.data dispatcher answered at 10.0.0.9:5050 within 2 s (UNAVAILABLE)"
    )
    # AND a server's own error output is its words, as it said them
    failed = ServiceError(
        "server-failed-to-start", detail="worker", because=Reason("exception", detail="OOM")
    )
    assert reason_words(failed.reason) == "the local tf.data worker failed to start: OOM"


def test_a_report_that_holds_the_old_words_renders_them_as_before() -> None:
    # GIVEN a report written before these errors were typed: their words in `detail`
    old = Reason("service-error", detail="the service delivered no batch within 20 s")
    saved = io.to_dict(dataclasses.replace(synthetic_report(), notes=[old]))
    # WHEN it is read back and rendered
    report = io.from_dict(saved)
    # THEN the words are as they were, and a new report's typed reason says the same
    assert report.notes == [old]
    assert "note: the service delivered no batch within 20 s\n" in render_text(report)
    typed = Reason("service-error", because=ServiceError("no-batch-within", limit=20.0).reason)
    assert reason_words(typed) == reason_words(old)


# Every failure's words, as the sentence pipediag wrote before the failures were typed.
SENTENCES: list[tuple[ReasonedError, str]] = [
    (RewriteError("no-graph-node", detail="MapDataset/_3"), "no node 'MapDataset/_3'"),
    (RewriteError("no-output-node"), "the graph has no output node"),
    (
        RewriteError("op-has-no-input", detail="BatchDatasetV2", value=-1),
        "BatchDatasetV2 has no input -1",
    ),
    (
        RewriteError("not-a-known-map", detail="FilterDataset"),
        "FilterDataset is not a map this rewrite knows",
    ),
    (
        RewriteError("not-a-known-interleave", detail="MapDataset"),
        "MapDataset is not an interleave this rewrite knows",
    ),
    (
        RewriteError("not-a-known-shuffle", detail="TakeDataset"),
        "TakeDataset is not a shuffle this rewrite knows",
    ),
    (
        RewriteError("not-a-plain-batch", detail="PaddedBatchDatasetV2"),
        "PaddedBatchDatasetV2 is not a plain batch: the map cannot move after it",
    ),
    (RewriteError("map-read-elsewhere"), "the map's output is read by more than its batch"),
    (RewriteError("batch-not-after-map"), "the batch does not read the map"),
    (RewriteError("map-not-after-shuffle"), "the map does not read the shuffle"),
    (
        RewriteError("shuffle-read-elsewhere"),
        "the shuffle's output is read by more than the map",
    ),
    (
        RewriteError("captures-differ-on-batch"),
        "the function captures other values when traced on a batch",
    ),
    (RewriteError("already-kept", detail="cache"), "cache is already kept"),
    (
        RewriteError("no-rewrite-kept", detail="vectorize"),
        "vectorize cannot be applied again: no rewrite kept with it",
    ),
    (
        RewriteError("walked-graph-not-kept"),
        "the dataset graph is unavailable: no fix kept the walked graph",
    ),
    (RewriteError("no-rewrite-for-fix"), "no rewrite for this fix"),
    (
        RewriteError("generator-unread", detail="StopIteration: the generator is empty"),
        "StopIteration: the generator is empty",
    ),
    (RewriteError("generator-unread"), "the generator could not be read"),
    (ServiceError("no-grpcio"), "grpcio is not installed: cannot reach a dispatcher"),
    (
        ServiceError("not-a-dispatcher", detail="10.0.0.9:5050"),
        "10.0.0.9:5050 answers gRPC but is not a tf.data dispatcher",
    ),
    (
        ServiceError(
            "no-dispatcher-answer",
            detail="10.0.0.9:5050",
            limit=2.5,
            because=Reason("grpc-status", detail="DEADLINE_EXCEEDED"),
        ),
        "no tf.data dispatcher answered at 10.0.0.9:5050 within 2.5 s (DEADLINE_EXCEEDED)",
    ),
    (
        ServiceError(
            "no-dispatcher-answer", detail="host:1", limit=2.0, because=Reason("grpc-status")
        ),
        "no tf.data dispatcher answered at host:1 within 2 s (no answer)",
    ),
    (
        ServiceError("servers-not-started", limit=60.0),
        "the local tf.data servers did not start within 60 s",
    ),
    (
        ServiceError(
            "server-failed-to-start",
            detail="dispatcher",
            because=Reason("exception", detail="OSError: [Errno 98] Address already in use"),
        ),
        "the local tf.data dispatcher failed to start: OSError: [Errno 98] Address already in use",
    ),
    (
        ServiceError("server-failed-to-start", detail="worker", because=Reason("no-error-output")),
        "the local tf.data worker failed to start: no error output",
    ),
    (
        ServiceError(
            "workers-not-registered",
            value=1,
            limit=2,
            because=Reason("start-timeout", limit=0.5),
        ),
        "only 1 of 2 local workers registered within 0.5 s",
    ),
    (
        ServiceError("service-stalled", limit=12.4),
        "the service delivered nothing more within 12 s",
    ),
    (ServiceError("no-batch-within", limit=20.0), "the service delivered no batch within 20 s"),
    (
        ServiceError("service-dataset-ended"),
        "the service's dataset ended during the training read",
    ),
]


@pytest.mark.parametrize(
    ("error", "sentence"), SENTENCES, ids=[error.reason.code for error, _ in SENTENCES]
)
def test_each_failure_reads_as_its_sentence(error: ReasonedError, sentence: str) -> None:
    # GIVEN a failure of pipediag's own, with concrete parameters
    # THEN its words are the sentence it was raised with before it was typed
    assert reason_words(error.reason) == sentence
    # AND, caught as any error is, it reads as `TypeName: message`
    assert reason_words(error.one_line_reason()) == f"{type(error).__name__}: {sentence}"


def test_every_failure_code_has_its_sentence_pinned() -> None:
    # GIVEN the codes pipediag's own errors carry
    codes = {*get_args(RewriteFailure), *get_args(ServiceFailure)}
    # THEN each is in the table above
    assert codes == {error.reason.code for error, _ in SENTENCES}


def _node(name: str, op: str, *inputs: str) -> SimpleNamespace:
    return SimpleNamespace(name=name, op=op, input=list(inputs))


def test_an_empty_graph_raises_the_typed_failure() -> None:
    # GIVEN a graph with no nodes
    graph = PipelineGraph(SimpleNamespace(node=[]))
    # WHEN an edit looks for a node, the output or an input that is not there
    with pytest.raises(RewriteError) as no_node:
        graph.node("map")
    with pytest.raises(RewriteError) as no_output:
        graph.set_output("batch")
    with pytest.raises(RewriteError) as no_input:
        graph.set_input(_node("b", "BatchDatasetV2", "x"), 3, 1)
    # THEN each error carries its code and parameters
    assert no_node.value.reason == Reason("no-graph-node", detail="map")
    assert no_output.value.reason == Reason("no-output-node")
    assert no_input.value.reason == Reason("op-has-no-input", detail="BatchDatasetV2", value=3)


def test_an_op_a_rewrite_does_not_know_raises_the_typed_failure() -> None:
    # GIVEN a graph of a filter
    graph = PipelineGraph(SimpleNamespace(node=[_node("filter", "FilterDataset", "x")]))
    # WHEN a rewrite meets an op it does not know, THEN the op is named in the reason
    with pytest.raises(RewriteError) as raised:
        graph.parallelize_map("filter")
    assert reason_words(raised.value.reason) == "FilterDataset is not a map this rewrite knows"
    with pytest.raises(RewriteError) as raised:
        graph.parallelize_interleave("filter", 4)
    assert raised.value.reason == Reason("not-a-known-interleave", detail="FilterDataset")


def test_a_failure_caught_by_a_phase_reads_as_before_in_the_report() -> None:
    # GIVEN the stage holds failing on a node the held copy does not have
    notes: list[Reason] = []
    say = SimpleNamespace(note=notes.append)
    with pytest.raises(RewriteError) as raised:
        PipelineGraph(SimpleNamespace(node=[])).node("ParallelMapDatasetV2/_4")
    # WHEN the phase notes it
    say.note(error_reason("stage-holds-failed", raised.value))  # as phases.py does
    # THEN the report reads as it did when the error was a sentence
    report = io.from_dict(io.to_dict(dataclasses.replace(synthetic_report(), notes=notes)))
    assert report.notes == notes
    sentence = (
        "holding the stages in memory on training failed "
        "(RewriteError: no node 'ParallelMapDatasetV2/_4')"
    )
    assert f"note: {sentence}\n" in render_text(report)
    # AND an older report, the error's line in `detail`, reads the same
    old = Reason("stage-holds-failed", detail="RewriteError: no node 'ParallelMapDatasetV2/_4'")
    assert reason_words(old) == sentence
    # AND an error not pipediag's own is its line, as before
    say.note(error_reason("service-check-failed", OSError("no room")))
    assert notes[-1] == Reason("service-check-failed", detail="OSError: no room")
    assert reason_words(notes[-1]) == "the tf.data service check failed (OSError: no room)"


def test_a_check_that_failed_is_cut_where_describe_error_cut_it() -> None:
    # GIVEN a generator's long error, met while a fix was checked
    error = RewriteError("generator-unread", detail="ValueError: " + "x" * 300)
    # WHEN the check's refusal is made as any error's is
    refusal = error_reason("check-failed", error, describe_error)
    # THEN the report holds the whole failure, and it reads as `describe_error` cut it
    assert refusal.because == error.one_line_reason()
    line = "RewriteError: ValueError: " + "x" * 300
    assert reason_words(refusal) == f"could not be checked: {line[:200]}"
    # AND an error not pipediag's own is its line, cut the same
    other = ValueError("y" * 300)
    assert error_reason("check-failed", other, describe_error).detail == describe_error(other)
    assert reason_words(Reason("check-failed", detail=describe_error(other))) == (
        f"could not be checked: {describe_error(other)}"
    )
