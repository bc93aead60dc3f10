"""The advisor's suggestions with their words, as the renderers make them, for tests that read
a title or the evidence."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pipediag.analysis.advisor import advise
from pipediag.renderers.advice_words import suggestion_words
from pipediag.report.model import Report, Suggestion, SuggestionWords


@dataclass(frozen=True)
class Worded:
    """A suggestion, its title and its evidence; its other fields read through."""

    suggestion: Suggestion
    title: str
    evidence: str

    def __getattr__(self, name: str) -> Any:
        return getattr(self.suggestion, name)


def worded(suggestions: list[Suggestion], report: Report) -> list[Worded]:
    report = dataclasses.replace(report, suggestions=suggestions)
    return [Worded(s, *dataclasses.astuple(suggestion_words(s, report))) for s in suggestions]


def worded_advice(report: Report) -> list[Worded]:
    return worded(advise(report), report)


def written(rule_id: str, title: str, evidence: str = "", **fields: Any) -> Suggestion:
    """A suggestion as an older report stored it: its words as written."""
    return Suggestion(rule_id, as_written=SuggestionWords(title, evidence), **fields)
