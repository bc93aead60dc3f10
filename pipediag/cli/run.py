"""`pipediag run [options] SCRIPT [ARGS...]`: run a training script under pipediag, and the
options of watch mode, `--watch` (docs/design.md, "Watching a long run")."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from pipediag.analysis.paired import OBSERVER_PAIRS
from pipediag.cli import argtypes
from pipediag.cli.common import Command, answer_text, in_colour
from pipediag.cluster import task_out_dir
from pipediag.config import (
    DEFAULT_ALERT_INPUT_SHARE,
    DEFAULT_ALERT_WINDOWS,
    DEFAULT_MEASURED_SECONDS,
    DEFAULT_MEASURED_STEPS,
    DEFAULT_OUT_DIR,
    DEFAULT_WARMUP_STEPS,
    RunConfig,
    WatchConfig,
    watching,
)
from pipediag.errors import UsageError
from pipediag.finish import check_writable


def add_arguments(run: argparse.ArgumentParser) -> None:
    run.add_argument(
        "--steps",
        type=argtypes.steps,
        default=None,  # not given: the default count, bounded by time
        metavar="N|all",
        help=f"train steps to measure after the warm-up, then end the script (default "
        f"{DEFAULT_MEASURED_STEPS}, or fewer, at least 20, once they span "
        f"{DEFAULT_MEASURED_SECONDS:g} s); 'all' lets the script run to its end. More "
        "than the default also lets training and the step alone alternate longer, for a "
        "narrower interval",
    )
    run.add_argument(
        "--warmup",
        type=argtypes.non_negative_int,
        default=DEFAULT_WARMUP_STEPS,
        metavar="N",
        help=f"first steps kept out of the verdict (default {DEFAULT_WARMUP_STEPS})",
    )
    _add_budgets(
        run,
        ("--bench-seconds", argtypes.seconds, "time budget of the pipeline-alone benchmark"),
        ("--bench-batches", argtypes.positive_int, "batch budget of the pipeline-alone benchmark"),
    )
    for flag, what in (
        ("--no-bench", "skip the pipeline-alone benchmark"),
        ("--no-gpu", "do not sample the GPU with NVML"),
        ("--no-stages", "do not time each pipeline stage alone"),
        (
            "--no-verify",
            "do not build and measure the suggested pipeline fixes (they stay "
            "estimates), nor the model-side changes",
        ),
    ):
        run.add_argument(flag, action="store_true", help=what)
    _add_budgets(
        run,
        ("--verify-seconds", argtypes.seconds, "time budget for measuring fixes"),
        ("--deep-seconds", argtypes.seconds, "time budget that stage timing and fix trials share"),
    )
    run.add_argument(
        "--deep",
        action="store_true",
        help="time each stage and measure fixes even when input costs under 5%% of training "
        "(by default they run only when input matters)",
    )
    run.add_argument(
        "--scale-out",
        type=argtypes.positive_int,
        default=0,
        metavar="N",
        help="read a copy of the pipeline through a tf.data service dispatcher and N workers "
        "that pipediag starts on this host (off by default; your training is not affected)",
    )
    run.add_argument(
        "--data-service",
        type=argtypes.service_address,
        metavar="grpc://HOST:PORT",
        help="read a copy of the pipeline through an existing tf.data service dispatcher and "
        "its workers",
    )
    run.add_argument(
        "--data-service-train",
        action="store_true",
        help="with --data-service: also time your train step fed by the service (Keras fit; "
        "every variable is restored after)",
    )
    run.add_argument(
        "--train-function",
        metavar="NAME",
        help="the tf.function that trains, for a loop whose function steps no optimizer with "
        "a step counter: each of its calls counts as one step",
    )
    run.add_argument(
        "--observer-check",
        action="store_true",
        help=f"time every other training block of the alternation, and up to {OBSERVER_PAIRS} "
        "pairs of blocks after it, with pipediag's samplers paused, and report what watching "
        "cost training",
    )
    run.add_argument(
        "--out",
        default=DEFAULT_OUT_DIR,
        metavar="DIR",
        help=f"directory for the report files (default {DEFAULT_OUT_DIR}); under TF_CONFIG "
        "(a multi-worker job), its TYPE-INDEX subdirectory, e.g. worker-0",
    )
    run.add_argument(
        "--quiet",
        action="store_true",
        help="no progress lines; the answer is the verdict and where the report went",
    )
    run.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print every figure (summary.txt) before the short answer",
    )
    run.add_argument(
        "--history",
        metavar="FILE",
        help="append this run's key figures to FILE, one JSON line (see pipediag history)",
    )
    add_watch_options(run)
    run.add_argument("script", help="the training script; ARGS after it go to the script")


def _add_budgets(
    run: argparse.ArgumentParser, *budgets: tuple[str, Callable[[str], float], str]
) -> None:
    """Options (flag, argparse type, what it bounds) whose default is RunConfig's field of the
    same name, said in their help: the command line cannot drift from the Python API's."""
    for flag, kind, what in budgets:
        default = getattr(RunConfig, flag.removeprefix("--").replace("-", "_"))
        run.add_argument(
            flag,
            type=kind,
            default=default,
            metavar="S" if kind is argtypes.seconds else "N",
            help=f"{what} (default {default:g})",
        )


