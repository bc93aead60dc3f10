"""Where the train step's time goes: profiled ops' self time by op type and by layer, and
two host gaps, each a share of the step (docs/design.md, "When the model sets the rate")."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pipediag.report.model_side import TopOp, TopOpKind

TOP_OP_TYPES = 8
TOP_SCOPES = 6
OPTIMIZER_SCOPE = "optimizer"
# `name/scope:OpType`: an executed op (not `Class::Method` tracing events).
_OP_EVENT = re.compile(r"^(?P<name>[^:]+):(?P<type>[A-Za-z0-9_]+)$")
_UNIQUIFIED = re.compile(r"_\d+$")


@dataclass(frozen=True)
class OpEvent:
    name: str
    start_ns: int
    duration_ns: int
    line: int = 0


@dataclass(frozen=True)
class ProfiledWindow:
    """`in_tensorflow_ns`: the Python thread's time inside TensorFlow's calls."""

    steps: int
    wall_ns: int
    in_tensorflow_ns: int
    ops: list[OpEvent]


def self_times(events: Iterable[OpEvent]) -> list[tuple[OpEvent, int]]:
    """Each op event's duration less the op events nested directly in it, on its thread."""
    by_line: dict[int, list[OpEvent]] = defaultdict(list)
    for event in events:
        if _OP_EVENT.match(event.name):
            by_line[event.line].append(event)
    found: list[tuple[OpEvent, int]] = []
    for line_events in by_line.values():
        line_events.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        stack: list[list[int]] = []  # [index into found, end_ns]
        for event in line_events:
            end = event.start_ns + event.duration_ns
            while stack and stack[-1][1] <= event.start_ns:
                stack.pop()
            if stack:
                parent = found[stack[-1][0]]
                found[stack[-1][0]] = (parent[0], parent[1] - event.duration_ns)
            found.append((event, event.duration_ns))
            stack.append([len(found) - 1, end])
    return [(event, max(0, own)) for event, own in found]


def busy_ns(events: Iterable[OpEvent]) -> int:
    """The union of the op intervals, on any thread."""
    spans = sorted(
        (e.start_ns, e.start_ns + e.duration_ns) for e in events if _OP_EVENT.match(e.name)
    )
    total, reached = 0, None
    for start, end in spans:
        if reached is not None and start <= reached:
            total += max(0, end - reached)
            reached = max(reached, end)
        else:
            total += end - start
            reached = end
    return total


def scope_of(op_name: str, layer_names: Sequence[str]) -> str:
    """`sequential/conv_a_1/Relu` is in layer `conv_a`; update ops are `optimizer`'s."""
    name = op_name.removeprefix("gradient_tape/")  # a gradient's ops are its layer's
    parts, known = name.split("/"), set(layer_names)
    for part in parts[:-1]:
        for candidate in (part, _UNIQUIFIED.sub("", part)):
            if candidate in known:
                return candidate
    head = _UNIQUIFIED.sub("", parts[0]) if len(parts) > 1 else "(top level)"
    if head.lower() in {"adam", "sgd", "rmsprop", "adamw", "adagrad", "optimizer"}:
        return OPTIMIZER_SCOPE
    return head


def top_ops(window: ProfiledWindow, layer_names: Sequence[str] = ()) -> list[TopOp]:
    if window.steps <= 0 or window.wall_ns <= 0:
        return []
    owned = self_times(window.ops)
    by_type: dict[str, int] = defaultdict(int)
    by_scope: dict[str, int] = defaultdict(int)
    for event, own in owned:
        found = _OP_EVENT.match(event.name)
        assert found is not None
        by_type[found.group("type")] += own
        by_scope[scope_of(found.group("name"), layer_names)] += own
    python_ns = max(0, window.wall_ns - window.in_tensorflow_ns)
    launch_ns = max(0, window.in_tensorflow_ns - busy_ns(window.ops))
    if (total := sum(by_type.values()) + python_ns + launch_ns) <= 0:
        return []

    def op(name: str, kind: TopOpKind, ns: int) -> TopOp:
        return TopOp(name, kind, ns / total, ns / 1e9 / window.steps)

    ranked_types = sorted(by_type.items(), key=lambda kv: -kv[1])[:TOP_OP_TYPES]
    ranked_scopes = sorted(by_scope.items(), key=lambda kv: -kv[1])[:TOP_SCOPES]
    return [
        *(op(name, "op_type", ns) for name, ns in ranked_types),
        *(op(name, "scope", ns) for name, ns in ranked_scopes),
        op("", "host-python", python_ns),
        op("", "host-launch", launch_ns),
    ]
