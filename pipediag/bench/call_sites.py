"""Where the script created each dataset ("train.py:23"): filled by the hook that watches
`Dataset` construction (`hooks/call_sites.py`), read when stages are described
(`bench/structure.py`), so the pipeline pipediag would write names each changed line.

Weak references only: a dataset the script drops is forgotten with it.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

# dataset -> (the script's line, the library call between it and the dataset or None)
_SITES: weakref.WeakKeyDictionary[Any, tuple[str, str | None]] = weakref.WeakKeyDictionary()


def record(dataset: Any, site: str, made_by: str | None = None) -> None:
    """Keep the first site seen: a dataset's own constructor runs before its wrappers'.

    `made_by` names the library call ("image_dataset_from_directory") that built the dataset
    for the script, where one did: its settings are that call's, not the script's to edit.
    """
    with contextlib.suppress(TypeError):  # not weakly referenceable: no site, no leak
        _SITES.setdefault(dataset, (site, made_by))


def _site(dataset: Any) -> tuple[str, str | None] | None:
    try:
        return _SITES.get(dataset)
    except TypeError:
        return None


def created_at(dataset: Any) -> str | None:
    site = _site(dataset)
    return None if site is None else site[0]


def made_by(dataset: Any) -> str | None:
    site = _site(dataset)
    return None if site is None else site[1]
