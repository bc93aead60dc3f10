"""Colour on a terminal only: the verdict's line in its label's colour; none for a pipe, a
file, NO_COLOR or a dumb terminal."""

from __future__ import annotations

import io

import pytest

from pipediag.renderers.colour import mark_verdict, use_colour


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")


def test_a_terminal_gets_colour_and_a_pipe_does_not() -> None:
    assert use_colour(_Terminal())
    assert not use_colour(io.StringIO())


@pytest.mark.parametrize(("name", "value"), [("NO_COLOR", "1"), ("NO_COLOR", ""), ("TERM", "dumb")])
def test_the_user_can_turn_colour_off(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    assert not use_colour(_Terminal())


def test_only_the_verdict_line_is_coloured_by_its_label() -> None:
    text = "\nINPUT-BOUND: input costs 86%\n  A 34.7 steps/s\n"
    marked = mark_verdict(text, "input-bound")
    assert marked.split("\n")[1] == "\033[1;31mINPUT-BOUND: input costs 86%\033[0m"
    assert marked.split("\n")[2:] == text.split("\n")[2:]
    assert mark_verdict("COMPUTE-BOUND\n", "compute-bound").startswith("\033[1;32m")


def test_an_unknown_verdict_is_left_plain() -> None:
    assert mark_verdict("NO VERDICT\n", "unknown") == "NO VERDICT\n"
