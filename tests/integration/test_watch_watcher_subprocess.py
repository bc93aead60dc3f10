"""Watch mode's sinks for real: an alert command in a child process, TensorBoard scalars
written by TensorFlow."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from synthetic_reports import FakeClock
from watch_helpers import Said, alert, make_watcher, train_steps

from pipediag.config import WatchConfig
from pipediag.renderers.reason_words import reason_words
from pipediag.report.reasons import Reason
from pipediag.watch.alerts import AlertSinks


def test_the_command_gets_the_figures_in_its_environment_and_as_json_on_stdin(
    tmp_path: Path,
) -> None:
    # GIVEN a command that saves its stdin and the PIPEDIAG_ variables of its environment
    saver = (
        "import json, os, sys; "
        f"open({str(tmp_path / 'stdin.json')!r}, 'w').write(sys.stdin.read()); "
        "env = {k: v for k, v in os.environ.items() if k.startswith('PIPEDIAG_')}; "
        f"json.dump(env, open({str(tmp_path / 'env.json')!r}, 'w'))"
    )
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(saver)}"
    failures: list[Reason] = []
    sinks = AlertSinks(None, command, script="train.py", report_failure=failures.append)
    # WHEN an alert is delivered, and the run ends (commands are waited for a little then)
    sinks.deliver(alert())
    sinks.close()
    # THEN the command ran, in its own process, with the figures
    data = json.loads((tmp_path / "stdin.json").read_text())
    assert data["input_wait_fraction"] == 0.41 and data["first_step"] == 100
    assert data["script"] == "train.py" and data["message"].startswith("input wait 41%")
    env = json.loads((tmp_path / "env.json").read_text())
    assert env["PIPEDIAG_INPUT_WAIT_SHARE"] == "0.41"
    assert env["PIPEDIAG_THRESHOLD"] == "0.2"
    assert env["PIPEDIAG_WINDOWS"] == "3"
    assert (env["PIPEDIAG_FIRST_STEP"], env["PIPEDIAG_LAST_STEP"]) == ("100", "399")
    assert env["PIPEDIAG_STEPS_PER_S"] == "55.5" and env["PIPEDIAG_EPOCH"] == "2"
    assert env["PIPEDIAG_SCRIPT"] == "train.py"
    assert env["PIPEDIAG_ALERT"].startswith("input wait 41%")
    assert failures == []


def test_a_failing_command_is_reported_once_and_a_slow_one_is_not_waited_for(
    tmp_path: Path,
) -> None:
    failures: list[Reason] = []
    sinks = AlertSinks(None, "exit 3", script="train.py", report_failure=failures.append)
    sinks.deliver(alert(1))
    sinks.deliver(alert(2))
    sinks.close()
    assert failures == [Reason("alert-command-exit", detail="exit 3", value=3)]
    assert reason_words(failures[0]) == "the alert command exited with code 3: exit 3 (said once)"

    done = tmp_path / "done"
    slow = AlertSinks(
        None,
        f"sleep 60; touch {shlex.quote(str(done))}",
        script="t",
        report_failure=failures.append,
    )
    slow.deliver(alert())  # returns at once: the command runs on its own
    assert not done.exists()
    slow.close(wait_s=0.0)
    assert failures[-1].code == "alert-command-running"
    for process in slow._running:  # the test's own leftover
        process.kill()
        process.wait()


@pytest.mark.tensorflow
def test_windows_become_tensorboard_scalars(tmp_path: Path) -> None:
    import tensorflow as tf

    # GIVEN a watcher writing to a log directory
    clock, said = FakeClock(), Said()
    config = WatchConfig(every_steps=10, logdir=str(tmp_path))
    watcher, timeline = make_watcher(config, clock, said)
    # WHEN two windows close: no wait, then 40% wait
    train_steps(timeline, clock, [0.0] * 10 + [0.004] * 10)
    section = watcher.finish()
    # THEN the `pipediag` run holds one point per window and tag, at the steps done
    assert section.tensorboard_logdir == str(tmp_path / "pipediag")
    (event_file,) = (tmp_path / "pipediag").iterdir()
    assert event_file.name.startswith("events.out.tfevents.")  # what TensorBoard lists
    points: dict[str, list[tuple[int, float]]] = {}
    for event in tf.compat.v1.train.summary_iterator(str(event_file)):
        for value in event.summary.value:
            assert value.metadata.plugin_data.plugin_name == "scalars"
            points.setdefault(value.tag, []).append(
                (event.step, float(tf.make_ndarray(value.tensor)))
            )
    assert [s for s, _ in points["pipediag/input_wait_share"]] == [10, 20]
    assert [round(v, 3) for _, v in points["pipediag/input_wait_share"]] == [0.0, 0.4]
    assert [round(v, 1) for _, v in points["pipediag/steps_per_s"]] == [100.0, 100.0]
    assert [round(v, 2) for _, v in points["pipediag/input_wait_ms"]] == [0.0, 4.0]
    assert [round(v, 2) for _, v in points["pipediag/step_time_ms"]] == [10.0, 10.0]
    assert any("tensorboard --logdir" in line for line in said.lines)
