"""Model-side changes (XLA, `steps_per_execution`, mixed precision, the host-to-device copy)
timed on fit's train step alone against the unchanged step within one budget, the model put
back as it was (docs/design.md, "When the model sets the rate")."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pipediag.analysis.paired import OVERRUN
from pipediag.analysis.run_terms import fit_added_s
from pipediag.bench.device import DevicePlacement, gpu_placement
from pipediag.clock import Clock
from pipediag.report.model_side import ModelChange, ModelTrial, TopOp
from pipediag.report.reasons import Reason, error_line
from pipediag.training import model_variants
from pipediag.training.compute_alone import cached_batch_feed, steps_lasting, sync_logs
from pipediag.training.device_copy import device_copy_trial, no_gpu_trial
from pipediag.training.driver import step_variables, variables_put_back
from pipediag.training.fit_backend import fit_batches_per_call
from pipediag.training.loop_profile import LoopProfile, OpsFound, window_failure
from pipediag.training.op_profile import ProfilerSession, QuietLogs, profiled_steps
from pipediag.training.step_rounds import Call, FitFacts, Side, fewest_rounds_s, measure

# steps_per_execution: a call of about this long (8 to 32 steps), read only where fit's own
# time around the train function is at least this share of its step (below, within noise).
SPE_CALL_S = 0.02
SPE_MIN_STEPS = 8
SPE_MAX_STEPS = 32
SPE_MAX_CALL_S = 0.5
VISIBLE_FIT_SHARE = 0.03


def spe_steps(step_s: float) -> int:
    return steps_lasting(SPE_CALL_S, step_s, fewest=SPE_MIN_STEPS, most=SPE_MAX_STEPS)


@dataclass(frozen=True)
class ModelSide:
    """Where the step's time goes (or why not known), and the changes measured."""

    top_ops: list[TopOp] = field(default_factory=list)
    top_ops_reason: Reason | None = None
    trials: list[ModelTrial] = field(default_factory=list)


def on_fit(
    model: Any,
    batch: Any,
    facts: FitFacts,
    *,
    clock: Clock,
    budget_s: float,
    quiet_logs: QuietLogs = contextlib.nullcontext,
    placement: DevicePlacement | None = None,
) -> ModelSide:
    """The profiler window, then each change, on fit's train step within `budget_s`."""
    if placement is None and facts.gpu:
        placement = gpu_placement()
    end_s = clock.now() + budget_s
    # Put back once, after the window and every trial.
    with variables_put_back(step_variables(model)):
        top, why = _where_time_goes(model, batch, facts, clock=clock, quiet_logs=quiet_logs)
        trials = _trials(model, batch, facts, clock=clock, until_s=end_s, placement=placement)
    if placement is None:
        trials.append(no_gpu_trial())
    return ModelSide(top, why, trials)


def _where_time_goes(
    model: Any, batch: Any, facts: FitFacts, *, clock: Clock, quiet_logs: QuietLogs
) -> OpsFound:
    """The profiler window of `loop_profile.py`, driven by calls of fit's train function."""
    call = _caller(model.train_function, cached_batch_feed(model, batch))
    steps = profiled_steps(facts.step_s)
    layers = [layer.name for layer in getattr(model, "layers", [])]
    window = LoopProfile(
        batch, steps=steps, clock=clock, profiler=ProfilerSession(quiet_logs), layer_names=layers
    )
    try:
        call()  # warm: a retrace would fill the window
        while window.next_batch() is not None:
            call()
    except Exception as exc:
        return [], window_failure(exc)
    finally:
        found = window.result()  # the profiler stopped, even where a call raised
    return found


def _trials(
    model: Any,
    batch: Any,
    facts: FitFacts,
    *,
    clock: Clock,
    until_s: float,
    placement: DevicePlacement | None,
) -> list[ModelTrial]:
    # XLA first, the change that most often pays; each build comes before its rounds.
    tries: list[tuple[ModelChange, Callable[..., ModelTrial]]] = [
        ("jit_compile", _xla),
        ("steps_per_execution", _multi_step),
        ("mixed_precision", _mixed_precision),
    ]
    if placement is not None:
        tries.append(("device_copy", functools.partial(_device_copy, placement=placement)))
    # Equal shares, whatever a build overran: a long XLA compilation must not starve the rest.
    share = max(0.0, until_s - clock.now()) / len(tries)
    trials: list[ModelTrial] = []
    for change, build in tries:
        attempt = functools.partial(build, model, batch, facts, clock=clock)
        with model_variants.kept_train_settings(model):
            trials.append(guarded(change, attempt, share, facts.step_s))
    return trials


