"""A long real run: `--steps all` over more short steps than the timeline keeps records for,
so they are merged, keeps its records bounded and every step counted.

The record cap is lowered for the test (20,000 by default, `timeline.DEFAULT_MAX_RECORDS`),
so 2,500 steps in this process show what 25,000 in a child did, in a tenth of the time.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from train_step import TRAIN_STEP

import pipediag
from pipediag import timeline

STEPS = 2_500
CAP = 2_000


@pytest.mark.tensorflow
def test_steps_all_on_more_steps_than_the_records_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a loop of more short steps than the timeline keeps records for
    monkeypatch.setattr(timeline, "DEFAULT_MAX_RECORDS", CAP)
    script = tmp_path / "train.py"
    script.write_text(
        TRAIN_STEP + "import tensorflow as tf\n"
        f"for batch in tf.data.Dataset.range({STEPS}):\n"
        "    train_step(batch)\n"
        "print('done')\n"
    )
    # WHEN diagnosed to its end
    config = pipediag.RunConfig(measured_steps=None, bench_seconds=0.5)
    report = pipediag.diagnose(script, config=config, out=None, log=None)
    # THEN the records stay bounded, every step is counted, and the merge is said
    steps = report.train.steps
    assert len(steps) <= CAP
    # every pull but the first two (before a train step was seen between pulls) is a step's
    # end, the end-of-data pull closing the last
    assert sum(s.count for s in steps) == STEPS - 2
    assert report.complete and report.stop_reason == "script-finished"
    assert report.host.process_rss_bytes_max
    assert any(note.code == "steps-merged" for note in report.notes)
