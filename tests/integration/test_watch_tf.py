"""Watch mode on real TensorFlow: `pipediag.keras.Watch` in a user's own fit, and
`pipediag run --watch` on a fit and on a custom loop, with losses unchanged."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from cli_runner import ENV, run_pipediag
from synthetic_reports import FakeClock

import pipediag

pytestmark = pytest.mark.tensorflow

DELAY_S = 0.02  # the injected delay per batch
BATCHES = 20
EPOCHS = 2


def _dataset(delay_s: float) -> Any:
    import numpy as np
    import tensorflow as tf

    def slow(x: Any) -> Any:
        time.sleep(delay_s)
        return x

    rng = np.random.RandomState(0)
    x = rng.rand(BATCHES * 16, 8).astype("float32")
    y = rng.rand(BATCHES * 16, 1).astype("float32")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    if delay_s:
        ds = ds.map(
            lambda a, b: (tf.ensure_shape(tf.numpy_function(slow, [a], tf.float32), [None, 8]), b)
        )
    return ds.prefetch(1)


def _model() -> Any:
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile(keras.optimizers.SGD(0.05), "mse")
    return model


def _losses(history: Any) -> list[float]:
    return [float(v) for v in history.history["loss"]]


@pytest.mark.parametrize("delay_s", [0.0, DELAY_S])
def test_the_callback_measures_a_known_injected_delay(delay_s: float, tmp_path: Path) -> None:
    # GIVEN a fit whose pipeline sleeps 20 ms per batch, or does not
    watch = pipediag.keras.Watch(every="epoch", logdir=tmp_path / "logs", log=None)
    # WHEN watched, with the dataset stamped
    _model().fit(watch.dataset(_dataset(delay_s)), epochs=EPOCHS, callbacks=[watch], verbose=0)
    # THEN each epoch's window shows the wait: most of a step with the delay, little without
    windows = watch.windows
    assert [(w.epoch, w.steps) for w in windows] == [(0, BATCHES - 5), (1, BATCHES)]
    assert watch.report.train.input_wait_source == "batch-stamps"
    for window in windows:
        assert window.input_wait_fraction is not None
        if delay_s:
            assert window.input_wait_fraction > 0.5 and window.label == "input-bound"
            assert window.input_wait_s / window.steps > 0.5 * delay_s
        else:
            # A step of a 16-row dense model is well under a millisecond, so its share of
            # waiting rides on the host's load; its wait per step does not come near 20 ms.
            assert window.input_wait_s / window.steps < 0.1 * DELAY_S
    # AND TensorBoard got a point per epoch, at the epoch
    assert watch.report.watch is not None
    assert watch.report.watch.tensorboard_logdir == str(tmp_path / "logs" / "pipediag")
    (events,) = (tmp_path / "logs" / "pipediag").iterdir()
    # AND each of its scalars carries what it shows, as TensorBoard's descriptions
    import tensorflow as tf

    values = [v for e in tf.compat.v1.train.summary_iterator(str(events)) for v in e.summary.value]
    assert {v.tag for v in values} >= {"pipediag/input_wait_share", "pipediag/steps_per_s"}
    assert all(v.metadata.summary_description for v in values)


def test_a_raising_alert_hook_leaves_training_as_it_was() -> None:
    # GIVEN a plain seeded fit over a slow pipeline
    expected = _losses(_model().fit(_dataset(DELAY_S), epochs=EPOCHS, verbose=0))
    calls: list[Any] = []

    def broken(alert: Any) -> None:
        calls.append(alert)
        raise ValueError("no pager configured")

    # WHEN the same fit is watched, with an alert hook that raises on every window
    watch = pipediag.keras.Watch(every=5, alert=broken, alert_windows=1, log=None)
    history = _model().fit(
        watch.dataset(_dataset(DELAY_S)), epochs=EPOCHS, callbacks=[watch], verbose=0
    )
    # THEN the losses are the same, the hook was called, and its error was said once
    assert _losses(history) == expected
    assert calls and len(calls) == len(watch.alerts) == 1  # one streak: every window is slow
    failures = [n for n in watch.report.notes if n.code == "alert-hook-raised"]
    assert len(failures) == 1 and "ValueError: no pager configured" in failures[0].detail


def test_without_stamps_the_callback_times_steps_but_no_wait() -> None:
    alerts: list[Any] = []
    watch = pipediag.keras.Watch(every=10, alert=alerts.append, log=None)
    _model().fit(_dataset(DELAY_S), epochs=EPOCHS, callbacks=[watch], verbose=0)
    windows = watch.windows
    assert windows and all(w.steps_per_s and w.label == "unknown" for w in windows)
    assert alerts == [] and watch.alerts == []


def test_the_callback_rejects_bad_settings() -> None:
    for bad in ({"every": 0}, {"every": "hourly"}, {"alert_input_share": 2.0}, {"alert": 3}):
        with pytest.raises(ValueError):
            pipediag.keras.Watch(**bad)


def test_a_keras_tensorboard_callback_names_the_log_directory(tmp_path: Path) -> None:
    import keras

    from pipediag.hooks.keras_fit import FitTracker

    class Host:
        clock = FakeClock()
        config = pipediag.RunConfig()
        seen: list[str] = []

        def training_log_dir(self, log_dir: str) -> None:
            self.seen.append(log_dir)

    host = Host()
    tracker = FitTracker(host)  # type: ignore[arg-type]
    tracker.saw_callbacks([keras.callbacks.History(), keras.callbacks.TensorBoard(str(tmp_path))])
    assert host.seen == [str(tmp_path)]


# -- pipediag run --watch, end to end ---------------------------------------------------------

SCRIPT = """
import json, sys, time
import numpy as np, tensorflow as tf, keras

