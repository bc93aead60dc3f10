"""What tests of benchmarks/ share: device_check.py loaded by path, and the one shape every
results document has (checked on fresh writes and on the committed files alike)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]

TOP_LEVEL = {"benchmark", "stamp", "quick", "settings", "summary", "cases"}
STAMP = {"commit", "dirty", "tensorflow", "keras", "python", "machine", "time"}
MACHINE = {"cpu_count", "cpu_model", "platform", "gpu"}
# A list of more numbers than this is a raw array, not a summary. The longest list a result
# keeps on purpose is a setting such as the 6 delays of input_wait_accuracy.
MAX_SUMMARY_LIST = 10


def long_number_lists(value: Any, where: str = "") -> Iterator[str]:
    """Paths of the lists of more than MAX_SUMMARY_LIST numbers anywhere in `value`."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from long_number_lists(item, f"{where}.{key}")
    elif isinstance(value, list):
        numbers = [v for v in value if isinstance(v, int | float) and not isinstance(v, bool)]
        if len(numbers) > MAX_SUMMARY_LIST:
            yield where
        for index, item in enumerate(value):
            yield from long_number_lists(item, f"{where}[{index}]")


def check_shape(document: dict[str, Any], name: str) -> None:
    assert set(document) == TOP_LEVEL
    assert document["benchmark"] == name
    assert set(document["stamp"]) >= STAMP
    assert set(document["stamp"]["machine"]) >= MACHINE
    assert isinstance(document["summary"], dict)
    assert isinstance(document["cases"], list)
    assert list(long_number_lists(document)) == []


def load_device_check() -> ModuleType:
    """benchmarks/device_check.py, a script rather than a module of the benchmarks package."""
    path = REPO_ROOT / "benchmarks" / "device_check.py"
    spec = importlib.util.spec_from_file_location("device_check", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["device_check"] = module  # dataclasses resolve their module by name
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["device_check"]
    return module
