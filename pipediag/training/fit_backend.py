"""Which Keras backend trains a model under `fit`, read from the model's class alone.

Keras 3 mixes its backend's trainer into every model (`keras.src.backend.jax.trainer.
JAXTrainer`, `...torch.trainer.TorchTrainer`, `...tensorflow.trainer.TensorFlowTrainer`), so
the class's method resolution order names the backend without importing anything: the
backend's framework is never imported here (docs/design.md, "JAX"). The TensorFlow trainer
runs `model.train_function(iterator)`; the JAX trainer a jitted `train_step(state, data)`
(`training/jax_fit.py`); pipediag does not drive the PyTorch trainer, and says so.
"""

from __future__ import annotations

from typing import Any

from pipediag.report.vocabulary import (
    JAX_BACKEND,
    TENSORFLOW_BACKEND,
    TORCH_BACKEND,
    KerasBackend,
)

_TRAINER_MODULES: dict[str, KerasBackend] = {
    "keras.src.backend.jax.trainer": JAX_BACKEND,
    "keras.src.backend.torch.trainer": TORCH_BACKEND,
    "keras.src.backend.tensorflow.trainer": TENSORFLOW_BACKEND,
}
BACKEND_NAMES: dict[str, str] = {
    TENSORFLOW_BACKEND: "TensorFlow",
    JAX_BACKEND: "JAX",
    TORCH_BACKEND: "PyTorch",
}


def keras_backend(model: Any) -> KerasBackend | None:
    """The backend whose trainer `model` inherits; None for an object that is no Keras 3
    model (a Keras 2 model, or a stand-in in a test: treated as TensorFlow's)."""
    for cls in type(model).__mro__:
        backend = _TRAINER_MODULES.get(getattr(cls, "__module__", ""))
        if backend is not None:
            return backend
    return None


def undriven(model: Any) -> str | None:
    """The name of `model`'s backend where pipediag does not drive its train step (the step
    alone and the fixes on training cannot run there); None where it does."""
    backend = keras_backend(model)
    if backend in (None, TENSORFLOW_BACKEND, JAX_BACKEND):
        return None
    return BACKEND_NAMES.get(backend or "", backend or "")


def on_jax(model: Any) -> bool:
    """Whether `fit` trains `model` on the JAX backend."""
    return keras_backend(model) == JAX_BACKEND
