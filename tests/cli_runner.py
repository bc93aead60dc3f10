"""Run the real `pipediag` CLI in a fresh Python process, as a user's shell would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The checkout, not whatever pipediag is installed; TF's C++ start-up lines kept out.
ENV = {
    **os.environ,
    "TF_CPP_MIN_LOG_LEVEL": "2",
    "PYTHONPATH": str(ROOT),
    "PYTHONUNBUFFERED": "1",
}


def default_signals() -> None:
    """In the child, before exec: SIGINT as a terminal would deliver it. A parent started in
    the background by a non-interactive shell ignores SIGINT, and ignored signals survive
    exec, so a child would never see the Ctrl-C an interrupt test sends it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_pipediag(
    *args: str, cwd: Path = ROOT, timeout: float = 300, env: dict[str, str] = ENV
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipediag", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=default_signals,
    )
