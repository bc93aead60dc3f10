"""Record where the script built each `tf.data.Dataset`: the script's own frame that called
`Dataset.map`, `.batch`, `from_tensor_slices`...

One wrapper around `DatasetV2.__init__`, which every dataset's constructor reaches: a walk
of a few frames per dataset built, once, when the script builds its pipeline (never per
element). Undone on `uninstall` (docs/design.md, "The pipeline pipediag would write").
"""

from __future__ import annotations

import sys
from typing import Any

from pipediag.bench import call_sites
from pipediag.hooks.pass_origin import pass_origin
from pipediag.hooks.patching import Patches


class CallSitePatch:
    """Wraps `DatasetV2.__init__` to record each dataset's creating line in the script."""

    def __init__(self) -> None:
        self._patches = Patches()

    def install(self, _module: object = None) -> None:
        self.uninstall()
        try:
            from tensorflow.python.data.ops import dataset_ops
        except Exception:  # an unusual TF build: no call sites, nothing else changes
            return
        owner = dataset_ops.DatasetV2
        original = owner.__dict__["__init__"]

        def __init__(dataset: Any, *args: Any, **kwargs: Any) -> None:
            original(dataset, *args, **kwargs)
            try:
                origin = pass_origin(sys._getframe(1))
            except Exception:
                return
            if origin.where is not None:
                call_sites.record(dataset, origin.where, origin.by)

        self._patches.replace(owner, "__init__", __init__)

    def uninstall(self) -> None:
        self._patches.restore()
