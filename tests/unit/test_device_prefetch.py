"""The fix for the host-to-device copy, `prefetch_to_device` at the end of the pipeline: when
it is a candidate, that the search on training tries it, and the code it writes (docs/design.md,
"The host-to-device copy")."""

from __future__ import annotations

from pipediag.analysis.pipeline_code import rewritten_chain
from pipediag.bench.fix_candidates import KIND_COPY_TO_DEVICE, device_prefetch_candidate
from pipediag.bench.whatif import FixPipelines
from pipediag.report.fixes import (
    DEVICE_PREFETCH_TEXT,
    FIX_DEVICE_PREFETCH,
    FIX_THREAD_CAP,
    fix_words,
)
from pipediag.report.prescription import StageChange
from pipediag.report.stages import StageStats
from pipediag.training.prescription import bounded_out


def _chain(*kinds: str) -> list[StageStats]:
    return [
        StageStats(i, kind, kind, inputs=[i - 1] if i else [], created_at=f"train.py:{20 + i}")
        for i, kind in enumerate(kinds)
    ]


def test_a_pipeline_on_the_host_gets_the_device_prefetch_tried_on_training() -> None:
    candidate = device_prefetch_candidate("/gpu:0", _chain("source", "map", "batch"))
    assert candidate is not None
    assert candidate.fix == FIX_DEVICE_PREFETCH
    assert candidate.stage_index is None and candidate.edit is None
    assert candidate.with_options is not None  # applied to the rebuilt dataset, last
    assert candidate.tried_on_training
    assert candidate.reason is None
    assert "/gpu:0" in candidate.stage


def test_a_pipeline_that_already_copies_to_a_device_gets_no_second_copy() -> None:
    chain = _chain("source", "batch", KIND_COPY_TO_DEVICE, "prefetch")
    assert device_prefetch_candidate("/gpu:0", chain) is None


def test_a_held_stage_does_not_bound_the_device_prefetch() -> None:
    # GIVEN the output held in memory (on the host) gained training only 1.01x
    stages = _chain("source", "map", "batch")
    stages[-1] = StageStats(2, "batch", "batch", inputs=[1], training_speedup_if_free=1.01)
    cap = FixPipelines(FIX_THREAD_CAP, None, None, None)
    device = FixPipelines(FIX_DEVICE_PREFETCH, None, None, None)
    # THEN the other end-of-pipeline fixes are bounded out, the copy's fix is still tried
    assert bounded_out(cap, stages) is not None
    assert bounded_out(device, stages) is None


def test_the_device_prefetch_is_the_last_line_after_the_options() -> None:
    changes = [
        StageChange(FIX_DEVICE_PREFETCH, None),
        StageChange(FIX_THREAD_CAP, None, value=1),
    ]
    lines = rewritten_chain(_chain("source", "map", "batch"), changes)
    texts = [line.text for line in lines]
    assert texts[-1] == DEVICE_PREFETCH_TEXT
    assert 'prefetch_to_device("/gpu:0")' in texts[-1]
    assert texts[-2] == "ds = ds.with_options(options)"
    assert lines[-1].change == FIX_DEVICE_PREFETCH


def test_the_fix_has_its_words() -> None:
    assert "prefetch_to_device" in fix_words(FIX_DEVICE_PREFETCH)
