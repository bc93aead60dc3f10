"""What keeps the unit layer (tests/unit) what it says: no TensorFlow, no child process.

`tests/unit/conftest.py` wraps every unit test in `no_child_processes()` and compares
`frameworks_loaded()` before and after it; a test that needs either belongs in
tests/integration.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

FRAMEWORKS = ("tensorflow", "keras")
# Every way the standard library starts a program: subprocess (and everything built on it)
# goes through Popen; os.system, fork and the spawn calls do not.
_OS_STARTERS = ("system", "fork", "posix_spawn", "posix_spawnp")


class ChildProcessRefused(RuntimeError):
    """Raised where a unit test would have started a child process."""


def frameworks_loaded() -> set[str]:
    """The heavy frameworks imported in this process (an entry of None is a blocked import)."""
    return {name for name in FRAMEWORKS if sys.modules.get(name) is not None}


@contextmanager
def no_child_processes() -> Iterator[list[str]]:
    """Refuse to start a child process inside the block; yields the programs refused.

    The code under test may catch the refusal (pipediag reads `git` and takes any failure
    as "no commit"), so the caller must check the list, not only the outcome.
    """
    refused: list[str] = []

    def refuse(what: str) -> Callable[..., Any]:
        def starter(*args: Any, **kwargs: Any) -> Any:
            refused.append(what)
            raise ChildProcessRefused(f"a unit test may not start a child process ({what})")

        return starter

    def refuse_popen(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        refuse(f"subprocess: {_program(args)}")()

    saved_popen = subprocess.Popen.__init__
    saved_os = {name: getattr(os, name) for name in _OS_STARTERS if hasattr(os, name)}
    subprocess.Popen.__init__ = refuse_popen  # type: ignore[assignment, method-assign]
    for name in saved_os:
        setattr(os, name, refuse(f"os.{name}"))
    try:
        yield refused
    finally:
        subprocess.Popen.__init__ = saved_popen  # type: ignore[method-assign]
        for name, original in saved_os.items():
            setattr(os, name, original)


def _program(args: Any) -> str:
    if isinstance(args, str | bytes | os.PathLike):
        return os.fsdecode(args).split(" ")[0]
    return " ".join(os.fsdecode(a) for a in list(args)[:2])
