"""Where the script created each dataset ("train.py:23"): filled by the hook that watches
`Dataset` construction (`hooks/call_sites.py`), read when stages are described
(`bench/structure.py`), so the pipeline pipediag would write names each changed line.

Weak references only: a dataset the script drops is forgotten with it.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

_SITES: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def record(dataset: Any, site: str) -> None:
    """Keep the first site seen: a dataset's own constructor runs before its wrappers'."""
    with contextlib.suppress(TypeError):  # not weakly referenceable: no site, no leak
        _SITES.setdefault(dataset, site)


def created_at(dataset: Any) -> str | None:
    try:
        return _SITES.get(dataset)
    except TypeError:
        return None


def forget_all() -> None:
    _SITES.clear()
