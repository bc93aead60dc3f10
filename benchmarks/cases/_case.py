"""What every benchmark case shares: its command line, its training loop and its own timer.

A case is an ordinary training script (`python case.py --epochs N`) whose module also
exposes the pieces the benchmarks need to measure it without pipediag:

- metadata constants: `BOTTLENECK` (the intended bottleneck, in words), `INTENDED`
  (the verdict the case was built for; the benchmarks establish the truth by measurement),
  `STYLE` (`FIT` or `LOOP`), `EXPECTED_SUGGESTION` (the id prefix of the advisor rule that
  should come first, e.g. "PD001", or None) and `FIXES` (suggestion id prefix -> the name
  of the fix, applied by `--fix NAME`; `--tuned` applies the case's hand-tuned variant);
- `make_dataset(fixes)`: one epoch of the training data, as the script trains on it;
- `make_model()`: a fresh, compiled Keras model.

The training loop lives here so that both training styles are timed the same way, and so
that `--rate-file` (the script timing its own steps) reads identically with and without
pipediag: the overhead benchmark compares exactly these numbers.

This module is imported from the case's folder (Python puts a script's folder first on
`sys.path`), so it must not import anything from the repository.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

FIT = "keras-fit"
LOOP = "custom-loop"
TUNED = "tuned"
# Steps the script's own timer leaves out of `--rate-file`: tracing and compiling the train
# function, filling prefetch buffers, autotune settling (pipediag's default warm-up is 5).
DEFAULT_RATE_WARMUP_STEPS = 10


class StepTimer:
    """End time of every train step, on the same clock in both training styles.

    `epoch_marks` holds (steps done, time) where each epoch's first step began: once the
    loop has made the epoch's iterator, or at Keras's `on_train_batch_begin` of the epoch's
    first batch. The time from the previous step's end to the mark is the epoch boundary
    (end of data, the old iterator's tear-down, making the new one, epoch callbacks), which
    a per-step rate can leave out; the first step itself (its first batch from a fresh
    iterator) is not.
    """

    def __init__(self) -> None:
        self.ends_s: list[float] = []
        self.epoch_marks: list[tuple[int, float]] = []

    def tick(self) -> None:
        self.ends_s.append(time.perf_counter())

    def mark_epoch(self) -> None:
        self.epoch_marks.append((len(self.ends_s), time.perf_counter()))

    def rate(self, warmup: int) -> float | None:
        """Steps per second after `warmup` steps: from the end of step `warmup` to the last."""
        return rate_after(self.ends_s, warmup)

    def keras_callback(self) -> Any:
        import keras

        timer = self

        class _Tick(keras.callbacks.Callback):  # type: ignore[misc]
            def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
                if batch == 0:
                    timer.mark_epoch()

            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                timer.tick()

        return _Tick()


def steady_rate_after(
    ends_s: list[float], marks: list[tuple[int, float]], warmup: int
) -> tuple[float | None, float]:
    """`rate_after` with each epoch boundary's time left out (from the previous step's end
    to the epoch's mark), and that time: pipediag's gains are claimed for steps, and an
    epoch's start is its own finding."""
    rate = rate_after(ends_s, warmup)
    if rate is None:
        return None, 0.0
    boundary = 0.0
    for done, at in marks:
        if warmup < done < len(ends_s):
            boundary += max(0.0, at - ends_s[done - 1])
    span = ends_s[-1] - ends_s[warmup] - boundary
    return ((len(ends_s) - 1 - warmup) / span if span > 0 else None), boundary


def rate_after_first_epoch(ends_s: list[float], marks: list[tuple[int, float]]) -> float | None:
    """Steps per second from the second epoch's mark to the last step: the recurring epoch
    boundaries in, the first epoch's one-off costs (a cache's fill, the tear-down of its
    filling iterator) out. None where the run did not reach a second epoch with steps."""
    later = [(done, at) for done, at in marks if done > 0]
    if not later:
        return None
    done, at = later[0]
    steps = len(ends_s) - done
    span = ends_s[-1] - at if ends_s else 0.0
    return steps / span if steps >= 2 and span > 0 else None


def rate_after(ends_s: list[float], warmup: int) -> float | None:
    """Events per second between the end of event `warmup` and the last event."""
    if len(ends_s) < warmup + 2:
        return None
    span = ends_s[-1] - ends_s[warmup]
    return (len(ends_s) - 1 - warmup) / span if span > 0 else None


def make_loop_step(model: Any, *, eager: bool = False) -> Callable[[Any, Any], Any]:
    """A custom train step with the model's own optimizer and loss: compiled, or `eager` as
    the custom training walkthrough writes it (the interpreter lock held most of the step)."""
    import keras
    import tensorflow as tf

    loss_fn = keras.losses.get(model.loss)
    optimizer = model.optimizer

    def train_step(x: Any, y: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    return train_step if eager else tf.function(train_step)


def train(
    model: Any,
    dataset: Any,
    *,
    style: str,
    epochs: int,
    steps_per_epoch: int | None = None,
    max_steps: int | None = None,
    timer: StepTimer | None = None,
    max_seconds: float | None = None,
    warmup: int = DEFAULT_RATE_WARMUP_STEPS,
) -> None:
    """Train as the case's style does: `model.fit` or a `for batch in dataset` loop.

    `max_steps` ends training early (both styles), so a rate measurement does not pay for
    whole epochs; so does `max_seconds`, counted from the end of step `warmup`, so a rate
    run lasts long enough to read whatever the step's length; `steps_per_epoch` is needed
    for an infinite (repeated) dataset.
    """
    timer = timer or StepTimer()

    def done() -> bool:
        ends = timer.ends_s
        if max_steps is not None and len(ends) >= max_steps:
            return True
        return (
            max_seconds is not None
            and len(ends) > warmup
            and ends[-1] - ends[warmup] >= max_seconds
        )

    if style == FIT:
        import keras

        callbacks = [timer.keras_callback()]
        if max_steps is not None or max_seconds is not None:
            callbacks.append(_stop_when(done, keras))
        model.fit(
            dataset, epochs=epochs, steps_per_epoch=steps_per_epoch, verbose=0, callbacks=callbacks
        )
        return
    train_step = make_loop_step(model)
    for _ in range(epochs):
        iterator = iter(dataset)  # the previous epoch's is torn down here, as it is replaced
        timer.mark_epoch()
        for step, (x, y) in enumerate(iterator):
            if steps_per_epoch is not None and step >= steps_per_epoch:
                break
            train_step(x, y)
            timer.tick()
            if done():
                return


def _stop_when(done: Callable[[], bool], keras: Any) -> Any:
    class _Stop(keras.callbacks.Callback):  # type: ignore[misc]
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            if done():
                self.model.stop_training = True

    return _Stop()


def parse_fixes(args: argparse.Namespace) -> frozenset[str]:
    fixes = set(args.fix or [])
    if args.tuned:
        fixes.add(TUNED)
    return frozenset(fixes)


def wants(fixes: Collection[str], name: str) -> bool:
    """Whether the fix `name` is applied: asked for by name, or by `--tuned`."""
    return name in fixes or TUNED in fixes


def main(
    make_dataset: Callable[[frozenset[str]], Any],
    make_model: Callable[[], Any],
    *,
    style: str,
    description: str,
    default_epochs: int = 2,
) -> None:
    """The case's command line: train, and optionally write its own measured steps/s."""
    parser = argparse.ArgumentParser(description=description.strip().splitlines()[0])
    parser.add_argument("--epochs", type=int, default=default_epochs)
    parser.add_argument("--tuned", action="store_true", help="the hand-tuned variant")
    parser.add_argument("--fix", action="append", help="apply one named fix (repeatable)")
    parser.add_argument("--max-steps", type=int, default=None, help="stop after N steps")
    parser.add_argument(
        "--max-seconds", type=float, default=None, help="stop N s after the warm-up steps"
    )
    parser.add_argument("--rate-file", type=Path, help="write this run's own steps/s as JSON")
    parser.add_argument("--rate-warmup", type=int, default=DEFAULT_RATE_WARMUP_STEPS)
    parser.add_argument(
        "--alternate",
        help="variants to train in turn with the baseline, one epoch each, comma-separated "
        "(`cache`, `cache+vectorize`, `tuned`); --rate-file gets their ratios",
    )
    parser.add_argument("--rounds", type=int, default=8, help="rounds of --alternate")
    args = parser.parse_args()

    import keras

    keras.utils.set_random_seed(0)
    if args.alternate:
        from _alternate import alternate

        found = alternate(
            make_dataset,
            make_model,
            style=style,
            labels=args.alternate.split(","),
            rounds=args.rounds,
            max_seconds=args.max_seconds,
        )
        print(f"{found.rounds} rounds of {args.alternate}")
        if args.rate_file is not None:
            args.rate_file.write_text(json.dumps(found.as_json()))
        return
    timer = StepTimer()
    began = time.perf_counter()
    train(
        make_model(),
        make_dataset(parse_fixes(args)),
        style=style,
        epochs=args.epochs,
        max_steps=args.max_steps,
        timer=timer,
        max_seconds=args.max_seconds,
        warmup=args.rate_warmup,
    )
    rate = timer.rate(args.rate_warmup)
    steady, boundary_s = steady_rate_after(timer.ends_s, timer.epoch_marks, args.rate_warmup)
    print(f"{len(timer.ends_s)} steps in {time.perf_counter() - began:.1f} s; ", end="")
    print(f"{rate:.1f} steps/s after warm-up" if rate else "too few steps for a rate")
    if args.rate_file is not None:
        args.rate_file.write_text(
            json.dumps(
                {
                    "steps": len(timer.ends_s),
                    "warmup_steps": args.rate_warmup,
                    "steps_per_s": rate,
                    "steady_steps_per_s": steady,
                    "after_first_epoch_steps_per_s": rate_after_first_epoch(
                        timer.ends_s, timer.epoch_marks
                    ),
                    "epoch_boundary_s": boundary_s,
                    "step_ends_s": [t - began for t in timer.ends_s],
                }
            )
        )
