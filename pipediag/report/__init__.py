"""The report model and its JSON form."""

from pipediag.report.io import from_dict, load_report, save_report, to_dict
from pipediag.report.model import SCHEMA_VERSION, Report

__all__ = ["SCHEMA_VERSION", "Report", "from_dict", "load_report", "save_report", "to_dict"]
