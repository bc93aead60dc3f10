"""Watch mode: a long run judged window by window (`pipediag run --watch`, `keras.Watch`).

`watcher.py` reads the step timeline on its own thread, never the training thread, and
drives `windows.py`, `alerts.py` and `tensorboard.py` (docs/design.md, "Watching a long run").
"""
