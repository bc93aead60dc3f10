"""Reading a report's JSON tolerantly: an older schema brought to the current one a step per
version, then built into dataclasses (docs/design.md, "Rules of the house")."""

from __future__ import annotations

import dataclasses
import functools
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Final, TypeVar, Union

from pipediag.report import model
from pipediag.report.model_side import TopOpKind
from pipediag.report.reasons import Reason
from pipediag.report.stages import AUTOTUNE, UNBOUNDED, StageSettings
from pipediag.report.vocabulary import NoVerdictReason, SemanticsChange

T = TypeVar("T")
_ItemUpgrade = Callable[[dict[str, Any]], dict[str, Any]]
# A step to the next schema, given a shallow copy `upgraded` stamped with that schema: it sets
# top-level keys; a nested section is the caller's, replaced (`dict(section, ...)`), never
# changed in place unless the step copied it first. A key no field reads any more is left:
# `build_dataclass` ignores it, as do the steps that type a section's strings (`_typed_strings`).
_Step = Callable[[dict[str, Any]], None]


def upgraded(data: dict[str, Any], version: int) -> dict[str, Any]:
    """`data`, a report of schema `version`, in the current schema; `data` is left as read."""
    for target, upgrade in _UPGRADES:
        if version < target:
            data = dict(data, schema_version=target)
            upgrade(data)
    data = dict(data)  # for every version: some reports predate their schema's last change
    _without_contention_finding(data)
    if isinstance(notes := data.get("notes"), list):
        data["notes"] = [
            n for n in notes if not (isinstance(n, str) and n.startswith(_WORDED_LOWER_BOUND))
        ]
    _upgrade_lists_in(data, "scale_out", {"blockers": _blocker_as_written})
    return data


# How a report of schema 8 said its step-alone blocks were slowed, in a note, before the
# renderers said it from the blocks and the holds (`renderers/cost_words.py`).
_WORDED_LOWER_BOUND = "the train step on the whole pipeline held in memory ran "


def _blocker_as_written(blocker: dict[str, Any]) -> dict[str, Any]:
    """A blocker's `detail` as `detail_as_written` (docs/design.md, "Rules of the house"), for
    every version: schema-9 reports written before that typing skip the upgrades."""
    if not isinstance(words := blocker.get("detail"), str):
        return blocker
    return dict(blocker, detail_as_written=blocker.get("detail_as_written", words))


# Where an older report's contention finding says its samples were read.
_FINDING_SCOPES = (
    ("during the measured steps", "measured-steps"),
    ("during the whole run", "whole-run"),
)


def _without_contention_finding(data: dict[str, Any]) -> None:
    """A version 7 or older host contention's prose `finding` as the two facts it held that no
    field did: that the verdict made it worth saying (it was written only then) and which
    samples it was read over. The GPU's prose held no such fact: `build_dataclass` leaves it out."""
    contention = data.get("host_contention")
    if not isinstance(contention, dict) or "finding" not in contention:
        return
    contention = dict(contention)
    if isinstance(finding := contention.pop("finding"), str) and finding:
        contention.setdefault("bears_on_verdict", True)
        scope = next((code for words, code in _FINDING_SCOPES if words in finding), None)
        if scope is not None:
            contention.setdefault("scope", scope)
    data["host_contention"] = contention


def _from_version_1(data: dict[str, Any]) -> None:
    _upgrade_lists_in(data, "pipeline", {"stages": _stage_v2, "trials": _trial_v2})


def _upgrade_lists_in(data: dict[str, Any], key: str, upgrades: dict[str, _ItemUpgrade]) -> None:
    if isinstance(section := data.get(key), dict):
        lists = {name: _each_object(section.get(name), up) for name, up in upgrades.items()}
        data[key] = dict(section, **lists)


def _upgrade_suggestions(data: dict[str, Any], upgrade: _ItemUpgrade) -> None:
    if isinstance(data.get("suggestions"), list):
        data["suggestions"] = _each_object(data["suggestions"], upgrade)


def _each_object(items: Any, upgrade: _ItemUpgrade) -> list[Any]:
    """`upgrade` on each object of a JSON list; anything else for `build_dataclass` to refuse."""
    return [upgrade(item) if isinstance(item, dict) else item for item in items or []]


