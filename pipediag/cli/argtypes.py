"""The checks of every argument pipediag takes: argparse types for the command line, and
the checks of `pipediag.keras.Watch`'s keyword arguments (same rules, a `ValueError` naming
the argument). It imports no other part of the command line, so `keras.py` can share it.

May import: `errors`, `scale_out` (the tf.data service address, inside a function)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, Final, Literal, TypeVar

N = TypeVar("N", int, float)

ALL: Final = "all"
"""`--steps all`: measure to the script's end."""

EPOCH: Final = "epoch"
"""`--watch-every epoch`, `Watch(every="epoch")`: a window per epoch."""


def number(kind: type[N], lowest: N, what: str, *, inclusive: bool = True) -> Callable[[str], N]:
    """An argparse type: a number of `kind`, at least `lowest` (more than it, if not
    `inclusive`); `what` names the number in the error for text that is none."""

    def parse(text: str) -> N:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if inclusive and not value >= lowest:
            raise argparse.ArgumentTypeError(f"must be at least {lowest:g}, got {text}")
        if not inclusive and not value > lowest:
            raise argparse.ArgumentTypeError(f"must be more than {lowest:g}, got {text}")
        return value

    return parse


positive_int = number(int, 1, "a whole number")
non_negative_int = number(int, 0, "a whole number")
seconds = number(float, 1e-3, "a number of seconds")
positive_rate = number(float, 0.0, "a number of steps/s", inclusive=False)
windows = number(int, 1, "a whole number of windows")
"""K, the windows in a row an alert needs."""


def steps(text: str) -> int | Literal["all"]:
    """A step count, or 'all': run to the end."""
    if text == ALL:
        return ALL
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (or 'all')") from None


def every(text: str) -> int | None:
    """A number of steps per window, or 'epoch' (None)."""
    if text == EPOCH:
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number of steps or 'epoch', got {text!r}"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"a window needs at least 1 step, got {text}")
    return value


def share(text: str) -> float:
    """A share written as 0.2 or 20%."""
    stripped = text.strip()
    percent = stripped.endswith("%")
    try:
        value = float(stripped.removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a share like 0.2 or 20%, got {text!r}"
        ) from None
    if percent:
        value /= 100.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(
            f"expected a share from 0 to 1 (or 0% to 100%), got {text!r}"
            + ("" if percent else f"; for percent write {text}%")
        )
    return value


def service_address(text: str) -> str:
    """A tf.data dispatcher address, `grpc://HOST:PORT` (the scheme may be left out)."""
    from pipediag.scale_out.service import parse_address

    try:
        return f"grpc://{parse_address(text)}"
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def whole_number(name: str, value: int, lowest: int) -> int:
    """`value`, a whole number of at least `lowest`; not a bool (an int to Python, not a count)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
        raise ValueError(f"{name}: a whole number, {lowest} or more, got {value!r}")
    return value


def steps_or_epoch(name: str, value: int | str | None) -> int | None:
    """A number of steps (1 or more) per window; 'epoch' or None for one per epoch."""
    if value is None or value == EPOCH:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: a number of steps (1 or more) or 'epoch', got {value!r}")
    return value


def share_value(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{name}: a share from 0 to 1 (0.2 for 20%), got {value!r}")
    return float(value)


def hook_or_command(name: str, value: Any) -> Any:
    if not isinstance(value, str) and not callable(value):
        raise ValueError(
            f"{name}: a callable (given each WatchAlert) or a shell command (str), got {value!r}"
        )
    return value
