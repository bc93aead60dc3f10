"""Model-side what-ifs against whole runs with the change written by hand.

For each compute-bound case (a residual conv net, an MLP, an attention block), one process:

1. the claim: pipediag's model-side trials on the model's train step alone, on a cached
   batch (`training/model_side.py`, `on_fit`), with fit's own rate A measured first;
2. the truth: fit itself on the same in-memory pipeline, for the unchanged model and for
   copies compiled by hand with `jit_compile=True` and with `steps_per_execution=N` (the N
   the trial tried), alternating in rounds (A X S, X S A, ...); each fit's rate counts its
   steps after the first call; the truth is the median of the per-round ratios.

The figure is |claim/truth - 1| per change, and its median over the cases (goal: at most
0.15; docs/design.md, "When the model sets the rate").

    python benchmarks/model_side.py            # three cases, about two minutes on 2 cores
    python benchmarks/model_side.py --quick    # fewer rounds
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import base_parser, fmt, format_table, write_results
from pipediag.renderers.reason_words import reason_words
from pipediag.report.reasons import Reason

NAME = "model_side"
ROUNDS = 5
QUICK_ROUNDS = 3
FIT_STEPS = 20
BUDGET_S = 6.0
CASES = ("conv", "mlp", "attention")


def build(case: str) -> tuple[Any, Any]:
    """The case's compiled model and its cached, repeated in-memory pipeline."""
    import keras
    import numpy as np
    import tensorflow as tf

    keras.utils.set_random_seed(1)
    rng = np.random.default_rng(0)
    if case == "conv":
        x = rng.normal(size=(512, 24, 24, 8)).astype("float32")
        inputs = keras.Input((24, 24, 8))
        h = keras.layers.Conv2D(32, 3, padding="same", activation="relu")(inputs)
        r = keras.layers.SeparableConv2D(32, 3, padding="same", activation="relu")(h)
        h = keras.layers.GlobalAveragePooling2D()(keras.layers.Add()([h, r]))
    elif case == "mlp":
        x = rng.normal(size=(2048, 64)).astype("float32")
        inputs = keras.Input((64,))
        h = inputs
        for _ in range(3):
            h = keras.layers.Dense(512, activation="relu")(h)
    else:
        x = rng.normal(size=(512, 32, 32)).astype("float32")
        inputs = keras.Input((32, 32))
        a = keras.layers.MultiHeadAttention(num_heads=4, key_dim=16)(inputs, inputs)
        h = keras.layers.LayerNormalization()(keras.layers.Add()([inputs, a]))
        h = keras.layers.Dense(64, activation="relu")(h)
        h = keras.layers.GlobalAveragePooling1D()(h)
    y = (x.reshape(len(x), -1).mean(axis=1) > 0).astype("int32")
    outputs = keras.layers.Dense(2, activation="softmax")(h)
    model = keras.Model(inputs, outputs)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32).cache().repeat().prefetch(2)
    return model, ds


def compiled(model: Any, **settings: Any) -> Any:
    """A copy of `model` with its weights, compiled with `settings` written by hand."""
    import keras

    copy = keras.models.clone_model(model)
    copy.set_weights(model.get_weights())
    copy.compile("adam", "sparse_categorical_crossentropy", **settings)
    return copy


def fit_rate(model: Any, ds: Any, steps: int, *, overhead: list[float] | None = None) -> float:
    """fit's steps per second over `steps` steps, from the end of its first call; with
    `overhead`, also what each step took beyond its train function, appended there, timed as
    pipediag times it (`hooks/fit_overhead.py`)."""
    import keras

    from pipediag.clock import MONOTONIC
    from pipediag.hooks.fit_overhead import TrainFunctionTimer

    timer = TrainFunctionTimer(model, MONOTONIC) if overhead is not None else None

    class Rate(keras.callbacks.Callback):  # type: ignore[misc]
        # With steps_per_execution=N the callback sees one end a call, `batch` its last step.
        first: float | None = None
        first_batch = 0
        last = 0.0
        counted = 0
        began = 0.0

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            self.began = time.perf_counter()

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            now = time.perf_counter()
            if timer is not None:
                timer.step_ended(now - self.began)
            if self.first is None:
                self.first, self.first_batch = now, batch
            else:
                self.counted = batch - self.first_batch
            self.last = now

    rate = Rate()
    try:
        model.fit(ds, epochs=1, steps_per_epoch=steps, verbose=0, callbacks=[rate])
    finally:
        if timer is not None:
            timer.remove()
            if (measured := timer.overhead_s()) is not None and overhead is not None:
                overhead.append(measured)
    assert rate.first is not None
    return rate.counted / (rate.last - rate.first) if rate.counted else 0.0