def _stage_v2(stage: dict[str, Any]) -> dict[str, Any]:
    settings = stage.get("settings") or {}
    ops = settings.get("stateful_ops", "")
    return dict(
        stage,
        settings=settings,
        tf_internal=settings.get("tf_internal") == "true",
        random=settings.get("random") == "true",
        stateful_ops=[op for op in ops.split(",") if op],
    )


def _trial_v2(trial: dict[str, Any]) -> dict[str, Any]:
    details = trial.get("details") or {}
    fits = details.get("fits")
    fits_in_memory = None if fits is None else fits == "true"
    return dict(trial, unsafe=details.get("unsafe") == "true", fits_in_memory=fits_in_memory)


# Version 2 spelled pipediag's own stage findings as `settings` strings; version 3 types them.
_AUTO_PARALLEL_BLOCKERS = ("option off", "autotune off", "stateful function")
# Version 2's `FixTrial.details` keys that held numbers, by the type version 3 stores them as.
_DETAIL_FLOATS = (
    "speedup_low",
    "speedup_high",
    "training_speedup_low",
    "training_speedup_high",
    "prefix_s_per_batch",
    "fill_s",
)
_DETAIL_INTS = ("sample_elements", "cycle_length", "threads", "cache_bytes", "available_bytes")
_DETAIL_TEXTS = ("stopped", "training_stopped", "isolation", "existing_buffer")


def _from_version_2(data: dict[str, Any]) -> None:
    """Stage findings were `settings` strings (`auto_parallel` "yes" / "no: <why>", `not_measured`,
    `graph` "unavailable: <why>"); the prose headline is left unread."""
    _upgrade_lists_in(data, "pipeline", {"stages": _stage_v3, "trials": _trial_v3})
    _upgrade_lists_in(data, "scale_out", {"stages": _stage_v3})


# Version 4's summary named the alternation's pairs only in words: "(in alternation, 6
# pairs)", "over 3 alternating pairs", "within the 90% interval of 3 alternating pairs".
_PAIRS_IN_WORDS = re.compile(r"(\d+) (?:alternating )?pairs\b")


def _from_version_4(data: dict[str, Any]) -> None:
    """The prose `summary` goes, its facts kept (docs/design.md, "Rules of the house"); a
    verdict with no summary (a report's default, judged never) says no reason."""
    if not isinstance(verdict := data.get("verdict"), dict):
        return
    verdict = dict(verdict)
    if not isinstance(summary := verdict.pop("summary", None), str):
        summary = ""
    pairs = _PAIRS_IN_WORDS.search(summary)
    if pairs is not None and verdict.get("alternation_pairs") is None:
        verdict["alternation_pairs"] = int(pairs.group(1))
    if summary and verdict.get("label", "unknown") == "unknown":
        verdict["no_verdict_because"] = _no_verdict_reason(data.get("train"))
    data["verdict"] = verdict


def _from_version_5(data: dict[str, Any]) -> None:
    """A suggestion's five speedups as one gain and an estimate (docs/design.md, "The advisor")."""
    _upgrade_suggestions(data, _suggestion_v5)


def _suggestion_v5(suggestion: dict[str, Any]) -> dict[str, Any]:
    training, bound = suggestion.get("training_speedup"), suggestion.get("bound_speedup")
    verified, predicted = suggestion.get("verified_speedup"), suggestion.get("predicted_speedup")
    estimated = suggestion.get("estimated_speedup")
    gain: dict[str, Any] = {"basis": "not-measured"}
    if training is not None:
        interval = suggestion.get("training_interval")
        gain = {"basis": "training", "speedup": training, "interval": interval}
    elif bound is not None:
        gain = {"basis": "held", "speedup": bound}
    elif verified is not None:
        gain = {"basis": "pipeline-alone", "speedup": verified}
    estimate = next((e for e in (predicted, verified, estimated) if e is not None), None)
    return dict(suggestion, gain=gain, estimate=estimate)


def _no_verdict_reason(train: Any) -> NoVerdictReason:
    """Why an older report's train section gave no verdict; "unknown" where it is malformed."""
    try:
        return model.no_verdict_reason(build_dataclass(model.TrainSection, train or {}))
    except (TypeError, ValueError, KeyError):
        return "unknown"


