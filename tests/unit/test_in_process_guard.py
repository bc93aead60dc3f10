"""The unit layer's guard (tests/in_process.py): a child process is refused and recorded even
when the code under test catches the refusal, and a blocked import is not a loaded framework."""

from __future__ import annotations

import os
import subprocess
import sys
import types

import pytest
from in_process import ChildProcessRefused, frameworks_loaded, no_child_processes


def test_a_child_process_is_refused_and_recorded_even_when_the_refusal_is_caught() -> None:
    # GIVEN code that takes any failure to start `git` as "no commit", as pipediag does
    def commit() -> str | None:
        try:
            return subprocess.run(["git", "rev-parse", "HEAD"], check=False).stdout
        except Exception:
            return None

    # WHEN it and os.system run under the guard
    with no_child_processes() as refused:
        assert commit() is None
        with pytest.raises(ChildProcessRefused):
            os.system("true")
    # THEN both are on the record the unit conftest checks
    assert refused == ["subprocess: git rev-parse", "os.system"]


def test_the_starters_are_put_back() -> None:
    before = (subprocess.Popen.__init__, os.system, os.fork)
    with no_child_processes():
        assert subprocess.Popen.__init__ is not before[0] and os.fork is not before[2]
    assert (subprocess.Popen.__init__, os.system, os.fork) == before


def test_a_blocked_import_is_not_a_loaded_framework(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tensorflow", None)  # `import tensorflow` now fails
    assert "tensorflow" not in frameworks_loaded()
    monkeypatch.setitem(sys.modules, "keras", types.ModuleType("keras"))
    assert frameworks_loaded() == {"keras"}
