"""Report <-> JSON: the public contract, versioned, written atomically, read tolerantly
(`report/upgrades.py`)."""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pipediag.errors import ReportError
from pipediag.report.model import SCHEMA_VERSION, Report
from pipediag.report.upgrades import build_dataclass, upgraded


def to_dict(report: Report) -> dict[str, Any]:
    return dataclasses.asdict(report)


def from_dict(data: dict[str, Any]) -> Report:
    """Rebuild a report; unknown fields are ignored and missing optional ones defaulted."""
    if not isinstance(data, dict) or "script" not in data:
        raise ReportError("not a pipediag report: no 'script' field")
    if not isinstance(version := data.get("schema_version"), int):
        raise ReportError("not a pipediag report: no integer 'schema_version'")
    if version > SCHEMA_VERSION:
        raise ReportError(
            f"report schema version {version} is newer than this pipediag reads "
            f"({SCHEMA_VERSION}); upgrade pipediag"
        )
    data = upgraded(data, version)
    try:
        return build_dataclass(Report, data)
    except (TypeError, ValueError, KeyError) as exc:
        raise ReportError(f"malformed pipediag report: {exc}") from exc


def dumps(report: Report) -> str:
    return json.dumps(to_dict(report), indent=1, allow_nan=False, default=_reject)


def save_report(report: Report, path: str | os.PathLike[str]) -> Path:
    """Write the JSON report atomically: a crash never leaves a half-written file."""
    target = Path(path)
    write_atomically(target, dumps(report).encode())
    return target


def load_report(path: str | os.PathLike[str]) -> Report:
    """Read a report written by `save_report` (or by `pipediag run`)."""
    source = Path(path)
    if source.is_dir():
        source = source / "report.json"
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportError(f"no report at {source}: run `pipediag run` first") from None
    except OSError as exc:
        raise ReportError(f"cannot read {source}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(
            f"{source} is not valid JSON (line {exc.lineno}): corrupt report"
        ) from None
    return from_dict(data)


def write_atomically(target: Path, payload: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        mask = os.umask(0)  # the umask is read by setting it: put back at once
        os.umask(mask)
        os.chmod(tmp, _FILE_MODE & ~mask)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# mkstemp creates files readable by the owner alone; reports are ordinary files.
_FILE_MODE = 0o666


def _reject(value: object) -> Any:
    raise TypeError(f"cannot store {type(value).__name__} in a report")
