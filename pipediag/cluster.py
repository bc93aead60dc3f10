"""Which task of a multi-worker job this process is, from `TF_CONFIG`
(`{"cluster": {...}, "task": {"type": "worker", "index": 0}}`): its report goes to
`<out>/<type>-<index>/` (docs/design.md, "Multi-worker jobs")."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipediag.errors import UsageError
from pipediag.report.model import TaskInfo

TF_CONFIG = "TF_CONFIG"
# A task type ("worker", "chief", "ps", "evaluator") becomes a directory name.
TASK_TYPE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def task_from_env(environ: Mapping[str, str] | None = None) -> TaskInfo | None:
    """This process's task (None: none in `TF_CONFIG`); `UsageError`: one TensorFlow cannot use."""
    if not (text := (os.environ if environ is None else environ).get(TF_CONFIG, "").strip()):
        return None
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _bad(f"is not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(config, dict):
        raise _bad("is not a JSON object")
    if not (task := config.get("task")):
        return None  # a cluster without a task of its own: a single process as far as we know
    if not isinstance(task, dict):
        raise _bad("has a 'task' that is not an object")
    if not isinstance(task_type := task.get("type"), str) or not TASK_TYPE.fullmatch(task_type):
        raise _bad(f"has task type {task_type!r}; expected a name such as 'worker'")
    index = _index(task.get("index", 0))
    return TaskInfo(type=task_type, index=index, cluster_size=_cluster_size(config))


def task_out_dir(out: str | os.PathLike[str], task: TaskInfo | None) -> Path:
    """Where a report goes: `out` itself, or its `<type>-<index>` directory for a task."""
    return Path(out) if task is None else Path(out) / task.name


def _index(value: Any) -> int:
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise _bad(f"has task index {value!r}; expected a whole number")


def _cluster_size(config: dict[str, Any]) -> int:
    """Tasks in the cluster, every type counted (a job lists addresses, or index: address)."""
    if not isinstance(cluster := config.get("cluster"), dict):
        return 1
    return max(1, sum(len(tasks) for tasks in cluster.values() if isinstance(tasks, (list, dict))))


def _bad(problem: str) -> UsageError:
    return UsageError(f"{TF_CONFIG} {problem}: fix it, or unset it for a single-process run")
