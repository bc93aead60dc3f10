"""docs/glossary.md names each figure's field in report.json: every field it names exists."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

from pipediag.report import model

GLOSSARY = Path(__file__).resolve().parents[2] / "docs" / "glossary.md"
# `verdict.input_cost_fraction`, `pipeline.stages[].training_speedup_if_free`: a dotted path
# from the report; a bare name in the cost split's paragraph is a field of the split.
PATH = re.compile(r"`((?:verdict|pipeline|suggestions)(?:\[\])?(?:\.\w+(?:\[\])?)+)`")
SPLIT_FIELD = re.compile(r"^- \*\*[^*]+\*\* \(`(\w+)`\)", re.MULTILINE)


def _field_type(cls: type, name: str) -> typing.Any:
    hints = typing.get_type_hints(cls)
    assert name in {f.name for f in dataclasses.fields(cls)}, f"{cls.__name__} has no {name}"
    return hints[name]


def _dataclass_in(hint: typing.Any) -> type | None:
    """The dataclass a field's type holds (itself, in a list, or optional)."""
    if dataclasses.is_dataclass(hint):
        return hint
    for arg in typing.get_args(hint):
        found = _dataclass_in(arg)
        if found is not None:
            return found
    return None


def test_every_field_the_glossary_names_is_in_the_report() -> None:
    text = GLOSSARY.read_text()
    paths = PATH.findall(text)
    assert len(paths) >= 8
    for path in paths:
        cls: type | None = model.Report
        for part in path.replace("[]", "").split("."):
            assert cls is not None, path
            cls = _dataclass_in(_field_type(cls, part))
    split_fields = SPLIT_FIELD.findall(text)
    assert split_fields == ["wait", "contention", "fetch", "epoch_start"]
    for name in split_fields:
        _field_type(model.CostSplit, name)
