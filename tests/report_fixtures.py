"""The recorded reports of tests/fixtures/reports/: real `pipediag run`s, GPU ones with the
fake NVML (see that folder's README for what each is and how to record them again)."""

from __future__ import annotations

import json
from pathlib import Path

from pipediag.report.io import load_report
from pipediag.report.model import Report

REPORTS = Path(__file__).resolve().parent / "fixtures" / "reports"
INPUT_BOUND_FIT = "input_bound_fit"
COMPUTE_BOUND_LOOP = "compute_bound_loop"
CACHE_PHASES_FIT = "cache_phases_fit"
GPU_INPUT_BOUND_FIT = "gpu_input_bound_fit"
GPU_COMPUTE_BOUND_LOOP = "gpu_compute_bound_loop"
ALL = (
    INPUT_BOUND_FIT,
    COMPUTE_BOUND_LOOP,
    CACHE_PHASES_FIT,
    GPU_INPUT_BOUND_FIT,
    GPU_COMPUTE_BOUND_LOOP,
)
GPU = (GPU_INPUT_BOUND_FIT, GPU_COMPUTE_BOUND_LOOP)

# The recorded runs `pipediag compare`, `check` and `history` are tested on (tests/fixtures/
# compare/): one script run twice (noise), and a run before and after a fix.
COMPARE = Path(__file__).resolve().parent / "fixtures" / "compare"
RUN1 = COMPARE / "input_bound_fit_run1.json"
RUN2 = COMPARE / "input_bound_fit_run2.json"
BEFORE = COMPARE / "seq_random_map_fit_before.json"
AFTER = COMPARE / "seq_random_map_fit_after_fix.json"
COMPUTE_BOUND_RUN = COMPARE / "compute_bound_loop_run1.json"


def path(name: str) -> Path:
    return REPORTS / f"{name}.json"


def load(name: str) -> Report:
    return load_report(path(name))


# Every recorded report, those compare is tested on included.
EVERY_PATH = (*(path(name) for name in ALL), RUN1, RUN2, BEFORE, AFTER, COMPUTE_BOUND_RUN)


def stored_headline(report_path: Path) -> str:
    """The headline a recorded report stored as text (schema version 2 and before); the
    summary layer now words it from the verdict's figures, and must say the same."""
    return str(json.loads(report_path.read_text())["verdict"]["headline"])
