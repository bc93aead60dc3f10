"""Which Keras backend trains a model, read from its class alone (docs/design.md, "JAX")."""

from __future__ import annotations

from pipediag.training.fit_backend import keras_backend, on_jax, undriven


def _model_on(module: str) -> object:
    trainer = type("Trainer", (), {"__module__": module})
    return type("Model", (trainer,), {})()


def test_the_backend_is_read_from_the_trainer_the_model_inherits() -> None:
    # GIVEN models whose classes inherit each backend's trainer, and one that is no Keras 3 model
    jax_model = _model_on("keras.src.backend.jax.trainer")
    torch_model = _model_on("keras.src.backend.torch.trainer")
    tf_model = _model_on("keras.src.backend.tensorflow.trainer")
    # THEN each is named, and only the PyTorch one is refused, in one line naming it
    assert keras_backend(jax_model) == "jax" and on_jax(jax_model)
    assert keras_backend(tf_model) == "tensorflow" and not on_jax(tf_model)
    assert keras_backend(object()) is None
    assert undriven(jax_model) is None
    assert undriven(tf_model) is None
    assert undriven(torch_model) == "PyTorch"
