"""The attributes a hook replaced on TensorFlow's and Keras's classes, and how they go back.

Every patch is undone exactly: the class gets back what its own namespace held, or loses the
wrapper where it had inherited the attribute. Each wrapper's `__wrapped__` names what it
replaced, which the tests' leak check looks for, and its name, module and docstring.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


class Patches:
    """The wrappers one hook put on classes; `restore()` undoes them, the last first."""

    def __init__(self) -> None:
        # (class, attribute, what its own namespace held; None where it inherited it)
        self._made: list[tuple[Any, str, Any]] = []

    @property
    def installed(self) -> bool:
        return bool(self._made)

    def replace(self, owner: Any, name: str, wrapper: Callable[..., Any]) -> None:
        """Set `owner.<name>` to `wrapper`, which calls what stood there before."""
        original = getattr(owner, name)
        # The original's name, module and docstring too: tools that look at them (autograph
        # skips TensorFlow's own modules) see the method they know.
        functools.update_wrapper(wrapper, original)
        self._made.append((owner, name, owner.__dict__.get(name)))
        setattr(owner, name, wrapper)

    def restore(self) -> None:
        while self._made:
            owner, name, own = self._made.pop()
            if own is None:
                delattr(owner, name)
            else:
                setattr(owner, name, own)
