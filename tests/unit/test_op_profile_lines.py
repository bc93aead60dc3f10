"""The profiler window finds the calling thread's line whatever the OS named the thread:
`python` under `python script.py`, the console script's name under `pipediag run`
(docs/design.md, "When the model sets the rate")."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipediag.training.op_profile import PYTHON_LINE, _host_events, caller_line_names


def _line(name: str, spans_ps: list[tuple[int, int]]) -> SimpleNamespace:
    events = [SimpleNamespace(offset_ps=o, duration_ps=d, metadata_id=1) for o, d in spans_ps]
    return SimpleNamespace(name=name, events=events, timestamp_ns=0)


def _plane(caller: str) -> SimpleNamespace:
    return SimpleNamespace(
        event_metadata={1: SimpleNamespace(name="dense/MatMul:MatMul")},
        lines=[
            _line(caller, [(0, 90_000_000_000)]),  # 90 ms in TensorFlow's calls
            _line("tf_Compute/1", [(0, 80_000_000_000)]),
        ],
    )


@pytest.mark.parametrize("caller", ["python", "pipediag"])
def test_the_caller_s_time_in_tensorflow_is_read_under_either_name(caller: str) -> None:
    ops, inside = _host_events(_plane(caller), frozenset({PYTHON_LINE, "pipediag"}))
    assert inside == 90_000_000
    assert [op.name for op in ops] == ["dense/MatMul:MatMul"]


def test_a_line_under_another_name_is_not_the_caller_s() -> None:
    _, inside = _host_events(_plane("pipediag"), frozenset({PYTHON_LINE}))
    assert inside == 0  # the defect: every step read as Python


def test_the_names_hold_python_and_this_thread_s_os_name() -> None:
    names = caller_line_names()
    assert PYTHON_LINE in names
    comm = Path(f"/proc/self/task/{threading.get_native_id()}/comm")
    if comm.exists():
        assert comm.read_text().strip() in names
