"""The benchmarks' child runs: a child that hangs at exit after writing its result."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import _common as common  # noqa: E402


def test_a_child_that_hangs_after_writing_its_result_is_killed_soon_after(tmp_path: Path) -> None:
    done = tmp_path / "rate.json"
    # GIVEN a child that writes its result, then hangs at exit (as TensorFlow has)
    hang = f"import pathlib, time; pathlib.Path({str(done)!r}).write_text('{{}}'); time.sleep(60)"
    proc, wall_s = common.run_child(
        [sys.executable, "-c", hang], timeout_s=50, done_file=done, done_grace_s=0.5
    )
    # THEN it is killed within the grace, not the timeout, and reads as timed out
    assert proc.returncode == common.TIMED_OUT and "hung after writing" in proc.stderr
    assert wall_s < 40
    # and a child that exits on its own keeps its exit code and output
    proc, _ = common.run_child(
        [sys.executable, "-c", "print('ran')"], timeout_s=50, done_file=tmp_path / "never"
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ran"
