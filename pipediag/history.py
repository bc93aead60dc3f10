"""`pipediag run --history FILE`: a run's key figures (those the comparison uses), appended as
one line, with the script folder's git commit where there is one."""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from pipediag.analysis.compare import run_figures
from pipediag.report.history import HistoryEntry, HistoryRates, HistoryShares, append_entry
from pipediag.report.model import Report

# `git rev-parse` answers in milliseconds; a hung network file system must not hold the run.
GIT_TIMEOUT_S = 5.0


def history_entry(
    report: Report, *, commit: str | None = None, report_path: str | None = None
) -> HistoryEntry:
    """The line `pipediag history` reads, from a report."""
    figures, verdict = run_figures(report), report.verdict
    split = verdict.cost_split
    return HistoryEntry(
        time_utc=report.created_utc or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        script=report.script,
        args=list(report.args),
        commit=commit,
        verdict=verdict.label,
        shares=HistoryShares(
            input_cost=verdict.input_cost_fraction,
            input_wait=verdict.input_wait_fraction,
            wait=None if split is None else split.wait,
            contention=None if split is None else split.contention,
            fetch=None if split is None else split.fetch,
        ),
        rates=HistoryRates(
            pipeline=report.pipeline.batches_per_s,
            compute_alone=verdict.compute_alone_steps_per_s,
            training=None if figures.training is None else figures.training.value,
        ),
        training_log_se=None if figures.training is None else figures.training.se,
        steps=figures.measured_steps,
        report=report_path,
    )


def record_run(
    report: Report,
    history: str | os.PathLike[str],
    *,
    script_folder: Path,
    report_path: str | None = None,
) -> Path:
    """Append the report's line to `history`, with the git commit of `script_folder` (found
    before the run: the script may change the working directory) if it is a checkout."""
    commit = git_commit(script_folder)
    return append_entry(history, history_entry(report, commit=commit, report_path=report_path))


def git_commit(folder: Path) -> str | None:
    """HEAD of the git checkout holding `folder`; None outside one or without git."""
    try:
        head = ["git", "rev-parse", "HEAD"]
        result = subprocess.run(
            head, cwd=folder, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = result.stdout.strip()
    return commit if result.returncode == 0 and commit else None
