"""compare, check and history work where TensorFlow cannot be imported (a CI job that only
holds the reports): each runs in a fresh process with TensorFlow and Keras unimportable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import ENV
from report_fixtures import AFTER, BEFORE, RUN1, RUN2

# `import tensorflow` (or any tensorflow.* module) raises ImportError once its entry in
# sys.modules is None; the command then runs through the real entry point.
WITHOUT_TENSORFLOW = """
import sys
for name in ("tensorflow", "keras"):
    sys.modules[name] = None
from pipediag.cli import main
code = main(sys.argv[1:])
loaded = [m for m, module in sys.modules.items() if module is not None and m.startswith("tensorf")]
assert not loaded, loaded
sys.exit(code)
"""


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_TENSORFLOW, *args],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("args", "code", "first_line"),
    [
        (["compare", str(RUN1), str(RUN2), "--png", "{tmp}/c.png"], 0, "NO CHANGE BEYOND NOISE"),
        (["check", str(AFTER), "--baseline", str(BEFORE), "--max-slowdown", "5%"], 0, "ok "),
        (["check", str(BEFORE), "--max-input-cost", "20%"], 1, "FAIL input cost 74%"),
        (["history", "{tmp}/h.jsonl", "--png", "{tmp}/h.png"], 0, "History: "),
        (["check", "{tmp}/missing.json", "--max-input-cost", "20%"], 2, ""),
    ],
)
def test_commands_without_tensorflow(
    tmp_path: Path, args: list[str], code: int, first_line: str
) -> None:
    history = tmp_path / "h.jsonl"
    history.write_text(
        '{"history_version": 1, "script": "t.py", "rates": {"training": 10.0}}\n'
        '{"history_version": 1, "script": "t.py", "rates": {"training": 11.0}}\n'
    )
    result = _run(*(arg.format(tmp=tmp_path) for arg in args))
    assert result.returncode == code, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert result.stdout.startswith(first_line)
    if "--png" in args:
        assert list(tmp_path.glob("*.png"))
