"""Multi-worker jobs, worker side: the task from TF_CONFIG, its report directory, and
the diagnosis counting its extra steps so every worker runs as many (collectives). The real
CLI under TF_CONFIG: tests/integration/test_cluster_cli.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from loop_serving import RecordedResults, loop_server
from multiworker_jobs import tf_config
from synthetic_reports import FakeClock

from pipediag.analysis.paired import LOCKSTEP_ROUNDS
from pipediag.cluster import task_from_env, task_out_dir
from pipediag.config import RunConfig
from pipediag.errors import UsageError
from pipediag.report.model import ExitInfo, TaskInfo
from pipediag.report.reasons import Reason
from pipediag.session import DiagnosticSession
from pipediag.training.alternation import WARMUP_STEPS, Alternation
from pipediag.training.budget import CachedBatch

# -- TF_CONFIG ------------------------------------------------------------------------------


def test_no_tf_config_is_a_single_process() -> None:
    assert task_from_env({}) is None
    assert task_from_env({"TF_CONFIG": "  "}) is None
    # a cluster without a task of this process's own
    assert task_from_env({"TF_CONFIG": json.dumps({"cluster": {"worker": ["a:1"]}})}) is None


def test_the_task_and_the_cluster_size_come_from_tf_config() -> None:
    # GIVEN a chief, two workers and a parameter server; this process is worker 1
    config = {
        "cluster": {"chief": ["c:1"], "worker": ["w:1", "w:2"], "ps": ["p:1"]},
        "task": {"type": "worker", "index": 1},
    }
    # THEN
    task = task_from_env({"TF_CONFIG": json.dumps(config)})
    assert task == TaskInfo(type="worker", index=1, cluster_size=4)
    assert task.name == "worker-1"
    # an index given as a string, as some launchers write it
    assert task_from_env({"TF_CONFIG": tf_config(0).replace("0}", '"0"}')}) == TaskInfo(
        "worker", 0, 2
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "is not valid JSON"),
        ("[1, 2]", "is not a JSON object"),
        ('{"task": "worker"}', "'task' that is not an object"),
        ('{"task": {"type": "../x", "index": 0}}', "task type '../x'"),
        ('{"task": {"type": "worker", "index": -1}}', "task index -1"),
        ('{"task": {"type": "worker", "index": true}}', "task index True"),
    ],
)
def test_a_tf_config_tensorflow_could_not_use_is_one_line(text: str, problem: str) -> None:
    with pytest.raises(UsageError) as caught:
        task_from_env({"TF_CONFIG": text})
    message = str(caught.value)
    assert problem in message and message.startswith("TF_CONFIG ")
    assert "unset it" in message and "\n" not in message


def test_a_task_writes_into_its_own_directory() -> None:
    assert task_out_dir("out", None) == Path("out")
    assert task_out_dir("out", TaskInfo("worker", 3, 4)) == Path("out") / "worker-3"


# -- lockstep: every worker runs the same number of train steps -----------------------------


def _budget_step(task: TaskInfo | None) -> int:
    """The step at which the budget is reached with 0.1-s steps and a 0.5-s time bound."""
    config = RunConfig(measured_steps=30, warmup_steps=5, measured_seconds=0.5)
    clock = FakeClock()
    session = DiagnosticSession("t.py", [], config, clock=clock, log=None, task=task)
    for step in range(1, 100):
        start = clock.now()
        clock.advance(0.1)
        if session.timeline.add(start, clock.now(), 0.0):
            return step
    raise AssertionError("the budget was never reached")


def test_a_multi_worker_session_counts_steps_instead_of_timing_them() -> None:
    # A single process stops once 20 measured steps span the time bound...
    assert _budget_step(None) == 5 + 20
    assert _budget_step(TaskInfo("worker", 0, cluster_size=1)) == 5 + 20
    # ...a worker of a two-task job at the step count every worker reaches together.
    assert _budget_step(TaskInfo("worker", 0, cluster_size=2)) == 5 + 30


def test_a_multi_worker_session_notes_why_and_limits_compute_alone() -> None:
    config = RunConfig(measured_steps=20, sample_host=False, sample_gpu=False)
    task = TaskInfo("worker", 1, 2)
    session = DiagnosticSession(
        "t.py", [], config, clock=FakeClock(), log=None, install_hooks=False, task=task
    )
    session.start()
    # blocks of a fixed size, at most the measured steps
    assert session.conclusion.lockstep_steps() == 16
    assert session.keep_measuring() is False
    report = session.stop(ExitInfo(), "script-finished")
    assert report.task == task
    assert Reason("multi-worker-job", detail="worker-1", value=2) in report.notes
    alone = DiagnosticSession("t.py", [], config, clock=FakeClock(), log=None)
    assert alone.conclusion.lockstep_steps() is None


def _pulls_served(*, lockstep: bool, step_s: Callable[[int], float]) -> int:
    """Pulls a loop makes at its budget until the alternation ends it, each step taking
    `step_s(pull)` on a fake clock."""
    clock = FakeClock()
    alternation = Alternation(
        clock=clock,
        origin=0.0,
        block_steps=5,
        lead=(0.0, [0.01] * 5),
        fixed_rounds=LOCKSTEP_ROUNDS if lockstep else None,
    )
    server = loop_server(
        clock,
        RecordedResults(),
        cached=CachedBatch("batch"),
        alternation=alternation,
        lockstep=lockstep,
    )
    pulls = 0
    while server.next_batch() is not None:
        clock.advance(step_s(pulls))
        pulls += 1
    return pulls


def test_a_lockstep_alternation_runs_its_fixed_rounds() -> None:
    # GIVEN blocks whose rates scatter widely (blocks of 5 pulls at 1, 1.1 and 1.2 times a
    # 10 ms step in turn), so the interval stays wide and a single process adds rounds past
    # the third
    def scattered(pull: int) -> float:
        return 0.01 * (1 + 0.1 * ((pull // 5) % 3))

    alone = _pulls_served(lockstep=False, step_s=scattered)
    worker = _pulls_served(lockstep=True, step_s=scattered)
    # THEN a worker runs exactly the warm-up and 3 rounds of a step-alone and a training
    # block of 5 steps each, as every other worker does, whatever its own timing says
    assert worker == WARMUP_STEPS + 3 * 2 * 5
    # ...while the single process measured more rounds
    assert alone > worker


def test_report_fields_are_optional_for_old_reports() -> None:
    from synthetic_reports import synthetic_report

    from pipediag.report.io import from_dict, to_dict

    data = to_dict(synthetic_report())
    del data["task"], data["origin_unix_s"]
    report = from_dict(data)
    assert report.task is None and report.origin_unix_s is None
    # and a task round-trips
    from dataclasses import replace

    with_task = replace(report, task=TaskInfo("chief", 0, 3), origin_unix_s=1.5)
    assert from_dict(to_dict(with_task)) == with_task
