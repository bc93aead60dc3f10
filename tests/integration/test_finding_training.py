"""Only training is training: passes Keras makes (`adapt`, `predict`), `evaluate` before `fit`,
a statistics pass and a script with no training at all, on real TensorFlow and Keras.

Each script prints a line right after its pass: seeing it proves that pipediag let the pass
finish and did not end the script inside it (docs/design.md, "Finding the training").
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import pipediag
from pipediag.renderers.reason_words import reason_words
from pipediag.renderers.verdict_words import headline

pytestmark = pytest.mark.tensorflow

MEASURED = 20
CONFIG = pipediag.RunConfig(
    measured_steps=MEASURED,
    measured_seconds=None,
    warmup_steps=3,
    bench_seconds=0.5,
    sample_gpu=False,
    stages=False,
    verify=False,
)

FEATURES = """
import numpy as np
import tensorflow as tf
import keras

x = np.random.default_rng(0).normal(size=(2048, 8)).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, x[:, :1])).batch(32)  # 64 batches

def loop_model():
    layers = [keras.layers.Input((8,)), keras.layers.Dense(16), keras.layers.Dense(1)]
    return keras.Sequential(layers)

def train_in_a_loop(model, data, epochs=100):
    opt = keras.optimizers.SGD(0.01)

    @tf.function
    def step(a, b):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(a) - b) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    for _ in range(epochs):
        for a, b in data:
            step(a, b)
"""

SCRIPTS = {
    "text_vectorization_adapt_then_fit": """
import numpy as np
import tensorflow as tf
import keras

rng = np.random.default_rng(0)
words = np.array(["good", "bad", "film", "plot", "actor", "great", "awful", "dull", "fun"])
texts = [" ".join(rng.choice(words, size=12)) for _ in range(1600)]
raw = tf.data.Dataset.from_tensor_slices((texts, rng.integers(0, 2, 1600).astype("float32")))
raw = raw.batch(32)  # 50 batches
vectorize = keras.layers.TextVectorization(max_tokens=50, output_sequence_length=12)
vectorize.adapt(raw.map(lambda text, label: text))
print("AFTER THE PASS: vocabulary", len(vectorize.get_vocabulary()), flush=True)
train = raw.map(lambda text, label: (vectorize(text), label)).cache().prefetch(2)
model = keras.Sequential([
    keras.layers.Embedding(50, 8), keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(1)
])
model.compile("adam", keras.losses.BinaryCrossentropy(from_logits=True))
model.fit(train, epochs=100, verbose=0)
""",
    "normalization_adapt_then_loop": FEATURES
    + """
norm = keras.layers.Normalization()
norm.adapt(ds.map(lambda a, b: a))
print("AFTER THE PASS: mean", float(norm.mean.numpy().mean()), flush=True)
model = keras.Sequential([keras.layers.Input((8,)), norm, keras.layers.Dense(1)])
train_in_a_loop(model, ds)
""",
    "evaluate_and_predict_then_fit": FEATURES
    + """
model = loop_model()
model.compile("sgd", "mse")
model.evaluate(ds, verbose=0)
model.predict(ds, verbose=0)
print("AFTER THE PASS: evaluated and predicted", flush=True)
model.fit(ds.prefetch(2), epochs=100, verbose=0)
""",
    "statistics_pass_then_loop": FEATURES
    + """
total = 0.0
for a, b in ds:
    total += float(tf.reduce_sum(a))
print("AFTER THE PASS: total", round(total, 3), flush=True)
train_in_a_loop(loop_model(), ds)
""",
    "only_a_data_pass": FEATURES
    + """
total = 0.0
for epoch in range(3):
    for a, b in ds:
        total += float(tf.reduce_sum(a))
