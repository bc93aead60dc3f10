"""Host sampler: psutil readings, bounded memory, thread lifecycle, failure notes."""

from __future__ import annotations

import sys
import threading
import time
from collections import namedtuple

import psutil
import pytest
from synthetic_reports import FakeClock

from pipediag.clock import MONOTONIC, Quiet
from pipediag.renderers.reason_words import reason_words
from pipediag.report.reasons import Reason
from pipediag.report.samples import HostSample
from pipediag.samplers.base import DecimatingBuffer
from pipediag.samplers.host import HostSampler, cpu_percentages, merge_host_samples

THREAD_WAIT_S = 10.0
"""Threaded tests wait this long at most for a reading: a large margin for a loaded CI box."""


def _burn_cpu(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        sum(range(1000))


def test_readings_are_sane_and_timed_on_the_session_clock() -> None:
    # GIVEN a host sampler on a fake clock, driven by hand
    clock = FakeClock()
    sampler = HostSampler(interval_s=0.05, max_samples=64, clock=clock)
    t0 = clock.now()
    sampler.start(background=False)
    # WHEN three readings are taken 50 ms apart (fake) with real CPU work between them
    for _ in range(3):
        _burn_cpu(0.02)
        clock.advance(0.05)
        sampler.sample_once()
    sampler.stop()
    section = sampler.section(t0)
    # THEN the section holds three plausible readings on the session axis
    assert section.available and section.reason is None
    assert section.cpu_count == psutil.cpu_count()
    assert section.interval_s == pytest.approx(0.05)
    assert [s.t_s for s in section.samples] == pytest.approx([0.05, 0.10, 0.15])
    for s in section.samples:
        assert s.process_cpu_pct >= 0.0
        assert 0.0 <= s.system_cpu_pct <= 100.0
        assert len(s.per_core_pct) == len(psutil.cpu_times(percpu=True))
        assert all(0.0 <= c <= 100.0 for c in s.per_core_pct)
        assert s.process_rss_bytes > 1_000_000
        assert 0.0 < s.system_mem_used_pct <= 100.0
        if sys.platform.startswith("linux"):
            assert s.iowait_pct is not None and 0.0 <= s.iowait_pct <= 100.0
    assert section.process_cpu_pct_mean is not None and section.process_cpu_pct_mean > 0.0
    assert section.process_rss_bytes_max == max(s.process_rss_bytes for s in section.samples)
    assert section.sampler_cpu_s is not None and section.sampler_cpu_s >= 0.0
    assert section.notes == []


def test_the_machine_s_memory_is_read_once_a_second_and_repeated_between(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN a sampler on a fake clock, and psutil's system-memory reads counted
    reads: list[float] = []
    real = psutil.virtual_memory

    def counted() -> object:
        reads.append(clock.now())
        return real()

    monkeypatch.setattr(psutil, "virtual_memory", counted)
    clock = FakeClock()
    sampler = HostSampler(interval_s=0.25, max_samples=64, clock=clock)
    sampler.start(background=False)
    # WHEN it reads every 0.25 s for 2.5 s
    for _ in range(10):
        clock.advance(0.25)
        sampler.sample_once()
    sampler.stop()
    # THEN every reading has the machine's memory, read anew only once a second had passed
    samples = sampler.section(0.0).samples
    assert len(samples) == 10
    assert all(0.0 < s.system_mem_used_pct <= 100.0 for s in samples)
    assert len(reads) == 3
    assert [b - a for a, b in zip(reads, reads[1:], strict=False)] == pytest.approx([1.0, 1.0])


def test_thread_samples_and_stops() -> None:
    # GIVEN a real-clock sampler running on its thread
    sampler = HostSampler(interval_s=0.01, clock=MONOTONIC)
    t0 = MONOTONIC.now()
    with sampler:
        sampler.start()  # idempotent
        threads = [t for t in threading.enumerate() if t.name == "pipediag-host-sampler"]
        assert len(threads) == 1 and threads[0].daemon
        deadline = time.monotonic() + THREAD_WAIT_S
        while not sampler.section(t0).samples and time.monotonic() < deadline:
            time.sleep(0.01)
    # THEN it took readings, and its thread is gone after the context exits
    assert not sampler.running
    assert not threads[0].is_alive()
    sampler.stop()  # idempotent, never raises
    section = sampler.section(t0)
    assert section.available and section.samples
    assert all(s.t_s > 0 for s in section.samples)
    assert section.sampler_cpu_s is not None and section.sampler_cpu_s > 0.0


def test_decimation_keeps_memory_bounded_and_doubles_the_interval() -> None:
    # GIVEN a sampler that may keep only 8 readings
    clock = FakeClock()
    sampler = HostSampler(interval_s=0.05, max_samples=8, clock=clock)
    t0 = clock.now()
    sampler.start(background=False)
    # WHEN it reads 20 times, at its effective interval as its thread would
    for _ in range(20):
        clock.advance(sampler.interval_s)
        sampler.sample_once()
    sampler.stop()
    section = sampler.section(t0)
    # THEN it halved four times (at 8, 12, 16 and 20 readings): 4 readings 0.8 s apart
    # that still cover the whole run, from its start to the newest reading
    assert section.interval_s == pytest.approx(0.05 * 2**4)
    assert [s.t_s for s in section.samples] == pytest.approx([0.8, 1.6, 2.4, 3.2])
    # and the run-wide summary still counts every raw reading
    assert section.process_rss_bytes_max is not None


def test_decimating_buffer_merges_adjacent_pairs() -> None:
    buffer: DecimatingBuffer[float] = DecimatingBuffer(4, 1.0, lambda a, b: (a + b) / 2)
    for value in [1.0, 3.0, 5.0, 7.0]:
        buffer.append(value)
    assert buffer.items() == [2.0, 6.0]
    assert buffer.interval_s == 2.0 and buffer.halvings == 1
    buffer.append(9.0)
    buffer.append(11.0)
    assert buffer.items() == [4.0, 10.0]
    assert buffer.interval_s == 4.0
    with pytest.raises(ValueError, match="at least 2"):
        DecimatingBuffer(1, 1.0, lambda a, b: a)


def test_merge_host_samples_averages_and_keeps_the_later_time() -> None:
    a = HostSample(1.0, 100.0, 50.0, None, [40.0, 60.0], 1000, 30.0)
    b = HostSample(2.0, 200.0, 70.0, 4.0, [60.0, 80.0], 3000, 50.0)
    merged = merge_host_samples(a, b)
    assert merged == HostSample(2.0, 150.0, 60.0, 4.0, [50.0, 70.0], 2000, 40.0)


def test_cpu_percentages_from_cpu_times_deltas() -> None:
    times = namedtuple("scputimes", "user nice system idle iowait guest guest_nice")
    before = [times(10, 0, 0, 10, 0, 0, 0), times(0, 0, 0, 20, 0, 0, 0)]
    # core 0: 3 s busy of 4 (1 s idle); core 1: 1 s iowait of 4 (guest time counted in user)
    after = [times(12, 0, 1, 11, 0, 1, 0), times(1, 0, 0, 22, 1, 1, 0)]
    per_core, system, iowait, _ = cpu_percentages(before, after)
    assert per_core == pytest.approx([75.0, 25.0])
    assert system == pytest.approx(50.0)
    assert iowait == pytest.approx(100 * 1 / 8)
    no_iowait = namedtuple("scputimes", "user system idle")
    _, _, missing, _ = cpu_percentages([no_iowait(0, 0, 0)], [no_iowait(1, 0, 1)])
    assert missing is None


def test_missing_psutil_gives_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psutil", None)  # import psutil now raises ImportError
    sampler = HostSampler(clock=FakeClock())
    sampler.start()
    assert not sampler.running
    sampler.stop()
    section = sampler.section(0.0)
    assert not section.available
    assert section.reason == Reason("no-psutil")
    assert reason_words(section.reason) == "psutil is not installed: pip install psutil"


def test_failing_reading_becomes_one_note_and_never_raises() -> None:
    clock = FakeClock()
    sampler = HostSampler(clock=clock)
    t0 = clock.now()
    sampler.start(background=False)
    sampler.sample_once()

    def broken() -> None:
        raise psutil.AccessDenied(pid=1)

    sampler._process.memory_info = broken  # the process became unreadable mid-run
    sampler.sample_once()
    sampler.sample_once()
    sampler.stop()
    section = sampler.section(t0)
    assert section.available and len(section.samples) == 1
    [note] = section.notes
    assert note.code == "repeated-failure" and note.value == 2
    assert note.because is not None and note.because.code == "reading-failed"
    assert reason_words(note).startswith("reading failed: AccessDenied")
    assert reason_words(note).endswith("(2 times)")


def test_unstarted_sampler_is_unavailable() -> None:
    sampler = HostSampler()
    sampler.stop()
    reason = sampler.section(0.0).reason
    assert reason == Reason("host-sampler-not-started")
    assert reason_words(reason) == "host sampler was not started"


def test_a_sampler_takes_no_reading_while_the_observer_check_holds_it_quiet() -> None:
    # GIVEN a sampler reading every 10 ms, held quiet from the start
    quiet = Quiet()
    quiet.hold(60.0)
    sampler = HostSampler(interval_s=0.01, clock=MONOTONIC)
    sampler.quiet = quiet
    t0 = MONOTONIC.now()
    with sampler:
        time.sleep(0.3)  # about 30 intervals
        # THEN it read nothing while quiet
        assert not sampler.section(t0).samples
        # AND reads again once released
        quiet.release()
        deadline = time.monotonic() + THREAD_WAIT_S
        while not sampler.section(t0).samples and time.monotonic() < deadline:
            time.sleep(0.01)
    assert sampler.section(t0).samples


def test_a_quiet_sampler_sleeps_out_the_hold_and_stops_promptly_within_it() -> None:
    # GIVEN a sampler reading every 10 ms, held quiet for a minute by a Quiet whose clock
    # counts how often it is read
    reads = 0

    def counted_now() -> float:
        nonlocal reads
        reads += 1
        return time.perf_counter()

    quiet = Quiet(counted_now)
    quiet.hold(60.0)
    sampler = HostSampler(interval_s=0.01, clock=MONOTONIC)
    sampler.quiet = quiet
    sampler.start()
    time.sleep(0.3)  # about 30 intervals
    # THEN its thread did not wake at each interval to look (a wake takes the interpreter
    # lock from the training thread): a few reads of the clock, not one per interval
    assert reads < 10
    # AND stopping it does not wait out the hold
    began = time.monotonic()
    sampler.stop()
    assert time.monotonic() - began < THREAD_WAIT_S / 2
    assert not sampler.running
