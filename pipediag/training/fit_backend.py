"""Which Keras backend trains a model under `fit`, read from the trainer Keras 3 mixes into
the model's class, so no framework is imported (docs/design.md, "JAX")."""

from __future__ import annotations

from typing import Any

from pipediag.report.vocabulary import KerasBackend

_TRAINER_MODULES: dict[str, KerasBackend] = {
    "keras.src.backend.jax.trainer": "jax",
    "keras.src.backend.torch.trainer": "torch",
    "keras.src.backend.tensorflow.trainer": "tensorflow",
}
BACKEND_NAMES: dict[str, str] = {"tensorflow": "TensorFlow", "jax": "JAX", "torch": "PyTorch"}


def keras_backend(model: Any) -> KerasBackend | None:
    """The backend whose trainer `model` inherits; None for no Keras 3 model."""
    for cls in type(model).__mro__:
        if (backend := _TRAINER_MODULES.get(getattr(cls, "__module__", ""))) is not None:
            return backend
    return None


def undriven(model: Any) -> str | None:
    """The name of `model`'s backend where pipediag does not drive its train step."""
    if (backend := keras_backend(model)) in (None, "tensorflow", "jax"):
        return None
    return BACKEND_NAMES.get(backend or "", backend or "")


def on_jax(model: Any) -> bool:
    return keras_backend(model) == "jax"


def fit_batches_per_call(model: Any) -> int:
    return max(1, int(getattr(model, "steps_per_execution", 1) or 1))