print("AFTER THE PASS: total", round(total, 3), flush=True)
""",
}


def _diagnose(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> tuple[pipediag.Report, str]:
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(SCRIPTS[name]))
    report = pipediag.diagnose(script, config=CONFIG, out=tmp_path / "out", log=None)
    return report, capsys.readouterr().out


def _pass_line(script: str, marker: str) -> int:
    lines = textwrap.dedent(SCRIPTS[script]).splitlines()
    return next(i for i, line in enumerate(lines, start=1) if marker in line)


def test_text_vectorization_adapt_is_not_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "text_vectorization_adapt_then_fit"
    report, out = _diagnose(tmp_path, name, capsys)

    assert "AFTER THE PASS: vocabulary" in out  # adapt ran to its end
    assert report.stop_reason == "step-budget", report.exit
    assert report.train.style == "keras-fit"
    assert report.train.input_wait_source == "batch-stamps"
    # (a cache fills in epoch 1: measuring goes on into epoch 2, where it is read)
    assert report.train.measured_steps >= MEASURED
    (skipped,) = report.train.skipped_passes
    assert skipped.reason == "keras" and skipped.by == "TextVectorization.adapt"
    assert skipped.batches == 50
    assert skipped.where == f"{name}.py:{_pass_line(name, 'vectorize.adapt(')}"
    # the pipeline benchmarked is fit's, not adapt's
    assert report.pipeline.dataset.startswith("Prefetch <- Cache <- ")
    assert report.verdict.label != "unknown"
    text = (tmp_path / "out" / "summary.txt").read_text()
    assert f"skipped a 50-batch pass by TextVectorization.adapt at {skipped.where}" in text


def test_normalization_adapt_then_a_custom_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "normalization_adapt_then_loop"
    report, out = _diagnose(tmp_path, name, capsys)

    assert "AFTER THE PASS: mean" in out
    assert report.stop_reason == "step-budget", report.exit
    assert report.train.style == "custom-loop"
    assert report.train.input_wait_source == "iterator-timing"
    assert report.train.measured_steps == MEASURED
    (skipped,) = report.train.skipped_passes
    assert skipped.by == "Normalization.adapt" and skipped.batches == 64
    assert report.compute_alone is not None and report.compute_alone.measured


def test_evaluate_and_predict_before_fit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report, out = _diagnose(tmp_path, "evaluate_and_predict_then_fit", capsys)

    assert "AFTER THE PASS: evaluated and predicted" in out
    assert report.stop_reason == "step-budget", report.exit
    assert report.train.style == "keras-fit"
    assert report.train.input_wait_source == "batch-stamps"
    assert report.train.measured_steps == MEASURED
    # predict pulls eagerly and is named; evaluate pulls inside its compiled function
    assert [p.by for p in report.train.skipped_passes] == ["Sequential.predict"]
    assert not any("custom-loop" in reason_words(note) for note in report.notes)


def test_a_statistics_pass_before_a_custom_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "statistics_pass_then_loop"
    report, out = _diagnose(tmp_path, name, capsys)

    assert "AFTER THE PASS: total" in out
    assert report.stop_reason == "step-budget", report.exit
    assert report.train.style == "custom-loop"
    assert report.train.input_wait_source == "iterator-timing"
    assert report.train.measured_steps == MEASURED
    (skipped,) = report.train.skipped_passes
    assert skipped.reason == "no-train-step" and skipped.by is None
    assert skipped.batches == 64
    assert skipped.where == f"{name}.py:{_pass_line(name, 'for a, b in ds:')}"


def test_a_script_whose_only_loop_is_a_data_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report, out = _diagnose(tmp_path, "only_a_data_pass", capsys)

    # three passes of 64 batches, far past the 23-step budget, all left to finish
    assert "AFTER THE PASS: total" in out
    assert report.stop_reason == "script-finished", report.exit
    assert report.train.style == "none" and not report.train.steps
    (skipped,) = report.train.skipped_passes
    assert (skipped.passes, skipped.batches) == (3, 192)
    assert report.verdict.label == "unknown"
    assert report.verdict.no_verdict_because == "no-training"
    assert headline(report).text.startswith("NO VERDICT: No training was found")
    assert not report.pipeline.measured
    assert not report.suggestions or all(s.kind == "note" for s in report.suggestions)
