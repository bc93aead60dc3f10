"""pipediag: find out why TensorFlow training is slow, input pipeline or model.

`import pipediag` never imports TensorFlow; only the parts that hook into it do, lazily."""

from __future__ import annotations

import importlib
from typing import Any

from pipediag.api import diagnose
from pipediag.config import RunConfig
from pipediag.monitor import Monitor, monitor
from pipediag.report import SCHEMA_VERSION, Report, load_report, save_report
from pipediag.version import __version__

__all__ = [
    "SCHEMA_VERSION",
    "Report",
    "Monitor",
    "RunConfig",
    "__version__",
    "diagnose",
    "load_report",
    "monitor",
    "save_report",
]


def __getattr__(name: str) -> Any:
    # `pipediag.keras` imports Keras: loaded on first use, so `import pipediag` stays free of it.
    if name == "keras":
        return importlib.import_module("pipediag.keras")
    raise AttributeError(f"module 'pipediag' has no attribute {name!r}")
