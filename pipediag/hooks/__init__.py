"""Hooks into TensorFlow and Keras, installed when the user's script imports them; `uninstall()`
restores every patched attribute exactly. May import: `training`, `bench`, `analysis`, `report`,
`timeline`, `config`, `clock`; the session only through `HookHost` (`host.py`)."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from pipediag.hooks.call_sites import CallSitePatch
from pipediag.hooks.function_loop import FunctionLoopTracker
from pipediag.hooks.host import HookHost
from pipediag.hooks.keras_fit import FitPatch, FitTracker
from pipediag.hooks.patching import Patches
from pipediag.hooks.step_calls import FunctionCallPatch, StepCalls
from pipediag.hooks.tfdata import CustomLoopTracker, IteratorPatch
from pipediag.hooks.train_evidence import GradientTapePatch, GradientWatch

ImportCallback = Callable[[ModuleType], None]


class _CallbackLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, callback: ImportCallback) -> None:
        self._loader = loader
        self._callback = callback

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._callback(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class PostImportHook(importlib.abc.MetaPathFinder):
    """Calls back once a watched module is imported, its loader wrapped; never imports it: scripts
    set `KERAS_BACKEND`, `CUDA_VISIBLE_DEVICES` or `TF_CPP_MIN_LOG_LEVEL` before their imports."""

    def __init__(self, callbacks: dict[str, ImportCallback]) -> None:
        self._callbacks = callbacks
        self._resolving: set[str] = set()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        callback = self._callbacks.get(fullname)
        if callback is None or fullname in self._resolving:
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
            module = sys.modules.get(name)
            if module is not None:
                callback(module)

    def uninstall(self) -> None:
        while self in sys.meta_path:
            sys.meta_path.remove(self)


@dataclass
class InstalledHooks:
    """The patches in force for one session, and the trackers they feed."""

    fit: FitTracker
    loop: CustomLoopTracker
    function_loop: FunctionLoopTracker
    _patches: tuple[PostImportHook | Patches, ...]  # undone in this order

    def uninstall(self) -> None:
        for patch in self._patches:
            patch.uninstall()
        self.fit.finish()
        self.loop.finish()


def install(session: HookHost) -> InstalledHooks:
    """Patch tf.data and Keras now if imported, else as soon as the script imports them."""
    watch = GradientWatch()
    fit = FitTracker(session)
    step_calls = StepCalls()
    loop = CustomLoopTracker(session, watch, step_calls)
    fit_patch = FitPatch(fit, session)
    function_loop = FunctionLoopTracker(
        session, on_found=loop.forget_training, pulls=lambda: loop.pulls
    )
    iterator_patch = IteratorPatch(loop, session, on_made=function_loop.data_made)
    tape_patch = GradientTapePatch(watch)
    call_site_patch = CallSitePatch()
    function_call_patch = FunctionCallPatch(step_calls, session.gate.bypassed, function_loop)

    def on_tensorflow(module: object) -> None:
        iterator_patch.install(module)
        tape_patch.install()
        call_site_patch.install()
        function_call_patch.install()

    imports = PostImportHook({"tensorflow": on_tensorflow, "keras": fit_patch.install})
    patches = (imports, call_site_patch, function_call_patch, fit_patch, iterator_patch, tape_patch)
    hooks = InstalledHooks(fit, loop, function_loop, patches)
    try:
        imports.install()
    except BaseException:
        hooks.uninstall()
        raise
    return hooks
