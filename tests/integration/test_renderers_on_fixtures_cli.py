"""`pipediag report` on a recorded GPU run, in a fresh interpreter where TensorFlow cannot be
imported: every file is written.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import report_fixtures as fx

from pipediag.renderers import REPORT_PNG, REPORT_TEXT, TRACE_JSON

ROOT = Path(__file__).resolve().parents[2]


def test_pipediag_report_needs_no_tensorflow(tmp_path: Path) -> None:
    # GIVEN a Python where `import tensorflow` fails  WHEN a GPU run is re-rendered
    code = (
        "import sys; sys.modules['tensorflow'] = None\n"
        "from pipediag.cli import main\n"
        f"sys.exit(main(['report', {str(fx.path(fx.GPU_COMPUTE_BOUND_LOOP))!r}, "
        f"'--out', {str(tmp_path)!r}]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    # THEN every file is written
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "report.json",
        REPORT_PNG,
        REPORT_TEXT,
        TRACE_JSON,
    ]
