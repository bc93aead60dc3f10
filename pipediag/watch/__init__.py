"""Watch mode: a long run judged window by window (`pipediag run --watch`, `keras.Watch`);
`watcher.py` drives the rest (docs/design.md, "Watching a long run")."""
