"""The unit layer runs in-process and without TensorFlow: every test here is checked.

A test that imports TensorFlow (or Keras) or starts a child process fails, with a message
that says to move it to tests/integration. tests/conftest.py runs this layer first, so in a
whole-suite run no integration test has imported TensorFlow yet.
"""

from __future__ import annotations

import platform
from collections.abc import Iterator

import pytest
from in_process import frameworks_loaded, no_child_processes

# Every report records platform.platform(), which runs `uname -p` the first time in a
# process and caches the answer: asked here, so the guard counts only what a test starts.
platform.platform()


@pytest.fixture(autouse=True)
def stays_in_process() -> Iterator[None]:
    loaded_before = frameworks_loaded()
    if loaded_before:
        pytest.fail(
            f"{', '.join(sorted(loaded_before))} was imported before this unit test (by a test "
            "module at collection, or an earlier test): import it inside integration tests",
            pytrace=False,
        )
    with no_child_processes() as refused:
        yield
    assert not refused, f"a unit test started {refused[0]}: move it to tests/integration"
    imported = frameworks_loaded()
    assert not imported, (
        f"a unit test imported {', '.join(sorted(imported))}: move it to tests/integration"
    )
