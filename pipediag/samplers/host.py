"""Host CPU and memory over the run, from psutil on a background thread. Percentages come from
`psutil.cpu_times()` deltas, not `psutil.cpu_percent()`, whose module-global state our thread
would corrupt for a script that calls it too."""

from __future__ import annotations

import importlib
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pipediag.clock import MONOTONIC, Clock
from pipediag.config import DEFAULT_HOST_INTERVAL_S, DEFAULT_MAX_SAMPLES
from pipediag.report.reasons import Reason
from pipediag.report.samples import HostSample, HostSection
from pipediag.samplers.base import ThreadedSampler, describe_error, mean_int_or_none, mean_or_none

if TYPE_CHECKING:
    from types import ModuleType


# Linux counts guest time inside user/nice too; psutil's own busy-time formula drops them.
_GUEST_FIELDS = ("guest", "guest_nice")
_IDLE_FIELDS = ("idle", "iowait")  # waiting for I/O is idle as far as the CPU is concerned
# Memory moves over seconds: read at most this often (docs/design.md, "What pipediag costs a step").
SYSTEM_MEMORY_INTERVAL_S = 1.0


def cpu_percentages(
    before: list[Any], after: list[Any]
) -> tuple[list[float], float, float | None, float | None]:
    """Per-core busy %, system busy %, iowait % and steal % (of the whole time, to other guests;
    None where not reported) between two `cpu_times(percpu=True)` reads; fields looked up once."""
    if not after:
        return [], 0.0, None, None
    fields = after[0]._fields
    guest = [fields.index(f) for f in _GUEST_FIELDS if f in fields]
    idle = [fields.index(f) for f in _IDLE_FIELDS if f in fields]
    io = fields.index("iowait") if "iowait" in fields else None
    at = fields.index("steal") if "steal" in fields else None
    per_core: list[float] = []
    busy_sum = total_sum = iowait_sum = whole_sum = stolen_sum = 0.0
    for old, new in zip(before, after, strict=False):  # unequal if a core went offline
        whole = sum(new) - sum(old)
        total = whole - sum(new[i] - old[i] for i in guest)
        busy = max(0.0, total - sum(new[i] - old[i] for i in idle))
        per_core.append(min(100.0, 100.0 * busy / total) if total > 0 else 0.0)
        busy_sum += busy
        total_sum += total
        whole_sum += whole
        if io is not None:
            iowait_sum += max(0.0, new[io] - old[io])
        if at is not None:
            stolen_sum += max(0.0, new[at] - old[at])
    system = min(100.0, 100.0 * busy_sum / total_sum) if total_sum > 0 else 0.0
    iowait = 100.0 * iowait_sum / total_sum if total_sum > 0 else 0.0
    steal = 100.0 * stolen_sum / whole_sum if whole_sum > 0 else 0.0
    return per_core, system, None if io is None else iowait, None if at is None else steal


def merge_host_samples(earlier: HostSample, later: HostSample) -> HostSample:
    """One sample covering both: means, timed at the later one."""
    if len(earlier.per_core_pct) == len(later.per_core_pct):
        per_core = [
            (a + b) / 2 for a, b in zip(earlier.per_core_pct, later.per_core_pct, strict=True)
        ]
    else:  # a core went on- or offline between the two readings
        per_core = list(later.per_core_pct)
    return HostSample(
        t_s=later.t_s,
        process_cpu_pct=(earlier.process_cpu_pct + later.process_cpu_pct) / 2,
        system_cpu_pct=(earlier.system_cpu_pct + later.system_cpu_pct) / 2,
        iowait_pct=mean_or_none(earlier.iowait_pct, later.iowait_pct),
        per_core_pct=per_core,
        process_rss_bytes=mean_int_or_none(earlier.process_rss_bytes, later.process_rss_bytes) or 0,
        system_mem_used_pct=(earlier.system_mem_used_pct + later.system_mem_used_pct) / 2,
        steal_pct=mean_or_none(earlier.steal_pct, later.steal_pct),
    )


