"""The report model, its JSON form, the history line, and the facts and names the analysis
and the renderers share. May import `errors` only (docs/design.md, "Architecture")."""

from pipediag.report.io import from_dict, load_report, save_report, to_dict
from pipediag.report.model import SCHEMA_VERSION, Report

__all__ = ["SCHEMA_VERSION", "Report", "from_dict", "load_report", "save_report", "to_dict"]
