"""pipediag: find out why TensorFlow training is slow, input pipeline or model.

`import pipediag` never imports TensorFlow; only the parts that hook into it do, lazily.
"""

from __future__ import annotations

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
