"""Each window as TensorBoard scalars, so input wait shows beside the loss.

The scalars go to the run `pipediag` under the log directory (`LOGDIR/pipediag`), next to
the `train` and `validation` runs that `keras.callbacks.TensorBoard(log_dir=LOGDIR)`
writes: `tensorboard --logdir LOGDIR` shows both. A directory of its own, because
TensorBoard reads the event files of one directory in name order and does not go back to an
older one that is still growing.

The x axis: for windows of N steps, the steps done at the window's end (Keras's batch-level
scalars use the same count when training starts from scratch); for a window per epoch, the
epoch, as Keras's epoch-level scalars.

Written with `tf.summary.write` and the scalar plugin's metadata, which is what
`tf.summary.scalar` writes: that one needs the `tensorboard` package, which training
machines often lack. TensorFlow is imported when the first window is written, on the
watcher's thread; each scalar takes about 0.3 ms there (docs/design.md, "Watching a long
run").
"""

from __future__ import annotations

import os
from typing import Any

from pipediag.report.model import WatchWindow

RUN_NAME = "pipediag"
SCALAR_PLUGIN = "scalars"
TAG_PREFIX = "pipediag/"

# (tag, what it shows) for every window; a figure a window lacks is not written.
TAGS = {
    "input_wait_share": "share of step time spent waiting for input (XProf's figure)",
    "steps_per_s": "training steps per second (step times only)",
    "step_time_ms": "mean step time, milliseconds",
    "input_wait_ms": "mean input wait per step, milliseconds",
}


def window_scalars(window: WatchWindow) -> dict[str, float]:
    """The figures of one window, by tag (without the `pipediag/` prefix)."""
    values: dict[str, float] = {}
    if window.input_wait_fraction is not None:
        values["input_wait_share"] = window.input_wait_fraction
    if window.steps_per_s is not None:
        values["steps_per_s"] = window.steps_per_s
    if window.steps:
        values["step_time_ms"] = window.step_time_s / window.steps * 1e3
        if window.input_wait_s is not None:
            values["input_wait_ms"] = window.input_wait_s / window.steps * 1e3
    return values


def run_directory(logdir: str | os.PathLike[str]) -> str:
    return os.path.join(os.fspath(logdir), RUN_NAME)


class ScalarWriter:
    """A `tf.summary` file writer for the windows, made on the first write.

    Args:
        logdir: TensorBoard's log directory; the scalars go to its `pipediag` run.
    """

    def __init__(self, logdir: str | os.PathLike[str]) -> None:
        self.directory = run_directory(logdir)
        self._writer: Any = None
        self._metadata: Any = None

    def write(self, window: WatchWindow, step: int) -> None:
        """Write one window's scalars at `step` on TensorBoard's x axis."""
        import tensorflow as tf

        if self._writer is None:
            from tensorflow.core.framework import summary_pb2

            self._metadata = summary_pb2.SummaryMetadata(
                plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=SCALAR_PLUGIN)
            )
            self._writer = tf.summary.create_file_writer(self.directory)
        with self._writer.as_default():
            for tag, value in window_scalars(window).items():
                tf.summary.write(
                    TAG_PREFIX + tag,
                    tf.constant(value, dtype=tf.float32),
                    step=step,
                    metadata=self._metadata,
                )

    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
