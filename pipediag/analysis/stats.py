"""Summary statistics shared by the benchmark and the analysis."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pipediag.report.stages import LatencyStats


def latency_stats(durations_s: Sequence[float]) -> LatencyStats | None:
    if not durations_s:
        return None
    values = np.asarray(durations_s, dtype=float)
    return LatencyStats(
        count=int(values.size),
        mean_s=float(values.mean()),
        median_s=float(np.median(values)),
        p90_s=float(np.percentile(values, 90)),
        min_s=float(values.min()),
        max_s=float(values.max()),
    )
