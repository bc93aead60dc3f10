"""Which passes over the data are training: the custom-loop tracker's judgement, driven with
stand-in iterators and variables, a fake clock and a stand-in session (no TensorFlow)."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from synthetic_reports import FakeClock

from pipediag.config import RunConfig
from pipediag.hooks.pass_origin import pass_origin
from pipediag.hooks.tfdata import CustomLoopTracker
from pipediag.hooks.train_evidence import WATCHED_VARIABLES, GradientWatch, changed
from pipediag.renderers.run_words import data_pass_text
from pipediag.report.model import DataPass
from pipediag.report.reasons import Reason
from pipediag.session import DiagnosticSession
from pipediag.timeline import StepTimeline


class FakeVariable:
    def __init__(self, size: int) -> None:
        self.value = np.zeros(size, "float32")
        self.shape = (size,)  # a tuple, as Keras 3 variables have

    def assign(self, value: Any) -> None:
        self.value = np.asarray(value, "float32")

    def numpy(self) -> np.ndarray:
        return self.value


class FakeDataset:
    element_spec = "spec"


class FakeIterator:
    def __init__(self, dataset: FakeDataset, batches: int) -> None:
        self._dataset = dataset
        self.left = batches


def fetch(iterator: FakeIterator) -> int:
    if iterator.left == 0:
        raise StopIteration  # a stand-in: the tracker only inspects TensorFlow's end error
    iterator.left -= 1
    return iterator.left


class StandInSession:
    """What the tracker needs of the diagnosis (`hooks/host.py`), recorded."""

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.config = RunConfig(measured_steps=5, warmup_steps=1)
        self.timeline = StepTimeline(warmup_steps=1, measured_steps=5, measured_seconds=None)
        self.origin = 0.0
        self.paused = self.in_fit = False
        self.benchmarked: list[Any] = []
        self.passes: list[DataPass] = []
        self.styles: list[str] = []

    def mark_style(self, style: str) -> bool:
        self.styles.append(style)
        return True

    def data_pass(self, record: DataPass) -> None:
        self.passes.append(record)

    def benchmark_pipeline(self, dataset: Any) -> None:
        self.benchmarked.append(dataset)

    def keep_measuring(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: None  # notes, phases: not what these tests read


def _loop(
    tracker: CustomLoopTracker,
    iterator: FakeIterator,
    pulls: int,
    step: Callable[[], None] = lambda: None,
    clock: FakeClock | None = None,
) -> None:
    for _ in range(pulls):
        try:
            tracker.on_next(iterator, fetch)
        except StopIteration:
            return
        if clock is not None:
            clock.advance(0.01)
        step()


def _tracker() -> tuple[CustomLoopTracker, StandInSession, GradientWatch]:
    session = StandInSession()
    watch = GradientWatch()
    return CustomLoopTracker(session, watch), session, watch  # type: ignore[arg-type]


def test_a_pass_with_no_train_step_is_skipped_and_never_timed() -> None:
    tracker, session, _ = _tracker()
    dataset = FakeDataset()
    _loop(tracker, FakeIterator(dataset, 40), 50, clock=session.clock)
    tracker.finish()

    assert len(session.timeline) == 0  # the budget of 6 steps never counted it
    assert session.benchmarked == [] and session.styles == []
    (record,) = session.passes
    assert record.reason == "no-train-step" and record.by is None
    assert record.batches == 40
    assert record.where is not None and record.where.startswith("test_training_passes.py:")


def test_training_starts_once_the_gradients_variables_change_between_pulls() -> None:
    tracker, session, watch = _tracker()
    dataset = FakeDataset()
    weights = [FakeVariable(n) for n in (1000, 3, 2, 10, 1, 7)]
    steps = 0

    def train_step() -> None:
        nonlocal steps
        steps += 1
        if steps == 1:
            watch.saw_gradient([weights])  # the first call traces and names the variables
        for w in weights:
            w.assign(w.value + 1.0)

    _loop(tracker, FakeIterator(dataset, 1000), 5, train_step, session.clock)

    # pull 1: nothing known; pull 2: the variables' first snapshot; pull 3: they changed
    assert session.benchmarked == [dataset]
    assert session.styles == ["custom-loop"]
    assert len(session.timeline) == 2  # steps from pull 3 to 4, and 4 to 5
    assert session.passes == []
    assert not watch.watching  # decided: the tape wrapper only counts from now on


def test_the_watched_variables_are_the_smallest() -> None:
    watch = GradientWatch()
    weights = [FakeVariable(n) for n in (1000, 3, 2, 10, 1, 7)]
    watch.saw_gradient({"a": weights[:3], "b": (weights[3:], "not a variable")})
    snapshot = watch.snapshot()
    assert snapshot is not None and len(snapshot) == WATCHED_VARIABLES
    assert sorted(v.size for v in snapshot) == [1, 2, 3, 7]
    weights[0].assign(np.ones(1000))  # the large one is not read
    assert not changed(snapshot, watch.snapshot())
    weights[4].assign(np.ones(1))
    assert changed(snapshot, watch.snapshot())
    assert not changed(None, snapshot)


def test_a_pass_keras_makes_is_named_and_never_training() -> None:
    tracker, session, watch = _tracker()
    weights = [FakeVariable(2)]
    watch.saw_gradient(weights)
    iterator = FakeIterator(FakeDataset(), 8)
    # Keras's own frames stand between the pull and the script: a method defined in a
    # module named like Keras's pulls, as a layer's `adapt` does.
    keras_module = types.ModuleType("keras.src.layers.preprocessing.normalization")
    source = (
        "class Normalization:\n"
        "    def adapt(self, tracker, iterator, fetch, between_pulls):\n"
        "        while True:\n"
        "            between_pulls()\n"
        "            try:\n"
        "                tracker.on_next(iterator, fetch)\n"
        "            except StopIteration:\n"
        "                return\n"
    )
    exec(compile(source, "normalization.py", "exec"), keras_module.__dict__)

    def update_state() -> None:
        weights[0].assign(weights[0].value + 1)  # even if variables moved meanwhile

    keras_module.Normalization().adapt(tracker, iterator, fetch, update_state)
    tracker.finish()

    assert len(session.timeline) == 0 and session.benchmarked == []
    (record,) = session.passes
    assert (record.reason, record.by, record.batches) == ("keras", "Normalization.adapt", 8)


def test_pass_origin_outside_keras_is_the_scripts_line() -> None:
    import sys

    origin = pass_origin(sys._getframe())
    assert origin.by is None
    assert origin.where is not None and origin.where.startswith("test_training_passes.py:")


_KERAS_LIKE = """
import sys
import weakref