def claim(model: Any, ds: Any) -> tuple[dict[str, Any], float]:
    """pipediag's trials on the model (fit's rate A and what fit adds around its train
    function measured first, as pipediag measures them), and their seconds."""
    from pipediag.bench.device import gpu_placement
    from pipediag.clock import MONOTONIC
    from pipediag.training.model_side import on_fit
    from pipediag.training.model_variants import cpu_flags, policy_for
    from pipediag.training.step_rounds import FitFacts

    fit_rate(model, ds, 10)  # builds the train function
    overhead: list[float] = []
    a = fit_rate(model, ds, FIT_STEPS, overhead=overhead)
    batch = next(iter(ds))
    gpu = gpu_placement() is not None
    policy, why = policy_for(gpu, cpu_flags())
    facts = FitFacts(1 / a, a, gpu, policy, why, fit_overhead_s=overhead[0] if overhead else None)
    began = time.perf_counter()
    side = on_fit(model, batch, facts, clock=MONOTONIC, budget_s=BUDGET_S)
    seconds = time.perf_counter() - began
    trials = {t.change: t for t in side.trials}
    tops = [(t.name, round(t.share, 3)) for t in side.top_ops if t.kind == "op_type"][:3]
    found = {"trials": trials, "top_ops": tops, "fit_steps_per_s": a}
    return {**found, "fit_overhead_s": facts.fit_overhead_s}, seconds


def gap_claim(trial: Any, fit_per_s: float, spe: int) -> float | None:
    """The claim with fit's time around its train function read as the gap between fit's
    rate and the trial's baseline (measured at different times), for comparison."""
    from pipediag.analysis.run_terms import fit_added_s, in_run_terms

    base, variant = trial.baseline_steps_per_s, trial.variant_steps_per_s
    if not base or not variant:
        return None
    shared_by = spe if trial.change == "steps_per_execution" else 1
    return in_run_terms(base, variant, fit_added_s(None, fit_per_s, base), shared_by=shared_by)


def truth(model: Any, ds: Any, spe: int, rounds: int) -> dict[str, float]:
    """Whole fits with each change written by hand, alternating; median ratios."""
    arms = {
        "baseline": compiled(model),
        "jit_compile": compiled(model, jit_compile=True),
        "steps_per_execution": compiled(model, steps_per_execution=spe),
    }
    for arm in arms.values():
        fit_rate(arm, ds, 2 * spe)  # build, compile
    names = list(arms)
    ratios: dict[str, list[float]] = {"jit_compile": [], "steps_per_execution": []}
    for r in range(rounds):
        order = names[r % 3 :] + names[: r % 3]
        rates = {name: fit_rate(arms[name], ds, max(FIT_STEPS, 4 * spe)) for name in order}
        for change in ratios:
            ratios[change].append(rates[change] / rates["baseline"])
    return {change: statistics.median(values) for change, values in ratios.items()}


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(NAME, __doc__)
    args = parser.parse_args(argv)
    rounds = QUICK_ROUNDS if args.quick else ROUNDS
    rows, cases, errors = [], [], []
    for case in CASES:
        model, ds = build(case)
        model.compile("adam", "sparse_categorical_crossentropy")
        found, seconds = claim(model, ds)
        trials = found["trials"]
        spe_trial = trials["steps_per_execution"]
        spe = int(spe_trial.setting or 8)
        real = truth(model, ds, spe, rounds)
        entry: dict[str, Any] = {
            "case": case,
            "fit_steps_per_s": found["fit_steps_per_s"],
            "top_ops": found["top_ops"],
            "model_side_s": seconds,
            "fit_overhead_s": found["fit_overhead_s"],
        }
        for change in ("jit_compile", "steps_per_execution"):
            trial = trials[change]
            by_gap = gap_claim(trial, found["fit_steps_per_s"], spe)
            error = None
            if trial.speedup is not None:
                error = abs(trial.speedup / real[change] - 1)
                errors.append(error)
            entry[change] = {
                "claim": trial.speedup,
                "claim_by_rate_gap": by_gap,
                "truth": real[change],
                "error": error,
                "reason": words(trial.reason),
                "setting": trial.setting,
            }
            rows.append(
                [
                    case,
                    change,
                    fmt(trial.speedup, ".2f", "x"),
                    fmt(by_gap, ".2f", "x"),
                    fmt(real[change], ".2f", "x"),
                    fmt(error, ".2f"),
                    words(trial.reason),
                ]
            )
        entry["mixed_precision"] = {
            "reason": words(trials["mixed_precision"].reason),
            "claim": trials["mixed_precision"].speedup,
        }
        cases.append(entry)
    print(
        format_table(["case", "change", "claim", "by rate gap", "truth", "|c/t-1|", "note"], rows)
    )
    median_error = statistics.median(errors) if errors else None
    print(f"\nmedian |claim/truth - 1| = {fmt(median_error, '.3f')} (goal <= 0.15)")
    write_results(
        args.json,
        NAME,
        settings={"rounds": rounds, "fit_steps": FIT_STEPS, "budget_s": BUDGET_S},
        summary={"median_error": median_error, "pairs": len(errors)},
        cases=cases,
        quick=args.quick,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def words(reason: Reason | None) -> str:
    """A trial's reason in the report's words; "" where it has none."""
    return reason_words(reason) if reason is not None else ""