def train(kind, out, delay):
    keras.utils.set_random_seed(0)
    rng = np.random.RandomState(0)
    x, y = rng.rand(320, 8).astype("float32"), rng.rand(320, 1).astype("float32")
    def slow(b):
        time.sleep(delay)
        return b
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    if delay:
        ds = ds.map(lambda a, b: (tf.numpy_function(slow, [a], tf.float32), b))
        ds = ds.map(lambda a, b: (tf.ensure_shape(a, [None, 8]), b))
    ds = ds.prefetch(1)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.05), "mse")
    if kind == "fit":
        losses = model.fit(ds, epochs=3, verbose=0).history["loss"]
    else:
        opt, loss_fn = keras.optimizers.SGD(0.05), keras.losses.MeanSquaredError()
        @tf.function
        def step(a, b):
            with tf.GradientTape() as tape:
                loss = loss_fn(b, model(a, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        losses = [float(step(a, b)) for _ in range(3) for a, b in ds]
    json.dump([float(v) for v in losses], open(out, "w"))

# One run, or every case in turn, each from its own seeds: the plain runs share a process.
if sys.argv[1] == "all":
    for kind, delay in CASES:
        train(kind, f"{sys.argv[2]}/{kind}.json", float(delay))
else:
    train(sys.argv[1], sys.argv[2], float(sys.argv[3]))
"""
CASES = [("fit", "0"), ("loop", "0.01")]


def _script(folder: Path) -> Path:
    script = folder / "train.py"
    script.write_text(f"CASES = {CASES!r}\n" + textwrap.dedent(SCRIPT))
    return script


@pytest.fixture(scope="module")
def plain_losses(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every case's losses from one plain run of the script, without pipediag."""
    folder = tmp_path_factory.mktemp("plain")
    subprocess.run(
        [sys.executable, str(_script(folder)), "all", str(folder)],
        check=True,
        capture_output=True,
        env=ENV,
    )
    return folder


@pytest.mark.parametrize(("kind", "delay"), CASES)
def test_run_watch_leaves_the_losses_and_watches_to_the_end(
    tmp_path: Path, kind: str, delay: str, plain_losses: Path
) -> None:
    script = _script(tmp_path)
    expected = json.loads((plain_losses / f"{kind}.json").read_text())
    alerts = tmp_path / "alerts.jsonl"
    # WHEN the script runs under `pipediag run --watch`, alerting for 2 windows at 30% (the
    # loop's 10-ms waits), or at 50% (fit's sub-millisecond step on a prefetched pipeline,
    # whose wait share a loaded host has read at 24%)
    every = ["--watch-every", "10"] if kind == "loop" else []
    result = run_pipediag(
        "run",
        "--watch",
        *every,
        "--alert-input-share",
        "30%" if kind == "loop" else "50%",
        "--alert-windows",
        "2",
        "--alert-command",
        f"cat >> {shlex.quote(str(alerts))}",
        "--out",
        str(tmp_path / "out"),
        str(script),
        kind,
        str(tmp_path / "watched.json"),
        delay,
    )
    # THEN the script ran to its end with the same losses, and nothing but the steps ran
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((tmp_path / "watched.json").read_text()) == expected
    assert "benchmarking the input pipeline alone" not in result.stderr
    assert "measuring the train step alone" not in result.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["stop_reason"] == "script-finished"
    watch = report["watch"]
    windows = watch["windows"]
    # every step past the warm-up; a loop is timed from the pull after its first train step
    # changed its variables, two pulls in (docs/design.md, "Finding the training")
    untimed = 2 if kind == "loop" else 0
    assert sum(w["steps"] for w in windows) == 3 * 20 - 5 - untimed
    assert watch["tensorboard_logdir"] == str(tmp_path / "out" / "tensorboard" / "pipediag")
    assert "Over time" in (tmp_path / "out" / "summary.txt").read_text()
    if kind == "fit":  # a fast pipeline: a window per epoch, no alert
        assert [w["epoch"] for w in windows] == [0, 1, 2]
        assert all(w["input_wait_fraction"] is not None for w in windows)
        assert watch["alerts"] == [] and not alerts.exists()
    else:  # 10 ms of waiting per ~11 ms step: the second window fires the one alert
        assert [w["steps"] for w in windows] == [10] * 5 + [5 - untimed]
        assert [w["label"] for w in windows] == ["input-bound"] * 6
        assert [a["window_index"] for a in watch["alerts"]] == [1]
        (line,) = alerts.read_text().splitlines()
        assert json.loads(line)["script"] == str(script)
        assert "ALERT: input wait" in result.stderr
