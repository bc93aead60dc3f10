"""`pipediag run train.py [args]`, `pipediag report DIR`, and the commands over saved reports
(`compare`, `check`, `history`, in `cli_reports.py`): a thin layer over the API."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from pipediag.cli_reports import COMMANDS as REPORT_COMMANDS
from pipediag.cli_reports import add_report_commands
from pipediag.cli_watch import add_watch_options, watch_config
from pipediag.cluster import task_out_dir
from pipediag.config import (
    DEFAULT_MEASURED_SECONDS,
    DEFAULT_MEASURED_STEPS,
    DEFAULT_OUT_DIR,
    DEFAULT_WARMUP_STEPS,
    RunConfig,
    watching,
)
from pipediag.errors import PipediagError

if TYPE_CHECKING:
    from pipediag.report.model import Report

USAGE_EXIT = 2


class OneLineParser(argparse.ArgumentParser):
    """Usage errors in one line that says where to look, instead of argparse's usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_EXIT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _number(kind: type[float], lowest: float, what: str) -> Callable[[str], float]:
    """An argparse type: a number of `kind` no smaller than `lowest`."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not value >= lowest:
            raise argparse.ArgumentTypeError(f"must be at least {lowest:g}, got {text}")
        return value

    return parse


_positive_int = _number(int, 1, "a whole number")
_non_negative_int = _number(int, 0, "a whole number")
_positive_float = _number(float, 1e-3, "a number of seconds")


# `--steps` not given: the default count, bounded by time; a count given is measured exactly.
_DEFAULT_STEPS = -1


def _steps(text: str) -> int | None:
    """A step count, or 'all' (None): run to the end."""
    if text == "all":
        return None
    try:
        return int(_positive_int(text))
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (or 'all')") from None


def _service_address(text: str) -> str:
    """A tf.data dispatcher address, `grpc://HOST:PORT` (the scheme may be left out)."""
    from pipediag.bench.service import parse_address

    try:
        return f"grpc://{parse_address(text)}"
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="pipediag",
        allow_abbrev=False,
        description="Find out why TensorFlow training is slow: the input pipeline or the model.",
    )
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=OneLineParser
    )

    run = commands.add_parser(
        "run",
        allow_abbrev=False,
        usage="pipediag run [options] SCRIPT [ARGS...]",
        help="run a training script under pipediag and diagnose it",
        description=(
            "Run an unmodified training script as `python SCRIPT ARGS...` would, benchmark its "
            "input pipeline alone, time its train steps, and give a verdict. pipediag's options "
            "come before SCRIPT; everything after SCRIPT goes to the script."
        ),
    )
    run.add_argument(
        "--steps",
        type=_steps,
        default=_DEFAULT_STEPS,
        metavar="N|all",
        help=f"train steps to measure after the warm-up, then end the script (default "
        f"{DEFAULT_MEASURED_STEPS}, or fewer, at least 20, once they span "
        f"{DEFAULT_MEASURED_SECONDS:g} s); 'all' lets the script run to its end",
    )
    run.add_argument(
        "--warmup",
        type=_non_negative_int,
        default=DEFAULT_WARMUP_STEPS,
        metavar="N",
        help=f"first steps kept out of the verdict (default {DEFAULT_WARMUP_STEPS})",
    )
    run.add_argument(
        "--bench-seconds",
        type=_positive_float,
        default=RunConfig.bench_seconds,
        metavar="S",
        help=f"time budget of the pipeline-alone benchmark (default {RunConfig.bench_seconds:g})",
    )
    run.add_argument(
        "--bench-batches",
        type=_positive_int,
        default=RunConfig.bench_batches,
        metavar="N",
        help=f"batch budget of the pipeline-alone benchmark (default {RunConfig.bench_batches})",
    )
    run.add_argument("--no-bench", action="store_true", help="skip the pipeline-alone benchmark")
    run.add_argument("--no-gpu", action="store_true", help="do not sample the GPU with NVML")
    run.add_argument(
        "--no-stages", action="store_true", help="do not time each pipeline stage alone"
    )
    run.add_argument(
        "--no-verify",
        action="store_true",
        help="do not build and measure the suggested pipeline fixes (they stay estimates)",
    )
    run.add_argument(
        "--verify-seconds",
        type=_positive_float,
        default=RunConfig.verify_seconds,
        metavar="S",
        help=f"time budget for measuring fixes (default {RunConfig.verify_seconds:g})",
    )
    run.add_argument(
        "--deep-seconds",
        type=_positive_float,
        default=RunConfig.deep_seconds,
        metavar="S",
        help="time budget that stage timing and fix trials share "
        f"(default {RunConfig.deep_seconds:g})",
    )
    run.add_argument(
        "--deep",
        action="store_true",
        help="time each stage and measure fixes even when input costs under 5%% of training "
        "(by default they run only when input matters)",
    )
    run.add_argument(
        "--scale-out",
        type=_positive_int,
        default=0,
        metavar="N",
        help="read a copy of the pipeline through a tf.data service dispatcher and N workers "
        "that pipediag starts on this host (off by default; your training is not affected)",
    )
    run.add_argument(
        "--data-service",
        type=_service_address,
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
        "--out",
        default=DEFAULT_OUT_DIR,
        metavar="DIR",
        help=f"directory for the report files (default {DEFAULT_OUT_DIR}); under TF_CONFIG "
        "(a multi-worker job), its TYPE-INDEX subdirectory, e.g. worker-0",
    )
    run.add_argument("--quiet", action="store_true", help="no progress lines, only the summary")
    run.add_argument(
        "--history",
        metavar="FILE",
        help="append this run's key figures to FILE, one JSON line (see pipediag history)",
    )
    add_watch_options(run)
    run.add_argument("script", help="the training script; ARGS after it go to the script")

    report = commands.add_parser(
        "report",
        help="re-render the summary, PNG and trace from a saved report",
        description="Re-render a saved report (no TensorFlow needed).",
    )
    report.add_argument("path", help="report.json, or the directory holding it")
    report.add_argument(
        "--out",
        metavar="DIR",
        help="where to write report.png, trace.json and summary.txt (default: beside the report)",
    )
    add_report_commands(commands)
    _add_merge_command(commands)
    return parser


def _run_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The `run` sub-command's parser, found among the parser's actions."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            choices: dict[str, argparse.ArgumentParser] = action.choices
            return choices["run"]
    raise LookupError("no run sub-command")


def split_script_args(
    argv: list[str], parser: argparse.ArgumentParser
) -> tuple[list[str], list[str]]:
    """Split `run [options] SCRIPT ARGS...` at SCRIPT: nothing after it is pipediag's.

    argparse alone would still match the script's own flags against pipediag's options
    (`--b` for `--bench-seconds`, or a script's own `--steps`).
    """
    if not argv or argv[0] != "run":
        return argv, []
    run = _run_parser(parser)
    takes_value = {
        flag for action in run._actions if action.nargs is None for flag in action.option_strings
    }
    i = 1
    while i < len(argv):
        token = argv[i]
        if token == "--":
            return argv[: i + 2], argv[i + 2 :]
        if not token.startswith("-") or token == "-":
            return argv[: i + 1], argv[i + 1 :]
        i += 2 if token in takes_value else 1
    return argv, []


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    ours, script_args = split_script_args(list(sys.argv[1:] if argv is None else argv), parser)
    options = parser.parse_args(ours)
    if options.command == "run":
        options.script_args = script_args
        if options.data_service_train and options.data_service is None:
            _run_parser(parser).error("--data-service-train needs --data-service grpc://HOST:PORT")
    try:
        if options.command == "run":
            return _run(options)
        if options.command in REPORT_COMMANDS:
            return REPORT_COMMANDS[options.command](options)
        if options.command == "merge":
            return _merge(options)
        return _report(options)
    except PipediagError as exc:
        print(f"pipediag: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        # `pipediag report ... | head`: the reader left; no traceback, and none at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _run(options: argparse.Namespace) -> int:
    from pipediag.api import run_and_report
    from pipediag.renderers.text import render_text

    steps_given = options.steps != _DEFAULT_STEPS
    watch = watch_config(options, steps_given=steps_given)
    config = RunConfig(
        measured_steps=options.steps if steps_given else DEFAULT_MEASURED_STEPS,
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
    )
    if watch is not None:
        config = watching(config, watch)
    script_folder = Path(options.script).resolve().parent
    if options.history:
        _check_history_writable(Path(options.history))
    log = None if options.quiet else sys.stderr
    report, written = run_and_report(
        options.script, list(options.script_args), config, out=options.out, log=log
    )
    sys.stdout.flush()
    print("\n" + render_text(report), end="")
    report_json = task_out_dir(options.out, report.task) / "report.json"
    if written:
        print(f"Report: {', '.join(str(p) for p in written)}")
        print(f"Re-render later: pipediag report {report_json}")
        if report.task is not None:
            print(f"Once every worker is done: pipediag merge {options.out}")
    if options.history:
        return _append_history(
            report, options.history, script_folder, report_json if written else None
        )
    return report.exit.code


def _check_history_writable(path: Path) -> None:
    """Before the run, not after it: a history line lost at the end costs the whole run."""
    from pipediag.errors import UsageError

    if path.exists():
        writable = path.is_file() and os.access(path, os.W_OK)
    else:
        folder = path.parent
        while not folder.exists():
            folder = folder.parent
        writable = folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)
    if not writable:
        raise UsageError(f"cannot append to {path}: choose a writable --history file")


def _append_history(
    report: Report, history: str, script_folder: Path, report_json: Path | None
) -> int:
    """Append the run's line; a failure is said, and fails a run that otherwise passed."""
    from pipediag.history import record_run

    try:
        record_run(
            report,
            history,
            script_folder=script_folder,
            report_path=None if report_json is None else str(report_json),
        )
    except OSError as exc:
        print(f"pipediag: error: could not append to {history}: {exc}", file=sys.stderr)
        return report.exit.code or 1
    print(f"History: appended to {history} (see: pipediag history {history})")
    return report.exit.code


def _report(options: argparse.Namespace) -> int:
    from pipediag.renderers import REPORT_JSON, write_outputs
    from pipediag.renderers.text import render_text
    from pipediag.report.io import load_report

    source = Path(options.path)
    report = load_report(source)
    out = Path(options.out) if options.out else (source if source.is_dir() else source.parent)
    print(render_text(report), end="")
    written, failures = write_outputs(report, out)
    written = [p for p in written if p.name != REPORT_JSON or options.out]
    for failure in failures:
        print(f"pipediag: {failure}", file=sys.stderr)
    if written:
        print(f"Wrote: {', '.join(str(p) for p in written)}")
    return 1 if failures else 0


# -- pipediag merge: the workers of a multi-worker job in one fleet report -------------------


def _add_merge_command(commands: Any) -> None:
    merge = commands.add_parser(
        "merge",
        allow_abbrev=False,
        help="merge the reports of a multi-worker job's workers into one fleet report",
        description=(
            "Merge the workers' reports of one job (each `pipediag run` under TF_CONFIG writes "
            "OUT/TYPE-INDEX/report.json) into fleet.json, fleet.txt, fleet_trace.json and "
            "fleet.png: a row per worker, the straggler and its cause, one trace on a common "
            "clock. No TensorFlow needed."
        ),
    )
    merge.add_argument(
        "paths",
        nargs="+",
        metavar="DIR",
        help="the --out directory the workers shared, worker report directories, or "
        "report.json files",
    )
    merge.add_argument(
        "--out",
        metavar="DIR",
        help="where to write the fleet files (default: DIR, when one directory is given)",
    )


def _merge(options: argparse.Namespace) -> int:
    from pipediag.errors import UsageError
    from pipediag.fleet.merge import merge_reports
    from pipediag.fleet.text import render_fleet_text

    out = options.out
    if out is None:
        if len(options.paths) > 1:
            raise UsageError("several DIRs given: say where the fleet report goes with --out DIR")
        given = Path(options.paths[0])
        out = given if given.is_dir() else given.parent
    fleet, written, failures = merge_reports(options.paths, out)
    print(render_fleet_text(fleet), end="")
    for failure in failures:
        print(f"pipediag: {failure}", file=sys.stderr)
    if written:
        print(f"Wrote: {', '.join(str(p) for p in written)}")
    return 1 if failures else 0
