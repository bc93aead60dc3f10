"""Who started a pass over a dataset: a Keras call (`adapt`, `evaluate`, `predict`), or the
script's own loop, and at which line of the script.

Read once per iterator, at its first pull, from the call stack: a walk of a few dozen frames,
off the hot path (docs/design.md, "Finding the training").
"""

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


def _package(frame: FrameType) -> str:
    name = frame.f_globals.get("__name__", "")
    return name.split(".", 1)[0] if isinstance(name, str) else ""


def _keras_call(frame: FrameType) -> str:
    """ "TextVectorization.adapt" for a method, "split_dataset" for a function."""
    owner = _self_of(frame)
    name = frame.f_code.co_name
    return f"{type(owner).__name__}.{name}" if owner is not None else name


def _self_of(frame: FrameType) -> object | None:
    """A method's `self`, read without leaving the frame holding anything.

    Before Python 3.13 `f_locals` is a snapshot the frame keeps until the next one: it would
    hold fit's iterator of the epoch it was read in, idle, and the next snapshot would free
    it on whichever thread took it, waiting out autotune's sleep (3.9 s inside stage timing
    on the data augmentation tutorial; docs/design.md, "Iterator tear-down")."""
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


def _line(frame: FrameType) -> str:
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def pass_origin(frame: FrameType | None) -> PassOrigin:
    """Walk outwards from the pull's frame to the first frame of the script's own code.

    Keras frames met on the way mean Keras made the pass; the one nearest the script that is
    a public call (not a decorator's wrapper) names it.
    """
    keras_call: str | None = None
    while frame is not None:
        package = _package(frame)
        if package == "keras":
            name = frame.f_code.co_name
            if not name.startswith("_") and name not in _KERAS_WRAPPERS:
                keras_call = _keras_call(frame)
        elif package not in _PLUMBING:
            return PassOrigin(by=keras_call, where=_line(frame))
        frame = frame.f_back
    return PassOrigin(by=keras_call, where=None)


def script_uses_jax() -> bool:
    """Whether the running script (`__main__`) holds a JAX module or function among its
    names (`import jax`, `import jax.numpy as jnp`, `from flax import nnx`). Not `"jax" in
    sys.modules`: Keras 3 imports JAX itself wherever it is installed (docs/design.md,
    "JAX"). A scan of the script's names, never an import."""
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
