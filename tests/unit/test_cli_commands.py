"""The command line's one table of commands, and the argument checks it shares with
`pipediag.keras.Watch` (`pipediag/cli/argtypes.py`)."""

from __future__ import annotations

import argparse
import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import pipediag.cli
from pipediag.cli import argtypes
from pipediag.cli.commands import COMMANDS, build_parser
from pipediag.cli.common import Command

EVERY_COMMAND = ["run", "report", "compare", "check", "history", "merge"]


def test_the_one_table_lists_every_command_in_help_order() -> None:
    assert [command.name for command in COMMANDS] == EVERY_COMMAND
    parser, parsers = build_parser()
    assert list(parsers) == EVERY_COMMAND
    listed = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert list(listed.choices) == EVERY_COMMAND


def test_every_command_module_is_in_the_table() -> None:
    # GIVEN each module of the cli package that defines a command
    defined = []
    for module in pkgutil.iter_modules(pipediag.cli.__path__):
        command = getattr(importlib.import_module(f"pipediag.cli.{module.name}"), "COMMAND", None)
        if isinstance(command, Command):
            defined.append(command)
    # THEN the table holds each of them, once
    assert sorted(c.name for c in defined) == sorted(c.name for c in COMMANDS)
    assert len({c.name for c in COMMANDS}) == len(COMMANDS)


def test_importing_the_package_loads_no_command() -> None:
    # `keras.py` imports `pipediag.cli.argtypes`: the package's __init__ runs, and must not
    # load the command line above it (its only import of a command is inside main()).
    source = Path(pipediag.cli.__file__).read_text()
    top_level = [
        node for node in ast.parse(source).body if isinstance(node, (ast.Import, ast.ImportFrom))
    ]
    assert all(
        not (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pipediag"))
        for node in top_level
    )


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (argtypes.positive_int, "0", "must be at least 1, got 0"),
        (argtypes.positive_int, "two", "expected a whole number, got 'two'"),
        (argtypes.non_negative_int, "-1", "must be at least 0, got -1"),
        (argtypes.seconds, "0", "must be at least 0.001, got 0"),
        (argtypes.seconds, "nan", "must be at least 0.001, got nan"),
        (argtypes.positive_rate, "0", "must be more than 0, got 0"),
        (argtypes.positive_rate, "fast", "expected a number of steps/s, got 'fast'"),
        (argtypes.windows, "0", "must be at least 1, got 0"),
        (argtypes.windows, "x", "expected a whole number of windows, got 'x'"),
        (argtypes.steps, "0", "must be at least 1, got 0 (or 'all')"),
        (argtypes.every, "0", "a window needs at least 1 step, got 0"),
        (argtypes.share, "1.5", "expected a share from 0 to 1 (or 0% to 100%), got '1.5'"),
    ],
)
def test_a_bad_value_on_the_command_line_says_what_was_expected(
    parse: object, text: str, message: str
) -> None:
    assert callable(parse)
    with pytest.raises(argparse.ArgumentTypeError) as raised:
        parse(text)
    assert str(raised.value).startswith(message)


def test_the_words_of_the_command_line_parse_to_their_values() -> None:
    assert argtypes.steps("all") == argtypes.ALL and argtypes.steps("30") == 30
    assert argtypes.every("epoch") is None and argtypes.every("50") == 50
    assert argtypes.share("20%") == pytest.approx(0.2) and argtypes.share("0.2") == 0.2


@pytest.mark.parametrize(
    ("check", "value", "message"),
    [
        (
            lambda v: argtypes.whole_number("alert_windows", v, 1),
            0,
            "alert_windows: a whole number, 1 or more, got 0",
        ),
        (
            lambda v: argtypes.whole_number("warmup_steps", v, 0),
            True,
            "warmup_steps: a whole number, 0 or more, got True",
        ),
        (
            lambda v: argtypes.steps_or_epoch("every", v),
            "hourly",
            "every: a number of steps (1 or more) or 'epoch', got 'hourly'",
        ),
        (
            lambda v: argtypes.share_value("alert_input_share", v),
            2.0,
            "alert_input_share: a share from 0 to 1 (0.2 for 20%), got 2.0",
        ),
        (
            lambda v: argtypes.hook_or_command("alert", v),
            3,
            "alert: a callable (given each WatchAlert) or a shell command (str), got 3",
        ),
    ],
)
def test_a_bad_keyword_argument_is_a_value_error_naming_it(
    check: object, value: object, message: str
) -> None:
    assert callable(check)
    with pytest.raises(ValueError) as raised:
        check(value)
    assert str(raised.value) == message


def test_good_keyword_arguments_pass_through() -> None:
    assert argtypes.steps_or_epoch("every", "epoch") is None
    assert argtypes.steps_or_epoch("every", 10) == 10
    assert argtypes.share_value("alert_input_share", 1) == 1.0
    assert argtypes.whole_number("warmup_steps", 0, 0) == 0
    assert argtypes.hook_or_command("alert", "echo hi") == "echo hi"


@pytest.mark.parametrize("name", EVERY_COMMAND)
def test_every_command_prints_its_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    # argparse formats help with %-style: a bare "%" in a help text crashes `--help`
    _, parsers = build_parser()
    with pytest.raises(SystemExit) as done:
        parsers[name].parse_args(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert f"usage: pipediag {name}" in out
    # a description is printed as written: argparse does not %-format it
    assert "%%" not in out


@pytest.mark.parametrize("name", ["pipediag", "run", "report", "compare", "check"])
def test_help_ends_with_examples_one_a_line(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    parser, parsers = build_parser()
    with pytest.raises(SystemExit):
        (parser if name == "pipediag" else parsers[name]).parse_args(["--help"])
    out = capsys.readouterr().out
    # the paragraphs above stay wrapped; each example is a line of its own, kept as written
    assert all(len(line) <= 100 for line in out.splitlines())
    examples = out.split("examples:\n", 1)[1].splitlines()
    assert examples and all(line.startswith("  pipediag ") for line in examples)
    if name != "pipediag":
        assert all(line.startswith(f"  pipediag {name} ") for line in examples)


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    from pipediag.version import __version__

    parser, _ = build_parser()
    with pytest.raises(SystemExit) as done:
        parser.parse_args(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"pipediag {__version__}"
