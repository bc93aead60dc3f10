"""Local files a tf.data pipeline names, found in its graph's string constants: what workers
on other machines could not read (docs/design.md, "tf.data service")."""

from __future__ import annotations

import glob
import itertools
import math
import os
import re
from dataclasses import dataclass
from typing import Any

from pipediag.bench.structure import WalkedPipeline
from pipediag.scale_out.service import read_varint

# String constants examined: a file list of millions would cost a `stat` each; the first say enough.
MAX_PATH_STRINGS = 10_000
PATH_SAMPLE = 5  # local files quoted in a blocker (all are counted)
MAX_PATH_LENGTH = 4096  # PATH_MAX on Linux
# Filesystems other machines mount too (psutil's fstype): a reminder, not data to move.
NETWORK_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "ceph", "glusterfs", "beegfs"}
)
NETWORK_FUSE_PREFIXES = ("fuse.gcsfuse", "fuse.s3fs", "fuse.sshfs", "fuse.rclone", "fuse.juicefs")
_STRING_DTYPE = 7  # tensorflow.core.framework.types_pb2.DT_STRING


@dataclass(frozen=True)
class LocalFiles:
    """Local files found among one stage's string constants."""

    stage_index: int | None
    paths: list[str]
    total: int
    shared_fs: str | None = None


def find_local_files(walked: WalkedPipeline) -> list[LocalFiles]:
    """Files on this host the walked pipeline names (file lists, paths in its functions)."""
    graph, stage_nodes = walked.graph, walked.nodes
    if graph is None:
        return []
    node_stage = {name: index for index, name in stage_nodes.items()}
    consumers: dict[str, list[str]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name.lstrip("^").split(":")[0], []).append(node.name)
    found: dict[int | None, list[str]] = {}
    budget = [MAX_PATH_STRINGS]
    for node in graph.node:
        if values := _string_constant(node, budget):
            stage = _consumer_stage(node.name, consumers, node_stage)
            found.setdefault(stage, []).extend(values)
    function_stage = _function_stages(graph, stage_nodes)
    for function in graph.library.function:
        for node_def in function.node_def:
            if values := _string_constant(node_def, budget):
                found.setdefault(function_stage.get(function.signature.name), []).extend(values)
    result = []
    for stage, values in found.items():
        # the values naming files or folders on this host (globs expanded), deduplicated
        files = list(dict.fromkeys(p for v in dict.fromkeys(values) for p in _local_matches(v)))
        if files:
            shared = _network_filesystem(files[0])
            result.append(LocalFiles(stage, files[:PATH_SAMPLE], len(files), shared))
    return sorted(result, key=lambda f: -1 if f.stage_index is None else f.stage_index)


def _string_constant(node: Any, budget: list[int]) -> list[str]:
    if node.op != "Const" or node.attr["dtype"].type != _STRING_DTYPE or budget[0] <= 0:
        return []
    values = string_values(node.attr["value"].tensor, budget[0])
    budget[0] -= len(values)
    return values


def string_values(tensor: Any, limit: int) -> list[str]:
    """The strings of a DT_STRING TensorProto (from `string_val` or `tensor_content`)."""
    if len(tensor.string_val):
        raw = list(itertools.islice(tensor.string_val, limit))
    elif tensor.tensor_content:
        # Serialised eager tensors pack all the lengths (varints), then the bytes.
        count, data = math.prod(dim.size for dim in tensor.tensor_shape.dim), tensor.tensor_content
        lengths, position = [], 0
        for index in range(count):
            length, position = read_varint(data, position)
            if index < limit:
                lengths.append(length)
        raw = []
        for length in lengths:
            raw.append(data[position : position + length])
            position += length
    else:
        return []
    return [value.decode(errors="replace") for value in raw]


def _consumer_stage(
    name: str, consumers: dict[str, list[str]], node_stage: dict[str, int]
) -> int | None:
    """The first stage reached following `name`'s consumers (Const -> TensorSliceDataset)."""
    pending, seen = [name], set()
    while pending:
        if (current := pending.pop(0)) in seen:
            continue
        seen.add(current)
        if current in node_stage:
            return node_stage[current]
        pending.extend(consumers.get(current, []))
    return None


def _function_stages(graph: Any, stage_nodes: dict[int, str]) -> dict[str, int]:
    """Library function -> the stage whose node uses it, directly or through calls."""
    functions = {f.signature.name: f for f in graph.library.function}
    nodes = {node.name: node for node in graph.node}
    owner: dict[str, int] = {}
    for index, name in sorted(stage_nodes.items()):
        if (node := nodes.get(name)) is None:
            continue
        pending = _called(node)
        while pending:
            if (function := pending.pop()) in owner or function not in functions:
                continue
            owner[function] = index
            for inner in functions[function].node_def:
                pending.extend(_called(inner))
                if inner.op in functions:
                    pending.append(inner.op)
    return owner


def _called(node: Any) -> list[str]:
    names = []
    for attr in node.attr.values():
        if attr.func.name:
            names.append(attr.func.name)
        names.extend(f.name for f in attr.list.func)
    return names


def _local_matches(value: str) -> list[str]:
    if not value or len(value) > MAX_PATH_LENGTH or "\n" in value or "\0" in value:
        return []
    scheme = re.match(r"([A-Za-z][\w+.-]*)://", value)
    if scheme is not None and scheme.group(1).lower() != "file":
        return []  # gs://, s3://, hdfs://: every worker reads those the same way
    path = value[len(scheme.group(0)) :] if scheme is not None else value
    # Feature keys and op names are strings too: a path has a folder or an extension.
    if os.sep not in path and not os.path.splitext(path)[1]:
        return []
    if any(char in path for char in "*?["):
        return sorted(glob.glob(path))
    return [path] if os.path.exists(path) else []


def _network_filesystem(path: str) -> str | None:
    """The network filesystem `path` lives on (NFS, Lustre, a cloud FUSE mount), or None."""
    try:
        import psutil

        real, best = os.path.realpath(path), None
        for partition in psutil.disk_partitions(all=True):
            mount = partition.mountpoint
            prefix = mount if mount.endswith(os.sep) else mount + os.sep
            if (real == mount or real.startswith(prefix)) and (
                best is None or len(mount) > len(best.mountpoint)
            ):
                best = partition
    except Exception:
        return None
    fstype = "" if best is None else str(best.fstype).lower()
    network = fstype in NETWORK_FILESYSTEMS or fstype.startswith(NETWORK_FUSE_PREFIXES)
    return fstype if network else None
