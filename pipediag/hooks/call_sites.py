"""The script's line that built each `tf.data.Dataset`: a wrapper around `DatasetV2.__init__`
walks a few frames per dataset built, never per element (docs/design.md, "The pipeline pipediag
would write")."""

from __future__ import annotations

import sys
from typing import Any

from pipediag.bench.python_chain import record_site
from pipediag.hooks.pass_origin import pass_origin
from pipediag.hooks.patching import Patches


class CallSitePatch(Patches):
    """Wraps `DatasetV2.__init__`."""

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
                record_site(dataset, origin.where, origin.by)

        self.replace(owner, "__init__", __init__)