def _stage_v3(stage: dict[str, Any]) -> dict[str, Any]:
    stage = dict(stage)
    settings = stage.get("settings") or {}
    if (auto := settings.get("auto_parallel")) is not None:
        blocker = str(auto).removeprefix("no: ")
        stage["auto_parallel"] = auto == "yes"
        if blocker in _AUTO_PARALLEL_BLOCKERS:
            stage["auto_parallel_blocker"] = blocker
    if "not_measured" in settings:
        stage["not_measured"] = settings["not_measured"]
    if "graph" in settings:
        stage["graph_error"] = str(settings["graph"]).removeprefix("unavailable: ")
    stage["settings"] = settings
    return stage


def _trial_v3(trial: dict[str, Any]) -> dict[str, Any]:
    details = trial.get("details") or {}
    facts: dict[str, Any] = {}
    for keys, read in (
        (_DETAIL_FLOATS, functools.partial(_number, kind=float)),
        (_DETAIL_INTS, functools.partial(_number, kind=int)),
        (_DETAIL_TEXTS, str),
    ):
        facts.update({key: read(details[key]) for key in keys if key in details})
    # "infinite" or "unknown" elements: None in version 3 (the trial's reason says which).
    facts["elements"] = _number(details.get("elements"), int)
    return dict(trial, facts=facts)


def _number(text: Any, kind: type[float] | type[int]) -> Any:
    """A version-2 detail string as a number; None when absent or not a number."""
    try:
        return None if text is None else kind(text)
    except (TypeError, ValueError):
        return None


# Version 7's strings for what version 8 types: flags, tf.data's -1 in a tuned parallelism or
# buffer and in a repeat's count, and a cache's filename when it caches in memory.
_FLAGS = {"true": True, "false": False}
_MINUS_ONE_WORDS = {"AUTOTUNE": AUTOTUNE, "unbounded": UNBOUNDED}
_IN_MEMORY = "memory"


def _from_version_7(data: dict[str, Any]) -> None:
    """Options and settings typed (docs/design.md, "Rules of the house"); options `{}` are None."""
    _upgrade_lists_in(data, "pipeline", {"stages": _stage_v8})
    _upgrade_lists_in(data, "scale_out", {"stages": _stage_v8})
    pipeline = data.get("pipeline")
    if isinstance(pipeline, dict) and isinstance(pipeline.get("options"), dict):
        options = pipeline["options"]
        pipeline["options"] = _typed_strings(model.PipelineOptions, options) if options else None


