"""`pipediag run --watch`: the options of watch mode, and their checks (docs/design.md,
"Watching a long run")."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipediag.cli.argtypes import every, share, windows
from pipediag.config import DEFAULT_ALERT_INPUT_SHARE, DEFAULT_ALERT_WINDOWS, WatchConfig
from pipediag.errors import UsageError
from pipediag.finish import check_writable

# The options that only mean something with --watch: (dest, flag).
WATCH_ONLY = (
    ("watch_every", "--watch-every"),
    ("alert_input_share", "--alert-input-share"),
    ("alert_windows", "--alert-windows"),
    ("alert_command", "--alert-command"),
    ("watch_logdir", "--watch-logdir"),
)


def add_watch_options(run: argparse.ArgumentParser) -> None:
    group = run.add_argument_group(
        "watch a long run",
        "keep the per-step wait and the samplers on for the whole run (no pipeline-alone "
        "phase, no fix trials; the script runs to its end) and judge it window by window",
    )
    group.add_argument(
        "--watch",
        action="store_true",
        help="watch mode: a verdict per window in the report, TensorBoard scalars, alerts",
    )
    group.add_argument(
        "--watch-every",
        type=every,
        default=None,
        metavar="N|epoch",
        help="a window per N train steps, or per epoch (default)",
    )
    group.add_argument(
        "--alert-input-share",
        type=share,
        metavar="F",
        help="alert when the share of step time spent waiting for input is at least F "
        "(0.2 or 20%%) for K windows in a row (default "
        f"{DEFAULT_ALERT_INPUT_SHARE * 100:.0f}%% with --alert-command)",
    )
    group.add_argument(
        "--alert-windows",
        type=windows,
        metavar="K",
        help=f"the windows in a row an alert needs (default {DEFAULT_ALERT_WINDOWS})",
    )
    group.add_argument(
        "--alert-command",
        metavar="CMD",
        help="shell command run on each alert, not waited for: the figures in PIPEDIAG_* "
        "environment variables and as JSON on its stdin",
    )
    group.add_argument(
        "--watch-logdir",
        metavar="DIR",
        help="TensorBoard log directory for the scalars (run 'pipediag' in it); default: the "
        "log_dir of a keras.callbacks.TensorBoard given to fit, else OUT/tensorboard",
    )


def watch_config(options: argparse.Namespace, *, steps_given: bool) -> WatchConfig | None:
    """The watch settings `run` was given, or None without --watch; UsageError on a misuse."""
    given = [flag for dest, flag in WATCH_ONLY if getattr(options, dest) is not None]
    if not options.watch:
        if given:
            raise UsageError(f"{given[0]} is a watch-mode option: add --watch")
        return None
    if steps_given:
        raise UsageError("--watch measures the whole run, to the script's end: drop --steps")
    if options.deep:
        raise UsageError("--watch runs no stage timing or fix trials: drop --deep")
    if options.watch_logdir is not None:
        # Before the run: scalars that cannot be written are found out at its first window.
        logdir = Path(options.watch_logdir)
        check_writable(
            logdir, f"cannot write TensorBoard logs to {logdir}: choose a writable --watch-logdir"
        )
    return WatchConfig(
        every_steps=options.watch_every,
        alert_input_share=options.alert_input_share,
        alert_windows=options.alert_windows or DEFAULT_ALERT_WINDOWS,
        alert_command=options.alert_command,
        logdir=options.watch_logdir,
    )