def guarded(
    change: ModelChange, attempt: Callable[[float], ModelTrial], share_s: float, step_s: float
) -> ModelTrial:
    """A trial in its `share_s` of the budget, or why it was not run."""
    if share_s * OVERRUN < fewest_rounds_s(step_s):
        return ModelTrial(change, reason=Reason("budget-share", value=share_s))
    try:
        return attempt(share_s)
    except Exception as exc:
        return ModelTrial(change, reason=Reason("failed", detail=error_line(exc)))


def _device_copy(
    model: Any,
    batch: Any,
    facts: FitFacts,
    share_s: float,
    *,
    clock: Clock,
    placement: DevicePlacement,
) -> ModelTrial:
    def step(fed: Any) -> None:  # the batch where the trial placed it, not fit's path
        sync_logs(model.train_function(iter((fed,))))

    return device_copy_trial(step, batch, placement, facts, clock=clock, share_s=share_s)


def _caller(function: Callable[[Any], Any], feed: Callable[[], Any]) -> Call:
    return lambda: sync_logs(function(feed()))


def _xla(model: Any, batch: Any, facts: FitFacts, share_s: float, *, clock: Clock) -> ModelTrial:
    code = "model.compile(..., jit_compile=True)"
    if isinstance(built := model_variants.xla_train_function(model), Reason):
        return ModelTrial("jit_compile", reason=built, code=code)
    feed = cached_batch_feed(model, batch)
    variant = Side(_caller(built, feed))
    began = clock.now()
    try:
        variant.call()  # compiles
    except Exception as exc:
        return ModelTrial("jit_compile", reason=model_variants.xla_failure(exc), code=code)
    baseline = Side(_caller(model.train_function, feed))
    trial = measure(
        "jit_compile", baseline, variant, facts, clock=clock, share_s=share_s, built_from=began
    )
    return replace(trial, code=code, setting="True")


def _multi_step(
    model: Any, batch: Any, facts: FitFacts, share_s: float, *, clock: Clock
) -> ModelTrial:
    import tensorflow as tf

    current, steps = fit_batches_per_call(model), spe_steps(facts.step_s)
    code = f"model.compile(..., steps_per_execution={steps})"
    if current > 1:
        reason = Reason("spe-already", value=current)
        return ModelTrial("steps_per_execution", reason=reason, setting=str(current))
    if steps * facts.step_s > SPE_MAX_CALL_S:
        reason = Reason("spe-step-long", value=facts.step_s)
        return ModelTrial("steps_per_execution", reason=reason, setting=str(steps))
    strategy = getattr(model, "distribute_strategy", None)
    if strategy is not None and getattr(strategy, "num_replicas_in_sync", 1) > 1:
        reason = Reason("spe-multi-replica")
        return ModelTrial("steps_per_execution", reason=reason, setting=str(steps))
    began = clock.now()
    built = model_variants.multi_step_train_function(model, steps)
    cached = tf.data.Dataset.from_tensors(batch).repeat()
    base_iterator, variant_iterator = iter(cached), iter(cached)
    variant = Side(_caller(built, lambda: variant_iterator), steps)
    with model_variants.traced_with_steps(model, steps):
        variant.call()  # traced with N steps a call
    baseline = Side(_caller(model.train_function, lambda: base_iterator))
    baseline.call()  # a retrace for the cached batch's iterator
    trial = measure(
        "steps_per_execution",
        baseline,
        variant,
        facts,
        clock=clock,
        share_s=share_s,
        shared_by=steps,
        built_from=began,
    )
    trial = replace(trial, code=code, setting=str(steps))
    around = fit_added_s(facts.fit_overhead_s, facts.fit_steps_per_s, trial.baseline_steps_per_s)
    if around is not None and facts.fit_steps_per_s:
        share = around * facts.fit_steps_per_s
        if share < VISIBLE_FIT_SHARE:
            trial = replace(trial, reason=Reason("spe-fit-share", value=share))
    return trial


def _mixed_precision(
    model: Any, batch: Any, facts: FitFacts, share_s: float, *, clock: Clock
) -> ModelTrial:
    policy = facts.policy
    code = f'keras.mixed_precision.set_global_policy("{policy}")  # before the model is built'
    if (blocker := facts.policy_reason or model_variants.clone_blocker(model)) is not None:
        return ModelTrial("mixed_precision", reason=blocker, code=code, setting=policy)
    began, clone = clock.now(), model_variants.mixed_precision_clone(model, policy)
    clone.make_train_function()
    feed = cached_batch_feed(model, batch)
    variant = Side(_caller(clone.train_function, feed))
    variant.call()  # traces
    baseline = Side(_caller(model.train_function, feed))
    trial = measure(
        "mixed_precision", baseline, variant, facts, clock=clock, share_s=share_s, built_from=began
    )
    outputs = model_variants.output_layers(model)
    kept = [layer.name for layer in model.layers if id(layer) in outputs]
    return replace(trial, code=code, float32_layers=kept, setting=policy)
