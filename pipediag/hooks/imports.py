"""Run a callback right after a module is imported, without importing it ourselves: scripts
set `KERAS_BACKEND`, `CUDA_VISIBLE_DEVICES` or `TF_CPP_MIN_LOG_LEVEL` before their imports."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

ImportCallback = Callable[[ModuleType], None]


class _CallbackLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, callback: ImportCallback) -> None:
        self._loader, self._callback = loader, callback

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._callback(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class PostImportHook(importlib.abc.MetaPathFinder):
    """Wraps the loader of the watched modules."""

    def __init__(self, callbacks: dict[str, ImportCallback]) -> None:
        self._callbacks = callbacks
        self._resolving: set[str] = set()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if (callback := self._callbacks.get(fullname)) is None or fullname in self._resolving:
            return None
        self._resolving.add(fullname)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._resolving.discard(fullname)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _CallbackLoader(spec.loader, callback)
        return spec

    def install(self) -> None:
        """Watch future imports; run callbacks now for modules already imported."""
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)
        for name, callback in self._callbacks.items():
            if (module := sys.modules.get(name)) is not None:
                callback(module)

    def uninstall(self) -> None:
        while self in sys.meta_path:
            sys.meta_path.remove(self)