def _stage_v8(stage: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(settings := stage.get("settings"), dict):
        return stage
    return dict(stage, settings=_typed_strings(StageSettings, settings))


def _typed_strings(cls: type, strings: dict[str, Any]) -> dict[str, Any]:
    """The strings of `strings` naming a field of `cls`, each as that field's type, those that do
    not read as it left out (the default); a non-string as it is, for `build_dataclass`."""
    typed: dict[str, Any] = {}
    for name, hint in _hints(cls).items():
        text = strings.get(name)
        kind = next(a for a in typing.get_args(hint) or (hint,) if a is not type(None))
        value: Any
        if not isinstance(text, str):
            value = text
        elif kind is bool:
            value = _FLAGS.get(text)
        elif kind is int:
            value = _MINUS_ONE_WORDS.get(text, _number(text, int))
        else:
            value = "" if name == "filename" and text == _IN_MEMORY else text
        if value is not None:
            typed[name] = value
    return typed


def _from_version_8(data: dict[str, Any]) -> None:
    """Words read back into facts (docs/design.md, "Rules of the house"). A sentence pipediag
    never wrote (a hand edit) is dropped, as nothing said: a semantics sentence, or a
    `numerics` note in neither policy's words (a trial holds one form of its numerics)."""
    _upgrade_lists_in(data, "scale_out", {"measurements": _measurement_v9})
    _upgrade_lists_in(data, "pipeline", {"trials": _fix_trial_v9})
    if isinstance(data.get("pipeline"), dict):  # the copy just made: it may be changed
        _upgrade_lists_in(data["pipeline"], "prescription", {"code": _semantics_coded})
    _upgrade_suggestions(data, _suggestion_v9)
    _upgrade_lists_in(data, "compute_alone", {"trials": _model_trial_v9})


# Version 8's words for what a service measurement read: the stage's label after the prefix.
_WHOLE_PIPELINE = "whole pipeline"
_PIPELINE_UP_TO = "pipeline up to "


def _measurement_v9(measurement: dict[str, Any]) -> dict[str, Any]:
    """A measurement's `part`, words around a stage's label, as `up_to` ("": the whole pipeline)."""
    upgraded = dict(measurement)
    if isinstance(part := upgraded.pop("part", None), str):
        upgraded["up_to"] = "" if part == _WHOLE_PIPELINE else part.removeprefix(_PIPELINE_UP_TO)
    return upgraded


# Version 8's words for what a rewrite changes in what the pipeline yields: one record held
# one fix's sentence, a hoist-cache's two joined by "; " (the cache's own has a "; ").
_ELEMENT_ORDER = "element order: the map now runs before the shuffle"
_CACHE = "a cache: the elements are read once and kept in memory; randomness before it is frozen"
_SEMANTICS_AS_WORDED: dict[str, tuple[SemanticsChange, ...]] = {
    _ELEMENT_ORDER: ("element-order",),
    "the function is applied to whole batches": ("batched",),
    "the function runs once per batch through tf.vectorized_map: each element's result is "
    "unchanged (to float rounding)": ("vectorized-map",),
    _CACHE: ("cache",),
    f"{_ELEMENT_ORDER}; {_CACHE}": ("element-order", "cache"),
    "the generator is read once and its elements kept in memory: every epoch yields the "
    "first epoch's elements, and randomness in the generator is frozen": ("materialised",),
}
# Where version 8 added them to the rewritten pipeline's evidence; the renderer says them now.
_CHANGES_SAID = " What changes besides the speed: "
_REWRITTEN_PIPELINE_RULE = "PD016-rewritten-pipeline"
# Version 8's numerics note per policy, before the layers kept float32 (", "-joined, or "none").
_NUMERICS_AS_WORDED: Final[dict[str, str]] = {
    "mixed_float16": "float16 compute with float32 variables; the loss is scaled (Keras wraps "
    "the optimizer in a LossScaleOptimizer); layers kept float32: ",
    "mixed_bfloat16": "bfloat16 compute with float32 variables (no loss scaling needed); "
    "layers kept float32: ",
}


def _fix_trial_v9(trial: dict[str, Any]) -> dict[str, Any]:
    facts = trial.get("facts")
    return dict(trial, facts=_semantics_coded(facts)) if isinstance(facts, dict) else trial


def _semantics_coded(record: dict[str, Any]) -> dict[str, Any]:
    words = record.get("semantics")
    codes = _SEMANTICS_AS_WORDED.get(words, ()) if isinstance(words, str) else ()
    return dict(record, semantics=list(codes))


def _suggestion_v9(suggestion: dict[str, Any]) -> dict[str, Any]:
    evidence = suggestion.get("evidence")
    if suggestion.get("id") != _REWRITTEN_PIPELINE_RULE or not isinstance(evidence, str):
        return suggestion
    return dict(suggestion, evidence=evidence.partition(_CHANGES_SAID)[0])


def _model_trial_v9(trial: dict[str, Any]) -> dict[str, Any]:
    upgraded = dict(trial)
    if not isinstance(words := upgraded.pop("numerics", None), str):
        return upgraded
    for policy, opening in _NUMERICS_AS_WORDED.items():
        if words.startswith(opening):
            kept = words.removeprefix(opening)
            upgraded["float32_layers"] = [] if kept == "none" else kept.split(", ")
            upgraded.setdefault("setting", policy)
            break
    return upgraded


def _from_version_9(data: dict[str, Any]) -> None:
    _upgrade_suggestions(data, _suggestion_words_kept)
    _upgrade_lists_in(data, "compute_alone", {"top_ops": _host_gap_kind})
    _upgrade_lists_in(data, "pipeline", {"trials": _fix_trial_training_v10})


# Version 9's figures of a fix trial on training, on the trial and on its facts, by the
# field of its `training` record (`GainOnTraining`) that holds each now.
_TRAINING_ON_TRIAL_V9: Final = {
    "training_speedup": "training_speedup",
    "training_baseline_steps_per_s": "baseline_steps_per_s",
    "training_variant_steps_per_s": "variant_steps_per_s",
    "training_rounds": "rounds",
    "training_baseline_start_s": "baseline_start_s",
    "training_variant_start_s": "variant_start_s",
}
_TRAINING_IN_FACTS_V9: Final = {
    "training_speedup_low": "training_speedup_low",
    "training_speedup_high": "training_speedup_high",
    "training_stopped": "stopped",
    "above_step_alone": "at_step_alone",
    "training_after": "after",
}


def _fix_trial_training_v10(trial: dict[str, Any]) -> dict[str, Any]:
    """A fix trial's figures on training as one record; none where it measured no speedup
    there (the figures came together; `training_reason` says why not)."""
    training = {new: trial[old] for old, new in _TRAINING_ON_TRIAL_V9.items() if old in trial}
    if isinstance(facts := trial.get("facts"), dict):
        training.update(
            {new: facts[old] for old, new in _TRAINING_IN_FACTS_V9.items() if old in facts}
        )
    return dict(trial, training=training if training.get("training_speedup") is not None else None)


def _suggestion_words_kept(suggestion: dict[str, Any]) -> dict[str, Any]:
    kept = dict(suggestion)
    words = {"title": kept.pop("title", ""), "evidence": kept.pop("evidence", "")}
    return dict(kept, as_written=words)


# Version 9's words for the two host gaps among the top ops (kind "host_gap"), now kinds.
_HOST_GAPS_AS_WORDED: Final[dict[str, TopOpKind]] = {
    "host: Python (outside TensorFlow's calls)": "host-python",
    "host: launch overhead and time between ops": "host-launch",
}


def _host_gap_kind(top_op: dict[str, Any]) -> dict[str, Any]:
    """A host gap's words as its kind, its name "" (the name is the profile's, for an op).
    A gap in other words (a hand edit) keeps them as written ("host-as-written")."""
    if top_op.get("kind") != "host_gap":
        return top_op
    words = top_op.get("name")
    kind = _HOST_GAPS_AS_WORDED.get(words) if isinstance(words, str) else None
    if kind is None:
        return dict(top_op, kind="host-as-written")
    return dict(top_op, kind=kind, name="")


# The step that brings a report of the version before to each version (what each changed:
# CHANGELOG.md). Versions 4 and 7 need no step: what 4 dropped no field reads, and `_convert`
# keeps a version-6 report's worded reasons as written ("as-written").
_UPGRADES: tuple[tuple[int, _Step], ...] = (
    (2, _from_version_1),
    (3, _from_version_2),
    (5, _from_version_4),
    (6, _from_version_5),
    (8, _from_version_7),
    (9, _from_version_8),
    (10, _from_version_9),
)


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def build_dataclass(cls: type[T], data: Any) -> T:
    """`cls` from a JSON object: keys no field reads ignored, each value as its field's type."""
    if not isinstance(data, dict):
        raise TypeError(f"{cls.__name__} must be an object, got {type(data).__name__}")
    hints = _hints(cls)
    kwargs = {
        f.name: _convert(hints[f.name], data[f.name])
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if f.name in data
    }
    return cls(**kwargs)


def _convert(hint: Any, value: Any) -> Any:
    if (origin := typing.get_origin(hint)) in (Union, types.UnionType):
        if value is None:
            return None
        return _convert([a for a in typing.get_args(hint) if a is not type(None)][0], value)
    if origin is list:
        (item,) = typing.get_args(hint)
        if isinstance(value, str):  # an older report's words where reasons are now listed
            value = [value] if value else []
        return [_convert(item, v) for v in value]
    if origin is dict:
        _, item = typing.get_args(hint)
        return {str(k): _convert(item, v) for k, v in value.items()}
    if hint is Reason and isinstance(value, str):
        return Reason("as-written", detail=value)  # older words (reports 6, 8; fleets 1, 2)
    if dataclasses.is_dataclass(hint):
        return build_dataclass(hint, value)  # type: ignore[arg-type]
    return float(value) if hint is float and isinstance(value, int) else value
