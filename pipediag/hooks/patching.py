"""The attributes a hook replaced on TensorFlow's and Keras's classes, undone exactly: the
class gets back what its own namespace held, or loses the wrapper where it inherited it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Patches:
    """The wrappers one hook's patch put on classes; `uninstall()` undoes them, the last first."""

    # (class, attribute, what its own namespace held; None where it inherited it)
    _made: list[tuple[Any, str, Any]] = field(default_factory=list, init=False)

    @property
    def installed(self) -> bool:
        return bool(self._made)

    def replace(self, owner: Any, name: str, wrapper: Callable[..., Any]) -> None:
        original = getattr(owner, name)
        # Its `__wrapped__` (the tests' leak check), name, module and docstring: autograph
        # skips TensorFlow's own modules.
        functools.update_wrapper(wrapper, original)
        self._made.append((owner, name, owner.__dict__.get(name)))
        setattr(owner, name, wrapper)

    def uninstall(self) -> None:
        while self._made:
            owner, name, own = self._made.pop()
            if own is None:
                delattr(owner, name)
            else:
                setattr(owner, name, own)
