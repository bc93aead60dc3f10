"""The Python side of a tf.data pipeline: the dataset objects the user's code built, where it
built them and the user's functions in them, with their file:line, which the graph does not say."""

from __future__ import annotations

import contextlib
import inspect
import os
import weakref
from collections.abc import Callable
from typing import Any

# Stop walking pipelines with more stages (a generated chain of concatenates): no reader wants more.
MAX_STAGES = 64
# How deep to look into a function's closures for from_generator's hidden state.
MAX_CLOSURE_DEPTH = 3
# dataset -> (the script's line, the library call between it and the dataset or None), recorded
# by `hooks/call_sites.py` so the pipeline pipediag would write names each changed line.
_SITES: weakref.WeakKeyDictionary[Any, tuple[str, str | None]] = weakref.WeakKeyDictionary()


def record_site(dataset: Any, site: str, made_by: str | None = None) -> None:
    """Keep the first site seen: a dataset's own constructor runs before its wrappers'."""
    with contextlib.suppress(TypeError):  # not weakly referenceable: no site, no leak
        _SITES.setdefault(dataset, (site, made_by))


def call_site(dataset: Any) -> tuple[str | None, str | None]:
    """The script's line that created `dataset`, and the library call that built it, if known."""
    with contextlib.suppress(TypeError):
        return _SITES.get(dataset, (None, None))
    return None, None


def python_inputs(ds: Any) -> list[Any]:
    try:
        inputs = ds._inputs()
    except Exception:  # NotImplementedError on exotic datasets: treat as a source
        inner = getattr(ds, "_input_dataset", None)
        return [] if inner is None else [inner]
    return [i for i in inputs if is_dataset(i)]


def is_dataset(obj: Any) -> bool:
    return hasattr(obj, "_variant_tensor") and hasattr(obj, "element_spec")


def variant_tensor(ds: Any) -> Any:
    try:
        return ds._variant_tensor
    except Exception:
        return None


def unwrap(ds: Any) -> Any:
    """Look through wrappers that reuse their inner dataset's op (V1 adapter, TFRecordDataset)."""
    for _ in range(MAX_STAGES):
        for attr in ("_dataset", "_impl"):
            inner = getattr(ds, attr, None)
            if is_dataset(inner) and variant_tensor(inner) is variant_tensor(ds):
                ds = inner
                break
        else:
            return ds
    return ds


def skip_passthrough(ds: Any) -> Any:
    """Skip Python-only datasets that add no op (e.g. `_RestructuredDataset`)."""
    for _ in range(MAX_STAGES):
        ds = unwrap(ds)
        inputs, variant = python_inputs(ds), variant_tensor(ds)
        if len(inputs) == 1 and variant is not None and variant_tensor(inputs[0]) is variant:
            ds = inputs[0]
        else:
            return ds
    return ds


def wrappers(ds: Any) -> list[Any]:
    try:
        return list(ds._functions())
    except Exception:
        return []


def user_function(ds: Any) -> Any | None:
    """The Python callable the user gave the stage (`StructuredFunctionWrapper._func`)."""
    for wrapper in wrappers(ds):
        if (func := getattr(wrapper, "_func", None)) is not None:
            return func
    return None


def python_function_names(ds: Any) -> list[str]:
    names = []
    for wrapper in wrappers(ds):
        try:
            name = wrapper.function.name
        except Exception:
            continue
        names.append(name.decode() if isinstance(name, bytes) else str(name))
    return names


def generator_function(ds: Any) -> Callable[..., Any] | None:
    """The user's generator when `ds` is the flat_map that `from_generator` builds."""
    func = user_function(ds)
    if func is None or "from_generator" not in getattr(func, "__qualname__", ""):
        return None
    state = find_in_closure(func, lambda obj: hasattr(obj, "_generator"), MAX_CLOSURE_DEPTH)
    generator = getattr(state, "_generator", None)
    return generator if callable(generator) else None


def closed_over(function: Any) -> list[Any]:
    values = []
    for cell in getattr(function, "__closure__", None) or ():
        with contextlib.suppress(ValueError):  # an empty cell raises
            values.append(cell.cell_contents)
    return values


def find_in_closure(func: Any, wanted: Callable[[Any], bool], depth: int) -> Any | None:
    for value in closed_over(func):
        if wanted(value):
            return value
        if depth > 0 and inspect.isfunction(value):
            found = find_in_closure(value, wanted, depth - 1)
            if found is not None:
                return found
    return None


def describe_callable(func: Any) -> tuple[str | None, str | None]:
    """The callable's name and "file.py:LINE", looking through tf.function and partials."""
    target = func
    for _ in range(MAX_CLOSURE_DEPTH + 2):
        inner = getattr(target, "python_function", None) or getattr(target, "func", None)
        if inner is None or inner is target or not callable(inner):
            break
        target = inner
    with contextlib.suppress(ValueError):  # ValueError: a __wrapped__ cycle
        target = inspect.unwrap(target)
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    code = getattr(target, "__code__", None)
    if code is None and not inspect.isroutine(target) and callable(target):
        # A callable object: its class names it, its __call__ locates it.
        name, code = type(target).__qualname__, getattr(type(target).__call__, "__code__", None)
    if name is not None and ".<locals>." in name:
        name = name.rsplit(".<locals>.", 1)[-1]
    source = None
    if code is not None:
        try:
            filename = inspect.getsourcefile(target) or code.co_filename
        except TypeError:
            filename = code.co_filename
        source = f"{os.path.basename(filename)}:{code.co_firstlineno}"
    return name, source


def defined_in_tensorflow(func: Any) -> bool:
    code = getattr(inspect.unwrap(func), "__code__", None) if inspect.isfunction(func) else None
    if code is None:
        return False
    parts = os.path.normpath(code.co_filename).split(os.sep)
    return "site-packages" in parts and "tensorflow" in parts
