"""Watch mode: a long run watched window by window (`pipediag run --watch`, `pipediag.keras.Watch`).

- `windows.py`: steps into windows (N steps or an epoch), each with a verdict by input wait
  share; bounded memory over any run length. Pure.
- `alerts.py`: the alert rule (K windows in a row at or over a threshold) and the places an
  alert goes (a Python callable, a shell command), never blocking or failing training.
- `tensorboard.py`: the windows as TensorBoard scalars (`tf.summary`, TensorFlow imported
  only there, and only when a window is written).
- `watcher.py`: reads the step timeline on its own thread, half a second at a time, and
  drives the three; `finish()` gives the report's `WatchSection`.

Nothing here runs on the training thread: the hooks feed the step timeline as they do for a
diagnosis, and the watcher reads it (docs/design.md, "Watching a long run").
"""
