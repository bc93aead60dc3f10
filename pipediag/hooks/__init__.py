"""Hooks into TensorFlow and Keras, installed when the user's script imports them; `uninstall()`
restores every patched attribute exactly. May import: `training`, `bench`, `analysis`, `report`,
`timeline`, `config`, `clock`; the session only through `HookHost` (`host.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from pipediag.hooks.call_sites import CallSitePatch
from pipediag.hooks.function_loop import FunctionLoopTracker
from pipediag.hooks.host import HookHost
from pipediag.hooks.imports import PostImportHook
from pipediag.hooks.keras_fit import FitPatch, FitTracker
from pipediag.hooks.patching import Patches
from pipediag.hooks.step_calls import FunctionCallPatch, StepCalls
from pipediag.hooks.tfdata import CustomLoopTracker, IteratorPatch
from pipediag.hooks.train_evidence import GradientTapePatch, GradientWatch


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
    watch, fit = GradientWatch(), FitTracker(session)
    step_calls = StepCalls()
    loop, fit_patch = CustomLoopTracker(session, watch, step_calls), FitPatch(fit, session)
    function_loop = FunctionLoopTracker(
        session, on_found=loop.forget_training, pulls=lambda: loop.pulls
    )
    iterator_patch = IteratorPatch(loop, session, on_made=function_loop.data_made)
    tape_patch, call_site_patch = GradientTapePatch(watch), CallSitePatch()
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
