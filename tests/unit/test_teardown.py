"""TearDown: spent iterators are released on helper threads, never on the caller's.

No TensorFlow in the unit tests: a stand-in iterator keeps its "resource" where TF 2.21
keeps it (`_iterator_resource`), and the resource records the thread that releases it. A
release that blocks is made to block on an Event, so nothing depends on wall-clock time.
"""

from __future__ import annotations

import threading

from pipediag.bench.teardown import THREAD_NAME, TearDown, owned


class _Resource:
    """Records which thread released it; `gate`, when given, holds the release until set."""

    def __init__(self, released_by: list[str], gate: threading.Event | None = None) -> None:
        self.released_by = released_by
        self.gate = gate

    def __del__(self) -> None:
        if self.gate is not None:
            self.gate.wait()
        self.released_by.append(threading.current_thread().name)


class _Iterator:
    def __init__(self, resource: _Resource) -> None:
        self._iterator_resource = resource


def test_the_resource_is_released_on_a_teardown_thread_even_if_the_caller_keeps_a_reference() -> (
    None
):
    released_by: list[str] = []
    teardown = TearDown()
    iterator = _Iterator(_Resource(released_by))

    # WHEN the caller discards the iterator but still holds it (a local, a traceback)
    teardown.discard(iterator)

    # THEN the release happened on the helper thread, not here
    assert teardown.drain(timeout_s=10.0)
    assert released_by == [THREAD_NAME]
    assert not hasattr(iterator, "_iterator_resource")


def test_a_blocking_release_does_not_block_the_caller() -> None:
    released_by: list[str] = []
    gate = threading.Event()
    teardown = TearDown()

    # GIVEN a release that blocks until the gate opens (a tf.data join waiting on autotune)
    teardown.discard(_Iterator(_Resource(released_by, gate)))

    # THEN discard returned while the release is still blocked
    assert teardown.pending() == 1
    assert released_by == []
    assert teardown.drain(timeout_s=0.01) is False  # a drain that times out says so
    gate.set()
    assert teardown.drain(timeout_s=10.0) is True
    assert released_by == [THREAD_NAME] and teardown.pending() == 0


def test_every_discarded_iterator_is_released_at_once_not_one_after_another() -> None:
    # GIVEN two blocked releases: a single worker would not start the second one
    released_by: list[str] = []
    gates = [threading.Event(), threading.Event()]
    teardown = TearDown()
    for gate in gates:
        teardown.discard(_Iterator(_Resource(released_by, gate)))

    # WHEN only the second one is let go
    gates[1].set()
    teardown.drain(timeout_s=0.2)

    # THEN it was released while the first still blocks
    assert released_by == [THREAD_NAME]
    gates[0].set()
    assert teardown.drain(timeout_s=10.0)


def test_owned_drains_a_private_teardown_and_leaves_a_given_one_running() -> None:
    released_by: list[str] = []
    gate = threading.Event()
    shared = TearDown()

    with owned(shared) as given:
        given.discard(_Iterator(_Resource(released_by, gate)))
    assert given is shared and shared.pending() == 1  # the owner drains it, later

    with owned(None) as private:
        private.discard(_Iterator(_Resource(released_by)))
    assert private.pending() == 0 and released_by == [THREAD_NAME]

    gate.set()
    assert shared.drain(timeout_s=10.0)
