"""Imports go one way (docs/design.md, "Architecture"): each package imports only the layers
below it, read from the source with `ast`, function-level imports included."""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pipediag"

# What each part may import of pipediag besides itself. Parts not listed may import any
# part below them; the top (cli, api, the package root) is listed by what must not import it.
# The small shared pieces the code that measures may use.
_SHARED = {"clock", "config", "progress", "errors"}
ALLOWED = {
    "report": {"errors"},
    "analysis": {"report", "timeline", "errors"},
    "samplers": {"clock", "config", "report", "errors"},
    "renderers": {"analysis", "report", "progress", "errors"},
    "fleet": {"renderers", "report", "errors"},
    "bench": {"analysis", "report", "clock", "config", "errors"},
    # The code that runs the user's model: compute alone, fixes tried on training, training
    # through a service, and what a custom loop is served at its step budget.
    "training": {"analysis", "bench", "report", "timeline", *_SHARED},
    "hooks": {"analysis", "bench", "training", "report", "clock", "config", "timeline", "errors"},
    # The tf.data service check, a slice of its own: its pure analysis, its reads of pipeline
    # copies through a service, and the user's train step fed by one.
    "scale_out": {"analysis", "bench", "training", "report", *_SHARED},
    # The session's phases, as functions: they run the pipeline copies and the user's model.
    "phases": {"analysis", "bench", "training", "scale_out", "report", "timeline", *_SHARED},
    # The argument checks the command line shares with `keras.Watch`: a part of its own,
    # so that sharing them does not import the command line from below it.
    "cli.argtypes": {"scale_out", "errors"},
    "finish": {"interrupts", "report", "timeline", "errors", "renderers"},
    # The training as the hooks found it, and the train section made of it.
    "found": {"analysis", "hooks", "training", "report", "timeline"},
}
# Only these may import the entry points.
ENTRY_POINTS = {"cli": {"__main__"}, "api": {"cli", "pipediag"}}
# The session is run by the front doors and runs the phases; nothing below imports either.
RUN_FROM_ABOVE = {
    "session": {"api", "monitor", "keras"},
    "conclusion": {"session"},
    "found": {"session"},
    "phases": {"session", "conclusion"},
}
# Modules inside a part that count as parts of their own.
OWN_PARTS = {"cli.argtypes"}


def _part(module: str) -> str:
    parts = module.split(".")
    if ".".join(parts[1:3]) in OWN_PARTS:
        return ".".join(parts[1:3])
    return parts[1] if len(parts) > 1 else "pipediag"


@functools.cache
def _imports() -> dict[str, set[str]]:
    """Part -> the parts of pipediag it imports, from every module of the package (parsed
    once: every test here reads the same map, and nothing may change it)."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        module = ".".join(relative.parts).removesuffix(".__init__")
        source = _part(module)
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module == "pipediag":  # `from pipediag import x`: x is a part
                    targets = [f"pipediag.{alias.name}" for alias in node.names]
                else:
                    targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            for target in targets:
                if target.split(".")[0] != "pipediag":
                    continue
                part = _part(target)
                if part != source:
                    found[source].add(part)
    return dict(found)


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_each_layer_imports_only_the_layers_below_it(part: str) -> None:
    extra = _imports().get(part, set()) - ALLOWED[part]
    assert not extra, f"{part} imports {sorted(extra)}: not a layer below it"


def test_the_entry_points_are_imported_only_from_above() -> None:
    imports = _imports()
    for entry, allowed in ENTRY_POINTS.items():
        importers = {part for part, targets in imports.items() if entry in targets}
        assert importers <= allowed, f"{sorted(importers - allowed)} import {entry}"


def test_the_session_and_its_phases_are_imported_only_from_above() -> None:
    imports = _imports()
    for part, allowed in RUN_FROM_ABOVE.items():
        importers = {source for source, targets in imports.items() if part in targets}
        assert importers <= allowed, f"{sorted(importers - allowed)} import {part}"


def test_nothing_below_the_top_imports_the_package_root() -> None:
    importers = {part for part, targets in _imports().items() if "pipediag" in targets}
    assert importers <= {"__main__"}, sorted(importers)


def test_no_two_parts_import_each_other() -> None:
    imports = _imports()
    pairs = sorted(
        (a, b)
        for a, targets in imports.items()
        for b in targets
        if a < b and a in imports.get(b, set())
    )
    assert not pairs, pairs
