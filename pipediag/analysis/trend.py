"""The trend of a history file: each run against the earlier runs of its script
(docs/design.md, "History, trend and check")."""

from __future__ import annotations

from dataclasses import dataclass

from pipediag.analysis import noise
from pipediag.analysis.compare import verdict_worse
from pipediag.analysis.noise import DEFAULT_RULES, Estimate, Interval, NoiseRules
from pipediag.report.history import HistoryEntry
from pipediag.report.vocabulary import VerdictLabel


@dataclass(frozen=True)
class TrendRow:
    """`number`: its place in the file (1 for the first line)."""

    number: int
    entry: HistoryEntry
    best_earlier: int | None = None  # number of the fastest earlier run of this script
    change: Interval | None = None  # training rate against that run
    slower: bool = False  # beyond noise
    previous_verdict: VerdictLabel | None = None  # the previous run of this script
    verdict_worse: bool = False

    @property
    def regression(self) -> bool:
        return self.slower or self.verdict_worse


@dataclass(frozen=True)
class Trend:
    rows: list[TrendRow]
    rules: NoiseRules

    @property
    def scripts(self) -> list[str]:
        return list(dict.fromkeys(row.entry.script for row in self.rows))

    @property
    def regressions(self) -> list[TrendRow]:
        return [row for row in self.rows if row.regression]


def trend(entries: list[HistoryEntry], rules: NoiseRules = DEFAULT_RULES) -> Trend:
    rows = []
    earlier: dict[str, list[tuple[int, HistoryEntry]]] = {}
    for number, entry in enumerate(entries, 1):
        before = earlier.setdefault(entry.script, [])
        rows.append(_row(number, entry, before, rules))
        before.append((number, entry))
    return Trend(rows, rules)


def _row(
    number: int, entry: HistoryEntry, before: list[tuple[int, HistoryEntry]], rules: NoiseRules
) -> TrendRow:
    if not before:
        return TrendRow(number, entry)
    previous = before[-1][1].verdict
    worse = verdict_worse(previous, entry.verdict)
    rated, rate = [(n, e) for n, e in before if e.rates.training], _rate(entry)
    if not rated or rate is None:
        return TrendRow(number, entry, previous_verdict=previous, verdict_worse=worse)
    best_number, best = max(rated, key=lambda item: item[1].rates.training or 0.0)
    best_rate = _rate(best)
    assert best_rate is not None
    change = noise.interval(best_rate, rate, rules)
    slower = change.change < 1.0 and not noise.is_noise(change)
    return TrendRow(number, entry, best_number, change, slower, previous, worse)


def _rate(entry: HistoryEntry) -> Estimate | None:
    if (rate := entry.rates.training) is None or rate <= 0:
        return None
    how = noise.BOOTSTRAP_HOW if entry.training_log_se is not None else noise.NO_SPREAD_HOW
    return Estimate(rate, entry.training_log_se, log_scale=True, how=how)
