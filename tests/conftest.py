"""Shared by both layers: every test must leave no sampler thread and no patch behind, and
the unit layer (tests/unit) runs before the integration layer (tests/integration)."""

from __future__ import annotations

import collections
import gc
import os
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

UNIT = Path(__file__).resolve().parent / "unit"

# TensorFlow's C++ start-up logging is noise in test output; the user's own output is not
# touched by pipediag, only this test process's.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _pipediag_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("pipediag")]


def _leftover_patches() -> list[str]:
    found = [type(f).__name__ for f in sys.meta_path if type(f).__name__ == "PostImportHook"]
    iterator_ops = sys.modules.get("tensorflow.python.data.ops.iterator_ops")
    if iterator_ops is not None:
        method = iterator_ops.OwnedIterator.__dict__["_next_internal"]
        if hasattr(method, "__wrapped__"):
            found.append("OwnedIterator._next_internal")
    dataset_ops = sys.modules.get("tensorflow.python.data.ops.dataset_ops")
    if dataset_ops is not None and hasattr(dataset_ops.DatasetV2.__init__, "__wrapped__"):
        found.append("DatasetV2.__init__")
    keras = sys.modules.get("keras")
    if keras is not None and "fit" in vars(keras.Model):
        found.append("keras.Model.fit")
    return found


@pytest.fixture(autouse=True)
def no_leaks() -> Iterator[None]:
    yield
    assert _pipediag_threads() == [], "a pipediag sampler thread outlived its test"
    assert _leftover_patches() == [], "a pipediag patch outlived its test"


@pytest.fixture(autouse=True)
def reports_agree_with_themselves(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every report.json a test writes under its tmp_path states figures that agree
    (tests/report_identities.py)."""
    # Asked for before the test, so that it outlives this fixture's check.
    folder = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if folder is None:
        return
    from report_identities import written_report_problems

    problems = written_report_problems(folder)
    assert problems == [], problems


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Unit tests first, each layer in its own order: the unit layer's guard can tell that a
    test imported TensorFlow only while no integration test has imported it yet."""
    items.sort(key=lambda item: UNIT not in item.path.parents)


@pytest.fixture(autouse=True)
def _signal_handlers_restored() -> Iterator[None]:
    """Put SIGINT and SIGTERM back as they were after each test: in-process runs install
    their own handlers, and one left behind would change how later tests are interrupted."""
    import signal

    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        if signal.getsignal(sig) is not handler and handler is not None:
            signal.signal(sig, handler)


class _CollectionClock:
    """Times the full garbage collections, naming the test each followed: one pass once
    held a tiny test 38 s and another 56 s on CI (`_FullCollections` says why, and why they
    now run on a helper thread)."""

    def __init__(self) -> None:
        self.test = "collection"
        self.started = 0.0
        self.passes = 0
        self.total_s = 0.0
        self.longest_s = 0.0
        self.longest_in = ""

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self.started = time.perf_counter()
            if _GC_LOG is not None:
                _ITERATORS.freed.clear()
                _ITERATORS.collecting = True
            return
        took = time.perf_counter() - self.started
        if _GC_LOG is not None:
            _ITERATORS.collecting = False
            if took > 1.0 or _ITERATORS.freed:
                freed = dict(_ITERATORS.freed)
                line = f"--- {took:.1f} s after {self.test}, {info}, iterators freed {freed}"
                _GC_LOG.write(line + "\n")
                _GC_LOG.flush()
        self.passes += 1
        self.total_s += took
        if took > self.longest_s:
            self.longest_s, self.longest_in = took, self.test


class _IteratorBirths:
    """Which test (and which line outside TensorFlow) made each tf.data iterator that a full
    collection freed: deleting an idle one can wait out autotune's sleep, up to 60 s
    (docs/design.md, "Iterator tear-down"), holding the thread that collects."""

    def __init__(self) -> None:
        self.collecting = False
        self.freed: collections.Counter[str] = collections.Counter()
        self._refs: set[weakref.ref[Any]] = set()
        self._patched = False

    def watch(self) -> None:
        iterator_ops = sys.modules.get("tensorflow.python.data.ops.iterator_ops")
        if iterator_ops is None or self._patched:
            return
        self._patched = True
        original = iterator_ops.OwnedIterator.__init__

        def __init__(iterator: Any, *args: Any, **kwargs: Any) -> None:
            original(iterator, *args, **kwargs)
            born = f"{_COLLECTIONS.test} at {_caller_outside_tensorflow()}"

            def freed(ref: weakref.ref[Any]) -> None:
                self._refs.discard(ref)
                if self.collecting:
                    self.freed[born] += 1

            self._refs.add(weakref.ref(iterator, freed))

        iterator_ops.OwnedIterator.__init__ = __init__


def _caller_outside_tensorflow() -> str:
    frame = sys._getframe(2)
    while frame is not None and any(
        part in frame.f_code.co_filename for part in ("tensorflow", "keras", "conftest")
    ):
        frame = frame.f_back  # type: ignore[assignment]
    return f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno}" if frame else "?"


# PIPEDIAG_GC_LOG=FILE: a line for each full collection that took over a second or freed
# tf.data iterators, naming the test (and line) that made each. Stacks are not dumped: a
# dump of every thread while the main thread runs beside the collection (faulthandler's
# watchdog) crashed the suite once (SIGSEGV, 2026-12-04).
_GC_LOG_FILE = os.environ.get("PIPEDIAG_GC_LOG")
_GC_LOG = open(_GC_LOG_FILE, "a") if _GC_LOG_FILE else None  # noqa: SIM115 - open all run
_COLLECTIONS = _CollectionClock()
_ITERATORS = _IteratorBirths()
gc.callbacks.append(_COLLECTIONS)


class _FullCollections:
    """Full collections run on a helper thread between tests, never on a test's own thread.

    A full collection that frees an idle, autotuned tf.data iterator waits inside the
    iterator's destructor until autotune's model thread ends its sleep, up to TensorFlow's
    60-s optimization period (docs/design.md, "Iterator tear-down"); the scripts the tests
    run in-process leave Keras's iterators in reference cycles, so that wait fell on the
    main thread in 5 of 7 fresh-clone runs (20-59 s at once). The wait releases the GIL, so
    on a helper thread it holds only that thread. Python's own full collections are turned
    off (young generations still collect as usual); a helper thread collects after a test
    once `EVERY_S` have passed, about as often as Python did. One still waiting when the
    suite ends is left to it: a process exits cleanly past such a wait (checked, 2 of 2).
    """

    EVERY_S = 10.0

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._last = time.monotonic()
        threshold0, threshold1, _ = gc.get_threshold()
        # A full collection starts only after this many collections of generation 1.
        gc.set_threshold(threshold0, threshold1, 1 << 30)

    def after_test(self) -> None:
        running = self._thread is not None and self._thread.is_alive()
        if running or time.monotonic() - self._last < self.EVERY_S:
            return
        self._last = time.monotonic()
        self._thread = threading.Thread(target=gc.collect, name="conftest-full-collection")
        self._thread.daemon = True
        self._thread.start()


_FULL_COLLECTIONS = _FullCollections()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _COLLECTIONS.test = item.nodeid
    if _GC_LOG is not None:
        _ITERATORS.watch()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    _FULL_COLLECTIONS.after_test()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    clock = _COLLECTIONS
    terminalreporter.write_line(
        f"full garbage collections (on a helper thread): {clock.passes}, {clock.total_s:.1f} s "
        f"in all, the longest {clock.longest_s:.1f} s after {clock.longest_in or 'none'}"
    )
