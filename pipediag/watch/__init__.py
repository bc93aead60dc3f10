"""Watch mode: a long run watched window by window (`pipediag run --watch`, `pipediag.keras.Watch`).

`windows.py` (pure) puts steps into windows, each labelled by its wait share; `alerts.py`
holds the alert rule and its sinks; `tensorboard.py` writes the windows as scalars;
`watcher.py` reads the step timeline on its own thread every half second, drives the three,
and `finish()` gives the report's `WatchSection`. Nothing here runs on the training thread.
Method: (docs/design.md, "Watching a long run").
"""
