"""Where the script created each dataset ("train.py:23"), recorded by `hooks/call_sites.py`,
so the pipeline pipediag would write names each changed line. Weak references only."""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

# dataset -> (the script's line, the library call between it and the dataset or None)
_SITES: weakref.WeakKeyDictionary[Any, tuple[str, str | None]] = weakref.WeakKeyDictionary()


def record(dataset: Any, site: str, made_by: str | None = None) -> None:
    """Keep the first site seen: a dataset's own constructor runs before its wrappers'."""
    with contextlib.suppress(TypeError):  # not weakly referenceable: no site, no leak
        _SITES.setdefault(dataset, (site, made_by))


def site(dataset: Any) -> tuple[str | None, str | None]:
    """The script's line that created `dataset`, and the library call that built it, if known."""
    with contextlib.suppress(TypeError):
        return _SITES.get(dataset, (None, None))
    return None, None
