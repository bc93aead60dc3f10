"""`pipediag merge`: the fleet report of a job's workers, from synthetic reports (the command
in a child process: tests/integration/test_fleet_cli.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from multiworker_jobs import worker, write_job
from synthetic_reports import synthetic_cost_report

from pipediag.errors import ReportError
from pipediag.fleet.analysis import build_fleet, find_straggler, worker_row
from pipediag.fleet.collect import WorkerReport, load_worker_reports
from pipediag.fleet.io import fleet_from_dict, fleet_to_dict
from pipediag.fleet.merge import merge_reports
from pipediag.fleet.model import FleetReport, Straggler, WorkerRow
from pipediag.fleet.png import build_fleet_figure
from pipediag.fleet.text import render_fleet_text
from pipediag.fleet.trace import fleet_trace
from pipediag.fleet.words import clock_text, straggler_text
from pipediag.renderers.chrome_trace import trace_events
from pipediag.report.io import save_report
from pipediag.report.model import Report
from pipediag.report.reasons import Reason


def loaded(*reports: Report) -> list[WorkerReport]:
    return [
        WorkerReport(r.task.name if r.task else f"run{i}", Path(f"w{i}/report.json"), r)
        for i, r in enumerate(reports)
    ]


# -- the table ------------------------------------------------------------------------------


def test_one_row_per_worker_with_its_figures() -> None:
    # GIVEN two workers; worker 1 waits for input 30% of each 40-ms step
    fleet = build_fleet(loaded(worker(0, wait=0.02), worker(1, wait=0.30)))
    # THEN a row each, in task order, with the report's figures
    assert [row.task for row in fleet.workers] == ["worker-0", "worker-1"]
    row = fleet.workers[1]
    assert row.verdict == "input-bound"
    assert row.input_wait_fraction == pytest.approx(0.30)
    assert row.input_cost_fraction == pytest.approx(0.30)
    assert row.training_steps_per_s == pytest.approx(25.0)
    assert row.wait_s_per_step == pytest.approx(0.012)
    assert row.pipeline_batches_per_s == pytest.approx(60.0)
    assert row.compute_alone_steps_per_s == pytest.approx(25.0 / 0.7)
    assert row.process_cpu_pct == pytest.approx(120.0) and row.cpu_count == 2
    text = render_fleet_text(fleet)
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("task"))
    assert lines[header].split()[:4] == ["task", "verdict", "cost", "wait"]
    assert lines[header + 1].split()[:4] == ["worker-0", "compute-bound", "2%", "2%"]
    assert lines[header + 2].split()[:7] == [
        "worker-1",
        "input-bound",
        "30%",
        "30%",
        "60.0",
        "35.7",
        "25.0",
    ]
    assert "120% of 200% / 70%" in lines[header + 2]


def test_found_reports_are_sorted_by_task_index(tmp_path: Path) -> None:
    write_job(tmp_path, worker(10, workers=11), worker(2, workers=11), worker(0, workers=11))
    labels = [w.label for w in load_worker_reports([tmp_path])]
    assert labels == ["worker-0", "worker-2", "worker-10"]


# -- the straggler --------------------------------------------------------------------------


def test_in_lockstep_the_straggler_is_the_worker_waiting_for_its_own_input() -> None:
    # GIVEN synchronous workers: the same rate, worker 1 waits 45% of each step for input
    fleet = build_fleet(loaded(worker(0, wait=0.03), worker(1, wait=0.45), worker(2, wait=0.05)))
    # THEN it is named, with input as the cause, against the others' median wait
    straggler = fleet.straggler
    assert fleet.lockstep is True
    assert straggler is not None and straggler.task == "worker-1"
    assert straggler.cause == "input"
    assert straggler.extra_wait_s == pytest.approx((0.45 - 0.04) * 0.04)
    assert straggler.extra_compute_s == pytest.approx(-(0.45 - 0.04) * 0.04)
    assert straggler.others_input_wait_fraction == pytest.approx(0.04)
    # AND the words set its figures against the others' medians
    words = straggler_text(fleet, straggler)
    assert "its steps waited 45% (others 4%)" in words
    assert "input dominates" in words
    assert "input costs it" not in words  # 1 - A/T is the cluster's here
    assert "Straggler: worker-1 (input): the workers trained in lockstep (25.0 steps/s" in (
        render_fleet_text(fleet)
    )


def test_rates_within_one_step_of_the_window_are_lockstep() -> None:
    # GIVEN synchronous workers timed over 20 steps each: their windows' edges differ, so
    # their rates differ by 2.5% (as in the two-worker test); worker 1 waits for input
    first = worker(0, wait=0.10, step_s=0.0410, steps=20)
    second = worker(1, wait=0.60, step_s=0.0400, steps=20)
    fleet = build_fleet(loaded(first, second))
    # THEN they count as lockstep, and the straggler is the one waiting for its input
    assert fleet.lockstep is True
    assert fleet.straggler is not None and fleet.straggler.task == "worker-1"
    assert fleet.straggler.cause == "input"
    # the same rates over 100 steps each are told apart: the slower one is named
    slow = build_fleet(
        loaded(replace_steps(first, 100), replace_steps(second, 100)),
    )
    assert slow.lockstep is False
    assert slow.straggler is not None and slow.straggler.task == "worker-0"


def test_lockstep_is_judged_on_the_measured_window_not_the_pooled_training_rate() -> None:
    # GIVEN synchronous workers whose measured windows agree, but whose training rates, pooled
    # from alternation blocks with their own edges and transition steps, differ by 8%
    first = worker(0, wait=0.10, step_s=0.0400, steps=20)
    second = worker(1, wait=0.60, step_s=0.0400, steps=20)
    first = replace(first, verdict=replace(first.verdict, training_steps_per_s=23.0))
    fleet = build_fleet(loaded(first, second))
    # THEN they are in lockstep, and the straggler is the one waiting for its own input,
    # not the one whose blocks timed slower
    assert fleet.lockstep is True
    assert fleet.straggler is not None and fleet.straggler.task == "worker-1"
    assert fleet.straggler.cause == "input"


def replace_steps(report: Report, measured: int) -> Report:
    return replace(report, train=replace(report.train, measured_steps=measured))


def test_the_slowest_worker_is_the_straggler_when_rates_differ() -> None:
    # GIVEN independent workers; worker 0 is slowest because its step itself is slower
    rows = [
        worker_row(w)
        for w in loaded(worker(0, step_s=0.08, wait=0.05), worker(1), worker(2, step_s=0.041))
    ]
    straggler, reason = find_straggler(rows)
    assert reason is None and straggler is not None
    assert straggler.task == "worker-0"
    assert straggler.steps_per_s == pytest.approx(12.5)
    assert straggler.others_steps_per_s == pytest.approx((25.0 + 1 / 0.041) / 2)
    assert straggler.cause == "compute"
    fleet = build_fleet(
        loaded(worker(0, step_s=0.08, wait=0.05), worker(1), worker(2, step_s=0.041))
    )
    assert fleet.straggler == straggler
    assert "its train step dominates" in straggler_text(fleet, straggler)


def test_a_slower_worker_waiting_for_input_is_slow_by_its_input() -> None:
    fleet = build_fleet(loaded(worker(0), worker(1, step_s=0.08, wait=0.60)))
    straggler = fleet.straggler
    assert straggler is not None and straggler.task == "worker-1"
    assert straggler.cause == "input"
    assert not fleet.lockstep
    assert straggler.others_input_cost_fraction == pytest.approx(0.02)
    words = straggler_text(fleet, straggler)
    assert "12.5 steps/s against 25.0 on the others" in words
    assert "input costs it 60% (others 2%) of training" in words


def test_a_busy_host_or_gpu_names_the_straggler_when_waits_are_alike() -> None:
    # GIVEN synchronous workers that waited alike; worker 1's host was shared
    host = build_fleet(loaded(worker(0, other_cpu_pct=5.0), worker(1, other_cpu_pct=40.0)))
    assert host.straggler is not None and host.straggler.task == "worker-1"
    assert host.straggler.cause == "host-cpu"
    assert host.straggler.others_other_cpu_pct == pytest.approx(5.0)
    assert "other processes 40% (others 5%)" in straggler_text(host, host.straggler)
    # ...or worker 0's GPU was the busy one (the others waited for it in the all-reduce)
    gpu = build_fleet(loaded(worker(0, gpu_util_pct=90.0), worker(1, gpu_util_pct=45.0)))
    assert gpu.straggler is not None and gpu.straggler.task == "worker-0"
    assert gpu.straggler.cause == "gpu"
    assert gpu.straggler.others_gpu_util_pct == pytest.approx(45.0)
    assert "GPU: 90% (others 45%) busy." in straggler_text(gpu, gpu.straggler)


def test_the_straggler_is_worded_from_its_figures_against_the_others_medians() -> None:
    # GIVEN a straggler record and its row, built by hand: no analysis runs here
    row = WorkerRow(
        task="worker-1",
        report_path="w1/report.json",
        input_wait_fraction=0.60,
        input_cost_fraction=0.60,
        process_cpu_pct=120.0,
        system_cpu_pct=70.0,
        other_cpu_pct=30.0,
        cpu_count=2,
        gpu_util_pct=20.0,
    )
    straggler = Straggler(
        task="worker-1",
        cause="input",
        steps_per_s=12.5,
        others_steps_per_s=25.0,
        extra_wait_s=0.0472,
        extra_compute_s=-0.0072,
        others_input_wait_fraction=0.02,
        others_input_cost_fraction=0.02,
        others_system_cpu_pct=50.0,
        others_other_cpu_pct=5.0,
        others_gpu_util_pct=45.0,
    )
    fleet = FleetReport(workers=[row], straggler=straggler, lockstep=False)
    # THEN the words are its rate, wait and cost against the others', the part that
    # dominates, then its host and GPU
    assert straggler_text(fleet, straggler) == (
        "12.5 steps/s against 25.0 on the others (median); its steps waited 60% (others 2%) "
        "of their time for input; input costs it 60% (others 2%) of training; per step, its "
        "input wait is +47.2 ms and the rest of its step -7.2 ms against the others': input "
        "dominates: its own pipeline kept it waiting. Host CPU: this process 120% of 200%, "
        "the whole host 70% (others 50%) busy, other processes 30% (others 5%). "
        "GPU: 20% (others 45%) busy."
    )
    # AND in lockstep the rate is the cluster's, and so is the cost: it is left out
    together = straggler_text(replace(fleet, lockstep=True), straggler)
    assert together.startswith("the workers trained in lockstep (12.5 steps/s here; ")
    assert "input costs it" not in together


def test_a_fleet_report_with_the_straggler_in_words_still_loads_and_renders() -> None:
    # GIVEN a fleet.json written when the straggler's explanation was stored as words, with
    # none of the others' medians
    fleet = build_fleet(loaded(worker(0, wait=0.03), worker(1, wait=0.45)))
    data = fleet_to_dict(fleet)
    straggler = {
        key: value
        for key, value in data["straggler"].items()
        if not key.startswith("others_") or key == "others_steps_per_s"
    }
    data["straggler"] = {**straggler, "explanation": "as it was worded then"}
    # WHEN it is read
    read = fleet_from_dict(data)
    # THEN the words are dropped, and the others' medians found again from the rows, so it
    # reads as the fleet did when written
    assert read.straggler == fleet.straggler
    text = render_fleet_text(read)
    assert "as it was worded then" not in text
    assert text == render_fleet_text(fleet)
    assert "its steps waited 45% (others 3%) of their time for input" in " ".join(text.split())


def test_an_older_fleet_with_its_words_as_strings_loads_and_renders_the_same() -> None:
    # GIVEN a version 2 fleet.json: verdicts, cause and compute sources plain strings, and
    # the clock in words, with no anchor on the rows
    unanchored = replace(worker(2), origin_unix_s=None, created_utc="")
    created = replace(worker(3), origin_unix_s=None, created_utc="2027-01-15T08:00:00Z")
    workers = loaded(worker(0, wait=0.03), worker(1, wait=0.45), unanchored, created)
    fleet = build_fleet(workers)
    data = json.loads(json.dumps({**fleet_to_dict(fleet), "schema_version": 2}))
    for row in data["workers"]:
        del row["clock_anchor"]
    data["clock"] = (
        "wall-clock anchors (origin_unix_s), one per worker; created_utc for worker-3 (older "
        "reports: whole seconds); worker-2 at 0 (no time stamp)"
    )
    assert data["straggler"]["cause"] == "input"
    assert data["workers"][1]["verdict"] == "input-bound"
    assert {row["compute_alone_source"] for row in data["workers"]} == {"measured"}
    # WHEN it is read
    read = fleet_from_dict(data)
    # THEN the same strings are the typed values, each row's anchor is read from the words,
    # and it renders as the fleet did
    assert [row.clock_anchor for row in read.workers] == [
        "origin-unix",
        "origin-unix",
        "none",
        "created-utc",
    ]
    assert replace(read, schema_version=fleet.schema_version) == fleet
    assert clock_text(read) == data["clock"]
    assert render_fleet_text(read) == render_fleet_text(fleet)
    assert fleet_trace(workers, read) == fleet_trace(workers, fleet)


@pytest.mark.parametrize(
    ("labels", "coarse", "anchors"),
    [
        # a run's label may hold ", ": the words list labels in row order
        (["run a, b", "c"], "run a, b", ["created-utc", "none"]),
        # two runs outside a job may share a label: the first one named was placed
        (["run", "run"], "run", ["created-utc", "none"]),
        (["run", "run"], "run, run", ["created-utc", "created-utc"]),
    ],
)
def test_an_older_fleets_clock_words_are_read_back_row_by_row(
    labels: list[str], coarse: str, anchors: list[str]
) -> None:
    rows = [replace(worker_row(w), origin_unix_s=None) for w in loaded(worker(0), worker(1))]
    rows = [replace(row, task=label) for row, label in zip(rows, labels, strict=True)]
    data = fleet_to_dict(FleetReport(workers=rows))
    for row in data["workers"]:
        del row["clock_anchor"]
    data["clock"] = f"created_utc for {coarse} (older reports: whole seconds)"
    assert [row.clock_anchor for row in fleet_from_dict(data).workers] == anchors


def test_no_straggler_among_alike_workers_or_for_one_worker() -> None:
    alike = build_fleet(loaded(worker(0), worker(1)))
    assert alike.straggler is None
    assert alike.no_straggler_reason is not None
    assert alike.no_straggler_reason.code == "none-stands-out"
    assert "Straggler: none stands out" in render_fleet_text(alike)
    single = build_fleet(loaded(worker(0, workers=1)))
    assert single.straggler is None
    assert single.no_straggler_reason == Reason("one-worker")
    assert "one worker only: nothing to compare it with" in render_fleet_text(single)


# -- the trace ------------------------------------------------------------------------------


def test_the_trace_has_one_process_per_worker_on_a_common_clock() -> None:
    # GIVEN worker 1 started its diagnosis 250 ms after worker 0, and has a GPU
    workers = loaded(worker(0), worker(1, offset_s=0.25, gpu_util_pct=50.0))
    fleet = build_fleet(workers)
    doc = fleet_trace(workers, fleet)
    events = doc["traceEvents"]
    # THEN one process each, named by task
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names == {
        1: "worker-0: compute-bound, 25.0 steps/s",
        2: "worker-1: compute-bound, 25.0 steps/s",
    }
    assert {e["pid"] for e in events} == {1, 2}  # the GPU counters joined their worker
    assert doc["metadata"]["clock_offsets_us"] == {"worker-0": 0.0, "worker-1": 250000.0}
    # and every event of worker 1 is its own trace's, moved by its offset
    own = [e for e in trace_events(workers[1].report)["traceEvents"] if e["ph"] != "M"]
    moved = [e for e in events if e["pid"] == 2 and e["ph"] != "M"]
    assert len(moved) == len(own) > 0
    assert [round(e["ts"] - 250000.0, 3) for e in moved] == [e["ts"] for e in own]
    gpu = [e for e in moved if e["name"].startswith("GPU 0")]
    assert gpu and {e["tid"] for e in gpu} == {4}
    # worker 0's events are not moved
    first = [e for e in events if e["pid"] == 1 and e["ph"] != "M"]
    assert [e["ts"] for e in first] == [
        e["ts"] for e in trace_events(workers[0].report)["traceEvents"] if e["ph"] != "M"
    ]


def test_older_reports_align_on_their_creation_second() -> None:
    # GIVEN reports without a wall-clock anchor, created 2 s apart
    first = replace(worker(0), origin_unix_s=None, created_utc="2026-01-01T00:00:00Z")
    second = replace(worker(1), origin_unix_s=None, created_utc="2026-01-01T00:00:02Z")
    fleet = build_fleet(loaded(first, second))
    assert [r.clock_offset_s for r in fleet.workers] == [0.0, 2.0]
    assert [r.clock_anchor for r in fleet.workers] == ["created-utc", "created-utc"]
    assert clock_text(fleet) == "created_utc for worker-0, worker-1 (older reports: whole seconds)"
    none = build_fleet(loaded(replace(first, created_utc=""), replace(second, created_utc="")))
    assert clock_text(none).startswith("not aligned")
    assert [r.clock_offset_s for r in none.workers] == [0.0, 0.0]


# -- fleet.json, fleet.png ------------------------------------------------------------------


def test_the_fleet_report_round_trips_and_is_versioned() -> None:
    fleet = build_fleet(loaded(worker(0), worker(1, wait=0.5)), created_utc="2026-01-02T00:00:00Z")
    assert fleet_from_dict(json.loads(json.dumps(fleet_to_dict(fleet)))) == fleet
    data = fleet_to_dict(fleet)
    data["schema_version"] = 99
    with pytest.raises(ReportError, match="fleet report schema version 99 is newer"):
        fleet_from_dict(data)


def test_a_version_1_fleet_keeps_its_words_and_a_new_one_round_trips_its_code() -> None:
    alike = build_fleet(loaded(worker(0), worker(1)))
    assert fleet_from_dict(json.loads(json.dumps(fleet_to_dict(alike)))) == alike
    old = {**fleet_to_dict(alike), "schema_version": 1, "no_straggler_reason": "all alike"}
    read = fleet_from_dict(old)
    assert read.no_straggler_reason == Reason("as-written", detail="all alike")
    assert "Straggler: all alike" in render_fleet_text(read)


def test_the_png_draws_the_fleet_and_an_empty_one() -> None:
    fleet = build_fleet(loaded(worker(0), worker(1, wait=0.5)))
    figure = build_fleet_figure(fleet)
    shares, rates = figure.axes[:2]
    assert [t.get_text() for t in shares.get_yticklabels()] == ["worker-0", "worker-1\nstraggler"]
    assert len(rates.patches) == 2  # one rate bar per worker
    assert "straggler worker-1 (input)" in figure.get_suptitle()
    build_fleet_figure(FleetReport())  # no workers: still a page


def test_merge_takes_report_dirs_and_files_and_labels_runs_outside_a_job(tmp_path: Path) -> None:
    for name in ("alpha", "beta"):
        save_report(synthetic_cost_report(), tmp_path / name / "report.json")
    fleet, written, failures = merge_reports(
        [tmp_path / "alpha", tmp_path / "beta" / "report.json", tmp_path / "alpha"],
        tmp_path / "fleet",
    )
    assert failures == [] and len(written) == 4
    assert [r.task for r in fleet.workers] == ["alpha", "beta"]  # each once
