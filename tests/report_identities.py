"""The figures a report states agree with each other (docs/glossary.md): checked on every
report.json a test writes (tests/conftest.py) and on the README's kept real run.

- input cost = 1 - A/T, where no epoch start adds to it and the cost is measurable (or the
  wait measured step by step, where that is larger);
- "N.Nx faster if input were free" = T/A;
- no input-side gain on training above T/A (input cannot give back more than all of its
  cost; where the cost is not measurable, at the top of its interval), the prescription's
  included;
- the stage marked as the bottleneck is where holding the stages' output gains most over
  holding the stage before it.

Only reports whose A and T were taken in alternation (the current engine) are checked. Their
cost is the pairs' median ratio while A and T are medians of rates: `SPREAD` allows for the
pairs' own scatter.
"""

from __future__ import annotations

from pathlib import Path

from pipediag.renderers.stage_cost_words import costliest_stage
from pipediag.report.io import load_report
from pipediag.report.model import Report

SPREAD = 0.03  # of training time


def identity_problems(report: Report) -> list[str]:
    """What disagrees in `report`; [] where all agrees or nothing can be checked."""
    verdict, alone = report.verdict, report.compute_alone
    cost, compute = verdict.input_cost_fraction, verdict.compute_alone_steps_per_s
    training = verdict.training_steps_per_s
    if cost is None or not compute or not training or alone is None or not alone.blocks:
        return []
    problems = []
    gap = max(0.0, 1 - training / compute)
    split, interval = verdict.cost_split, verdict.input_cost_interval
    # A cost not measurable above noise (its interval reaches zero) is stated as "at most".
    measurable = interval is None or interval[0] > 0.0
    # A wait measured step by step stands even above the pairs' gap (docs/design.md, "Input
    # cost"): the cost is then that wait.
    waited = split.wait if split is not None and split.waits_timed else 0.0
    expected = max(gap, waited)
    if measurable and (split is None or split.epoch_start == 0) and abs(cost - expected) > SPREAD:
        problems.append(f"input cost {cost:.3f} against 1 - A/T {gap:.3f} (wait {waited:.3f})")
    top = max(cost, interval[1]) if interval and not measurable else cost
    most = 1 / (1 - top) if top < 1 else None
    prescription = report.pipeline.prescription
    gains = [(s.id, s.gain.on("training")) for s in report.suggestions]
    if prescription is not None:
        gains.append(("the prescription", prescription.on_training))
    for name, gain in gains:
        if most is not None and gain is not None and gain > most * (1 + 1e-9):
            problems.append(f"{name} gains {gain:.2f}x, above T/A {most:.2f}x")
    held = sorted(
        (s for s in report.pipeline.stages if s.training_speedup_if_free), key=lambda s: s.index
    )
    marked = costliest_stage(report.pipeline.stages)
    if len(held) >= 2 and marked is not None and marked.training_speedup_if_free:
        jumps, before = {}, 1.0
        for stage in held:
            gain = stage.training_speedup_if_free or 1.0
            jumps[stage.index] = gain / before
            before = max(before, gain)
        if jumps[marked.index] < 0.9 * max(jumps.values()):
            problems.append(f"bottleneck stage {marked.index}, jumps {jumps}")
    return problems


def written_report_problems(folder: Path) -> list[str]:
    """`identity_problems` of every report.json under `folder`."""
    found = []
    for path in sorted(folder.rglob("report.json")):
        try:
            report = load_report(path)
        except Exception:  # noqa: S112 - a test's deliberately broken report is not ours to judge
            continue
        found += [f"{path}: {problem}" for problem in identity_problems(report)]
    return found
