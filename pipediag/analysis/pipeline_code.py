"""The user's pipeline as tf.data code, the kept rewrites applied, each stage's call rebuilt
from its kind, function and settings (docs/design.md, "The pipeline pipediag would write")."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from pipediag.report.fixes import CodeEdit, fix_facts
from pipediag.report.prescription import CodeLine, StageChange
from pipediag.report.stage_facts import BATCHING_KINDS, MAP_KINDS, SHUFFLE_KINDS, call_stages_after
from pipediag.report.stages import AUTOTUNE, UNBOUNDED, StageSettings, StageStats

AUTOTUNE_TEXT = "tf.data.AUTOTUNE"
# Sources written as their tf.data constructor; others keep their op's name in a comment.
_SOURCE_CALLS = {
    "TensorSliceDataset": "tf.data.Dataset.from_tensor_slices(...)",
    "TensorDataset": "tf.data.Dataset.from_tensors(...)",
    "RangeDataset": "tf.data.Dataset.range({start}, {stop})",
    "TFRecordDataset": "tf.data.TFRecordDataset(...)",
    "TFRecordDatasetV2": "tf.data.TFRecordDataset(...)",
    "TextLineDataset": "tf.data.TextLineDataset(...)",
}
# Keras's dataset utilities: written as the one call the script made; the time series one,
# asked for no shuffle and no batch, yields its windows in order for the script to cache.
TIME_SERIES = "timeseries_dataset_from_array"
KERAS_DATASET_UTILITIES = frozenset(
    {
        TIME_SERIES,
        "image_dataset_from_directory",
        "text_dataset_from_directory",
        "audio_dataset_from_directory",
    }
)


def rewritten_chain(stages: Sequence[StageStats], changes: Sequence[StageChange]) -> list[CodeLine]:
    """One `ds = ...` line per stage, source first, each change where it goes; the inputs of
    a stage that reads several datasets are written first, as `ds0`, `ds1`, ..."""
    if not stages:
        return []
    by_stage: dict[int, list[StageChange]] = {}
    for change in changes:
        if change.stage_index is not None:
            by_stage.setdefault(change.stage_index, []).append(change)
    stages, written = _library_calls(stages, by_stage)
    lines = _branch(stages, stages[-1], "ds", by_stage, written, seen=set())
    lines.extend(_end_lines(_main_chain(stages), changes))
    return lines


def library_cache(
    stages: Sequence[StageStats], index: int, elements: int | None
) -> tuple[str, str] | None:
    """A cache after stage `index`, made by a Keras utility whose own stages follow it: the
    arguments the call is given anew ("" where none) and the cache's line. Right after the
    call where none of them shuffles; a time series' windows asked for in order, unbatched,
    then cached, shuffled all anew each epoch and batched. None elsewhere: a directory loader
    splits off validation from its shuffled file list, which `shuffle=False` would change
    (docs/design.md, "Every applicable rewrite")."""
    inside = call_stages_after(stages, index)
    if stages[index].made_by not in KERAS_DATASET_UTILITIES or not inside:
        return None
    if not any(s.kind in SHUFFLE_KINDS for s in inside):
        return "", "ds = ds.cache()"
    batches = [s for s in inside if s.kind in BATCHING_KINDS]
    if stages[index].made_by != TIME_SERIES or any(s.kind != "batch" for s in batches):
        return None
    then = f"ds = ds.cache().shuffle({elements or 'buffer_size'})"
    then += "".join(f".batch({_or(s.settings.batch_size, '...')})" for s in batches[:1])
    asked = ", shuffle=False" + (", batch_size=None" if batches else "")
    return asked, then + ("" if elements else "  # buffer_size: every element")


def _library_calls(
    stages: Sequence[StageStats], by_stage: dict[int, list[StageChange]]
) -> tuple[list[StageStats], dict[int, list[CodeLine]]]:
    """Each Keras dataset utility's stages as the script's one call: its output stage becomes a
    source written as the call, or as a cache's recipe inside it; its tf.data stages are kept
    where another change lies inside (docs/design.md, "Every applicable rewrite")."""
    collapsed, written = list(stages), {}
    calls: dict[tuple[str, str | None], list[StageStats]] = {}
    for stats in stages:
        if stats.made_by in KERAS_DATASET_UTILITIES:
            calls.setdefault((stats.made_by, stats.created_at), []).append(stats)
    for (made_by, site), members in calls.items():
        indices = {s.index for s in members}
        outputs = [s for s in members if not any(s.index in m.inputs for m in members)]
        if len(outputs) != 1 or any(i not in indices for m in members for i in m.inputs):
            continue  # not one self-contained call: written as tf.data
        # A prefetch at the end is written after the call (`_end_lines`).
        changed = [
            (m, c)
            for m in members
            for c in by_stage.get(m.index, [])
            if fix_facts(c.fix).code != "prefetch"
        ]
        lines = [CodeLine(f"ds = tf.keras.utils.{made_by}(...)", site)]
        if changed:
            (member, cache), *others = changed
            recipe = None
            if not others and fix_facts(cache.fix).code == "cache":
                recipe = library_cache(stages, member.index, cache.value)
            if recipe is None:
                continue
            asked, then = recipe
            call = CodeLine(f"ds = tf.keras.utils.{made_by}(...{asked})", site)
            if asked:  # its arguments are the change too
                call = dataclasses.replace(call, change=cache.fix)
            lines = [call, CodeLine(then, site, cache.fix, list(cache.semantics))]
        collapsed[outputs[0].index] = dataclasses.replace(outputs[0], kind="source", inputs=[])
        written[outputs[0].index] = lines
        for index in indices:
            by_stage.pop(index, None)
    return collapsed, written


def _branch(
    stages: Sequence[StageStats],
    output: StageStats,
    name: str,
    by_stage: dict[int, list[StageChange]],
    written: dict[int, list[CodeLine]],
    *,
    seen: set[int],
) -> list[CodeLine]:
    chain = [output]
    seen.add(output.index)
    while len(chain[-1].inputs) == 1 and chain[-1].inputs[0] not in seen:
        chain.append(stages[chain[-1].inputs[0]])
        seen.add(chain[-1].index)
    chain.reverse()
    head = chain[0]
    lines: list[CodeLine] = []
    inputs = [i for i in head.inputs if i not in seen and 0 <= i < len(stages)]
    branches = [f"{name}{position}" for position in range(len(inputs))]
    for branch, index in zip(branches, inputs, strict=True):
        lines += _branch(stages, stages[index], branch, by_stage, written, seen=seen)
    joined = _joined(head, branches) if len(branches) > 1 else None
    return lines + [_named(line, name) for line in _linear(chain, by_stage, written, joined)]


def _joined(stats: StageStats, branches: list[str]) -> str:
    if stats.kind == "concatenate":
        return f"ds = {branches[0]}" + "".join(f".concatenate({b})" for b in branches[1:])
    if stats.kind == "zip":
        return f"ds = tf.data.Dataset.zip(({', '.join(branches)}))"
    return f"ds = ...  # {stats.name or stats.kind} of {', '.join(branches)}"


def _named(line: CodeLine, name: str) -> CodeLine:
    if name == "ds" or not line.text.startswith("ds = "):
        return line
    text = line.text[len("ds = ") :]
    if text.startswith("ds."):
        text = f"{name}." + text[len("ds.") :]
    return dataclasses.replace(line, text=f"{name} = {text}")


def _linear(
    chain: Sequence[StageStats],
    by_stage: dict[int, list[StageChange]],
    written: dict[int, list[CodeLine]],
    head: str | None,
) -> list[CodeLine]:
    """`head`: the first stage's line, where it reads several datasets; `written`: a library
    call's lines, in its output stage's place."""
    lines: list[CodeLine] = []
    deferred: list[CodeLine] = []  # a vectorised map waits for its batch
    for position, stats in enumerate(chain):
        if stats.index in written:
            lines.extend(written[stats.index])
            continue
        own = _by_code(by_stage.get(stats.index, []))
        if position == 0 and head is not None:
            lines.append(CodeLine(head, stats.created_at))
            continue
        if "hoist-cache" in own and position > 0 and chain[position - 1].kind == "shuffle":
            change = own["hoist-cache"]
            shuffle = lines.pop()  # the shuffle goes after the map and its cache
            lines.append(_line(_call(stats, own), stats, change))
            lines.append(CodeLine("ds = ds.cache()", stats.created_at, change.fix))
            lines.append(dataclasses.replace(shuffle, change=change.fix))  # moved by it
            continue
        if "vectorize" in own:
            change = own["vectorize"]
            if change.vectorized_map:
                function = vectorized_map_lambda(stats.function or "fn", change.element_unpacked)
                text = f"ds = ds.map({function}, num_parallel_calls={AUTOTUNE_TEXT})"
            else:
                text = _call(stats, own, parallel=True)
            deferred.append(_line(text, stats, change))
            if "cache" in own:  # the map now yields batches: its cache follows it
                deferred.append(_line("ds = ds.cache()", stats, own["cache"]))
            continue
        lines.append(_stage_line(stats, own))
        if stats.kind in ("batch", "padded-batch"):
            lines.extend(deferred)
            deferred = []
        if "cache" in own:
            # Whole batches cached: the line waits for the batch that reads this stage.
            cached = _line("ds = ds.cache()", stats, own["cache"])
            (deferred if own["cache"].cached_in_batches else lines).append(cached)
    lines.extend(deferred)
    return lines


def _by_code(changes: Sequence[StageChange]) -> dict[CodeEdit, StageChange]:
    return {code: c for c in changes if (code := fix_facts(c.fix).code) is not None}


def vectorized_map_lambda(function: str, unpacked: bool) -> str:
    """`unpacked`: a tuple element's parts go to the function's arguments, as tf.data does."""
    if unpacked:
        return (
            f"lambda *batch: tf.vectorized_map(lambda e: {function}(*e), batch, "
            "fallback_to_while_loop=True)"
        )
    return f"lambda batch: tf.vectorized_map({function}, batch, fallback_to_while_loop=True)"


def _main_chain(stages: Sequence[StageStats]) -> list[StageStats]:
    chain = [stages[-1]]
    while chain[-1].inputs and len(chain) <= len(stages):
        chain.append(stages[chain[-1].inputs[0]])
    return chain[::-1]


def _stage_line(stats: StageStats, own: dict[CodeEdit, StageChange]) -> CodeLine:
    if "materialise" in own and stats.kind == "source":
        generator = stats.function or "generator"
        text = (
            "ds = tf.data.Dataset.from_tensor_slices("
            f"tuple(np.stack(part) for part in zip(*{generator}())))"
        )
        return _line(text, stats, own["materialise"])
    if "prefetch" in own and stats.kind == "prefetch":
        return _line(f"ds = ds.prefetch({AUTOTUNE_TEXT})", stats, own["prefetch"])
    if "parallel" in own:
        return _line(_call(stats, own, parallel=True), stats, own["parallel"])
    return CodeLine(_call(stats, own), stats.created_at)


def _line(text: str, stats: StageStats, change: StageChange) -> CodeLine:
    return CodeLine(text, stats.created_at, change.fix, list(change.semantics))


def _call(stats: StageStats, own: dict[CodeEdit, StageChange], *, parallel: bool = False) -> str:
    settings, function = stats.settings, stats.function or "fn"
    calls = AUTOTUNE_TEXT if parallel else _parallel_calls(settings.num_parallel_calls)
    kind = stats.kind
    if kind == "source":
        if stats.name == "from_generator":
            return f"ds = tf.data.Dataset.from_generator({function}, output_signature=...)"
        if (template := _SOURCE_CALLS.get(stats.name)) is None:
            return f"ds = ...  # {stats.name}"
        return "ds = " + template.format(
            start=_or(settings.start, "0"), stop=_or(settings.stop, "...")
        )
    if kind in MAP_KINDS:
        return f"ds = ds.map({function}{_kw('num_parallel_calls', calls)})"
    if kind in ("filter", "parallel-filter"):
        return f"ds = ds.filter({function}{_kw('num_parallel_calls', calls)})"
    if kind in ("interleave", "parallel-interleave"):
        cycle = settings.cycle_length
        cycle_text = None if cycle in (None, AUTOTUNE) else str(cycle)
        if (interleave := own.get("parallel")) is not None and interleave.value is not None:
            cycle_text = str(interleave.value)
        return (
            f"ds = ds.interleave({function}{_kw('cycle_length', cycle_text)}"
            f"{_kw('num_parallel_calls', calls)})"
        )
    if kind == "flat-map":
        return f"ds = ds.flat_map({function})"
    if kind == "batch":
        drop = ", drop_remainder=True" if settings.drop_remainder else ""
        return f"ds = ds.batch({_or(settings.batch_size, '...')}{drop})"
    if kind == "shuffle":
        return f"ds = ds.shuffle({_or(settings.buffer_size, '...')}{_shuffle_order(settings)})"
    if kind == "prefetch":
        return f"ds = ds.prefetch({_parallel_calls(settings.buffer_size) or '...'})"
    if kind == "cache":
        filename = settings.filename
        return f"ds = ds.cache({filename!r})" if filename else "ds = ds.cache()"
    if kind == "repeat":
        count = settings.count
        return "ds = ds.repeat()" if count in (None, UNBOUNDED) else f"ds = ds.repeat({count})"
    if kind == "options":
        return "ds = ds.with_options(options)  # your options"
    return f"ds = ds.{kind.replace('-', '_')}(...)"


def _end_lines(chain: Sequence[StageStats], changes: Sequence[StageChange]) -> list[CodeLine]:
    """The prefetch at the end, the options the changes set, then the lines that go last."""
    lines: list[CodeLine] = []
    last = next((s for s in reversed(chain) if s.kind != "options"), None)
    in_place = last is not None and last.kind == "prefetch"  # a final prefetch is raised
    for change in changes:
        if fix_facts(change.fix).code != "prefetch" or in_place:
            continue
        site = last.created_at if last is not None else None
        lines.append(CodeLine(f"ds = ds.prefetch({AUTOTUNE_TEXT})", site, change.fix))
    options = [(c, line) for c in changes if (line := fix_facts(c.fix).option_line) is not None]
    if options:
        lines.append(CodeLine("options = tf.data.Options()"))
        for change, line in options:
            text = line.format(value=change.value or "...")
            lines.append(CodeLine(text, None, change.fix, list(change.semantics)))
        lines.append(CodeLine("ds = ds.with_options(options)"))
    lines += [
        CodeLine(last_line, None, change.fix)
        for change in changes
        if (last_line := fix_facts(change.fix).last_line) is not None
    ]
    return lines


def _shuffle_order(settings: StageSettings) -> str:
    """The op seed where any seed was set (with a global seed, the op's own gives the same
    order, chosen or counted out: TF's `random_seed.get_seed`), and a reshuffle turned off."""
    seeds = (settings.seed or 0, settings.seed2 or 0)
    # TF runs a global seed of 0 with an op seed of 0 as (0, 2**31 - 1): never (0, 0),
    # which its kernels read as "unseeded".
    op_seed = 0 if seeds == (0, 2**31 - 1) else seeds[1]
    seed = _kw("seed", str(op_seed)) if seeds != (0, 0) else ""
    once = settings.reshuffle_each_iteration is False
    return seed + (", reshuffle_each_iteration=False" if once else "")


def _parallel_calls(value: int | None) -> str | None:
    if value is None:
        return None
    return AUTOTUNE_TEXT if value == AUTOTUNE else str(value)


def _or(value: int | None, missing: str) -> str:
    return missing if value is None else str(value)


def _kw(name: str, value: str | None) -> str:
    return "" if value is None else f", {name}={value}"
