"""The history file: one JSON line of key figures per run, versioned like the report
(docs/design.md, "History, trend and check")."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, get_args

from pipediag.errors import ReportError
from pipediag.report.vocabulary import VerdictLabel

HISTORY_VERSION = 1

_VERDICTS: dict[str, VerdictLabel] = {label: label for label in get_args(VerdictLabel)}


@dataclass(frozen=True)
class HistoryShares:
    """Shares of training time (fractions); None where the run did not measure them."""

    input_cost: float | None = None
    input_wait: float | None = None
    wait: float | None = None
    contention: float | None = None
    fetch: float | None = None


@dataclass(frozen=True)
class HistoryRates:
    """P (batches/s), T and A (steps/s)."""

    pipeline: float | None = None
    compute_alone: float | None = None
    training: float | None = None


@dataclass(frozen=True)
class HistoryEntry:
    time_utc: str
    script: str
    args: list[str] = field(default_factory=list)
    commit: str | None = None
    verdict: VerdictLabel = "unknown"
    shares: HistoryShares = field(default_factory=HistoryShares)
    rates: HistoryRates = field(default_factory=HistoryRates)
    # The training rate's own error: the trend tells a regression from noise without the reports.
    training_log_se: float | None = None
    steps: int = 0
    report: str | None = None
    history_version: int = HISTORY_VERSION


def entry_line(entry: HistoryEntry) -> str:
    """The entry as one JSON line (no newline); a missing commit is left out."""
    data = {"history_version": entry.history_version, **asdict(entry)}
    if data["commit"] is None:
        del data["commit"]
    return json.dumps(data, allow_nan=False, separators=(", ", ": "))


def append_entry(path: str | os.PathLike[str], entry: HistoryEntry) -> Path:
    """One write of the whole line, so runs appending to one file at once never interleave."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = (entry_line(entry) + "\n").encode()
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        os.write(fd, payload)
    finally:
        os.close(fd)
    return target


def read_history(path: str | os.PathLike[str]) -> list[HistoryEntry]:
    """Every run in the file, oldest first; blank lines are skipped."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportError(
            f"no history at {source}: record runs with `pipediag run --history {source} ...`"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"cannot read {source}: {exc}") from None
    lines = enumerate(text.splitlines(), 1)
    return [_entry(line, f"{source} line {number}") for number, line in lines if line.strip()]


def _entry(line: str, where: str) -> HistoryEntry:
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        raise ReportError(f"{where} is not JSON: not a pipediag history file") from None
    if not isinstance(data, dict) or not isinstance(data.get("history_version"), int):
        raise ReportError(f"{where} has no integer 'history_version': not a pipediag history")
    if (version := data["history_version"]) > HISTORY_VERSION:
        raise ReportError(
            f"{where} was written by a newer pipediag (history version {version}; this one "
            f"reads {HISTORY_VERSION}): upgrade pipediag"
        )
    try:
        return HistoryEntry(
            time_utc=str(data.get("time_utc", "")),
            script=str(data["script"]),
            args=[str(a) for a in data.get("args", [])],
            commit=None if data.get("commit") is None else str(data["commit"]),
            # Every line ever written holds one of the labels: any other reads as unknown.
            verdict=_VERDICTS.get(str(data.get("verdict")), "unknown"),
            shares=HistoryShares(**_numbers(data.get("shares"), HistoryShares)),
            rates=HistoryRates(**_numbers(data.get("rates"), HistoryRates)),
            training_log_se=_number(data.get("training_log_se")),
            steps=int(data.get("steps", 0)),
            report=None if data.get("report") is None else str(data["report"]),
            history_version=version,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ReportError(f"{where} is malformed ({exc}): not a pipediag history line") from None


def _numbers(data: Any, cls: type) -> dict[str, float | None]:
    """The known numeric fields of a nested object; others are ignored."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise TypeError(f"{cls.__name__} must be an object")
    names = cls.__dataclass_fields__  # type: ignore[attr-defined]
    return {key: _number(value) for key, value in data.items() if key in names}


def _number(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"expected a number, got {value!r}")
    return float(value)
