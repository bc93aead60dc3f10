"""XLA on a custom loop's own train step, on real TensorFlow: the step found between pulls,
its top ops from a profiler window over the loop's served steps, its twin's loss on the same
batch, the loop driven through the trial, and every variable put back with the redirect
removed."""

from __future__ import annotations

from typing import Any

import pytest

from pipediag.hooks.step_calls import FunctionCallPatch, StepCalls
from pipediag.report.model_side import HOST_GAP_KINDS
from pipediag.report.reasons import Reason
from pipediag.training.loop_xla import LoopStep

pytestmark = pytest.mark.tensorflow


def _mlp_loop() -> tuple[Any, Any, list[Any]]:
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(3)
    # Wide enough that the matmuls outweigh the optimizer's per-variable ops on any host: at
    # 16 -> 64 units on batch 32, MatMul held 2-3% of the window and another host's top list
    # went without it.
    x = tf.random.stateless_normal((512, 256), seed=[1, 2])
    y = tf.reduce_sum(x, axis=1, keepdims=True)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(256).repeat()
    model = keras.Sequential(
        [
            keras.layers.Input((256,)),
            keras.layers.Dense(512, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    optimizer = keras.optimizers.Adam(1e-3)

    @tf.function
    def train_step(a: Any, b: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(a, training=True) - b) ** 2)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return loss

    return train_step, dataset, [*model.trainable_variables, *optimizer.variables]


def _found(step: Any, dataset: Any, calls: StepCalls, steps: int = 6) -> LoopStep | str:
    """The loop's measured steps, as the iterator hook counts them."""
    iterator = iter(dataset)
    calls.recording = True
    for n in range(steps):
        batch = next(iterator)
        calls.pull(counted=n > 0)  # the pass's first pull closes no step
        step(*batch)
    calls.pull()
    calls.stop()
    return calls.train_step()


def test_the_loop_s_step_is_found_and_its_xla_twin_is_timed_with_every_variable_put_back() -> None:
    import numpy as np

    from pipediag.clock import MONOTONIC
    from pipediag.training.driver import captured_variables
    from pipediag.training.loop_xla import LoopXlaTrial

    train_step, dataset, variables = _mlp_loop()
    calls = StepCalls()
    patch = FunctionCallPatch(calls, lambda: False)
    patch.install()
    try:
        # GIVEN the train step found between the loop's pulls
        found = _found(train_step, dataset, calls)
        assert isinstance(found, LoopStep), found
        assert found.function is train_step and found.name.endswith("train_step")
        assert found.where is not None and found.where.startswith("test_loop_xla_tf.py:")
        captured = {id(v) for v in captured_variables(train_step)}
        assert all(id(getattr(v, "value", v)) in captured for v in variables)

        batch = next(iter(dataset))
        # AND where its time goes, from a profiler window over the loop's served steps
        top, reason = _profiled(found, batch)
        before = [v.numpy() for v in variables]

        # WHEN the loop is served the cached batch through the trial
        trial = LoopXlaTrial(found, batch, clock=MONOTONIC, step_s=0.002, budget_s=1.0)
        losses = []
        while (served := trial.next_batch()) is not None:
            losses.append(float(train_step(*served)))
            assert len(losses) < 100_000
        result = trial.result()
    finally:
        patch.uninstall()

    # THEN both sides were timed, and training is exactly where it was
    assert result.measured and result.rounds >= 1, result
    assert result.code.startswith("@tf.function(jit_compile=True)  # on ")
    assert train_step._list_all_concrete_functions()  # the original still traced
    assert not calls.redirects
    for variable, value in zip(variables, before, strict=True):
        np.testing.assert_array_equal(variable.numpy(), value)
    # AND the first step served, the twin's compiling one, gave the step's own loss
    assert np.isclose(losses[0], float(train_step(*batch)), rtol=1e-4)
    # AND the window grouped the steps' ops by type, with the host's gaps
    assert reason is None and top, reason
    assert {op.kind for op in top} >= {"op_type", "host-python", "host-launch"}
    # Named as the host's kernels ran them: "MatMul", or oneDNN's "_MklMatMul" and
    # "_MklNativeFusedMatMul" (a 2-core host read 22% and 16% for those two).
    assert any("MatMul" in op.name for op in top if op.kind == "op_type"), top
    assert sum(op.share for op in top if op.kind in ("op_type", *HOST_GAP_KINDS)) <= 1.0 + 1e-9


def _profiled(found: LoopStep, batch: Any) -> Any:
    """The loop driven through the profiler window, as the budget server serves it."""
    from pipediag.clock import MONOTONIC
    from pipediag.training.loop_profile import LoopProfile, keras_layer_names
    from pipediag.training.op_profile import ProfilerSession, profiled_steps

    window = LoopProfile(
        batch,
        steps=profiled_steps(0.002),
        clock=MONOTONIC,
        profiler=ProfilerSession(),
        layer_names=keras_layer_names(found.function),
    )
    while (served := window.next_batch()) is not None:
        found.function(*served)
    return window.result()


def test_an_op_xla_cannot_compile_is_named_and_the_loop_sees_an_ordinary_step() -> None:
    import tensorflow as tf

    from pipediag.clock import MONOTONIC
    from pipediag.training.loop_xla import LoopXlaTrial

    counter = tf.Variable(0.0)

    @tf.function
    def text_step(a: Any) -> Any:
        counter.assign_add(1.0)
        return tf.strings.length(tf.strings.as_string(a))

    calls = StepCalls()
    patch = FunctionCallPatch(calls, lambda: False)
    patch.install()
    try:
        found = _found(text_step, tf.data.Dataset.from_tensors((1.5,)).repeat(), calls)
        assert isinstance(found, LoopStep), found
        trial = LoopXlaTrial(found, tf.constant(1.5), clock=MONOTONIC, step_s=0.001, budget_s=1.0)
        answers = []
        while (served := trial.next_batch()) is not None:
            answers.append(int(text_step(served)))
        result = trial.result()
    finally:
        patch.uninstall()
    assert answers == [8]  # the failed compilation's call went on to the original
    assert result.reason == Reason("xla-op", detail="AsString")
    assert float(counter.numpy()) == 6.0  # the served step's write put back