class HostSampler(ThreadedSampler[HostSample]):
    """psutil readings of this process and the machine, every `interval_s`. Whole-run means
    and the RSS maximum come from every raw reading, exact after the buffer halves."""

    thread_name = "pipediag-host-sampler"

    def __init__(
        self,
        interval_s: float = DEFAULT_HOST_INTERVAL_S,
        max_samples: int = DEFAULT_MAX_SAMPLES,
        clock: Clock = MONOTONIC,
    ) -> None:
        super().__init__(interval_s=interval_s, max_samples=max_samples, clock=clock)
        self._psutil: ModuleType | None = None
        self._process: Any = None
        self._last_cpu_times: list[Any] = []
        self._last_process_cpu: tuple[float, float] | None = None  # (real s, CPU s)
        self._cpu_count = 0
        self._process_cpu_sum = self._system_cpu_sum = self._iowait_sum = 0.0
        self._iowait_count = 0
        self._rss_max: int | None = None
        self._system_memory: tuple[float, float] | None = None  # (read at, used %)

    def _setup(self) -> Reason | None:
        try:
            psutil = importlib.import_module("psutil")
        except ImportError:
            return Reason("no-psutil")
        try:
            self._process = psutil.Process()
            self._last_process_cpu = (time.perf_counter(), time.process_time())
            self._last_cpu_times = list(psutil.cpu_times(percpu=True))
            self._cpu_count = psutil.cpu_count() or len(self._last_cpu_times)
        except Exception as exc:
            return Reason("psutil-cannot-read", detail=describe_error(exc))
        self._psutil = psutil
        return None

    def _read(self) -> HostSample:
        if (psutil := self._psutil) is None:
            raise RuntimeError("HostSampler.start() was not called or failed")
        t = self._clock.now()
        process_pct = self._process_cpu_pct(time.perf_counter(), time.process_time())
        rss, times = int(self._process.memory_info().rss), list(psutil.cpu_times(percpu=True))
        per_core, system, iowait, steal = cpu_percentages(self._last_cpu_times, times)
        self._last_cpu_times = times
        if (memory := self._system_memory) is None or t - memory[0] >= SYSTEM_MEMORY_INTERVAL_S:
            memory = self._system_memory = (t, float(psutil.virtual_memory().percent))
        return HostSample(
            t_s=t,
            process_cpu_pct=process_pct,
            system_cpu_pct=system,
            iowait_pct=iowait,
            per_core_pct=per_core,
            process_rss_bytes=rss,
            system_mem_used_pct=memory[1],
            steal_pct=steal,
        )

    def _process_cpu_pct(self, t: float, cpu_s: float) -> float:
        """This process's CPU since the last reading, % of one core; `t` is real time, never
        the session clock, which tests fake (docs/design.md, "What pipediag costs a step")."""
        last, self._last_process_cpu = self._last_process_cpu, (t, cpu_s)
        if last is None or t <= last[0]:
            return 0.0
        return max(0.0, (cpu_s - last[1]) / (t - last[0]) * 100.0)

    def _merge(self, earlier: HostSample, later: HostSample) -> HostSample:
        return merge_host_samples(earlier, later)

    def _observe(self, item: HostSample) -> None:
        self._process_cpu_sum += item.process_cpu_pct
        self._system_cpu_sum += item.system_cpu_pct
        if item.iowait_pct is not None:
            self._iowait_sum += item.iowait_pct
            self._iowait_count += 1
        if self._rss_max is None or item.process_rss_bytes > self._rss_max:
            self._rss_max = item.process_rss_bytes

    def section(self, t0: float) -> HostSection:
        """The report section; times in seconds since `t0`, the session's start."""
        notes = self._failure_notes()
        if not self._started:
            return HostSection(available=False, reason=Reason("host-sampler-not-started"))
        if self._unavailable_reason is not None:
            return HostSection(available=False, reason=self._unavailable_reason, notes=notes)
        items, interval_s = self._snapshot()
        with self._lock:
            n = self._readings
            process_sum, system_sum = self._process_cpu_sum, self._system_cpu_sum
            iowait_sum, iowait_n = self._iowait_sum, self._iowait_count
            rss_max = self._rss_max
        return HostSection(
            available=True,
            cpu_count=self._cpu_count,
            interval_s=interval_s,
            samples=[replace(s, t_s=s.t_s - t0, per_core_pct=list(s.per_core_pct)) for s in items],
            process_cpu_pct_mean=process_sum / n if n else None,
            system_cpu_pct_mean=system_sum / n if n else None,
            iowait_pct_mean=iowait_sum / iowait_n if iowait_n else None,
            process_rss_bytes_max=rss_max,
            sampler_cpu_s=self._sampler_cpu_s,
            notes=notes,
        )
