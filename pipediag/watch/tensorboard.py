"""Each window as TensorBoard scalars in the run `LOGDIR/pipediag`, so input wait shows
beside the loss (docs/design.md, "Watching a long run")."""

from __future__ import annotations

import os
from typing import Any

from pipediag.report.watch import WatchWindow

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
    """The figures of one window, by tag (without `TAG_PREFIX`)."""
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


def open_event_file(directory: str) -> Any:
    """TensorFlow's event writer on a new `events.out.tfevents.*` file (`gs://` too)."""
    import tensorflow as tf
    from tensorflow.python.client import _pywrap_events_writer

    tf.io.gfile.makedirs(directory)
    return _pywrap_events_writer.EventsWriter(os.path.join(directory, "events").encode())


def window_event(window: WatchWindow, step: int, wall_time: float) -> Any:
    """One window's scalars as an `Event` at `step`, as `tf.summary.scalar` writes each."""
    from tensorflow.core.framework import summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
    from tensorflow.core.util import event_pb2

    plugin = summary_pb2.SummaryMetadata.PluginData(plugin_name=SCALAR_PLUGIN)
    values = [
        summary_pb2.Summary.Value(
            tag=TAG_PREFIX + tag,
            # TensorBoard shows the description beside the chart, as `tf.summary.scalar`'s.
            metadata=summary_pb2.SummaryMetadata(plugin_data=plugin, summary_description=TAGS[tag]),
            tensor=tensor_pb2.TensorProto(
                dtype=types_pb2.DT_FLOAT,
                tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                float_val=[value],
            ),
        )
        for tag, value in window_scalars(window).items()
    ]
    return event_pb2.Event(
        wall_time=wall_time, step=step, summary=summary_pb2.Summary(value=values)
    )
