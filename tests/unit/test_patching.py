"""The hooks' patches: each wrapper names what it replaced, and `restore()` leaves every class
exactly as it was, whether it had the attribute itself or inherited it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipediag.hooks.host import HookGate
from pipediag.hooks.patching import Patches


class _Base:
    def inherited(self) -> str:
        """The base's own."""
        return "base"


class _Owner(_Base):
    def own(self) -> str:
        """The owner's own."""
        return "own"


def test_a_patch_wraps_and_restores_an_own_and_an_inherited_attribute() -> None:
    # GIVEN a class with one method of its own and one inherited
    own: Callable[[Any], str] = _Owner.__dict__["own"]
    inherited = _Base.inherited
    patches = Patches()

    def wrapped_own(owner: Any) -> str:
        return "wrapped " + own(owner)

    def wrapped_inherited(owner: Any) -> str:
        return "wrapped " + inherited(owner)

    # WHEN both are wrapped
    patches.replace(_Owner, "own", wrapped_own)
    patches.replace(_Owner, "inherited", wrapped_inherited)
    # THEN the wrappers run, name what they replaced and carry its docstring
    assert patches.installed
    assert (_Owner().own(), _Owner().inherited()) == ("wrapped own", "wrapped base")
    assert wrapped_own.__wrapped__ is own  # type: ignore[attr-defined]
    assert wrapped_inherited.__doc__ == "The base's own."
    # WHEN restored, THEN the class holds its own method again and inherits the other anew
    patches.uninstall()
    assert not patches.installed
    assert _Owner.__dict__["own"] is own
    assert "inherited" not in _Owner.__dict__
    assert _Owner().inherited() == "base"


def test_the_gate_s_blocks_nest_and_put_each_flag_back() -> None:
    gate = HookGate()
    with gate.fit_running():
        assert gate.bypassed() and not gate.pipediag_is_reading()
        with gate.pipediag_reading(), gate.pipediag_reading():
            assert gate.pipediag_is_reading()
        assert not gate.pipediag_is_reading() and gate.bypassed()
    assert not gate.bypassed()