class Held:
    pass


class Trainer:
    def fit(self, origin_of):
        held = Held()
        freed = weakref.ref(held)
        origin = origin_of(sys._getframe())
        del held
        return origin, freed() is None
"""


def test_pass_origin_names_the_keras_call_and_holds_none_of_its_locals() -> None:
    """Reading a Keras method's `self` leaves the frame holding no snapshot of its locals:
    before Python 3.13 one kept fit's iterator of the epoch it was read in, and the next
    walk freed it on the main thread, waiting out autotune's sleep (3.9 s inside stage
    timing)."""
    keras_like = types.ModuleType("keras.src.stand_in")
    exec(_KERAS_LIKE, keras_like.__dict__)
    origin, freed = keras_like.Trainer().fit(pass_origin)
    assert origin.by == "Trainer.fit"
    assert origin.where is not None and origin.where.startswith("test_training_passes.py:")
    assert freed


def test_data_pass_words() -> None:
    keras_pass = DataPass(50, "keras", "train.py:58", "TextVectorization.adapt")
    assert data_pass_text(keras_pass) == (
        "a 50-batch pass by TextVectorization.adapt at train.py:58 (not training)"
    )
    loop = DataPass(1875, "no-train-step", "stats.py:6", passes=3)
    assert data_pass_text(loop) == (
        "3 passes (1,875 batches) at stats.py:6 (no train step between its pulls)"
    )


def _session() -> DiagnosticSession:
    config = RunConfig(measured_steps=5, warmup_steps=1, sample_host=False, sample_gpu=False)
    return DiagnosticSession("x", [], config, clock=FakeClock(), log=None, install_hooks=False)


def test_passes_alike_are_one_record() -> None:
    session = _session()
    for _ in range(3):
        session.data_pass(DataPass(10, "no-train-step", "val.py:9", dataset="Batch <- Range"))
    session.data_pass(DataPass(4, "keras", "val.py:3", "Sequential.predict"))
    records = session.found.passes
    assert [(r.passes, r.batches) for r in records] == [(3, 30), (1, 4)]


def test_fit_is_diagnosed_whatever_loop_trained_before_it() -> None:
    session = _session()
    assert session.mark_style("custom-loop")
    t = session.clock.now()
    session.timeline.add(t, t + 0.01, 0.0)
    assert session.mark_style("keras-fit")
    assert session.style == "keras-fit" and len(session.timeline) == 0
    assert Reason("loop-before-fit", value=1) in session._notes
    # a loop after fit is not what is diagnosed
    assert not session.mark_style("custom-loop")


def test_jax_is_read_from_the_script_s_own_names_not_from_what_keras_imported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys
    import types

    from pipediag.hooks.pass_origin import script_uses_jax

    fake_jax = types.ModuleType("jax")
    fake_numpy = types.ModuleType("jax.numpy")
    script = types.ModuleType("__main__")
    monkeypatch.setitem(sys.modules, "jax", fake_jax)  # imported by Keras, say
    monkeypatch.setitem(sys.modules, "__main__", script)
    assert not script_uses_jax()
    script.jnp = fake_numpy  # type: ignore[attr-defined]  # the script's `import jax.numpy as jnp`
    assert script_uses_jax()
