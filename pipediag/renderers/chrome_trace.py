"""The report as a Chrome Trace Event Format file (docs/design.md, "The Chrome trace")."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pipediag.renderers.reason_words import reason_words
from pipediag.renderers.verdict_words import headline
from pipediag.report.io import write_atomically
from pipediag.report.model import Report, StepRecord

Event = dict[str, Any]

US_PER_S = 1_000_000
MS_PER_S = 1_000
TS_DECIMALS = 3  # nanosecond precision in microseconds; rounding keeps children inside parents
DISPLAY_TIME_UNIT = "ms"

MAIN_PID = 1
GPU_PID = 2
PHASES_TID = 1
STEPS_TID = 2
COUNTERS_TID = 3  # counters are per process in the viewers; the tid is only required by the format

# Phases whose order is known; any other phase follows in the report's order.
PHASE_ORDER = ("pipeline_benchmark", "train")
PIPELINE_PHASE = "pipeline_benchmark"

STEP_EVENT_NAMES = {"warmup": "warm-up step"}  # any other label: "<label> step"
INPUT_WAIT_EVENT = "input wait"
HOST_CPU_COUNTER = "host CPU %"
HOST_MEMORY_COUNTER = "process RSS (MiB)"
BYTES_PER_MIB = 2**20


def render_trace(report: Report, path: Path) -> Path:
    return write_trace(trace_events(report), path)


def write_trace(trace: dict[str, Any], path: Path) -> Path:
    """Compact JSON, written atomically (a fleet's trace too)."""
    target = Path(path)
    write_atomically(target, json.dumps(trace, separators=(",", ":"), allow_nan=False).encode())
    return target


def trace_events(report: Report) -> dict[str, Any]:
    events = [
        *_metadata_events(report),
        *_phase_events(report),
        *_step_events(report.train.steps),
        *_host_counter_events(report),
        *_gpu_counter_events(report),
    ]
    metadata = _trace_metadata(report)
    return {"traceEvents": events, "displayTimeUnit": DISPLAY_TIME_UNIT, "metadata": metadata}


def _us(seconds: float) -> float:
    return round(seconds * US_PER_S, TS_DECIMALS)


def _ms(seconds: float) -> float:
    return round(seconds * MS_PER_S, TS_DECIMALS)


def metadata_event(name: str, pid: int, tid: int, args: dict[str, Any]) -> Event:
    return {"name": name, "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": args}


def _metadata_events(report: Report) -> list[Event]:
    events = [
        metadata_event("process_name", MAIN_PID, 0, {"name": f"pipediag: {report.script}"}),
        metadata_event("process_sort_index", MAIN_PID, 0, {"sort_index": 0}),
        metadata_event("thread_name", MAIN_PID, PHASES_TID, {"name": "phases"}),
        metadata_event("thread_sort_index", MAIN_PID, PHASES_TID, {"sort_index": 0}),
        metadata_event("thread_name", MAIN_PID, STEPS_TID, {"name": "train steps"}),
        metadata_event("thread_sort_index", MAIN_PID, STEPS_TID, {"sort_index": 1}),
        metadata_event("thread_name", MAIN_PID, COUNTERS_TID, {"name": "host"}),
    ]
    if report.gpu.samples:
        events += [
            metadata_event("process_name", GPU_PID, 0, {"name": "GPU"}),
            metadata_event("process_sort_index", GPU_PID, 0, {"sort_index": 1}),
            metadata_event("thread_name", GPU_PID, COUNTERS_TID, {"name": "NVML"}),
        ]
    return events


def _phase_events(report: Report) -> list[Event]:
    """Phases at their recorded times; older reports kept durations only: laid end to end."""
    if report.phases:
        spans = [(p.name, p.start_s, max(0.0, p.duration_s)) for p in report.phases]
    else:
        durations = report.phase_times_s
        ordered = [p for p in PHASE_ORDER if p in durations]
        ordered += [p for p in durations if p not in PHASE_ORDER]
        spans, start_s = [], 0.0
        for name in ordered:
            spans.append((name, start_s, max(0.0, durations[name])))
            start_s += max(0.0, durations[name])
    events = []
    for name, start_s, duration_s in spans:
        args: dict[str, Any] = {"duration_s": duration_s}
        if name == PIPELINE_PHASE:
            args.update(_pipeline_args(report))
        ts, dur = _us(start_s), _us(duration_s)
        events.append(_span(name, category="phase", ts=ts, dur=dur, tid=PHASES_TID, args=args))
    return events


def _span(
    name: str, *, category: str, ts: float, dur: float, args: Event, tid: int = STEPS_TID
) -> Event:
    return dict(name=name, cat=category, ph="X", ts=ts, dur=dur, pid=MAIN_PID, tid=tid, args=args)


def _pipeline_args(report: Report) -> dict[str, Any]:
    pipeline = report.pipeline
    args: dict[str, Any] = {
        "measured": pipeline.measured,
        "dataset": pipeline.dataset,
        "batches": pipeline.batches,
        "batches_per_s": _finite_or_none(pipeline.batches_per_s),
    }
    if pipeline.reason:
        args["reason"] = reason_words(pipeline.reason)
    if pipeline.stages:
        args["stages"] = [
            {
                "kind": s.kind,
                "name": s.name,
                "batches_per_s": _finite_or_none(s.batches_per_s),
                "bottleneck": s.bottleneck,
            }
            for s in pipeline.stages
        ]
    return args


def _step_events(steps: list[StepRecord]) -> list[Event]:
    events: list[Event] = []
    for step in steps:
        ts, dur = _us(step.start_s), _us(max(0.0, step.duration_s))
        wait_ms = _ms(step.input_wait_s) if step.input_wait_s is not None else None
        name = STEP_EVENT_NAMES.get(step.label, f"{step.label} step")
        args = {
            "index": step.index,
            "label": step.label,
            "epoch": step.epoch,
            "duration_ms": _ms(step.duration_s),
            "input_wait_ms": wait_ms,
        }
        events.append(_span(name, category="step", ts=ts, dur=dur, args=args))
        if step.input_wait_s is not None and step.input_wait_s > 0:
            # The wait opens the step, so it nests at the step's start; never past its end.
            wait_us = min(dur, _us(step.input_wait_s))
            wait = {"index": step.index, "input_wait_ms": wait_ms}
            events.append(_span(INPUT_WAIT_EVENT, category="input", ts=ts, dur=wait_us, args=wait))
    return events


def _host_counter_events(report: Report) -> list[Event]:
    host = report.host
    cores = host.cpu_count if host.cpu_count > 0 else 1
    events: list[Event] = []
    for sample in host.samples:
        ts = _us(sample.t_s)
        cpu = _finite({"process": sample.process_cpu_pct / cores, "system": sample.system_cpu_pct})
        if cpu:
            events.append(_counter(HOST_CPU_COUNTER, ts, MAIN_PID, cpu))
        rss = {"rss": round(sample.process_rss_bytes / BYTES_PER_MIB, 1)}
        events.append(_counter(HOST_MEMORY_COUNTER, ts, MAIN_PID, rss))
    return events


def _gpu_counter_events(report: Report) -> list[Event]:
    names = {d.index: d.name for d in report.gpu.devices}
    events: list[Event] = []
    for sample in report.gpu.samples:
        device = f"GPU {sample.device_index} {names.get(sample.device_index, '')}".strip()
        # The driver's own sample time, when known, places utilization where it was measured.
        util_t_s = sample.gpu_util_t_s if sample.gpu_util_t_s is not None else sample.t_s
        util = _finite({"gpu_util_pct": sample.gpu_util_pct, "mem_util_pct": sample.mem_util_pct})
        if util:
            events.append(_counter(f"{device} utilization %", _us(util_t_s), GPU_PID, util))
        sm = _finite(
            {"sm_active_pct": sample.sm_active_pct, "sm_occupancy_pct": sample.sm_occupancy_pct}
        )
        if sm:
            events.append(_counter(f"{device} SM activity %", _us(sample.t_s), GPU_PID, sm))
    return events


def _counter(name: str, ts: float, pid: int, values: dict[str, float]) -> Event:
    return dict(name=name, cat="counter", ph="C", ts=ts, pid=pid, tid=COUNTERS_TID, args=values)


def _finite(values: dict[str, float | None]) -> dict[str, float]:
    """Counter values must be numbers: drop missing and non-finite readings."""
    return {k: round(v, 3) for k, v in values.items() if v is not None and math.isfinite(v)}


def _trace_metadata(report: Report) -> dict[str, Any]:
    verdict = report.verdict
    return {
        "tool": "pipediag",
        "schema_version": report.schema_version,
        "script": report.script,
        "args": list(report.args),
        "created_utc": report.created_utc,
        "clock": "seconds since the diagnosis started, in microseconds",
        "phases": (
            "at their recorded times"
            if report.phases
            else "laid end to end from 0 (this report stores phase durations only)"
        ),
        "verdict": verdict.label,
        "severity": verdict.severity,
        "input_wait_fraction": _finite_or_none(verdict.input_wait_fraction),
        "headline": headline(report).text,
        "no_verdict_because": verdict.no_verdict_because,
        "complete": report.complete,
        "stop_reason": report.stop_reason,
    }


def _finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