# The options that mean something only with --watch, by dest (the flag: `--`, then dashes).
WATCH_ONLY = ("watch_every", "alert_input_share", "alert_windows", "alert_command", "watch_logdir")


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
        type=argtypes.every,
        metavar="N|epoch",
        help="a window per N train steps, or per epoch (default)",
    )
    group.add_argument(
        "--alert-input-share",
        type=argtypes.share,
        metavar="F",
        help="alert when the share of step time spent waiting for input is at least F "
        "(0.2 or 20%%) for K windows in a row (default "
        f"{DEFAULT_ALERT_INPUT_SHARE * 100:.0f}%% with --alert-command)",
    )
    group.add_argument(
        "--alert-windows",
        type=argtypes.windows,
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
    given = [dest for dest in WATCH_ONLY if getattr(options, dest) is not None]
    if not options.watch:
        if given:
            flag = "--" + given[0].replace("_", "-")
            raise UsageError(f"{flag} is a watch-mode option: add --watch")
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


def split_script_args(argv: list[str], run: argparse.ArgumentParser) -> tuple[list[str], list[str]]:
    """Split `run [options] SCRIPT ARGS...` at SCRIPT: argparse alone would match the script's flags
    against pipediag's (`--b`, `--steps`). Another command's line is returned whole."""
    if not argv or argv[0] != COMMAND.name:
        return argv, []
    takes_value = {
        flag for action in run._actions if action.nargs is None for flag in action.option_strings
    }
    i = 1
    while i < len(argv):
        if (token := argv[i]) == "--":
            return argv[: i + 2], argv[i + 2 :]
        if not token.startswith("-") or token == "-":
            return argv[: i + 1], argv[i + 1 :]
        i += 2 if token in takes_value else 1
    return argv, []


def run_command(options: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from pipediag.api import run_and_report
    from pipediag.renderers.text import render_text
    from pipediag.runner import release_stopped_script

    if options.data_service_train and options.data_service is None:
        parser.error("--data-service-train needs --data-service grpc://HOST:PORT")
    steps_given = options.steps is not None
    watch = watch_config(options, steps_given=steps_given)
    measured_steps: int | None = DEFAULT_MEASURED_STEPS
    if steps_given:  # a count given is measured exactly; 'all' runs to the script's end
        measured_steps = None if options.steps == argtypes.ALL else options.steps
    config = RunConfig(
        measured_steps=measured_steps,
        measured_seconds=None if steps_given else DEFAULT_MEASURED_SECONDS,
        warmup_steps=options.warmup,
        bench=not options.no_bench,
        bench_seconds=options.bench_seconds,
        bench_batches=options.bench_batches,
        sample_gpu=not options.no_gpu,
        stages=not options.no_stages,
        verify=not options.no_verify,
        verify_seconds=options.verify_seconds,
        deep=options.deep,
        deep_seconds=options.deep_seconds,
        scale_out_workers=options.scale_out,
        data_service=options.data_service,
        data_service_train=options.data_service_train,
        train_function=options.train_function,
        observer_check=options.observer_check,
    )
    if watch is not None:
        config = watching(config, watch)
    script_folder = Path(options.script).resolve().parent
    if options.history:
        # Before the run, not after it: a history line lost at the end costs the whole run.
        history = Path(options.history)
        check_writable(
            history, f"cannot append to {history}: choose a writable --history file", is_file=True
        )
    log = None if options.quiet else sys.stderr
    report, written = run_and_report(
        options.script, list(options.script_args), config, out=options.out, log=log
    )
    sys.stdout.flush()
    report_json = task_out_dir(options.out, report.task) / "report.json"
    text = answer_text(report, report_json.parent, written, quiet=options.quiet)
    if options.verbose:
        text = render_text(report) + text
    print("\n" + in_colour(report, text), end="")
    if written and report.task is not None:
        print(f"Once every worker is done: pipediag merge {options.out}")
    sys.stdout.flush()
    release_stopped_script()  # the answer is out: a stopped script's iterators go now
    if not options.history:
        return report.exit.code
    from pipediag.history import record_run

    history_file: str = options.history
    report_path = str(report_json) if written else None
    try:
        record_run(report, history_file, script_folder=script_folder, report_path=report_path)
    except OSError as exc:
        # Said, and fails a run that otherwise passed.
        print(f"pipediag: error: could not append to {history_file}: {exc}", file=sys.stderr)
        return report.exit.code or 1
    print(f"History: appended to {history_file} (see: pipediag history {history_file})")
    return report.exit.code


COMMAND = Command(
    name="run",
    help="run a training script under pipediag and diagnose it",
    description=(
        "Run an unmodified training script as `python SCRIPT ARGS...` would, benchmark its "
        "input pipeline alone, time its train steps, and give a verdict. pipediag's options "
        "come before SCRIPT; everything after SCRIPT goes to the script."
    ),
    add_arguments=add_arguments,
    run=run_command,
    usage="pipediag run [options] SCRIPT [ARGS...]",
    allow_abbrev=False,
    examples=(
        "pipediag run train.py --epochs 3                  # args after SCRIPT are the script's",
        "pipediag run --steps all train.py                 # let the script run to its end",
        "pipediag run --out runs/a --history h.jsonl train.py  # a folder, and a trend file",
        "pipediag run --watch --alert-input-share 20% train.py  # watch a long run",
    ),
)
