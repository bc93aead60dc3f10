"""Who started a pass over a dataset (a Keras call, or the script's own loop) and at which
line: read once per iterator from the call stack (docs/design.md, "Finding the training")."""

from __future__ import annotations

import inspect
import os
import sys
from dataclasses import dataclass
from types import FrameType, ModuleType

# Modules whose frames stand between the script and a pull: TensorFlow's own, and pipediag's.
_PLUMBING = ("tensorflow", "pipediag", "tf_keras", "absl")
# Packages whose modules or functions among the script's names say it computes with JAX.
_JAX_FAMILY = frozenset({"jax", "jaxlib", "flax", "optax", "equinox", "haiku"})
# Keras's decorators around its public methods: they name no call the user made.
_KERAS_WRAPPERS = frozenset({"error_handler", "wrapper", "__call__", "_wrapper"})


@dataclass(frozen=True)
class PassOrigin:
    """Where a pass began: `by` is the Keras call ("TextVectorization.adapt") that made it,
    None when the script's own code pulls; `where` the script's line ("train.py:58")."""

    by: str | None
    where: str | None


def _self_of(frame: FrameType) -> object | None:
    """A method's `self`, read without leaving the frame's `f_locals` snapshot holding anything
    (before Python 3.13; docs/design.md, "Iterator tear-down")."""
    code = frame.f_code
    if not code.co_argcount or code.co_varnames[0] != "self":
        return None
    snapshot = frame.f_locals
    owner = snapshot.get("self")
    if sys.version_info < (3, 13) and code.co_flags & inspect.CO_OPTIMIZED:
        # A function's snapshot only, never a module's namespace. It is also what `locals()`
        # returned to the function itself; no Keras method that starts a pass keeps one.
        snapshot.clear()
    return owner


def pass_origin(frame: FrameType | None) -> PassOrigin:
    """Walk out from the pull's frame to the script's own; Keras frames on the way mean Keras
    made the pass, the public call nearest the script names it."""
    keras_call: str | None = None
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        package = module.split(".", 1)[0] if isinstance(module, str) else ""
        if package == "keras":
            name = frame.f_code.co_name
            if not name.startswith("_") and name not in _KERAS_WRAPPERS:
                owner = _self_of(frame)  # "TextVectorization.adapt", or "split_dataset"
                keras_call = f"{type(owner).__name__}.{name}" if owner is not None else name
        elif package not in _PLUMBING:
            where = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
            return PassOrigin(by=keras_call, where=where)
        frame = frame.f_back
    return PassOrigin(by=keras_call, where=None)


def script_uses_jax() -> bool:
    """Whether `__main__` holds a JAX module or function among its names: not `"jax" in
    sys.modules`, as Keras 3 imports JAX wherever it is installed (docs/design.md, "JAX")."""
    if "jax" not in sys.modules:
        return False
    names = getattr(sys.modules.get("__main__"), "__dict__", {})
    for value in list(names.values()):
        owner = (
            value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
        )
        if isinstance(owner, str) and owner.split(".", 1)[0] in _JAX_FAMILY:
            return True
    return False
